//! Two syncs of one repository never overlap; a request that finds it busy is never lost.

use std::sync::Arc;
use std::time::Duration;

use shared::sync::coalescing::{NoRowBusy, RequestOutcome, request_sync};
use shared::sync::runs::Trigger;
use syncplane_tests::fake_github::{Change, Endpoint};
use tokio::sync::Barrier;

use crate::engine::World;

fn put(path: &str, content: &str) -> Change {
    Change::Put(path.to_owned(), content.as_bytes().to_vec())
}

#[tokio::test]
async fn two_syncs_of_one_repository_never_overlap() {
    let w = World::new().await;
    w.repo("acme/a", &[("docs/a.md", "# A")]);
    let info = w.info("acme/a").await;
    let ws = w.ws();
    // First sync creates the row, so every later request can hold a marker.
    request_sync(&ws, &info, Trigger::Manual, NoRowBusy::Refuse)
        .await
        .unwrap();
    w.gh.push("acme/a", &[put("docs/b.md", "# B")]);
    w.gh.set_latency(Duration::from_millis(40));
    w.gh.reset_log();

    const CALLERS: usize = 8;
    let barrier = Arc::new(Barrier::new(CALLERS));
    let mut tasks = Vec::new();
    for i in 0..CALLERS {
        let (ws, info, barrier, gh) = (ws.clone(), info.clone(), barrier.clone(), w.gh.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            if i % 3 == 0 {
                // Pushes land while syncs run: coalesced requests must still see them.
                gh.push("acme/a", &[put(&format!("docs/p{i}.md"), "# P")]);
            }
            request_sync(&ws, &info, Trigger::Webhook, NoRowBusy::RetryWithBackoff)
                .await
                .unwrap()
        }));
    }
    let mut synced = 0;
    for t in tasks {
        match t.await.unwrap() {
            RequestOutcome::Synced { passes, .. } => {
                assert!(passes <= 5, "at most 5 passes per call, got {passes}");
                synced += 1;
            }
            RequestOutcome::Coalesced => {}
            RequestOutcome::Busy => panic!("a repository with a row is never busy"),
        }
    }
    assert!(synced >= 1);
    assert_eq!(
        w.gh.max_in_flight(Endpoint::Graphql),
        1,
        "no two head reads (a webhook's GraphQL probe) of the repository at once: the syncs never overlapped"
    );
    assert_eq!(w.gh.max_in_flight(Endpoint::Tree), 1);
    // Nothing lost: every pushed file is stored and no marker is left waiting.
    assert_eq!(
        w.doc_paths("acme/a").await,
        [
            "docs/a.md",
            "docs/b.md",
            "docs/p0.md",
            "docs/p3.md",
            "docs/p6.md"
        ]
    );
    let info_id = info.github_id as u64;
    assert!(
        !w.marker(info_id).await,
        "the marker is cleared once a pass covers it"
    );
}

#[tokio::test]
async fn a_push_after_pass_one_fetched_its_tree_is_synced_by_pass_two() {
    let w = World::new().await;
    w.repo("acme/a", &[("docs/a.md", "# A")]);
    let info = w.info("acme/a").await;
    let ws = w.ws();
    request_sync(&ws, &info, Trigger::Manual, NoRowBusy::Refuse)
        .await
        .unwrap();
    w.gh.push("acme/a", &[put("docs/b.md", "# B")]);
    w.gh.reset_log();
    w.gh.set_latency(Duration::from_millis(150));

    let (ws_a, info_a) = (ws.clone(), info.clone());
    let a = tokio::spawn(async move {
        request_sync(
            &ws_a,
            &info_a,
            Trigger::Webhook,
            NoRowBusy::RetryWithBackoff,
        )
        .await
    });
    // Wait until pass one has fetched its tree, then push and request again (request B).
    while w.gh.count(Endpoint::Tree) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    w.gh.push("acme/a", &[put("docs/c.md", "# C")]);
    let b = request_sync(&ws, &info, Trigger::Webhook, NoRowBusy::RetryWithBackoff)
        .await
        .unwrap();
    assert_eq!(b, RequestOutcome::Coalesced, "B finds the lock busy");

    match a.await.unwrap().unwrap() {
        RequestOutcome::Synced { passes, .. } => assert_eq!(passes, 2, "A runs pass two for B"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        w.doc_paths("acme/a").await,
        ["docs/a.md", "docs/b.md", "docs/c.md"]
    );
}

#[tokio::test]
async fn a_busy_repository_with_no_row_answers_busy_to_the_manual_api_and_retries_for_webhooks() {
    let w = World::new().await;
    w.repo("acme/a", &[("docs/a.md", "# A")]);
    let info = w.info("acme/a").await;
    let ws = w.ws();
    // Someone else holds the repository's lock and the row does not exist yet.
    let held = shared::sync::lock::HeldLock::try_acquire(
        &w.db.pool,
        shared::sync::lock::repo_key(info.github_id),
    )
    .await
    .unwrap()
    .unwrap();
    let manual = request_sync(&ws, &info, Trigger::Manual, NoRowBusy::Refuse)
        .await
        .unwrap();
    assert_eq!(manual, RequestOutcome::Busy, "the manual API answers 409");

    // A webhook request retries with backoff and gets through once the holder lets go.
    let (ws2, info2) = (ws.clone(), info.clone());
    let webhook = tokio::spawn(async move {
        request_sync(&ws2, &info2, Trigger::Webhook, NoRowBusy::RetryWithBackoff).await
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    held.release().await;
    assert!(matches!(
        webhook.await.unwrap().unwrap(),
        RequestOutcome::Synced { .. }
    ));

    // With the holder never letting go, the retries are bounded.
    let held =
        shared::sync::lock::HeldLock::try_acquire(&w.db.pool, shared::sync::lock::repo_key(999))
            .await
            .unwrap()
            .unwrap();
    let mut ghost = info.clone();
    ghost.github_id = 999;
    let started = std::time::Instant::now();
    let out = request_sync(&ws, &ghost, Trigger::Webhook, NoRowBusy::RetryWithBackoff)
        .await
        .unwrap();
    assert_eq!(out, RequestOutcome::Busy);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded backoff"
    );
    held.release().await;
}

#[tokio::test]
async fn a_failed_pass_leaves_the_marker_for_the_next_trigger() {
    let w = World::new().await;
    let id = w.repo("acme/a", &[("docs/a.md", "# A")]);
    let info = w.info("acme/a").await;
    let ws = w.ws();
    request_sync(&ws, &info, Trigger::Manual, NoRowBusy::Refuse)
        .await
        .unwrap();
    w.gh.push("acme/a", &[put("docs/b.md", "# B")]);
    w.gh.fault(
        Endpoint::Tree,
        syncplane_tests::fake_github::Fault::PrimaryRateLimit {
            reset_in: Duration::from_secs(3600),
        },
        None,
    );
    let err = request_sync(&ws, &info, Trigger::Webhook, NoRowBusy::RetryWithBackoff).await;
    assert!(err.is_err(), "a run-stopping error surfaces");
    assert!(w.marker(id).await, "the aborted pass leaves the marker");
    let runs = w.runs().await;
    assert_eq!(runs.last().unwrap().2, "failed");
    assert_eq!(runs.last().unwrap().3.as_deref(), Some("rate_limited"));

    w.gh.clear_faults();
    let report = shared::sync::full::drain_sync_requests(&ws, Trigger::Schedule)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        report.counts.repos_synced, 1,
        "the drain picks the marker up"
    );
    assert!(!w.marker(id).await);
    assert_eq!(w.doc_paths("acme/a").await, ["docs/a.md", "docs/b.md"]);
    assert!(
        shared::sync::full::drain_sync_requests(&ws, Trigger::Schedule)
            .await
            .unwrap()
            .is_none(),
        "nothing waits: no run row"
    );
}
