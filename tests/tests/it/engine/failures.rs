//! Failure handling: failed repositories keep content; incomplete fetches clear the markers;
//! run-stopping errors surface to the caller with content intact.

use std::time::Duration;

use shared::github::GithubError;
use shared::sync::failure::RepoFailure;
use shared::sync::{RepoOutcome, SyncError, sync_repository};
use syncplane_tests::fake_github::{Change, Endpoint, FakeGithub, Fault};

use super::{World, client_for, synced};

const FILES: &[(&str, &str)] = &[
    ("docs/a.md", "# A"),
    ("docs/b.md", "# B"),
    ("docs/c.md", "# C"),
    ("README.md", "# R"),
];

fn put(path: &str, content: &str) -> Change {
    Change::Put(path.to_owned(), content.as_bytes().to_vec())
}

#[tokio::test]
async fn a_truncated_tree_keeps_stored_content_and_reports_tree_truncated() {
    let w = World::new().await;
    w.repo("acme/a", FILES);
    synced(&w.sync("acme/a").await.unwrap());
    let before = w.contents().await;
    let markers = w.repo_row("acme/a").await;

    w.gh.push(
        "acme/a",
        &[
            Change::Delete("docs/a.md".to_owned()),
            put("docs/d.md", "# D"),
        ],
    );
    w.gh.set_tree_truncation(Some(2));
    let outcome = w.sync("acme/a").await.unwrap();
    assert!(
        matches!(
            outcome,
            RepoOutcome::Failed {
                failure: RepoFailure::TreeTruncated,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(
        w.contents().await,
        before,
        "nothing deleted or added from a partial tree"
    );
    assert_eq!(w.gh.count(Endpoint::Blob), 0);
    let row = w.repo_row("acme/a").await;
    assert_eq!(row.sync_status, "error");
    assert_eq!(row.sync_error_code.as_deref(), Some("tree_truncated"));
    assert_eq!(
        row.tree_sha, markers.tree_sha,
        "markers still describe the stored content"
    );

    w.gh.set_tree_truncation(None);
    synced(&w.sync("acme/a").await.unwrap());
    assert_eq!(
        w.doc_paths("acme/a").await,
        ["docs/b.md", "docs/c.md", "docs/d.md"]
    );
    assert_eq!(w.repo_row("acme/a").await.sync_status, "ok");
}

#[tokio::test]
async fn a_blob_fetch_failure_writes_the_rest_and_clears_the_markers() {
    let w = World::new().await;
    w.repo("acme/a", &[("docs/a.md", "# A")]);
    synced(&w.sync("acme/a").await.unwrap());
    w.gh.push(
        "acme/a",
        &[put("docs/b.md", "# B"), put("docs/c.md", "# C")],
    );
    w.gh.fault_on_path(&FakeGithub::blob_sha(b"# C"), Fault::Status(502), None);

    let outcome = w.sync("acme/a").await.unwrap();
    assert!(
        matches!(
            outcome,
            RepoOutcome::Failed {
                failure: RepoFailure::FetchIncomplete,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(
        w.doc_paths("acme/a").await,
        ["docs/a.md", "docs/b.md"],
        "what arrived is written"
    );
    let row = w.repo_row("acme/a").await;
    assert_eq!(row.sync_status, "error");
    assert_eq!(row.sync_error_code.as_deref(), Some("fetch_incomplete"));
    assert_eq!(
        row.sync_error.as_deref(),
        Some(RepoFailure::FetchIncomplete.message()),
        "a fixed message"
    );
    assert!(
        row.tree_sha.is_none() && row.head_etag.is_none() && row.selection_fingerprint.is_none()
    );

    w.gh.clear_faults();
    synced(&w.sync("acme/a").await.unwrap());
    assert_eq!(
        w.gh.count(Endpoint::Blob),
        1,
        "the next sync fetches only the missing file"
    );
    assert_eq!(
        w.doc_paths("acme/a").await,
        ["docs/a.md", "docs/b.md", "docs/c.md"]
    );
    assert_eq!(w.repo_row("acme/a").await.sync_status, "ok");
}

#[tokio::test]
async fn a_failed_repository_keeps_its_content_with_a_fixed_message() {
    let w = World::new().await;
    w.repo("acme/a", FILES);
    synced(&w.sync("acme/a").await.unwrap());
    let before = w.contents().await;
    w.gh.push("acme/a", &[put("docs/a.md", "# A2")]);
    for (fault, code) in [
        (Fault::Status(500), "upstream_error"),
        (Fault::Status(404), "not_found"),
        (Fault::Timeout, "timeout"),
    ] {
        w.gh.fault(Endpoint::Tree, fault, None);
        let outcome = w.sync("acme/a").await.unwrap();
        assert!(matches!(outcome, RepoOutcome::Failed { .. }), "{outcome:?}");
        let row = w.repo_row("acme/a").await;
        assert_eq!(row.sync_error_code.as_deref(), Some(code));
        assert!(
            !row.sync_error.unwrap_or_default().contains("message"),
            "no raw upstream text"
        );
        assert_eq!(w.contents().await, before);
        w.gh.clear_faults();
    }
}

/// Every run-stopping error surfaces as `SyncError::RunStopped` and leaves content and markers
/// exactly as they were.
#[tokio::test]
async fn every_run_stopping_error_leaves_content_intact() {
    let w = World::new().await;
    w.repo("acme/a", FILES);
    synced(&w.sync("acme/a").await.unwrap());
    w.gh.push(
        "acme/a",
        &[
            put("docs/a.md", "# A2"),
            Change::Delete("docs/b.md".to_owned()),
        ],
    );
    let before_rows = w.contents().await;
    let before_markers = w.repo_row("acme/a").await;

    type Inject = Box<dyn Fn(&World)>;
    let cases: Vec<(&str, Inject)> = vec![
        (
            "primary rate limit",
            Box::new(|w: &World| {
                w.gh.fault(
                    Endpoint::Blob,
                    Fault::PrimaryRateLimit {
                        reset_in: Duration::from_secs(3600),
                    },
                    None,
                )
            }),
        ),
        (
            "secondary rate limit",
            Box::new(|w: &World| {
                w.gh.fault(
                    Endpoint::Tree,
                    Fault::SecondaryRateLimit {
                        retry_after: Some(Duration::from_secs(600)),
                    },
                    None,
                )
            }),
        ),
        (
            "installation suspended",
            Box::new(|w: &World| w.gh.set_suspended(w.installation, true)),
        ),
    ];
    for (name, inject) in cases {
        // A fresh client so the suspended case has to exchange a token again.
        let client = client_for(&w.gh, w.installation, 0);
        let info = w.info("acme/a").await;
        inject(&w);
        let err = sync_repository(&w.db.pool, &client, &w.config, &info)
            .await
            .unwrap_err();
        assert!(
            matches!(err, SyncError::RunStopped(ref e) if e.is_run_stopping()),
            "{name}: {err:?}"
        );
        assert_eq!(w.contents().await, before_rows, "{name}: content intact");
        let row = w.repo_row("acme/a").await;
        assert_eq!(
            row.tree_sha, before_markers.tree_sha,
            "{name}: markers intact"
        );
        assert_eq!(
            row.head_etag, before_markers.head_etag,
            "{name}: markers intact"
        );
        w.gh.clear_faults();
        w.gh.set_suspended(w.installation, false);
    }

    // Unauthorized App credentials and an abort stop the run the same way.
    let info = w.info("acme/a").await;
    let other = shared::config::GithubAppConfig {
        api_url: w.gh.url().parse().unwrap(),
        graphql_url: None,
        app_id: w.gh.app_id() + 1,
        private_key_pem: shared::config::Secret::new(w.gh.private_key_pem()),
        installation_id: w.installation,
        rate_limit_wait_budget_secs: 0,
    };
    let bad = shared::github::GithubClient::new(&other).unwrap();
    let err = sync_repository(&w.db.pool, &bad, &w.config, &info)
        .await
        .unwrap_err();
    assert!(
        matches!(err, SyncError::RunStopped(GithubError::BadCredentials)),
        "{err:?}"
    );
    let aborted = client_for(&w.gh, w.installation, 0);
    aborted.abort();
    let err = sync_repository(&w.db.pool, &aborted, &w.config, &info)
        .await
        .unwrap_err();
    assert!(
        matches!(err, SyncError::RunStopped(GithubError::Aborted)),
        "{err:?}"
    );
    assert_eq!(w.contents().await, before_rows);
}
