//! Issue 13 §10, an operator's errors, through the real binaries: an unreachable or missing
//! database is one line naming `DATABASE_URL`, the host and the cause, at once; a junk App key is
//! refused at start naming `GITHUB_APP_PRIVATE_KEY`; function binaries say configuration errors
//! as one human line (not Rust's Debug form); `sync` on an unmigrated database says to run
//! `syncplane migrate`, and `status` does not exit 0 there.

use std::time::{Duration, Instant};

use serde_json::json;
use syncplane_tests::db::TestDb;
use syncplane_tests::processes;

use super::Env;

const FUNCTIONS: [&str; 5] = ["sync-api", "webhook", "ingest", "tick", "worker"];

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A local port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.trim().is_empty()).collect()
}

#[tokio::test]
async fn an_unreachable_database_is_one_line_naming_database_url_the_host_and_the_cause_at_once() {
    let port = closed_port();
    let url = format!("postgres://app:hunter2-secret@127.0.0.1:{port}/docs");
    for command in [
        &["status"][..],
        &["sync"],
        &["ingest", "create-org", "acme"],
    ] {
        let started = Instant::now();
        let out = processes::run("syncplane", command, &vars(&[("DATABASE_URL", &url)])).await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{command:?}: no pool timeout: {:?}",
            started.elapsed()
        );
        assert_eq!(out.status.and_then(|s| s.code()), Some(1), "{command:?}");
        let err = lines(&out.stderr);
        assert_eq!(err.len(), 1, "{command:?}: one line: {}", out.stderr);
        let line = err[0];
        assert!(line.contains("DATABASE_URL"), "{line}");
        assert!(line.contains(&format!("127.0.0.1:{port}/docs")), "{line}");
        assert!(line.to_lowercase().contains("refused"), "the cause: {line}");
        assert_eq!(line.matches("refused").count(), 1, "said once: {line}");
        assert!(!line.contains("hunter2"), "never the password: {line}");
        assert!(out.stdout.is_empty());
    }

    // A database that does not exist on a server that answers: the server's own words.
    let missing = format!("{}_does_not_exist", TestDb::new().await.url().expose());
    let out = processes::run(
        "syncplane",
        &["status"],
        &vars(&[("DATABASE_URL", &missing)]),
    )
    .await;
    assert_eq!(out.status.and_then(|s| s.code()), Some(1));
    let err = lines(&out.stderr);
    assert_eq!(err.len(), 1, "{}", out.stderr);
    assert!(
        err[0].contains("DATABASE_URL") && err[0].contains("does not exist"),
        "{}",
        err[0]
    );
}

#[tokio::test]
async fn a_function_says_once_at_start_that_its_database_does_not_answer() {
    let port = closed_port();
    let url = format!("postgres://app:hunter2-secret@127.0.0.1:{port}/docs");
    let event = json!({
        "version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event", "source": "aws.events", "account": "000000000000",
        "time": "2026-11-30T12:00:00Z", "region": "us-east-1", "resources": [], "detail": {}
    });
    let env = vars(&[("DATABASE_URL", &url), ("SYNC_SCHEDULER", "0")]);
    let inv = processes::invoke("tick", &env, &event).await;
    assert!(
        inv.response.is_some(),
        "it still starts: {}",
        inv.output.stderr
    );
    let said: Vec<&str> = lines(&inv.output.stderr)
        .into_iter()
        .filter(|l| l.contains("cannot connect"))
        .collect();
    assert_eq!(said.len(), 1, "once: {}", inv.output.stderr);
    let line: serde_json::Value = serde_json::from_str(said[0]).expect("a JSON log line");
    let message = line["fields"]["message"].as_str().unwrap();
    assert!(message.starts_with("DATABASE_URL: "), "{message}");
    assert!(
        message.contains(&format!("127.0.0.1:{port}/docs")),
        "{message}"
    );
    assert!(message.to_lowercase().contains("refused"), "{message}");
    assert!(!inv.output.stderr.contains("hunter2"));
}

#[tokio::test]
async fn a_junk_app_key_is_refused_at_start_naming_github_app_private_key_in_one_human_line() {
    let db = TestDb::new().await;
    let url = db.url().expose().to_owned();
    let junk = "-----BEGIN RSA PRIVATE KEY-----\\nbm90IGEga2V5IGF0IGFsbA==\\n-----END RSA PRIVATE KEY-----";
    let env = vars(&[
        ("DATABASE_URL", &url),
        ("GITHUB_APP_ID", "1"),
        ("GITHUB_INSTALLATION_ID", "2"),
        ("GITHUB_APP_PRIVATE_KEY", junk),
    ]);
    for function in FUNCTIONS {
        let inv = processes::invoke(function, &env, &json!({})).await;
        assert_eq!(
            inv.output.status.and_then(|s| s.code()),
            Some(1),
            "{function} exits at start: {}",
            inv.output.stderr
        );
        let err = lines(&inv.output.stderr);
        assert_eq!(err.len(), 1, "{function}: one line: {}", inv.output.stderr);
        assert!(
            err[0].starts_with("configuration error: GITHUB_APP_PRIVATE_KEY: "),
            "{function}: {}",
            err[0]
        );
        assert!(
            !err[0].contains("ConfigError") && !err[0].contains("problem:"),
            "not Debug form: {}",
            err[0]
        );
        assert!(!err[0].contains("bm90"), "never the key");
    }
    let out = processes::run("syncplane", &["status"], &env).await;
    assert_eq!(out.status.and_then(|s| s.code()), Some(2));
    assert!(
        out.stderr
            .trim()
            .starts_with("configuration error: GITHUB_APP_PRIVATE_KEY: "),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_missing_setting_stops_a_function_with_one_human_line() {
    for function in FUNCTIONS {
        let inv = processes::invoke(function, &[], &json!({})).await;
        assert_eq!(
            inv.output.status.and_then(|s| s.code()),
            Some(1),
            "{function}"
        );
        assert_eq!(
            lines(&inv.output.stderr),
            ["configuration error: DATABASE_URL: required (postgres://user@host:port/db)"],
            "{function}"
        );
    }
}

#[tokio::test]
async fn sync_on_an_unmigrated_database_says_to_run_migrate_and_status_does_not_exit_0() {
    let e = Env::new().await;
    let empty = TestDb::empty().await;
    let mut env = e.vars();
    env[0].1 = empty.url().expose().to_owned();
    assert_eq!(env[0].0, "DATABASE_URL");
    for command in [&["sync"][..], &["status"], &["status", "--json"]] {
        let out = processes::run("syncplane", command, &env).await;
        assert_eq!(out.status.and_then(|s| s.code()), Some(1), "{command:?}");
        let err = lines(&out.stderr);
        assert_eq!(err.len(), 1, "{command:?}: {}", out.stderr);
        assert!(
            err[0].contains("schema is behind") && err[0].contains("run `syncplane migrate`"),
            "{}",
            err[0]
        );
        assert!(out.stdout.is_empty(), "{command:?}: {}", out.stdout);
    }
    let out = processes::run("syncplane", &["migrate"], &env).await;
    assert_eq!(out.status.and_then(|s| s.code()), Some(0), "{}", out.stderr);
    let out = processes::run("syncplane", &["status"], &env).await;
    assert_eq!(out.status.and_then(|s| s.code()), Some(0), "{}", out.stderr);
}
