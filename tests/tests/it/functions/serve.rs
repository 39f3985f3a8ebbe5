//! `syncplane serve` (issue 13 point 7): the HTTP functions behind one local server on loopback,
//! through the same API Gateway conversion and handlers as in Lambda. A gzip desktop batch gets
//! the answer API Gateway's event path gets; the webhook and the sync API answer as documented;
//! the real process validates its configuration and serves.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::{Value, json};
use shared::ingest::IngestState;
use syncplane_cli::serve::{Functions, router};
use syncplane_tests::fake_github::sign_webhook;

use super::support::{SECRET, TOKEN, state};
use crate::engine::World;
use crate::ingest::support::{Env, batch, env, events, gzip, session};

/// A server on a free loopback port answering with `functions`; its base URL.
async fn start(functions: Functions) -> String {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = router(Arc::new(functions));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn ingest_state(env: &Env) -> IngestState {
    IngestState {
        pool: env.db.pool.clone(),
        rate_limit_per_minute: 1000,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    }
}

/// Status and JSON body of an answer, checked against openapi.json.
async fn read(method: &str, path: &str, resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.expect("every answer is a JSON envelope");
    syncplane_tests::openapi::check_response(method, path, status, &body);
    (status, body)
}

fn gzip_batch() -> Vec<u8> {
    let doc = batch(vec![{
        let mut s = session("s-1", "r1", "2026-01-01T00:00:00Z");
        s["events"] = events([1, 2]);
        s
    }]);
    let wire = gzip(&serde_json::to_vec(&doc).unwrap());
    assert_eq!(&wire[..2], [0x1f, 0x8b], "a gzip stream: not UTF-8");
    wire
}

#[tokio::test]
async fn a_gzip_batch_gets_the_same_answer_through_serve_and_through_api_gateway() {
    let wire = gzip_batch();
    // As the desktop client sends it, to the local server (one database)...
    let w = World::new().await;
    let local = env().await;
    let url = start(Functions::new(state(&w), ingest_state(&local))).await;
    let resp = reqwest::Client::new()
        .post(format!("{url}/lambda-url/ingest/api/agent-sessions/sync"))
        .header("authorization", local.bearer())
        .header("content-type", "application/octet-stream")
        .header("content-encoding", "gzip")
        .body(wire.clone())
        .send()
        .await
        .unwrap();
    let (status, body) = read("POST", "/api/agent-sessions/sync", resp).await;

    // ...and as API Gateway hands it to the deployed function (another database): base64.
    let deployed = env().await;
    let gateway = deployed
        .post_raw(
            &[
                ("content-type", "application/octet-stream"),
                ("content-encoding", "gzip"),
            ],
            &wire,
        )
        .await;

    assert_eq!((status, &body), (gateway.status, &gateway.body));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["synced"], true);
    assert_eq!(local.written().await, (1, 2));
    assert_eq!(local.written().await, deployed.written().await);
}

#[tokio::test]
async fn serve_takes_a_gzip_batch_labelled_application_json_as_older_clients_send_it() {
    // A deployed HTTP API would hand this body over as text (docs/local.md "Request bodies
    // through API Gateway"); the local server takes every byte, so clients that label gzip as JSON work in
    // a local run (and `serve` logs that a deployment may not take them).
    let w = World::new().await;
    let local = env().await;
    let url = start(Functions::new(state(&w), ingest_state(&local))).await;
    let resp = reqwest::Client::new()
        .post(format!("{url}/api/agent-sessions/sync"))
        .header("authorization", local.bearer())
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(gzip_batch())
        .send()
        .await
        .unwrap();
    let (status, body) = read("POST", "/api/agent-sessions/sync", resp).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(local.written().await, (1, 2));
}

#[tokio::test]
async fn the_deployed_routes_answer_like_the_emulator_urls() {
    let w = World::new().await;
    let local = env().await;
    let url = start(Functions::new(state(&w), ingest_state(&local))).await;
    let http = reqwest::Client::new();
    // The desktop client's hello at the deployed path, and at the emulator's URL.
    for path in [
        "/api/agent-sessions/hello",
        "/lambda-url/ingest/api/agent-sessions/hello",
    ] {
        let resp = http
            .get(format!("{url}{path}"))
            .header("authorization", local.bearer())
            .send()
            .await
            .unwrap();
        let (status, body) = read("GET", "/api/agent-sessions/hello", resp).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(
            body["data"]["capabilities"]["agentSessionSyncCompression"],
            true
        );
    }
    // A path no function serves, and an event function's name: 404 with a code.
    for path in [
        "/nothing",
        "/lambda-url/tick/",
        "/lambda-url/worker/api/sync",
    ] {
        let resp = http.get(format!("{url}{path}")).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 404, "{path}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "not_found", "{path}");
    }
}

#[tokio::test]
async fn a_sync_api_call_and_a_signed_webhook_answer_through_serve() {
    let w = World::new().await;
    let handbook = w.repo(
        "acme/handbook",
        &[
            ("docs/intro.md", "# Intro\n"),
            ("README.md", "# Handbook\n"),
        ],
    );
    let local = env().await;
    let url = start(Functions::new(state(&w), ingest_state(&local))).await;
    let http = reqwest::Client::new();
    let bearer = format!("Bearer {TOKEN}");

    let resp = http
        .post(format!("{url}/lambda-url/sync-api/api/sync"))
        .header("authorization", &bearer)
        .header("content-type", "application/json")
        .body(r#"{"repository": "acme/handbook"}"#)
        .send()
        .await
        .unwrap();
    let (status, body) = read("POST", "/api/sync", resp).await;
    assert_eq!(status, 202, "{body}");
    // Inline jobs: the sync ran before the answer.
    assert_eq!(w.doc_paths("acme/handbook").await, vec!["docs/intro.md"]);

    let resp = http
        .get(format!("{url}/api/repos"))
        .header("authorization", &bearer)
        .send()
        .await
        .unwrap();
    let (status, body) = read("GET", "/api/repos", resp).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["repositories"][0]["fullName"], "acme/handbook");

    let push = serde_json::to_vec(&json!({
        "ref": "refs/heads/main",
        "repository": {"id": handbook, "name": "handbook", "full_name": "acme/handbook",
                       "owner": {"login": "acme"}, "default_branch": "main"},
        "installation": {"id": w.installation},
    }))
    .unwrap();
    let signed = |signature: String| {
        http.post(format!("{url}/lambda-url/webhook/github/webhook"))
            .header("content-type", "application/json")
            .header("x-github-event", "push")
            .header("x-github-delivery", "serve-1")
            .header("x-hub-signature-256", signature)
            .body(push.clone())
    };
    let resp = signed(sign_webhook(SECRET, &push)).send().await.unwrap();
    let (status, body) = read("POST", "/github/webhook", resp).await;
    assert_eq!(status, 202, "{body}");
    let resp = signed(sign_webhook("another-secret", &push))
        .send()
        .await
        .unwrap();
    let (status, body) = read("POST", "/github/webhook", resp).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (401, Some("invalid_signature"))
    );
}

/// `syncplane serve` as a process: configuration validated at start (one line naming the
/// setting), then it prints its address and answers.
#[tokio::test]
async fn the_serve_command_validates_its_configuration_then_serves() {
    let w = World::new().await;
    let mut vars = w.gh.app_env(w.installation);
    vars.extend([
        ("DATABASE_URL", w.db.url().expose().to_owned()),
        ("SYNC_API_TOKEN", TOKEN.to_owned()),
        ("GITHUB_WEBHOOK_SECRET", SECRET.to_owned()),
    ]);
    let vars: Vec<(String, String)> = vars.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();

    let mut queued = vars.clone();
    queued.extend([
        ("JOBS_BACKEND".to_owned(), "sqs".to_owned()),
        (
            "SQS_QUEUE_URL".to_owned(),
            "http://127.0.0.1:1/q".to_owned(),
        ),
    ]);
    let refused = syncplane_tests::processes::run("syncplane", &["serve"], &queued).await;
    assert_eq!(
        refused.status.and_then(|s| s.code()),
        Some(1),
        "{refused:?}"
    );
    assert!(
        refused.stderr.contains("JOBS_BACKEND"),
        "{}",
        refused.stderr
    );

    let mut child = Command::new(syncplane_tests::processes::workspace_bin("syncplane"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env_clear()
        .envs(vars)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let base = first
        .trim()
        .strip_prefix("syncplane serve: listening on ")
        .unwrap_or_else(|| panic!("the first line names the address: {first:?}"))
        .to_owned();
    let resp = reqwest::Client::new()
        .get(format!("{base}/lambda-url/sync-api/api/sync/runs"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 200);
}

/// Issue 12 §4: with the scheduler off (the local default), `syncplane serve` still reaps dead
/// runs on the scheduler's cadence (the first pass at start).
#[tokio::test]
async fn serve_reaps_a_dead_run_with_the_scheduler_off() {
    let w = World::new().await;
    let dead: i64 = sqlx::query_scalar(
        "INSERT INTO sync_runs (trigger, status, lock_key, started_at)
         VALUES ('manual', 'running', 4242, now() - interval '5 minutes') RETURNING id",
    )
    .fetch_one(&w.db.pool)
    .await
    .unwrap();
    let mut vars = w.gh.app_env(w.installation);
    vars.extend([
        ("DATABASE_URL", w.db.url().expose().to_owned()),
        ("SYNC_API_TOKEN", TOKEN.to_owned()),
        ("GITHUB_WEBHOOK_SECRET", SECRET.to_owned()),
        ("SYNC_SCHEDULER", "0".to_owned()),
    ]);
    let mut child = Command::new(syncplane_tests::processes::workspace_bin("syncplane"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env_clear()
        .envs(vars)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = String::new();
    for _ in 0..100 {
        status = sqlx::query_scalar("SELECT status FROM sync_runs WHERE id = $1")
            .bind(dead)
            .fetch_one(&w.db.pool)
            .await
            .unwrap();
        if status != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, "failed", "the dead run is reaped");
}
