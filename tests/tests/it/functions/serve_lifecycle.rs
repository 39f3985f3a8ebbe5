//! Issue 21 points 4 to 6: the real `syncplane serve` process from start to stop. A database that
//! does not answer is said at start (one line: setting, host, port, cause, what to do; never the
//! password) and the server serves anyway, answering 503 `database_unreachable` within seconds;
//! SIGINT and SIGTERM stop it gracefully with status 0, SIGINT also when the process was started
//! with it ignored, as a shell starts a background job; a local run without a GitHub App says once
//! what that means for the upkeep instead of a failure every minute; and `syncplane migrate`
//! (run before every local start) logs no notice about the migrations table.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use syncplane_tests::db::TestDb;
use syncplane_tests::processes::workspace_bin;

/// A running `syncplane serve` with its base URL and everything it wrote to stderr so far.
struct Served {
    child: Child,
    base: String,
    stderr: Arc<Mutex<String>>,
    /// Reads stderr until the process closes it: joined once the process exited, so what it
    /// wrote last is in `stderr` before a test reads it.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    /// `syncplane serve` on a free loopback port with exactly `vars`; with `sigint_ignored`, it
    /// is started as a shell starts a background job: SIGINT ignored, kept across `exec`.
    fn start(vars: &[(&str, String)], sigint_ignored: bool) -> Self {
        let bin = workspace_bin("syncplane");
        let mut command = if sigint_ignored {
            let mut sh = Command::new("/bin/sh");
            sh.args(["-c", "trap '' INT; exec \"$0\" serve --addr 127.0.0.1:0"])
                .arg(&bin);
            sh
        } else {
            let mut direct = Command::new(&bin);
            direct.args(["serve", "--addr", "127.0.0.1:0"]);
            direct
        };
        let mut child = command
            .env_clear()
            .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn syncplane serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        let reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let base = first
            .trim()
            .strip_prefix("syncplane serve: listening on ")
            .unwrap_or_else(|| panic!("the first line names the address: {first:?}"))
            .to_owned();
        Self {
            child,
            base,
            stderr,
            reader: Some(reader),
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Wait (at most 10 s) until stderr contains `needle`; the stderr so far either way.
    async fn stderr_once_it_says(&self, needle: &str) -> String {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let text = self.stderr();
            if text.contains(needle) || Instant::now() > until {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Send `signal` (`INT`, `TERM`) and wait at most `within` for the process to exit.
    async fn stop_with(&mut self, signal: &str, within: Duration) -> Option<ExitStatus> {
        let sent = Command::new("/bin/kill")
            .args(["-s", signal, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -s {signal}");
        let until = Instant::now() + within;
        while Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                if let Some(reader) = self.reader.take() {
                    let _ = reader.join();
                }
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a graceful stop takes at most here: no request is in flight.
const PROMPTLY: Duration = Duration::from_secs(5);

fn vars_for(db: &TestDb) -> Vec<(&'static str, String)> {
    vec![
        ("DATABASE_URL", db.url().expose().to_owned()),
        ("SYNC_API_TOKEN", "lifecycle-token".to_owned()),
    ]
}

async fn get(url: &str, bearer: &str) -> (u16, serde_json::Value, Option<String>) {
    let resp = reqwest::Client::new()
        .get(url)
        .header("authorization", format!("Bearer {bearer}"))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, resp.json().await.unwrap(), retry_after)
}

#[tokio::test]
async fn serve_says_at_start_that_its_database_does_not_answer_and_answers_503_database_unreachable_within_seconds()
 {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let vars = [
        (
            "DATABASE_URL",
            format!("postgres://app:pw-not-shown@127.0.0.1:{port}/docs"),
        ),
        ("SYNC_API_TOKEN", "lifecycle-token".to_owned()),
    ];
    let mut served = Served::start(&vars, false);
    let said = served.stderr_once_it_says("serving anyway").await;
    let line = said
        .lines()
        .find(|l| l.contains("serving anyway"))
        .unwrap_or_else(|| panic!("a start-up line about the database: {said}"));
    for part in [
        &format!("DATABASE_URL: cannot connect to the database at 127.0.0.1:{port}/docs"),
        "refused",
        "check that Postgres runs there",
        "503 database_unreachable",
    ] {
        assert!(line.contains(part), "{part:?} not in {line:?}");
    }

    for (url, path) in [
        (format!("{}/api/repos", served.base), "/api/repos"),
        (
            format!("{}/lambda-url/ingest/api/agent-sessions/hello", served.base),
            "/api/agent-sessions/hello",
        ),
    ] {
        let started = Instant::now();
        let (status, body, retry_after) = get(&url, "lifecycle-token").await;
        let took = started.elapsed();
        syncplane_tests::openapi::check_response("GET", path, status, &body);
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (503, Some("database_unreachable")),
            "{path}: {body}"
        );
        assert_eq!(retry_after.as_deref(), Some("5"), "{path}");
        assert!(
            took < shared::db::ACQUIRE_TIMEOUT + Duration::from_secs(2),
            "{path}: answered after {took:?}"
        );
    }
    let status = served.stop_with("TERM", PROMPTLY).await;
    let stderr = served.stderr();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{stderr}");
    assert!(!stderr.contains("pw-not-shown"), "{stderr}");
}

#[tokio::test]
async fn serve_started_with_sigint_ignored_stops_gracefully_on_sigint_with_status_0() {
    let db = TestDb::new().await;
    let mut served = Served::start(&vars_for(&db), true);
    let (status, body, _) = get(&format!("{}/api/health", served.base), "").await;
    assert_eq!(status, 200, "it serves first: {body}");
    let exit = served.stop_with("INT", PROMPTLY).await;
    let stderr = served.stderr();
    assert_eq!(exit.and_then(|s| s.code()), Some(0), "{exit:?} {stderr}");
    assert!(stderr.contains("SIGINT: stopping"), "{stderr}");
}

#[tokio::test]
async fn serve_stops_gracefully_on_sigterm_with_status_0() {
    let db = TestDb::new().await;
    let mut served = Served::start(&vars_for(&db), false);
    let (status, body, _) = get(&format!("{}/api/health", served.base), "").await;
    assert_eq!(status, 200, "it serves first: {body}");
    let exit = served.stop_with("TERM", PROMPTLY).await;
    let stderr = served.stderr();
    assert_eq!(exit.and_then(|s| s.code()), Some(0), "{exit:?} {stderr}");
    assert!(stderr.contains("SIGTERM: stopping"), "{stderr}");
}

#[tokio::test]
async fn serve_without_a_github_app_says_once_at_start_that_it_reaps_but_does_not_drain() {
    let db = TestDb::new().await;
    let mut served = Served::start(&vars_for(&db), false);
    let said = served
        .stderr_once_it_says(syncplane_cli::serve::upkeep::NO_APP)
        .await;
    assert_eq!(
        said.matches(syncplane_cli::serve::upkeep::NO_APP).count(),
        1,
        "{said}"
    );
    assert!(!said.contains("reap and drain failed"), "{said}");
    served.stop_with("TERM", PROMPTLY).await;
}

#[tokio::test]
async fn migrate_on_a_current_schema_logs_no_notice_about_the_migrations_table() {
    let db = TestDb::new().await;
    let vars: Vec<(String, String)> = [
        ("DATABASE_URL", db.url().expose().to_owned()),
        ("RUST_LOG", "info".to_owned()),
    ]
    .map(|(k, v)| (k.to_owned(), v))
    .to_vec();
    let out = syncplane_tests::processes::run("syncplane", &["migrate"], &vars).await;
    assert_eq!(out.status.and_then(|s| s.code()), Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("0 new"), "{}", out.stdout);
    assert!(
        !out.stderr.contains("_sqlx_migrations") && !out.stderr.contains("already exists"),
        "{}",
        out.stderr
    );
}
