//! The CLI's exit codes, from the real binary: 2 when sessions were set aside, 3 when the lane
//! paused (the token was refused), 4 when it parked (the org's sync policy is off), each with a
//! line on stderr saying what to do; 0 when everything was delivered.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use shared::ingest::provision;
use syncplane_tests::processes::workspace_bin;

use super::support::*;

/// A store directory of `sessions` under `env.dir`, named `name`.
fn store(env: &Env, name: &str, sessions: &[syncplane_agent::LocalSession]) -> PathBuf {
    let dir = env.dir.0.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for s in sessions {
        std::fs::write(
            dir.join(format!("{}.json", s.session_id)),
            serde_json::to_vec(s).unwrap(),
        )
        .unwrap();
    }
    dir
}

/// `syncplane-agent push` over `store` with `token`, waited for off the runtime (the server
/// answering it runs on this test's runtime).
async fn push(env: &Env, store: &Path, token: &str) -> (Option<i32>, serde_json::Value, String) {
    let mut cmd = Command::new(workspace_bin("syncplane-agent"));
    cmd.args(["push", "--store"])
        .arg(store)
        .args([
            "--url",
            &env.server.url(),
            "--target",
            TARGET,
            "--tick-ms",
            "50",
        ])
        .env_clear()
        .env("SYNCPLANE_AGENT_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let Output {
        status,
        stdout,
        stderr,
    } = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap();
    let summary = serde_json::from_slice(&stdout).unwrap_or_default();
    (
        status.code(),
        summary,
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_exits_2_when_sessions_were_set_aside_3_when_paused_and_4_when_parked() {
    let env = env().await;

    // Set aside: a header over the plain-JSON wire cap cannot be chunked (deterministic).
    env.server.advertise_gzip(false);
    let mut big = session("big", 1, "r1", 0);
    big.title = Some("x".repeat(300_000));
    let aside = store(&env, "aside", &[big, session("ok", 2, "r1", 2)]);
    let (code, summary, stderr) = push(&env, &aside, &env.token).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(summary["deadLetters"], 1, "{summary}");
    assert_eq!(summary["counts"]["synced"], 1, "{summary}");
    assert!(stderr.contains("set aside"), "{stderr}");
    env.server.advertise_gzip(true);

    // Paused: the token is refused at hello.
    let paused = store(&env, "paused", &[session("p1", 1, "r1", 1)]);
    let (code, summary, stderr) = push(&env, &paused, "spd_not-a-real-token").await;
    assert_eq!(code, Some(3), "{stderr}");
    assert_eq!(summary["status"], "Paused", "{summary}");
    assert!(stderr.contains("--token"), "{stderr}");

    // Parked: the org turned agent session sync off.
    provision::set_sync_policy(&env.db.pool, env.org, Some(false))
        .await
        .unwrap();
    let parked = store(&env, "parked", &[session("q1", 1, "r1", 1)]);
    let (code, summary, stderr) = push(&env, &parked, &env.token).await;
    assert_eq!(code, Some(4), "{stderr}");
    assert_eq!(summary["status"], "Parked", "{summary}");
    assert!(stderr.contains("feature_disabled"), "{stderr}");

    // Nothing set aside, nothing refused: 0.
    provision::set_sync_policy(&env.db.pool, env.org, Some(true))
        .await
        .unwrap();
    let fine = store(&env, "fine", &[session("f1", 1, "r1", 1)]);
    let (code, summary, stderr) = push(&env, &fine, &env.token).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(summary["deadLetters"], 0, "{summary}");
}
