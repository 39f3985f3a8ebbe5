//! The CLI's exit codes, from the real binary: 2 when sessions were set aside, 3 when the lane
//! paused (the token was refused), 4 when it parked (the org's sync policy is off), each with a
//! line on stderr saying what to do; 0 when everything was delivered.

use std::path::Path;
use std::process::Output;

use shared::ingest::provision;

use super::support::*;

/// `syncplane-agent push` over `store` with `token`, waited for off the runtime (the server
/// answering it runs on this test's runtime).
async fn push(env: &Env, store: &Path, token: &str) -> (Option<i32>, serde_json::Value, String) {
    let mut cmd = push_command(env, store, token, 50);
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
    let aside = store_dir(&env, "aside", &[big, session("ok", 2, "r1", 2)]);
    let (code, summary, stderr) = push(&env, &aside, &env.token).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(summary["deadLetters"], 1, "{summary}");
    assert_eq!(summary["counts"]["synced"], 1, "{summary}");
    assert!(stderr.contains("set aside"), "{stderr}");
    env.server.advertise_gzip(true);

    // Paused: the token is refused at hello.
    let paused = store_dir(&env, "paused", &[session("p1", 1, "r1", 1)]);
    let (code, summary, stderr) = push(&env, &paused, "spd_not-a-real-token").await;
    assert_eq!(code, Some(3), "{stderr}");
    assert_eq!(summary["status"], "Paused", "{summary}");
    assert!(stderr.contains("--token"), "{stderr}");

    // Parked: the org turned agent session sync off.
    provision::set_sync_policy(&env.db.pool, env.org, Some(false))
        .await
        .unwrap();
    let parked = store_dir(&env, "parked", &[session("q1", 1, "r1", 1)]);
    let (code, summary, stderr) = push(&env, &parked, &env.token).await;
    assert_eq!(code, Some(4), "{stderr}");
    assert_eq!(summary["status"], "Parked", "{summary}");
    assert!(stderr.contains("feature_disabled"), "{stderr}");

    // Nothing set aside, nothing refused: 0.
    provision::set_sync_policy(&env.db.pool, env.org, Some(true))
        .await
        .unwrap();
    let fine = store_dir(&env, "fine", &[session("f1", 1, "r1", 1)]);
    let (code, summary, stderr) = push(&env, &fine, &env.token).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(summary["deadLetters"], 0, "{summary}");
}
