//! §4: without the scheduler (the local default) nothing else reaps or drains, so `syncplane
//! reap`, `syncplane drain` and `syncplane sync` itself do it, as the `sync.reap` and
//! `sync.drain` jobs would.

use std::process::ExitCode;

use shared::sync::lock::{HeldLock, lock_key, repo_key};

use super::Env;

/// A `running` row started `age_secs` ago whose run lock has key `key`.
async fn running_row(e: &Env, key: i64, age_secs: i64) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO sync_runs (trigger, status, lock_key, started_at)
         VALUES ('manual', 'running', $1, now() - make_interval(secs => $2)) RETURNING id",
    )
    .bind(key)
    .bind(age_secs as f64)
    .fetch_one(&e.db.pool)
    .await
    .unwrap()
}

async fn run_state(e: &Env, id: i64) -> (String, Option<String>) {
    sqlx::query_as("SELECT status, error FROM sync_runs WHERE id = $1")
        .bind(id)
        .fetch_one(&e.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn reap_marks_failed_a_dead_run_past_the_grace_and_leaves_live_and_young_runs() {
    let e = Env::new().await;
    let dead = running_row(&e, lock_key("test:", "dead"), 300).await;
    let young = running_row(&e, lock_key("test:", "young"), 0).await;
    let live_key = lock_key("test:", "live");
    let live_lock = HeldLock::try_acquire(&e.db.pool, live_key)
        .await
        .unwrap()
        .unwrap();
    let live = running_row(&e, live_key, 300).await;

    let (code, out) = e.syncplane(&["reap"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert!(out.contains("reaped 1 run(s)"), "{out}");
    assert_eq!(
        run_state(&e, dead).await,
        ("failed".to_owned(), Some("run_lost".to_owned()))
    );
    assert_eq!(run_state(&e, young).await.0, "running", "within the grace");
    assert_eq!(run_state(&e, live).await.0, "running", "its lock is held");

    // Liveness is the lock, never the row: once it is free, the run is dead.
    live_lock.release().await;
    let (_, out) = e.syncplane(&["reap"]).await;
    assert!(out.contains("reaped 1 run(s)"), "{out}");
    assert_eq!(run_state(&e, live).await.0, "failed");
    let (_, out) = e.syncplane(&["reap"]).await;
    assert!(out.contains("no dead runs to reap"), "{out}");
    assert_eq!(
        run_state(&e, young).await.0,
        "running",
        "still within the grace"
    );
}

#[tokio::test]
async fn sync_reaps_dead_runs_before_it_exits() {
    let e = Env::new().await;
    let dead = running_row(&e, lock_key("test:", "dead"), 300).await;
    let (code, out) = e.syncplane(&["sync"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert!(out.contains("reaped 1 run(s)"), "{out}");
    assert_eq!(run_state(&e, dead).await.0, "failed");
}

#[tokio::test]
async fn a_request_coalesced_into_a_holder_at_its_pass_cap_waits_for_the_next_drain() {
    let e = Env::new().await;
    e.synced_then_pushed("acme/handbook", "docs/new.md").await;

    // Another sync holds the repository (it has run its last pass and is finishing).
    let id = e.github_id("acme/handbook").await;
    let holder = HeldLock::try_acquire(&e.db.pool, repo_key(id))
        .await
        .unwrap()
        .unwrap();
    let (code, out) = e.syncplane(&["sync", "--repo", "acme/handbook"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert!(out.contains("acme/handbook coalesced"), "{out}");
    assert!(
        out.contains("if it has already run its 5 passes, the request waits for the next drain"),
        "{out}"
    );
    // The holder ends at its cap without another pass: the marker stays.
    holder.release().await;
    assert!(e.marker_set("acme/handbook").await);

    let (code, out) = e.syncplane(&["drain"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert!(out.contains("drain run #"), "{out}");
    assert!(out.contains("repositories 1 synced"), "{out}");
    assert!(!e.marker_set("acme/handbook").await);
    let stored: i64 =
        sqlx::query_scalar("SELECT count(*) FROM documents WHERE path = 'docs/new.md'")
            .fetch_one(&e.db.pool)
            .await
            .unwrap();
    assert_eq!(stored, 1, "the drained request synced the new document");

    let (_, out) = e.syncplane(&["drain"]).await;
    assert!(out.contains("nothing to drain"), "{out}");
}

#[tokio::test]
async fn sync_of_one_repository_drains_the_other_waiting_markers_before_it_exits() {
    let e = Env::new().await;
    e.synced_then_pushed("acme/widgets", "docs/more.md").await;
    sqlx::query("UPDATE repos SET sync_requested_at = now() WHERE name = 'widgets'")
        .execute(&e.db.pool)
        .await
        .unwrap();

    let (code, out) = e
        .syncplane(&["sync", "--repo", "acme/handbook", "--json"])
        .await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let drained = json
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["result"] == "drained")
        .expect("a drain result");
    assert_eq!(drained["report"]["counts"]["reposSynced"], 1, "{out}");
    assert_eq!(drained["report"]["counts"]["docsAdded"], 1, "{out}");
    assert!(!e.marker_set("acme/widgets").await);
}
