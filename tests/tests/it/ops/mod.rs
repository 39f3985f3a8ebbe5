//! Operator safety (issue 12 §2 to §5): logs that never deadlock a command or spoil its JSON,
//! logs that never show a secret whatever the filter, dead runs reaped and waiting markers
//! drained without the scheduler, and runs that say when to retry; and issue 13 §5, §10, §11:
//! metrics, the health route, an operator's errors and the CLI's rough edges; issue 21 point 4: a
//! database that does not answer is 503 `database_unreachable` within seconds; points 16 to 18:
//! `ingest sessions`, and what `sync --repo` costs and reports. Real binaries where the
//! behaviour lives in the process (logging), real Postgres and the fake GitHub throughout.

mod cli_edges;
mod errors;
mod health;
mod ingest_sessions;
mod jobs_schema;
mod logs;
mod metrics;
mod retry;
mod secrets;
mod sync_repo;
mod unreachable;
mod upkeep;
mod watch_env;

use std::process::ExitCode;

use syncplane_tests::db::TestDb;
use syncplane_tests::fake_github::{Change, FakeGithub};

/// A database, a fake GitHub with two repositories, and the variables a binary reads.
pub struct Env {
    pub db: TestDb,
    pub gh: FakeGithub,
    pub installation: u64,
    /// GitHub id of `acme/widgets`.
    pub widgets: u64,
}

impl Env {
    pub async fn new() -> Self {
        let db = TestDb::new().await;
        let gh = FakeGithub::start().await;
        let installation = gh.add_installation("acme");
        gh.add_repo(
            installation,
            "acme/handbook",
            &[("README.md", b"# Handbook\n"), ("docs/a.md", b"# A\n")],
        );
        let widgets = gh.add_repo(
            installation,
            "acme/widgets",
            &[("docs/usage.md", b"# Usage\n")],
        );
        Self {
            db,
            gh,
            installation,
            widgets,
        }
    }

    /// The process environment of the CLI or a function (local jobs, no scheduler).
    pub fn vars(&self) -> Vec<(String, String)> {
        [
            ("DATABASE_URL", self.db.url().expose().to_owned()),
            ("GITHUB_API_URL", self.gh.url()),
            ("GITHUB_APP_ID", self.gh.app_id().to_string()),
            ("GITHUB_INSTALLATION_ID", self.installation.to_string()),
            ("GITHUB_APP_PRIVATE_KEY", self.gh.private_key_pem()),
            ("GITHUB_RATE_LIMIT_WAIT_BUDGET_SECONDS", "0".to_owned()),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .to_vec()
    }

    /// The API Gateway event of a manual sync of `acme/handbook` with the sync API token
    /// `api_token`.
    pub fn manual_sync_event(&self, api_token: &str) -> serde_json::Value {
        let bearer = format!("Bearer {api_token}");
        syncplane_tests::apigw::event(
            "POST",
            "/api/sync",
            &[
                ("authorization", &bearer),
                ("content-type", "application/json"),
            ],
            Some(br#"{"repository":"acme/handbook"}"#),
        )
    }

    /// The API Gateway event of a push to `acme/widgets`' default branch, signed with
    /// `webhook_secret`, as GitHub delivers it to the webhook function.
    pub fn signed_push_event(&self, webhook_secret: &str, delivery: &str) -> serde_json::Value {
        let body = serde_json::json!({
            "ref": "refs/heads/main",
            "repository": {"id": self.widgets, "name": "widgets", "full_name": "acme/widgets",
                           "owner": {"login": "acme"}, "default_branch": "main",
                           "private": true, "archived": false},
            "installation": {"id": self.installation},
            "commits": []
        })
        .to_string();
        let signature = syncplane_tests::fake_github::sign_webhook(webhook_secret, body.as_bytes());
        syncplane_tests::apigw::event(
            "POST",
            "/github/webhook",
            &[
                ("content-type", "application/json"),
                ("x-github-event", "push"),
                ("x-github-delivery", delivery),
                ("x-hub-signature-256", &signature),
            ],
            Some(body.as_bytes()),
        )
    }

    /// `syncplane <args>` through the CLI's entry point: exit status and standard output.
    pub async fn syncplane(&self, args: &[&str]) -> (ExitCode, String) {
        syncplane_tests::cli::syncplane(&self.vars(), args).await
    }

    /// A first full sync, then a new commit adding `path` to `repository`.
    pub async fn synced_then_pushed(&self, repository: &str, path: &str) {
        let (code, out) = self.syncplane(&["sync"]).await;
        assert_eq!(code, ExitCode::SUCCESS, "{out}");
        self.gh.push(
            repository,
            &[Change::Put(path.to_owned(), b"# Pushed\n".to_vec())],
        );
    }

    pub async fn github_id(&self, full_name: &str) -> i64 {
        let (owner, name) = full_name.split_once('/').unwrap();
        sqlx::query_scalar("SELECT github_id FROM repos WHERE owner = $1 AND name = $2")
            .bind(owner)
            .bind(name)
            .fetch_one(&self.db.pool)
            .await
            .unwrap()
    }

    pub async fn marker_set(&self, full_name: &str) -> bool {
        let id = self.github_id(full_name).await;
        sqlx::query_scalar("SELECT sync_requested_at IS NOT NULL FROM repos WHERE github_id = $1")
            .bind(id)
            .fetch_one(&self.db.pool)
            .await
            .unwrap()
    }
}
