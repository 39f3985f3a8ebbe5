//! The real binaries as processes: the `syncplane` CLI and the Lambda functions, run against a
//! local stand-in for the Lambda Runtime API (the HTTP interface the Lambda service offers a
//! function's process: next invocation, response, error).
//!
//! Binaries come from the same `target/` directory as the test binary, built by
//! `cargo build --workspace --bins --features webhook/inline-jobs,tick/inline-jobs` (the webhook
//! and the tick as local runs build them, able to run jobs inline; `scripts/test.sh` builds them
//! before testing).

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use tokio::sync::Notify;

/// How long a binary may run before the test counts it as hung.
pub const HANG_LIMIT: Duration = Duration::from_secs(60);

/// The path of a workspace binary next to this test binary (`target/<profile>/<name>`).
pub fn workspace_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test binary> -> target/<profile>/<name>
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binary inside target/<profile>/deps");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --workspace --bins --locked --features \
         webhook/inline-jobs,tick/inline-jobs` first (scripts/test.sh does)",
        path.display()
    );
    path
}

/// What a finished (or killed) process left.
#[derive(Debug)]
pub struct Output {
    /// None when it was killed (it hung, or a Lambda function waiting for its next event).
    pub status: Option<std::process::ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

/// Run `bin` with exactly `env` (plus nothing inherited) and `args`; kill it past [`HANG_LIMIT`].
pub async fn run(bin: &str, args: &[&str], env: &[(String, String)]) -> Output {
    let mut command = Command::new(workspace_bin(bin));
    command.args(args);
    collect(spawn(command, env), None).await
}

fn spawn(mut command: Command, env: &[(String, String)]) -> Child {
    command
        .env_clear()
        .envs(env.iter().cloned())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the binary")
}

/// Read a pipe to its end on its own thread (a full pipe would block the child).
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Wait for `child` to exit, or for `done` (then kill it), within [`HANG_LIMIT`].
async fn collect(mut child: Child, done: Option<Arc<Notify>>) -> Output {
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let exited = async {
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let answered = async {
        match &done {
            Some(done) => done.notified().await,
            None => std::future::pending().await,
        }
    };
    let status = tokio::time::timeout(HANG_LIMIT, async {
        tokio::select! {
            status = exited => status,
            () = answered => None,
        }
    })
    .await
    .ok()
    .flatten();
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// One invocation of a Lambda function binary through the Runtime API stand-in.
#[derive(Debug)]
pub struct Invocation {
    /// The body the function posted to `.../response`, if it answered.
    pub response: Option<Bytes>,
    /// The body posted to `.../error` or `/init/error`, if it failed.
    pub error: Option<Bytes>,
    pub output: Output,
}

#[derive(Default)]
struct Api {
    event: Option<Bytes>,
    response: Option<Bytes>,
    error: Option<Bytes>,
}

type Shared = (Arc<Mutex<Api>>, Arc<Notify>);

const REQUEST_ID: &str = "8476a536-e9f4-11e8-9739-2dfe598c3fcd";

async fn next(State((api, _)): State<Shared>) -> axum::response::Response {
    let event = api.lock().unwrap().event.take();
    let Some(event) = event else {
        // One invocation per process: the function waits here until it is stopped.
        std::future::pending::<()>().await;
        unreachable!()
    };
    let deadline = chrono::Utc::now().timestamp_millis() + 60_000;
    let mut headers = HeaderMap::new();
    let mut set = |k: &'static str, v: String| {
        headers.insert(k, v.parse().expect("header value"));
    };
    set("lambda-runtime-aws-request-id", REQUEST_ID.to_owned());
    set("lambda-runtime-deadline-ms", deadline.to_string());
    set(
        "lambda-runtime-invoked-function-arn",
        "arn:aws:lambda:us-east-1:000000000000:function:under-test".to_owned(),
    );
    set(
        "lambda-runtime-trace-id",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1".to_owned(),
    );
    set("content-type", "application/json".to_owned());
    (headers, event).into_response()
}

async fn response(State((api, done)): State<Shared>, body: Bytes) -> impl IntoResponse {
    api.lock().unwrap().response = Some(body);
    done.notify_one();
    http::StatusCode::ACCEPTED
}

async fn error(State((api, done)): State<Shared>, body: Bytes) -> impl IntoResponse {
    api.lock().unwrap().error = Some(body);
    done.notify_one();
    http::StatusCode::ACCEPTED
}

/// Run the function binary `bin` for one invocation of `event`, with `env` (the Lambda
/// variables the runtime needs are added), and stop it once it has answered.
pub async fn invoke(bin: &str, env: &[(String, String)], event: &serde_json::Value) -> Invocation {
    let api = Arc::new(Mutex::new(Api {
        event: Some(Bytes::from(serde_json::to_vec(event).expect("event JSON"))),
        ..Api::default()
    }));
    let done = Arc::new(Notify::new());
    let app = Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next))
        .route(
            "/2018-06-01/runtime/invocation/{id}/response",
            post(response),
        )
        .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
        .route("/2018-06-01/runtime/init/error", post(error))
        .with_state((api.clone(), done.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the runtime API stand-in");
    let addr = listener.local_addr().expect("local address");
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    let mut all = env.to_vec();
    all.extend(
        [
            ("AWS_LAMBDA_RUNTIME_API", addr.to_string()),
            ("AWS_LAMBDA_FUNCTION_NAME", bin.to_owned()),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512".to_owned()),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".to_owned()),
        ]
        .map(|(k, v)| (k.to_owned(), v)),
    );
    let output = collect(spawn(Command::new(workspace_bin(bin)), &all), Some(done)).await;
    server.abort();
    let mut api = api.lock().unwrap();
    Invocation {
        response: api.response.take(),
        error: api.error.take(),
        output,
    }
}
