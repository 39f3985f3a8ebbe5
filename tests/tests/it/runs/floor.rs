//! GitHub cost at its floor (issue 23): a full run lists the installation and reads every head in
//! one GraphQL query per 100 repositories (`viewer.repositories`), confirmed against the REST
//! listing's count once a day and abandoned for the REST listing when it is not complete; a
//! repository whose head moved without touching what the plan reads records the new head after
//! one GraphQL probe; a webhook push outside the docs costs that one request.

use shared::metrics::capture;
use shared::sync::coalescing::{NoRowBusy, request_sync};
use shared::sync::full::sync_all;
use shared::sync::runs::{RunStatus, Trigger};
use syncplane_tests::fake_github::{Change, Endpoint, GraphqlFault};

use super::head_checks::{FILES, synced_world};
use crate::engine::World;

/// Requests of the installation listing's REST endpoint: (count probes with `per_page=1`,
/// full listing pages).
fn rest_listing_requests(w: &World) -> (usize, usize) {
    let listing: Vec<_> =
        w.gh.requests()
            .into_iter()
            .filter(|r| r.endpoint == Endpoint::InstallationRepos)
            .collect();
    let counts = listing
        .iter()
        .filter(|r| r.path.contains("per_page=1&") || r.path.ends_with("per_page=1"))
        .count();
    (counts, listing.len() - counts)
}

/// Content rows only (the repository row carries the head, which may move).
fn content(rows: Vec<(String, String, String)>) -> Vec<(String, String, String)> {
    rows.into_iter()
        .filter(|(table, _, _)| table != "repos")
        .collect()
}

#[tokio::test]
async fn a_no_op_full_run_costs_one_graphql_query_per_hundred_repositories_and_nothing_else() {
    let w = World::new().await;
    for i in 0..201 {
        w.repo(&format!("acme/r{i:03}"), FILES);
    }
    let first = sync_all(&w.ws(), Trigger::Manual).await.unwrap();
    assert_eq!(first.counts.repos_synced, 201);
    let before = w.row_versions().await;
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.status, RunStatus::Success);
    assert_eq!(report.counts.repos_unchanged, 201);
    assert_eq!(
        w.gh.count(Endpoint::Graphql),
        3,
        "201 repositories: 3 pages"
    );
    assert_eq!(w.gh.total_requests(), 3, "{:?}", w.gh.requests());
    let c = report.counts;
    assert_eq!((c.github_rest_requests, c.github_rest_units), (0, 0));
    assert_eq!(w.row_versions().await, before, "no row written");
}

#[tokio::test]
async fn the_graphql_listing_is_confirmed_against_the_rest_count_once_a_day_or_when_it_changes() {
    let w = synced_world(&["acme/a", "acme/b"]).await;
    // `synced_world`'s run confirmed the count (one request with per_page=1).
    let confirmed: i64 = sqlx::query_scalar("SELECT total_count FROM listing_checks")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(confirmed, 2);

    w.gh.reset_log();
    sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(rest_listing_requests(&w), (0, 0), "confirmed: no REST");

    sqlx::query("UPDATE listing_checks SET confirmed_at = confirmed_at - interval '25 hours'")
        .execute(&w.db.pool)
        .await
        .unwrap();
    w.gh.reset_log();
    sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(rest_listing_requests(&w), (1, 0), "a day later: one count");

    w.repo("acme/c", FILES);
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(
        rest_listing_requests(&w),
        (1, 0),
        "a new count: confirmed again"
    );
    assert_eq!(
        report.counts.repos_synced, 1,
        "the new repository is synced"
    );
    assert_eq!(w.doc_paths("acme/c").await, ["docs/a.md"]);
}

#[tokio::test]
async fn an_incomplete_viewer_listing_is_noticed_and_the_run_falls_back_and_syncs_every_repository()
{
    let w = World::new().await;
    for name in ["acme/a", "acme/b", "acme/c"] {
        w.repo(name, FILES);
    }
    w.gh.hide_from_viewer_listing("acme/b", true);
    let (report, metrics) = capture(sync_all(&w.ws(), Trigger::Manual)).await;
    let report = report.unwrap();
    assert_eq!(report.status, RunStatus::Success);
    assert_eq!(
        report.counts.repos_synced, 3,
        "every repository, b included"
    );
    assert_eq!(w.doc_paths("acme/b").await, ["docs/a.md"]);
    assert_eq!(
        rest_listing_requests(&w),
        (1, 1),
        "the count, then the listing"
    );
    let fallback = metrics
        .iter()
        .find(|l| l.contains("ListingFallbacks"))
        .expect("the fallback is counted");
    assert!(fallback.contains("\"incomplete\""), "{fallback}");

    // Once confirmed complete, a listing that then leaves a repository out is noticed too: its
    // count is no longer the confirmed one. Nothing is removed.
    w.gh.hide_from_viewer_listing("acme/b", false);
    sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    w.gh.hide_from_viewer_listing("acme/c", true);
    w.gh.push(
        "acme/c",
        &[Change::Put("docs/new.md".into(), b"# New\n".to_vec())],
    );
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(rest_listing_requests(&w), (1, 1));
    assert_eq!(report.counts.repos_removed, 0);
    assert_eq!(report.counts.repos_synced, 1);
    assert_eq!(w.doc_paths("acme/c").await, ["docs/a.md", "docs/new.md"]);
}

#[tokio::test]
async fn a_viewer_listing_that_fails_falls_back_to_the_rest_listing_and_batched_heads() {
    let w = synced_world(&["acme/a", "acme/b"]).await;
    w.gh.graphql_fault(GraphqlFault::ErrorsWithoutData, Some(1));
    w.gh.reset_log();
    let (report, metrics) = capture(sync_all(&w.ws(), Trigger::Schedule)).await;
    let report = report.unwrap();
    assert_eq!(report.status, RunStatus::Success);
    assert_eq!(report.counts.repos_unchanged, 2);
    assert_eq!(rest_listing_requests(&w), (0, 1));
    assert_eq!(
        w.gh.count(Endpoint::Graphql),
        2,
        "the failed listing, then nodes(ids:)"
    );
    assert!(metrics.iter().any(|l| l.contains("\"unusable\"")));
}

#[tokio::test]
async fn a_moved_head_outside_the_docs_in_a_full_run_costs_one_probe_and_no_rest_request() {
    let w = synced_world(&["acme/a", "acme/b"]).await;
    w.gh.push(
        "acme/b",
        &[Change::Put(
            "src/main.rs".into(),
            b"fn main() {}\n".to_vec(),
        )],
    );
    let before = content(w.row_versions().await);
    w.gh.reset_log();
    let report = sync_all(&w.ws(), Trigger::Schedule).await.unwrap();
    assert_eq!(report.status, RunStatus::Success);
    assert_eq!(
        w.gh.count(Endpoint::Graphql),
        2,
        "the listing, then the probe"
    );
    assert_eq!(w.gh.total_requests(), 2, "{:?}", w.gh.requests());
    assert_eq!(report.counts.github_rest_requests, 0);
    assert_eq!(
        content(w.row_versions().await),
        before,
        "no content row written"
    );
    assert_eq!(
        w.repo_row("acme/b").await.tree_sha,
        w.gh.head_tree("acme/b"),
        "the new head is recorded"
    );
}

/// What a webhook push leads to: a request for one repository (the payload names it; no
/// GitHub request to describe it).
async fn push_request(w: &World, full_name: &str) {
    let info = w.info(full_name).await;
    w.gh.reset_log();
    request_sync(
        &w.ws(),
        &info,
        Trigger::Webhook,
        NoRowBusy::RetryWithBackoff,
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_push_outside_the_docs_costs_exactly_one_request_of_at_most_2_kib_and_writes_only_the_head()
 {
    let w = synced_world(&["acme/a"]).await;
    w.gh.push(
        "acme/a",
        &[Change::Put(
            "src/main.rs".into(),
            b"fn main() {}\n".to_vec(),
        )],
    );
    let before = content(w.row_versions().await);
    push_request(&w, "acme/a").await;
    let requests = w.gh.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].endpoint, Endpoint::Graphql);
    assert!(
        requests[0].wire_bytes <= 2048,
        "{} bytes",
        requests[0].wire_bytes
    );
    assert_eq!(content(w.row_versions().await), before);
    assert_eq!(
        w.repo_row("acme/a").await.tree_sha,
        w.gh.head_tree("acme/a")
    );
}

#[tokio::test]
async fn a_push_into_the_docs_is_read_from_the_probes_head_and_synced() {
    let w = synced_world(&["acme/a"]).await;
    w.gh.push(
        "acme/a",
        &[Change::Put("docs/a.md".into(), b"# A changed\n".to_vec())],
    );
    push_request(&w, "acme/a").await;
    assert_eq!(w.gh.count(Endpoint::Graphql), 1);
    assert_eq!(w.gh.count(Endpoint::Branch), 0, "the probe read the head");
    assert_eq!(w.gh.count(Endpoint::Blob), 1, "the changed document only");
    let titles: Vec<String> = sqlx::query_scalar("SELECT title FROM documents")
        .fetch_all(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(titles, ["A changed"]);
}

#[tokio::test]
async fn a_readme_added_in_another_spelling_is_seen_by_the_probe() {
    let w = World::new().await;
    w.repo("acme/a", &[("docs/a.md", "# A\n")]);
    sync_all(&w.ws(), Trigger::Manual).await.unwrap();
    w.gh.push(
        "acme/a",
        &[Change::Put("readme.md".into(), b"# Lower\n".to_vec())],
    );
    push_request(&w, "acme/a").await;
    let readme: Option<String> = sqlx::query_scalar("SELECT path FROM readmes")
        .fetch_optional(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(readme.as_deref(), Some("readme.md"));
}
