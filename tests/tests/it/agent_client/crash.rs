//! The CLI killed mid-backfill and started again: nothing lost, nothing duplicated beyond the
//! one batch that was in flight (whose upsert is idempotent), because the cursor and the whole
//! outbox were persisted before the first ack.

use std::process::Child;
use std::time::{Duration, Instant};

use super::support::*;

const N: usize = 45;

fn push(env: &Env, store: &std::path::Path) -> Child {
    push_command(env, store, &env.token, 100)
        .spawn()
        .expect("spawn syncplane-agent")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_backfill_and_a_restart_lose_and_duplicate_nothing() {
    let env = env().await;
    let sessions: Vec<_> = (0..N)
        .map(|i| session(&format!("s{i:03}"), i as i64, "r1", 5))
        .collect();
    let store = store_dir(&env, "store", &sessions);
    let mut child = push(&env, &store);
    let started = Instant::now();
    while env.server.acked_items().len() < 9 {
        assert!(started.elapsed() < Duration::from_secs(60), "no progress");
        assert!(
            child.try_wait().unwrap().is_none(),
            "exited before the kill"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let before = env.server.acked_items().len();
    assert!(before < N, "killed mid-backfill ({before} of {N})");

    // Waited for off the runtime: the server answering it runs on this test's runtime.
    let second = push(&env, &store);
    let out = tokio::task::spawn_blocking(move || second.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["deadLetters"], 0);
    assert_arrived(&env, &sessions).await;
    let acked = env.server.acked_items();
    assert_eq!(acked.len(), N, "every session");
    let twice: Vec<_> = acked.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.len() <= 3,
        "only the batch in flight at the kill is sent again: {twice:?}"
    );
    assert!(acked.values().all(|n| *n <= 2));
    // The restart resumed from the outbox: every batch after it was the backfill's.
    assert!(
        env.server
            .posts()
            .iter()
            .all(|p| p.mode.as_deref() == Some("backfill"))
    );
}
