//! Issue 21 points 17 and 18: `syncplane sync --repo` on the fake GitHub, which counts every
//! request. A stored repository is described from its row, so an unchanged one costs the one
//! conditional head check ("an unchanged repository costs one request"); a first sync's lookup is
//! counted in its run; and the summary counts repositories, not passes.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;
use syncplane_tests::fake_github::{Change, Endpoint, Fault};

use super::Env;

async fn sync_repo_json(e: &Env, repo: &str) -> Value {
    let (code, out) = e.syncplane(&["sync", "--repo", repo, "--json"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    let results: Value = serde_json::from_str(&out).expect("JSON output");
    results[0].clone()
}

#[tokio::test]
async fn sync_repo_of_an_unchanged_stored_repository_costs_one_request() {
    let e = Env::new().await;
    // First sight: GitHub describes the repository, and the run counts that request too.
    let first = sync_repo_json(&e, "acme/widgets").await;
    assert_eq!(first["counts"]["reposSynced"], 1, "{first}");
    assert_eq!(e.gh.count(Endpoint::Repo), 1);
    assert_eq!(
        first["counts"]["githubRequests"],
        e.gh.total_requests() as u64,
        "every request of the call is in the summary, the repository lookup included"
    );

    // Unchanged: the stored row stands in for `GET /repos/{owner}/{name}`.
    e.gh.reset_log();
    let again = sync_repo_json(&e, "acme/widgets").await;
    let requests = e.gh.requests();
    assert_eq!(requests.len(), 1, "one request: {requests:?}");
    assert_eq!(
        (requests[0].endpoint, requests[0].status),
        (Endpoint::Branch, 304),
        "the conditional head check, answered 304"
    );
    let counts = &again["counts"];
    assert_eq!(
        (&counts["reposSynced"], &counts["reposUnchanged"]),
        (&Value::from(0), &Value::from(1))
    );
    assert_eq!(counts["githubRequests"], 1);
    assert_eq!(counts["githubRestUnits"], 0, "a 304 spends no rate limit");

    // Any case names the stored repository (GitHub's names are case-insensitive).
    e.gh.reset_log();
    sync_repo_json(&e, "ACME/Widgets").await;
    assert_eq!(e.gh.count(Endpoint::Repo), 0);
    assert_eq!(e.gh.total_requests(), 1);
}

#[tokio::test]
async fn sync_repo_asks_github_again_when_the_stored_repositorys_last_sync_failed() {
    let e = Env::new().await;
    sync_repo_json(&e, "acme/widgets").await;
    // The stored branch answers 404 once (as a deleted default branch would): the repository fails.
    e.gh.fault(Endpoint::Branch, Fault::Status(404), Some(1));
    let (code, out) = e.syncplane(&["sync", "--repo", "acme/widgets"]).await;
    assert_eq!(code, ExitCode::FAILURE, "{out}");
    let status: String = sqlx::query_scalar("SELECT sync_status FROM repos WHERE name = 'widgets'")
        .fetch_one(&e.db.pool)
        .await
        .unwrap();
    assert_eq!(status, "error");
    e.gh.reset_log();
    sync_repo_json(&e, "acme/widgets").await;
    assert_eq!(
        e.gh.count(Endpoint::Repo),
        1,
        "its name, branch or visibility may be what failed"
    );
}

#[tokio::test]
async fn sync_repo_reports_a_repository_synced_in_two_passes_as_one_synced() {
    let e = Env::new().await;
    sync_repo_json(&e, "acme/widgets").await;
    let put = |path: &str| Change::Put(path.to_owned(), b"# New\n".to_vec());
    e.gh.push("acme/widgets", &[put("docs/b.md")]);
    e.gh.reset_log();
    e.gh.set_latency(Duration::from_millis(150));
    // Once pass one has read its tree, another push lands and a request for the repository
    // arrives (the rerun marker a coalesced request leaves): the same call runs pass two.
    let second_request = async {
        while e.gh.count(Endpoint::Tree) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        e.gh.push("acme/widgets", &[put("docs/c.md")]);
        sqlx::query(
            "UPDATE repos SET sync_requested_at = clock_timestamp() WHERE name = 'widgets'",
        )
        .execute(&e.db.pool)
        .await
        .unwrap();
    };
    let ((code, out), ()) = tokio::join!(
        e.syncplane(&["sync", "--repo", "acme/widgets"]),
        second_request
    );
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    let line = out.lines().next().unwrap_or_default();
    assert!(line.contains("after 2 pass(es)"), "{out}");
    assert!(
        line.contains(
            ": repositories 1 synced, 0 unchanged, 0 failed, 0 removed; documents 2 added"
        ),
        "one repository, both passes' documents: {out}"
    );
}
