//! Full runs and the removal rule: every removal signal removes; every non-signal removes
//! nothing; run-stopping errors stop the run.

use std::time::Duration;

use shared::sync::full::sync_all;
use shared::sync::removal;
use shared::sync::runs::{RunStatus, Trigger};
use syncplane_tests::fake_github::{Endpoint, Fault};

use crate::engine::World;

async fn world_with(names: &[&str]) -> (World, Vec<u64>) {
    let w = World::new().await;
    let ids = names
        .iter()
        .map(|n| w.repo(n, &[("docs/a.md", "# A"), ("README.md", "# R")]))
        .collect();
    (w, ids)
}

fn sorted(mut ids: Vec<u64>) -> Vec<i64> {
    ids.sort();
    ids.into_iter().map(|i| i as i64).collect()
}

#[tokio::test]
async fn a_full_run_lists_narrows_syncs_each_and_records_the_run() {
    let (mut w, ids) = world_with(&["acme/a", "acme/b", "acme/skip"]).await;
    w.config =
        shared::config::parse_sync_config("SYNC_CONFIG", r#"{"exclude":["acme/skip"]}"#).unwrap();
    let report = sync_all(&w.ws(), Trigger::Manual).await.unwrap();
    assert_eq!(report.status, RunStatus::Success);
    assert_eq!(report.counts.repos_synced, 2);
    assert_eq!(report.counts.docs_added, 2);
    assert_eq!(
        w.repo_ids().await,
        sorted(ids[..2].to_vec()),
        "excluded repository never stored"
    );
    let runs = w.runs().await;
    assert_eq!(
        runs,
        [("manual".to_owned(), None, "success".to_owned(), None)]
    );

    // A no-op run: one GraphQL query lists the repositories with their heads (issue 23; was the
    // REST listing plus a batched head check, and before issue 10 one REST head check per
    // repository), and no content writes.
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.counts.repos_unchanged, 2);
    assert_eq!(w.gh.count(Endpoint::InstallationRepos), 0);
    assert_eq!(w.gh.count(Endpoint::Graphql), 1);
    assert_eq!(w.gh.count(Endpoint::Branch), 0);
    assert_eq!(w.gh.total_requests(), 1, "{:?}", w.gh.requests());
    assert_eq!(report.counts.github_requests, 1);
}

#[tokio::test]
async fn every_removal_signal_removes() {
    let (mut w, ids) = world_with(&[
        "acme/gone",
        "acme/archived",
        "acme/dropped",
        "acme/excluded",
        "acme/kept",
    ])
    .await;
    sync_all(&w.ws(), Trigger::Manual).await.unwrap();
    assert_eq!(w.repo_ids().await.len(), 5);

    w.gh.remove_from_installation("acme/gone");
    w.gh.set_archived("acme/archived", true);
    w.config = shared::config::parse_sync_config(
        "SYNC_CONFIG",
        r#"{"repos":["acme/gone","acme/archived","acme/excluded","acme/kept"],"exclude":["acme/excluded"]}"#,
    )
    .unwrap();
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.counts.repos_removed, 4);
    assert_eq!(
        w.gh.count(Endpoint::InstallationRepos),
        2,
        "absence is confirmed by a second listing: {:?}",
        w.gh.requests()
    );
    assert_eq!(w.repo_ids().await, sorted(vec![ids[4]]));
    let docs: i64 = sqlx::query_scalar("SELECT count(*) FROM documents")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(docs, 1, "the delete cascades to documents");

    // Unarchiving brings it back on the next sync.
    w.gh.set_archived("acme/archived", false);
    sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert!(w.repo_ids().await.contains(&(ids[1] as i64)));
}

#[tokio::test]
async fn a_repository_missing_from_one_listing_only_is_kept() {
    let (w, ids) = world_with(&["acme/a", "acme/b"]).await;
    sync_all(&w.ws(), Trigger::Manual).await.unwrap();
    // The first listing missed acme/b (the set shifted between pages); the second has it.
    let first: Vec<_> = w
        .client
        .list_installation_repos()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.name == "a")
        .collect();
    let listed_at = chrono::Utc::now();
    let removed = removal::apply_after_listing(&w.db.pool, &w.client, &w.config, &first, listed_at)
        .await
        .unwrap();
    assert_eq!(removed, 0);
    assert_eq!(w.repo_ids().await, sorted(ids));
}

#[tokio::test]
async fn a_repository_written_after_the_listing_survives_its_delete() {
    let (w, ids) = world_with(&["acme/a", "acme/b"]).await;
    sync_all(&w.ws(), Trigger::Manual).await.unwrap();
    let listing = w.client.list_installation_repos().await.unwrap();
    let listed_at: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT clock_timestamp()")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    // acme/b is removed upstream, but a concurrent sync writes its row after the listing.
    w.gh.remove_from_installation("acme/b");
    sqlx::query("UPDATE repos SET updated_at = clock_timestamp() WHERE github_id = $1")
        .bind(ids[1] as i64)
        .execute(&w.db.pool)
        .await
        .unwrap();
    let stale: Vec<_> = listing.into_iter().filter(|r| r.name == "a").collect();
    let removed = removal::apply_after_listing(&w.db.pool, &w.client, &w.config, &stale, listed_at)
        .await
        .unwrap();
    assert_eq!(
        removed, 0,
        "written after the listing: not removed on stale information"
    );
    // A marker newer than the listing (rediscovered) protects it the same way.
    sqlx::query("UPDATE repos SET updated_at = $2 - interval '1 second', sync_requested_at = clock_timestamp() WHERE github_id = $1")
        .bind(ids[1] as i64)
        .bind(listed_at)
        .execute(&w.db.pool)
        .await
        .unwrap();
    let removed = removal::apply_after_listing(&w.db.pool, &w.client, &w.config, &stale, listed_at)
        .await
        .unwrap();
    assert_eq!(removed, 0);
    assert_eq!(w.repo_ids().await, sorted(ids));
}

#[tokio::test]
async fn no_non_signal_removes_anything() {
    let (w, ids) = world_with(&["acme/a", "acme/b"]).await;
    sync_all(&w.ws(), Trigger::Manual).await.unwrap();
    for name in ["acme/a", "acme/b"] {
        w.gh.push(
            name,
            &[syncplane_tests::fake_github::Change::Put(
                "docs/n.md".into(),
                b"# N".to_vec(),
            )],
        );
    }

    // A failed listing (GraphQL's fails, then REST's).
    w.gh.fault(Endpoint::Graphql, Fault::Status(502), None);
    w.gh.fault(Endpoint::InstallationRepos, Fault::Status(502), None);
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.status, RunStatus::Failed);
    w.gh.clear_faults();
    // A listing whose second page fails (partial) - small pages so there are two.
    for i in 0..120 {
        w.repo(&format!("acme/extra{i:03}"), &[]);
    }
    w.gh.fault(Endpoint::Graphql, Fault::Status(502), None);
    w.gh.fault_on_path("page=2", Fault::Status(500), None);
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(
        report.status,
        RunStatus::Failed,
        "a partial listing fails the run"
    );
    w.gh.clear_faults();
    // A transient 404 on the branch, and a failed tree fetch.
    w.gh.fault(Endpoint::Branch, Fault::Status(404), Some(1));
    w.gh.fault(Endpoint::Tree, Fault::Status(500), None);
    let report = sync_all(
        &w.ws_with(
            shared::config::parse_sync_config("SYNC_CONFIG", r#"{"repos":["acme/a","acme/b"]}"#)
                .unwrap(),
        ),
        Trigger::Schedule,
    )
    .await
    .unwrap();
    assert_eq!(report.status, RunStatus::Partial);
    assert_eq!(report.counts.repos_failed, 2);
    assert_eq!(report.counts.repos_removed, 0);
    assert_eq!(w.repo_ids().await, sorted(ids));
    let docs: i64 = sqlx::query_scalar("SELECT count(*) FROM documents")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(docs, 2, "content kept");
}

#[tokio::test]
async fn a_suspended_installation_keeps_all_content_and_marks_every_repository_error() {
    let (w, ids) = world_with(&["acme/a", "acme/b"]).await;
    sync_all(&w.ws(), Trigger::Manual).await.unwrap();
    w.gh.set_suspended(w.installation, true);
    // The cached token is refused once the installation is suspended; a fresh exchange is refused too.
    let client = crate::engine::client_for(&w.gh, w.installation, 0);
    let mut ws = w.ws();
    ws.client = client;
    let report = sync_all(&ws, Trigger::Schedule).await.unwrap();
    assert_eq!(report.status, RunStatus::Failed);
    assert_eq!(report.error.as_deref(), Some("installation_unavailable"));
    let rows: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT sync_status, sync_error_code FROM repos ORDER BY github_id")
            .fetch_all(&w.db.pool)
            .await
            .unwrap();
    assert_eq!(
        rows,
        vec![
            (
                "error".to_owned(),
                Some("installation_unavailable".to_owned())
            );
            2
        ]
    );
    assert_eq!(w.repo_ids().await, sorted(ids));
    let docs: i64 = sqlx::query_scalar("SELECT count(*) FROM documents")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(docs, 2);
}

#[tokio::test]
async fn a_run_stopping_error_stops_the_whole_run() {
    let (w, _) = world_with(&["acme/a", "acme/b", "acme/c"]).await;
    w.gh.fault(
        Endpoint::Tree,
        Fault::PrimaryRateLimit {
            reset_in: Duration::from_secs(3600),
        },
        None,
    );
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.status, RunStatus::Failed);
    assert_eq!(report.error.as_deref(), Some("rate_limited"));
    assert_eq!(
        w.gh.count(Endpoint::Tree),
        1,
        "the remaining repositories are not attempted"
    );
}
