//! Batched head checks (issue 10, Build 2): drains, and full runs listed over REST, read heads
//! through GraphQL, up to 100 per request (a full run's GraphQL listing carries them, issue 23); only repositories whose head or fingerprint changed (or that must
//! always sync) cost per-repository requests. Every GraphQL fault has a clear outcome: a REST
//! head check for the batch or the affected repository, or a run stopped like a REST rate
//! limit; never a lost or wrong plan.

use std::time::Duration;

use serde_json::json;
use shared::sync::full::{drain_sync_requests, sync_all};
use shared::sync::runs::{RunStatus, Trigger};
use syncplane_tests::fake_github::{Change, Endpoint, Fault, GraphqlFault};

use crate::engine::World;

pub(super) const FILES: &[(&str, &str)] = &[("docs/a.md", "# A\n"), ("README.md", "# R\n")];

/// A world whose repositories have all been synced once.
pub(super) async fn synced_world(names: &[&str]) -> World {
    let w = World::new().await;
    for name in names {
        w.repo(name, FILES);
    }
    let report = sync_all(&w.ws(), Trigger::Manual).await.unwrap();
    assert_eq!(report.counts.repos_synced as usize, names.len());
    w
}

/// The next full run lists over REST (its GraphQL listing fails once), so the heads are read by
/// the batched `nodes(ids:)` check these tests are about (a drain always reads them so).
fn listed_over_rest(w: &World) {
    w.gh.graphql_fault(GraphqlFault::ErrorsWithoutData, Some(1));
}

/// The REST head checks and tree reads of the last run.
fn per_repository_requests(w: &World) -> usize {
    w.gh.count(Endpoint::Branch) + w.gh.count(Endpoint::Tree) + w.gh.count(Endpoint::Commits)
}

#[tokio::test]
async fn an_unchanged_repository_costs_no_per_repository_request_in_a_full_run() {
    let w = synced_world(&["acme/a", "acme/b", "acme/c"]).await;
    let before = w.row_versions().await;
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.status, RunStatus::Success);
    assert_eq!(report.counts.repos_unchanged, 3);
    assert_eq!(per_repository_requests(&w), 0, "{:?}", w.gh.requests());
    assert_eq!(w.gh.count(Endpoint::InstallationRepos), 0);
    assert_eq!(
        w.gh.count(Endpoint::Graphql),
        1,
        "three repositories and their heads in one listing query (issue 23)"
    );
    assert_eq!(w.gh.total_requests(), 1);
    assert_eq!(w.row_versions().await, before, "no row written");
    let c = report.counts;
    assert_eq!(
        (
            c.github_requests,
            c.github_rest_requests,
            c.github_graphql_requests
        ),
        (1, 0, 1)
    );
    assert_eq!((c.github_rest_units, c.github_graphql_points), (0, 1));
}

#[tokio::test]
async fn only_a_repository_whose_head_moved_goes_on_to_per_repository_work() {
    let w = synced_world(&["acme/a", "acme/b", "acme/c"]).await;
    w.gh.push(
        "acme/b",
        &[Change::Put("docs/new.md".into(), b"# New\n".to_vec())],
    );
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(
        (report.counts.repos_synced, report.counts.repos_unchanged),
        (1, 2)
    );
    // The pass starts from the head the GraphQL batch read (issue 23): no REST head check.
    assert_eq!(w.gh.count(Endpoint::Branch), 0, "{:?}", w.gh.requests());
    // The plan reads the root one level, then only the docs folder that changed.
    assert_eq!(w.gh.count(Endpoint::Tree), 2);
    assert_eq!(w.doc_paths("acme/b").await, ["docs/a.md", "docs/new.md"]);
    assert_eq!(
        w.repo_row("acme/b").await.tree_sha,
        w.gh.head_tree("acme/b"),
        "the new head is recorded"
    );
}

#[tokio::test]
async fn a_marker_set_after_the_batch_read_the_heads_survives_a_pass_from_the_known_head() {
    use shared::sync::coalescing::run_passes;
    use shared::sync::head_batch::{Scope, triage};
    use shared::sync::lock::{HeldLock, repo_key};
    use shared::sync::repository::HeadRead;
    let w = synced_world(&["acme/a"]).await;
    w.gh.push(
        "acme/a",
        &[Change::Put("docs/b.md".into(), b"# B\n".to_vec())],
    );
    let ws = w.ws();
    let listing = ws.client.list_installation_repos().await.unwrap();
    let t = triage(&ws, listing, Scope::FullRun, &Default::default())
        .await
        .unwrap();
    let repo = t.to_sync[0].clone();
    let known = t.known_head(&repo).expect("the batch read a head");
    // Another push and its webhook's marker, after the batch's read.
    w.gh.push(
        "acme/a",
        &[Change::Put("docs/c.md".into(), b"# C\n".to_vec())],
    );
    sqlx::query("UPDATE repos SET sync_requested_at = clock_timestamp()")
        .execute(&w.db.pool)
        .await
        .unwrap();
    w.gh.reset_log();
    let lock = HeldLock::try_acquire(&ws.pool, repo_key(repo.github_id))
        .await
        .unwrap()
        .unwrap();
    let mut counts = shared::sync::runs::RunCounts::default();
    let passes = run_passes(&ws, &repo, lock, &mut counts, None, HeadRead::Known(known))
        .await
        .unwrap();
    assert_eq!(passes, 2, "the marker asked for a second pass");
    assert_eq!(
        w.gh.count(Endpoint::Branch),
        1,
        "the second pass reads the head itself"
    );
    assert_eq!(
        w.doc_paths("acme/a").await,
        ["docs/a.md", "docs/b.md", "docs/c.md"]
    );
}

#[tokio::test]
async fn heads_are_read_100_repositories_per_request() {
    let names: Vec<String> = (0..205).map(|i| format!("acme/r{i:03}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let w = synced_world(&refs).await;
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.counts.repos_unchanged, 205);
    assert_eq!(w.gh.count(Endpoint::Graphql), 3, "100 + 100 + 5");
    assert_eq!(per_repository_requests(&w), 0);
}

#[tokio::test]
async fn a_config_change_an_error_a_marker_or_no_row_always_syncs() {
    let mut w = synced_world(&["acme/errored", "acme/marked", "acme/same"]).await;
    w.repo("acme/new", FILES);
    sqlx::query("UPDATE repos SET sync_status = 'error', sync_error_code = 'x', sync_error = 'x' WHERE name = 'errored'")
        .execute(&w.db.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE repos SET sync_requested_at = now() WHERE name = 'marked'")
        .execute(&w.db.pool)
        .await
        .unwrap();
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(
        w.gh.count(Endpoint::Branch),
        3,
        "errored, marked and new are checked over REST; only acme/same is not: {:?}",
        w.gh.requests()
    );
    // The REST check finds errored and marked unchanged (a 304), and syncs the new one.
    assert_eq!(
        (report.counts.repos_unchanged, report.counts.repos_synced),
        (3, 1)
    );
    assert_eq!(w.repo_row("acme/errored").await.sync_status, "ok");
    let marked: bool =
        sqlx::query_scalar("SELECT sync_requested_at IS NOT NULL FROM repos WHERE name = 'marked'")
            .fetch_one(&w.db.pool)
            .await
            .unwrap();
    assert!(!marked, "the marker was served by its pass");

    // A selection setting changes the fingerprint: every repository re-plans.
    w.config =
        shared::config::parse_sync_config("SYNC_CONFIG", r#"{"limits":{"maxFileBytes":1000}}"#)
            .unwrap();
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.counts.repos_unchanged, 0);
    assert_eq!(
        w.gh.count(Endpoint::Graphql),
        1,
        "the listing only: no head to ask about"
    );
    // Same trees: each re-plans from the listings it stored (the new fingerprint's plan), no
    // tree is read again.
    assert_eq!(w.gh.count(Endpoint::Tree), 0);
}

#[tokio::test]
async fn metadata_moves_without_a_github_request_when_the_head_did_not() {
    let w = synced_world(&["acme/a", "acme/b"]).await;
    w.gh.set_description("acme/a", Some("The A handbook"));
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.counts.repos_unchanged, 2);
    assert_eq!(per_repository_requests(&w), 0);
    let description: Option<String> =
        sqlx::query_scalar("SELECT description FROM repos WHERE name = 'a'")
            .fetch_one(&w.db.pool)
            .await
            .unwrap();
    assert_eq!(description.as_deref(), Some("The A handbook"));
}

#[tokio::test]
async fn a_graphql_failure_falls_back_to_rest_head_checks_for_the_batch() {
    for (what, arm) in [("HTTP 502", 0), ("errors without data", 1)] {
        let w = synced_world(&["acme/a", "acme/b"]).await;
        w.gh.push(
            "acme/b",
            &[Change::Put("docs/b.md".into(), b"# B\n".to_vec())],
        );
        match arm {
            0 => w.gh.fault(Endpoint::Graphql, Fault::Status(502), None),
            _ => w.gh.graphql_fault(GraphqlFault::ErrorsWithoutData, None),
        }
        w.gh.reset_log();
        let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
        assert_eq!(report.status, RunStatus::Success, "{what}");
        assert_eq!(
            w.gh.count(Endpoint::Branch),
            2,
            "{what}: both checked over REST"
        );
        assert_eq!(
            (report.counts.repos_unchanged, report.counts.repos_synced),
            (1, 1),
            "{what}"
        );
        assert_eq!(
            w.doc_paths("acme/b").await,
            ["docs/a.md", "docs/b.md"],
            "{what}"
        );
    }
}

#[tokio::test]
async fn partial_data_another_type_or_bad_oids_fall_back_for_that_repository_only() {
    let bad_oid = json!({"__typename": "Repository", "databaseId": 0, "defaultBranchRef": {"name": "main",
        "target": {"__typename": "Commit", "oid": "not-hex", "tree": {"oid": "x"}}}});
    for (what, fault) in [
        ("partial data", GraphqlFault::PartialData { index: 1 }),
        (
            "another type",
            GraphqlFault::ReplaceNode {
                index: 1,
                node: json!({"__typename": "Issue", "id": "I_1"}),
            },
        ),
        (
            "bad oids",
            GraphqlFault::ReplaceNode {
                index: 1,
                node: bad_oid.clone(),
            },
        ),
    ] {
        let w = synced_world(&["acme/a", "acme/b", "acme/c"]).await;
        let before = w.contents().await;
        listed_over_rest(&w);
        w.gh.graphql_fault(fault, None);
        w.gh.reset_log();
        let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
        assert_eq!(report.status, RunStatus::Success, "{what}");
        assert_eq!(
            w.gh.count(Endpoint::Branch),
            1,
            "{what}: only the affected repository"
        );
        assert_eq!(
            report.counts.repos_unchanged, 3,
            "{what}: REST confirms it unchanged"
        );
        assert_eq!(w.contents().await, before, "{what}: nothing lost");
    }
}

#[tokio::test]
async fn a_repository_graphql_cannot_resolve_is_a_transient_404_never_a_removal() {
    let w = synced_world(&["acme/a", "acme/b"]).await;
    let before = w.contents().await;
    // GraphQL cannot resolve acme/b, and its REST head check 404s too (transiently).
    listed_over_rest(&w);
    w.gh.graphql_fault(GraphqlFault::NotFound { index: 1 }, Some(1));
    w.gh.fault_on_path("/repos/acme/b/branches", Fault::Status(404), Some(1));
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.status, RunStatus::Partial);
    assert_eq!(
        (report.counts.repos_failed, report.counts.repos_removed),
        (1, 0)
    );
    assert_eq!(
        w.repo_row("acme/b").await.sync_error_code.as_deref(),
        Some("not_found")
    );
    assert_eq!(w.contents().await, before, "content kept");

    // Next run: the repository is back to normal and is synced (its status was error).
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.status, RunStatus::Success);
    assert_eq!(w.repo_row("acme/b").await.sync_status, "ok");
    assert_eq!(w.gh.count(Endpoint::Branch), 1);
}

#[tokio::test]
async fn a_graphql_rate_limit_stops_the_run_like_a_rest_one() {
    for kind in ["RATE_LIMITED", "RATE_LIMIT"] {
        let w = synced_world(&["acme/a", "acme/b"]).await;
        w.gh.push(
            "acme/a",
            &[Change::Put("docs/n.md".into(), b"# N\n".to_vec())],
        );
        w.gh.graphql_fault(
            GraphqlFault::RateLimited {
                kind,
                reset_in: Duration::from_secs(3600),
            },
            None,
        );
        w.gh.reset_log();
        let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
        assert_eq!(report.status, RunStatus::Failed, "{kind}");
        assert_eq!(report.error.as_deref(), Some("rate_limited"), "{kind}");
        assert_eq!(
            per_repository_requests(&w),
            0,
            "{kind}: the run stopped before any repository"
        );
        assert_eq!(
            w.doc_paths("acme/a").await,
            ["docs/a.md"],
            "{kind}: content kept"
        );
    }
}

#[tokio::test]
async fn a_graphql_rate_limit_within_the_budget_is_waited_out() {
    let w = synced_world(&["acme/a"]).await;
    let mut ws = w.ws();
    ws.client = crate::engine::client_for(&w.gh, w.installation, 5);
    w.gh.graphql_fault(
        GraphqlFault::RateLimited {
            kind: "RATE_LIMITED",
            reset_in: Duration::from_secs(1),
        },
        Some(1),
    );
    w.gh.reset_log();
    let report = sync_all(&ws, Trigger::Schedule).await.unwrap();
    assert_eq!(report.status, RunStatus::Success);
    assert_eq!(report.counts.repos_unchanged, 1);
    assert_eq!(
        w.gh.count(Endpoint::Graphql),
        2,
        "one refused, one after the wait"
    );
}

#[tokio::test]
async fn a_drain_reads_waiting_heads_in_batches_and_only_passes_what_moved() {
    let w = synced_world(&["acme/a", "acme/b"]).await;
    sqlx::query("UPDATE repos SET sync_requested_at = now()")
        .execute(&w.db.pool)
        .await
        .unwrap();
    w.gh.push(
        "acme/b",
        &[Change::Put("docs/b.md".into(), b"# B\n".to_vec())],
    );
    w.gh.reset_log();
    let report = drain_sync_requests(&w.ws(), Trigger::Schedule)
        .await
        .unwrap()
        .expect("something to drain");
    assert_eq!(
        (report.counts.repos_unchanged, report.counts.repos_synced),
        (1, 1)
    );
    assert_eq!(
        w.gh.count(Endpoint::Graphql),
        2,
        "the batch, then acme/b's probe at the head it read (its docs moved)"
    );
    // acme/b's pass starts from the head the batch read: no REST head check at all.
    assert_eq!(w.gh.count(Endpoint::Branch), 0, "{:?}", w.gh.requests());
    assert_eq!(
        w.gh.count(Endpoint::Tree),
        2,
        "the root level and the docs folder of acme/b"
    );
    let waiting: i64 =
        sqlx::query_scalar("SELECT count(*) FROM repos WHERE sync_requested_at IS NOT NULL")
            .fetch_one(&w.db.pool)
            .await
            .unwrap();
    assert_eq!(waiting, 0, "both markers cleared");
}

#[tokio::test]
async fn a_drain_leaves_a_marker_newer_than_its_head_check() {
    let w = synced_world(&["acme/a"]).await;
    // A request that arrives after the head check was taken must still be served later.
    sqlx::query("UPDATE repos SET sync_requested_at = now() + interval '1 hour'")
        .execute(&w.db.pool)
        .await
        .unwrap();
    drain_sync_requests(&w.ws(), Trigger::Schedule)
        .await
        .unwrap();
    let waiting: i64 =
        sqlx::query_scalar("SELECT count(*) FROM repos WHERE sync_requested_at IS NOT NULL")
            .fetch_one(&w.db.pool)
            .await
            .unwrap();
    assert_eq!(waiting, 1);
}

#[tokio::test]
async fn the_graphql_endpoint_can_be_named() {
    let w = synced_world(&["acme/a"]).await;
    let config = shared::config::GithubAppConfig {
        api_url: w.gh.url().parse().unwrap(),
        graphql_url: Some(format!("{}/api/graphql", w.gh.url()).parse().unwrap()),
        app_id: w.gh.app_id(),
        private_key_pem: shared::config::Secret::new(w.gh.private_key_pem()),
        installation_id: w.installation,
        rate_limit_wait_budget_secs: 0,
    };
    let mut ws = w.ws();
    ws.client = shared::github::GithubClient::new(&config).unwrap();
    w.gh.reset_log();
    let report = sync_all(&ws, Trigger::Schedule).await.unwrap();
    assert_eq!(report.counts.repos_unchanged, 1);
    let graphql: Vec<String> =
        w.gh.requests()
            .into_iter()
            .filter(|r| r.endpoint == Endpoint::Graphql)
            .map(|r| r.path)
            .collect();
    assert_eq!(graphql, ["/api/graphql"]);
}
