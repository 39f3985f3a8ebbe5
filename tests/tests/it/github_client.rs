//! The GitHub App client against the fake GitHub: tokens, conditional heads, pagination, rate
//! limits within and over budget, and the error taxonomy (spec "Failure handling").

use std::time::{Duration, Instant};

use chrono::Utc;
use shared::config::{GithubAppConfig, Secret};
use shared::github::{
    ClientOptions, EntryKind, GithubClient, GithubError, HeadCheck, git_blob_sha,
};
use syncplane_tests::fake_github::{Change, Endpoint, FakeGithub, Fault};

struct Setup {
    fake: FakeGithub,
    installation: u64,
}

async fn setup() -> Setup {
    syncplane_tests::init_logging();
    let fake = FakeGithub::start().await;
    let installation = fake.add_installation("acme");
    Setup { fake, installation }
}

impl Setup {
    fn config(&self) -> GithubAppConfig {
        GithubAppConfig {
            api_url: url::Url::parse(&self.fake.url()).unwrap(),
            graphql_url: None,
            app_id: self.fake.app_id(),
            private_key_pem: Secret::new(self.fake.private_key_pem()),
            installation_id: self.installation,
            rate_limit_wait_budget_secs: 2,
        }
    }

    fn options() -> ClientOptions {
        ClientOptions {
            request_timeout: Duration::from_millis(800),
            ..ClientOptions::default()
        }
    }

    fn client(&self) -> GithubClient {
        GithubClient::with_options(&self.config(), Self::options()).unwrap()
    }

    fn client_with(&self, config: GithubAppConfig) -> GithubClient {
        GithubClient::with_options(&config, Self::options()).unwrap()
    }
}

fn statuses(fake: &FakeGithub) -> Vec<u16> {
    fake.requests().iter().map(|r| r.status).collect()
}

#[tokio::test]
async fn one_token_exchange_serves_many_calls_including_concurrent_ones() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("README.md", b"# hi\n")]);
    s.fake.set_latency(Duration::from_millis(30));
    let client = s.client();

    // Twenty calls start together on a cold client: one exchange between them.
    let calls = (0..20).map(|_| {
        let c = client.clone();
        async move { c.repo("acme", "docs").await }
    });
    for result in futures::future::join_all(calls).await {
        assert_eq!(result.unwrap().name, "docs");
    }
    for _ in 0..5 {
        client.repo("acme", "docs").await.unwrap();
    }
    assert_eq!(s.fake.token_exchanges(), 1);
    assert_eq!(s.fake.count(Endpoint::Repo), 25);
    assert_eq!(
        client.requests_made(),
        s.fake.total_requests() as u64,
        "every HTTP request is counted, the exchange included"
    );
    assert_eq!(client.bytes_received(), s.fake.bytes_sent());
}

#[tokio::test]
async fn the_client_asks_for_gzip_and_decodes_it() {
    let s = setup().await;
    let files: Vec<(String, Vec<u8>)> = (0..60)
        .map(|i| {
            (
                format!("docs/page-{i:03}.md"),
                format!("# Page {i}\n").into_bytes(),
            )
        })
        .collect();
    s.fake.add_repo_owned(s.installation, "acme/docs", &files);
    let client = s.client();
    let tree_sha = s.fake.head_tree("acme/docs").unwrap();
    s.fake.reset_log();
    let tree = client.tree("acme", "docs", &tree_sha).await.unwrap();
    assert_eq!(tree.entries.len(), 61, "docs/ and 60 files, decoded");
    let blob_sha = FakeGithub::blob_sha(b"# Page 7\n");
    let blob = client.blob("acme", "docs", &blob_sha).await.unwrap();
    assert_eq!(blob.as_ref(), b"# Page 7\n");

    let tree_request = s
        .fake
        .requests()
        .into_iter()
        .find(|r| r.endpoint == Endpoint::Tree)
        .unwrap();
    assert!(
        tree_request.wire_bytes < tree_request.bytes / 2,
        "the tree came gzipped: {tree_request:?}"
    );
    assert_eq!(
        client.bytes_received(),
        s.fake.bytes_sent(),
        "the client counts decoded bytes"
    );
}

#[tokio::test]
async fn the_installation_token_is_renewed_before_it_expires() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("README.md", b"# hi\n")]);
    s.fake.set_token_ttl(Duration::from_secs(4));
    let client = GithubClient::with_options(
        &s.config(),
        ClientOptions {
            token_refresh_margin: Duration::from_secs(2),
            ..Setup::options()
        },
    )
    .unwrap();

    client.repo("acme", "docs").await.unwrap();
    client.repo("acme", "docs").await.unwrap();
    assert_eq!(s.fake.token_exchanges(), 1, "a fresh token is reused");

    // Less than the margin now remains, though the token is still valid upstream.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    client.repo("acme", "docs").await.unwrap();
    assert_eq!(s.fake.token_exchanges(), 2, "renewed before expiry");
    assert!(
        !statuses(&s.fake).contains(&401),
        "renewal happened before GitHub refused anything"
    );
}

#[tokio::test]
async fn a_refused_installation_token_is_exchanged_once_then_unauthorized() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("README.md", b"# hi\n")]);
    let client = s.client();

    s.fake.fault(Endpoint::Repo, Fault::Status(401), Some(1));
    client.repo("acme", "docs").await.unwrap();
    assert_eq!(
        s.fake.token_exchanges(),
        2,
        "one fresh exchange, then the retry succeeded"
    );

    s.fake.fault(Endpoint::Repo, Fault::Status(401), None);
    let err = client.repo("acme", "docs").await.unwrap_err();
    assert_eq!(err, GithubError::Unauthorized);
    assert!(err.is_run_stopping());
    assert_eq!(s.fake.token_exchanges(), 3, "exactly one more exchange");
    assert_eq!(s.fake.count(Endpoint::Repo), 4, "one retry, not a loop");
}

#[tokio::test]
async fn an_unchanged_head_is_not_modified_and_spends_no_rate_limit() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("docs/a.md", b"# A\n")]);
    let client = s.client();

    let HeadCheck::Head {
        commit_sha,
        tree_sha,
        etag,
    } = client
        .branch_head("acme", "docs", "main", None)
        .await
        .unwrap()
    else {
        panic!("first check has no ETag to match")
    };
    assert_eq!(Some(commit_sha), s.fake.branch_head("acme/docs", "main"));
    assert_eq!(Some(tree_sha), s.fake.head_tree("acme/docs"));
    let etag = etag.expect("GitHub sends an ETag");

    let remaining = s.fake.rate_limit_remaining();
    s.fake.reset_log();
    let check = client
        .branch_head("acme", "docs", "main", Some(&etag))
        .await
        .unwrap();
    assert_eq!(check, HeadCheck::NotModified);
    assert_eq!(
        s.fake.total_requests(),
        1,
        "an unchanged repository costs one request"
    );
    assert_eq!(
        s.fake.rate_limit_remaining(),
        remaining,
        "a 304 costs no rate limit"
    );
    assert_eq!(client.rate_limit().unwrap().remaining, remaining);

    let pushed = s.fake.push(
        "acme/docs",
        &[Change::Put("docs/b.md".into(), b"# B\n".to_vec())],
    );
    let HeadCheck::Head {
        commit_sha,
        tree_sha,
        etag: new_etag,
    } = client
        .branch_head("acme", "docs", "main", Some(&etag))
        .await
        .unwrap()
    else {
        panic!("a push changes the head")
    };
    assert_eq!(commit_sha, pushed);
    assert_eq!(Some(tree_sha), s.fake.head_tree("acme/docs"));
    assert_ne!(new_etag.as_deref(), Some(etag.as_str()));
}

#[tokio::test]
async fn the_installation_listing_collects_every_page() {
    let s = setup().await;
    for i in 0..250 {
        s.fake
            .add_repo(s.installation, &format!("acme/repo-{i:03}"), &[]);
    }
    let other = s.fake.add_installation("other");
    s.fake.add_repo(other, "other/secret", &[]);
    let client = s.client();

    let repos = client.list_installation_repos().await.unwrap();
    let mut names: Vec<String> = repos.iter().map(|r| r.full_name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 250, "every repository once");
    assert!(names.iter().all(|n| n.starts_with("acme/repo-")));
    assert_eq!(s.fake.count(Endpoint::InstallationRepos), 3, "per_page=100");
    assert!(
        s.fake
            .requests()
            .iter()
            .filter(|r| r.endpoint == Endpoint::InstallationRepos)
            .all(|r| r.path.contains("per_page=100"))
    );
}

#[tokio::test]
async fn a_base_url_with_a_trailing_slash_reaches_the_same_paths() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("README.md", b"x")]);
    let mut config = s.config();
    config.api_url = url::Url::parse(&format!("{}/", s.fake.url())).unwrap();
    let client = s.client_with(config);
    assert_eq!(client.repo("acme", "docs").await.unwrap().name, "docs");
    assert_eq!(client.installation().await.unwrap().account, "acme");
}

#[tokio::test]
async fn a_primary_rate_limit_within_budget_is_waited_out() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("README.md", b"x")]);
    let client = s.client();
    client.repo("acme", "docs").await.unwrap();

    s.fake.fault(
        Endpoint::Repo,
        Fault::PrimaryRateLimit {
            reset_in: Duration::from_secs(1),
        },
        Some(1),
    );
    let started = Instant::now();
    client.repo("acme", "docs").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(s.fake.count(Endpoint::Repo), 3, "one retry after the wait");
}

#[tokio::test]
async fn primary_exhaustion_over_budget_fails_at_once_with_the_retry_time() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("README.md", b"x")]);
    let client = s.client();
    client.repo("acme", "docs").await.unwrap();

    // A real exhaustion: the whole budget is spent for the next 30 s.
    s.fake.set_rate_limit(5000, 0, Duration::from_secs(30));
    let started = Instant::now();
    let err = client.repo("acme", "docs").await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1), "no waiting");
    let GithubError::RateLimited {
        retry_at,
        secondary,
    } = err
    else {
        panic!("expected RateLimited, got {err:?}")
    };
    assert!(!secondary);
    let in_secs = (retry_at - Utc::now()).num_seconds();
    assert!(
        (28..=31).contains(&in_secs),
        "retry at the reset: {in_secs}s"
    );
    assert!(err.is_run_stopping());
    assert_eq!(err.code(), "rate_limited");
}

#[tokio::test]
async fn a_secondary_rate_limit_with_retry_after_within_budget_is_waited_out() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("README.md", b"x")]);
    let client = s.client();
    client.repo("acme", "docs").await.unwrap();

    s.fake.fault(
        Endpoint::Repo,
        Fault::SecondaryRateLimit {
            retry_after: Some(Duration::from_secs(1)),
        },
        Some(1),
    );
    let started = Instant::now();
    client.repo("acme", "docs").await.unwrap();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(950) && waited < Duration::from_secs(2),
        "waited retry-after: {waited:?}"
    );
}

#[tokio::test]
async fn a_secondary_rate_limit_without_retry_after_fails_at_once_over_budget() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("README.md", b"x")]);
    let client = s.client();
    client.repo("acme", "docs").await.unwrap();

    s.fake.fault(
        Endpoint::Repo,
        Fault::SecondaryRateLimit { retry_after: None },
        None,
    );
    let started = Instant::now();
    let err = client.repo("acme", "docs").await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1));
    let GithubError::RateLimited {
        retry_at,
        secondary,
    } = err
    else {
        panic!("expected RateLimited, got {err:?}")
    };
    assert!(secondary);
    let in_secs = (retry_at - Utc::now()).num_seconds();
    assert!((58..=60).contains(&in_secs), "one minute: {in_secs}s");
    assert_eq!(s.fake.count(Endpoint::Repo), 2, "no retry over budget");
}

#[tokio::test]
async fn an_unusable_private_key_fails_at_construction() {
    let s = setup().await;
    let mut config = s.config();
    config.private_key_pem = Secret::new(
        "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5IGF0IGFsbA==\n-----END RSA PRIVATE KEY-----\n",
    );
    let err = GithubClient::new(&config).unwrap_err();
    assert_eq!(err, GithubError::InvalidPrivateKey);
    assert!(err.is_run_stopping());
    assert_eq!(err.code(), "invalid_private_key");
    assert_eq!(s.fake.total_requests(), 0, "refused before any request");
}

#[tokio::test]
async fn a_wrong_app_id_or_an_untrusted_key_is_bad_credentials() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("README.md", b"x")]);

    let mut wrong_id = s.config();
    wrong_id.app_id += 1;
    let mut untrusted = s.config();
    untrusted.private_key_pem = Secret::new(FakeGithub::untrusted_private_key_pem());

    for config in [wrong_id, untrusted] {
        let client = s.client_with(config);
        let err = client.repo("acme", "docs").await.unwrap_err();
        assert_eq!(err, GithubError::BadCredentials);
        assert!(err.is_run_stopping());
        assert_eq!(err.code(), "bad_credentials");
        assert_eq!(
            client.installation().await.unwrap_err(),
            GithubError::BadCredentials
        );
    }
    assert_eq!(
        s.fake.count(Endpoint::Repo),
        0,
        "no repository call without a token"
    );
}

#[tokio::test]
async fn a_suspended_installation_is_unavailable() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("README.md", b"x")]);
    let warm = s.client();
    warm.repo("acme", "docs").await.unwrap();

    s.fake.set_suspended(s.installation, true);
    let unavailable = GithubError::InstallationUnavailable { suspended: true };
    // A cached token is refused with 403 "suspended"; a fresh client's exchange is too.
    assert_eq!(warm.repo("acme", "docs").await.unwrap_err(), unavailable);
    let cold = s.client();
    let err = cold.list_installation_repos().await.unwrap_err();
    assert_eq!(err, unavailable);
    assert!(err.is_run_stopping());
    assert_eq!(err.code(), "installation_unavailable");

    let installation = cold.installation().await.unwrap();
    assert!(installation.suspended);
    assert_eq!(installation.require_active().unwrap_err(), unavailable);
}

#[tokio::test]
async fn a_deleted_installation_is_unavailable() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("README.md", b"x")]);
    let warm = s.client();
    warm.repo("acme", "docs").await.unwrap();

    s.fake.delete_installation(s.installation);
    let unavailable = GithubError::InstallationUnavailable { suspended: false };
    // The revoked token is refused (401), the fresh exchange answers 404.
    assert_eq!(warm.repo("acme", "docs").await.unwrap_err(), unavailable);
    let cold = s.client();
    assert_eq!(
        cold.list_installation_repos().await.unwrap_err(),
        unavailable
    );
    assert_eq!(cold.installation().await.unwrap_err(), unavailable);
}

#[tokio::test]
async fn not_found_server_errors_and_timeouts_fail_only_the_repository() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("docs/a.md", b"# A\n")]);
    let client = s.client();
    let tree_sha = s.fake.head_tree("acme/docs").unwrap();
    let blob = FakeGithub::blob_sha(b"# A\n");

    let missing = client.repo("acme", "gone").await.unwrap_err();
    assert_eq!(missing, GithubError::NotFound);
    assert_eq!(missing.code(), "not_found");

    s.fake.fault(Endpoint::Tree, Fault::Status(500), Some(1));
    let server = client.tree("acme", "docs", &tree_sha).await.unwrap_err();
    assert_eq!(server, GithubError::Server { status: 500 });
    assert_eq!(server.code(), "upstream_error");

    s.fake.fault_on_path(&blob, Fault::Timeout, Some(1));
    let started = Instant::now();
    let timeout = client.blob("acme", "docs", &blob).await.unwrap_err();
    assert_eq!(timeout, GithubError::Timeout);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the request timeout applies"
    );

    for err in [&missing, &server, &timeout] {
        assert!(!err.is_run_stopping(), "{err:?} is per repository");
    }
    // The next repository goes on with the same client.
    assert_eq!(
        client.blob("acme", "docs", &blob).await.unwrap().as_ref(),
        b"# A\n"
    );
}

#[tokio::test]
async fn tree_blob_and_empty_repository_read_what_github_holds() {
    let s = setup().await;
    s.fake.add_repo(
        s.installation,
        "acme/docs",
        &[
            ("docs/guide.md", b"# Guide\n"),
            ("README.md", b"# Readme\n"),
        ],
    );
    s.fake.push(
        "acme/docs",
        &[
            Change::Symlink("docs/link.md".into(), "guide.md".into()),
            Change::Submodule(
                "vendor/lib".into(),
                "0123456789abcdef0123456789abcdef01234567".into(),
            ),
        ],
    );
    s.fake.add_repo(s.installation, "acme/empty", &[]);
    let client = s.client();

    let tree_sha = s.fake.head_tree("acme/docs").unwrap();
    let tree = client.tree("acme", "docs", &tree_sha).await.unwrap();
    assert_eq!(tree.sha, tree_sha);
    assert!(!tree.truncated);
    let entry = |path: &str| tree.entries.iter().find(|e| e.path == path).unwrap();
    assert_eq!(entry("docs").kind, EntryKind::Tree);
    assert_eq!(entry("docs/guide.md").kind, EntryKind::Blob);
    assert_eq!(entry("docs/guide.md").size, Some(8));
    assert_eq!(entry("docs/link.md").mode, "120000");
    assert_eq!(entry("vendor/lib").kind, EntryKind::Commit);

    let guide = &entry("docs/guide.md").sha;
    assert_eq!(guide, &git_blob_sha(b"# Guide\n"));
    assert_eq!(
        client.blob("acme", "docs", guide).await.unwrap().as_ref(),
        b"# Guide\n"
    );

    s.fake.set_tree_truncation(Some(2));
    let cut = client.tree("acme", "docs", &tree_sha).await.unwrap();
    assert!(cut.truncated);
    assert_eq!(cut.entries.len(), 2);

    assert!(client.is_empty_repository("acme", "empty").await.unwrap());
    assert!(!client.is_empty_repository("acme", "docs").await.unwrap());
    assert_eq!(
        client
            .branch_head("acme", "empty", "main", None)
            .await
            .unwrap_err(),
        GithubError::NotFound,
        "an empty repository has no branch"
    );
}

#[tokio::test]
async fn abort_fails_pending_and_later_calls() {
    let s = setup().await;
    s.fake
        .add_repo(s.installation, "acme/docs", &[("docs/a.md", b"# A\n")]);
    let client = GithubClient::with_options(
        &s.config(),
        ClientOptions {
            request_timeout: Duration::from_secs(30),
            ..Setup::options()
        },
    )
    .unwrap();
    client.repo("acme", "docs").await.unwrap();

    s.fake.fault(Endpoint::Repo, Fault::Timeout, None);
    let pending = tokio::spawn({
        let c = client.clone();
        async move { c.repo("acme", "docs").await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    client.abort();
    let err = pending.await.unwrap().unwrap_err();
    assert_eq!(err, GithubError::Aborted);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "abort does not wait for the request"
    );
    assert!(err.is_run_stopping());

    let before = client.requests_made();
    assert_eq!(
        client.tree("acme", "docs", "x").await.unwrap_err(),
        GithubError::Aborted
    );
    assert_eq!(client.requests_made(), before, "later calls send nothing");
}
