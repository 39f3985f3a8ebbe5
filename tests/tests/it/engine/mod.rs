//! The one-repository sync engine against real Postgres and the fake GitHub
//! (spec "One repository", "Limits", "Failure handling"). One test per rule, named after it.

mod failures;
mod plan;
mod rules;

use std::time::Duration;

use shared::config::{GithubAppConfig, Secret, SyncConfig};
use shared::github::{ClientOptions, GithubClient, RepoInfo};
use shared::sync::{RepoOutcome, SyncError, sync_repository};
use syncplane_tests::db::TestDb;
use syncplane_tests::fake_github::FakeGithub;

/// A test's world: its own database, a fake GitHub with one installation, and a client for it.
pub struct World {
    pub db: TestDb,
    pub gh: FakeGithub,
    pub installation: u64,
    pub client: GithubClient,
    pub config: SyncConfig,
}

impl World {
    pub async fn new() -> Self {
        let db = TestDb::new().await;
        let gh = FakeGithub::start().await;
        let installation = gh.add_installation("acme");
        let client = client_for(&gh, installation, 0);
        Self {
            db,
            gh,
            installation,
            client,
            config: SyncConfig::default(),
        }
    }

    /// Add a repository to the fake with `files` at its first commit.
    pub fn repo(&self, full_name: &str, files: &[(&str, &str)]) -> u64 {
        let files: Vec<(&str, &[u8])> = files.iter().map(|(p, c)| (*p, c.as_bytes())).collect();
        self.gh.add_repo(self.installation, full_name, &files)
    }

    /// A repository with files of any bytes (images).
    pub fn repo_bytes(&self, full_name: &str, files: &[(&str, &[u8])]) -> u64 {
        self.gh.add_repo(self.installation, full_name, files)
    }

    /// The repository as the installation listing shows it (read without touching the request log).
    pub async fn info(&self, full_name: &str) -> RepoInfo {
        let before = self.gh.requests().len();
        let (owner, name) = full_name.split_once('/').unwrap();
        let info = self
            .client
            .repo(owner, name)
            .await
            .expect("repository exists on the fake");
        assert!(self.gh.requests().len() > before);
        info
    }

    /// Sync one repository with the world's config; the request log is reset first, so
    /// `self.gh.count(..)` afterwards counts this sync's requests only.
    pub async fn sync(&self, full_name: &str) -> Result<RepoOutcome, SyncError> {
        let info = self.info(full_name).await;
        self.sync_known(&info).await
    }

    /// Sync a repository already read from GitHub (the request log is reset first).
    pub async fn sync_known(&self, info: &RepoInfo) -> Result<RepoOutcome, SyncError> {
        self.gh.reset_log();
        sync_repository(&self.db.pool, &self.client, &self.config, info).await
    }

    pub async fn doc_paths(&self, full_name: &str) -> Vec<String> {
        let (owner, name) = full_name.split_once('/').unwrap();
        sqlx::query_scalar(
            "SELECT d.path FROM documents d JOIN repos r ON r.id = d.repo_id
             WHERE r.owner = $1 AND r.name = $2 ORDER BY d.path",
        )
        .bind(owner)
        .bind(name)
        .fetch_all(&self.db.pool)
        .await
        .unwrap()
    }

    /// (sync_status, sync_error_code, tree_sha, head_etag, fingerprint) of a repository.
    pub async fn repo_row(&self, full_name: &str) -> RepoRow {
        let (owner, name) = full_name.split_once('/').unwrap();
        sqlx::query_as(
            "SELECT sync_status, sync_error_code, sync_error, tree_sha, head_etag, selection_fingerprint, warnings
             FROM repos WHERE owner = $1 AND name = $2",
        )
        .bind(owner)
        .bind(name)
        .fetch_one(&self.db.pool)
        .await
        .unwrap()
    }

    /// Every content row's (table, key, xmin): equal snapshots prove nothing was written.
    pub async fn row_versions(&self) -> Vec<(String, String, String)> {
        sqlx::query_as(
            "SELECT 'repos', github_id::text, xmin::text FROM repos
             UNION ALL SELECT 'documents', repo_id || ':' || path, xmin::text FROM documents
             UNION ALL SELECT 'readmes', repo_id::text, xmin::text FROM readmes
             UNION ALL SELECT 'code_owners', repo_id || ':' || line, xmin::text FROM code_owners
             ORDER BY 1, 2",
        )
        .fetch_all(&self.db.pool)
        .await
        .unwrap()
    }

    /// Every document's content, to prove it was kept.
    pub async fn contents(&self) -> Vec<(String, String, String, String)> {
        sqlx::query_as("SELECT path, blob_sha, title, body FROM documents ORDER BY path")
            .fetch_all(&self.db.pool)
            .await
            .unwrap()
    }
}

#[derive(Debug, shared::FromRow)]
pub struct RepoRow {
    pub sync_status: String,
    pub sync_error_code: Option<String>,
    pub sync_error: Option<String>,
    pub tree_sha: Option<String>,
    pub head_etag: Option<String>,
    pub selection_fingerprint: Option<String>,
    pub warnings: serde_json::Value,
}

/// A client for the fake's App and `installation`, with a short timeout so timeout faults are
/// quick, and the given rate-limit wait budget.
pub fn client_for(gh: &FakeGithub, installation: u64, wait_budget_secs: u64) -> GithubClient {
    let config = GithubAppConfig {
        api_url: gh.url().parse().unwrap(),
        graphql_url: None,
        app_id: gh.app_id(),
        private_key_pem: Secret::new(gh.private_key_pem()),
        installation_id: installation,
        rate_limit_wait_budget_secs: wait_budget_secs,
    };
    let options = ClientOptions {
        request_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    GithubClient::with_options(&config, options).unwrap()
}

pub fn synced(outcome: &RepoOutcome) -> shared::sync::persist::Counts {
    match outcome {
        RepoOutcome::Synced(c) => *c,
        other => panic!("expected Synced, got {other:?}"),
    }
}
