//! The reaper: liveness is the run lock, never the row's status.

use std::time::Duration;

use shared::sync::coalescing::{NoRowBusy, request_sync};
use shared::sync::failure::REAPED_ERROR;
use shared::sync::lock::{HeldLock, repo_key};
use shared::sync::reaper::reap;
use shared::sync::runs::Trigger;

use crate::engine::World;

async fn running_runs(w: &World) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sync_runs WHERE status = 'running'")
        .fetch_one(&w.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_terminated_connection_frees_the_lock_and_the_reaper_fails_the_run_after_the_grace() {
    let w = World::new().await;
    w.repo("acme/a", &[("docs/a.md", "# A")]);
    let info = w.info("acme/a").await;
    w.gh.set_latency(Duration::from_millis(400));
    let (ws, info2) = (w.ws(), info.clone());
    let task =
        tokio::spawn(
            async move { request_sync(&ws, &info2, Trigger::Manual, NoRowBusy::Refuse).await },
        );
    while running_runs(&w).await == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // A live run is never reaped, however old.
    assert_eq!(
        reap(&w.db.pool, Duration::ZERO).await.unwrap(),
        0,
        "the run lock is held"
    );
    assert!(
        HeldLock::try_acquire(&w.db.pool, repo_key(info.github_id))
            .await
            .unwrap()
            .is_none(),
        "the repository is locked mid-sync"
    );

    // The process's connections die (as when Lambda freezes or kills it) and the process with them.
    let run_key: i64 =
        sqlx::query_scalar("SELECT lock_key FROM sync_runs WHERE status = 'running'")
            .fetch_one(&w.db.pool)
            .await
            .unwrap();
    let holders = "SELECT pid FROM pg_locks
         WHERE locktype = 'advisory' AND granted
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND ((classid::bigint << 32) | objid::bigint) = ANY($1)";
    let keys = vec![run_key, repo_key(info.github_id)];
    let pids: Vec<i32> = sqlx::query_scalar(holders)
        .bind(&keys)
        .fetch_all(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(
        pids.len(),
        2,
        "the run lock and the repository lock are held"
    );
    for pid in pids {
        // With a timeout the call returns once the backend has exited (and so released its
        // locks); without one it only signals, and the next check could race the exit.
        sqlx::query("SELECT pg_terminate_backend($1, 5000)")
            .bind(pid)
            .execute(&w.db.pool)
            .await
            .unwrap();
    }
    task.abort();

    let lock = HeldLock::try_acquire(&w.db.pool, repo_key(info.github_id))
        .await
        .unwrap();
    assert!(lock.is_some(), "a lock dies with its connection");
    lock.unwrap().release().await;

    assert_eq!(
        reap(&w.db.pool, Duration::from_secs(3600)).await.unwrap(),
        0,
        "younger than the grace"
    );
    assert_eq!(reap(&w.db.pool, Duration::ZERO).await.unwrap(), 1);
    let (status, error): (String, Option<String>) =
        sqlx::query_as("SELECT status, error FROM sync_runs")
            .fetch_one(&w.db.pool)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), error.as_deref()),
        ("failed", Some(REAPED_ERROR))
    );
}

#[tokio::test]
async fn the_reaper_uses_the_one_minute_grace_by_default() {
    let w = World::new().await;
    // A row left by a dead process 30 seconds ago, and one 2 minutes ago.
    for age in ["30 seconds", "2 minutes"] {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO sync_runs (trigger, lock_key, started_at) VALUES ('schedule', floor(random() * 1e12)::bigint, now() - interval '{age}')"
        )))
        .execute(&w.db.pool)
        .await
        .unwrap();
    }
    let grace = shared::sync::workspace::REAPER_GRACE;
    assert_eq!(grace, Duration::from_secs(60));
    assert_eq!(
        reap(&w.db.pool, grace).await.unwrap(),
        1,
        "only the row past the grace"
    );
    assert_eq!(running_runs(&w).await, 1);
}
