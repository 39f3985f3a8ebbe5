//! The read side of the sync API: repositories with their sync state, runs, and the read API of
//! issue 11 (search, documents, code owners) in the modules below.

pub mod cursor;
pub mod documents;
pub mod images;
pub mod owners;
pub mod params;
pub mod repos;
pub mod route;
pub mod search;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

/// How many runs `GET /api/sync/runs` lists, newest first.
pub(crate) const RUNS_LIMIT: i64 = 50;

#[derive(Debug, Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RepoView {
    pub full_name: String,
    pub github_id: i64,
    pub sync_status: String,
    /// A fixed message chosen by the engine, never raw upstream text.
    pub sync_error: Option<String>,
    pub sync_error_code: Option<String>,
    pub last_synced_at: Option<DateTime<Utc>>,
    /// Files skipped by the last plan: `[{"path": ..., "reason": ...}]`.
    pub warnings: serde_json::Value,
    pub document_count: i64,
    /// The commit the last complete plan synced (null before one).
    pub head_commit_sha: Option<String>,
}

#[derive(Debug, Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct RunCountsView {
    pub repos_synced: i32,
    pub repos_unchanged: i32,
    pub repos_failed: i32,
    pub repos_removed: i32,
    /// Unchanged repositories whose content an earlier run, recorded failed, had committed.
    pub repos_already_current: i32,
    pub docs_added: i32,
    pub docs_changed: i32,
    pub docs_removed: i32,
    pub github_requests: i32,
    /// GitHub requests by kind, and rate-limit units spent (REST core units; GraphQL points).
    pub github_rest_requests: i32,
    pub github_graphql_requests: i32,
    pub github_rest_units: i32,
    pub github_graphql_points: i32,
}

#[derive(Debug, Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    pub id: i64,
    pub trigger: String,
    /// `owner/name` for a one-repository run, null for all.
    pub scope: Option<String>,
    pub status: String,
    /// The stable code of what stopped the run, if anything did.
    pub error: Option<String>,
    /// When GitHub's rate limit stopped the run: the instant from which a retry can succeed.
    pub retry_after: Option<DateTime<Utc>>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    #[row(flatten)]
    pub counts: RunCountsView,
}

/// The columns of a [`RunView`], as a literal so the queries stay static strings.
macro_rules! run_columns {
    () => {
        "id, trigger, scope, status, error, retry_after, started_at, finished_at, repos_synced,
         repos_unchanged, repos_failed, repos_removed, repos_already_current, docs_added,
         docs_changed, docs_removed, github_requests, github_rest_requests, github_graphql_requests,
         github_rest_units, github_graphql_points"
    };
}

/// The newest [`RUNS_LIMIT`] runs; with `repo` (`owner/name`, any case) the runs that covered
/// it: its own one-repository runs and the full runs.
pub async fn runs(pool: &PgPool, repo: Option<&str>) -> Result<Vec<RunView>, sqlx::Error> {
    sqlx::query_as(concat!(
        "SELECT ",
        run_columns!(),
        " FROM sync_runs WHERE $2::text IS NULL OR scope IS NULL OR lower(scope) = lower($2)
          ORDER BY started_at DESC, id DESC LIMIT $1"
    ))
    .bind(RUNS_LIMIT)
    .bind(repo)
    .fetch_all(pool)
    .await
}

pub async fn run(pool: &PgPool, id: i64) -> Result<Option<RunView>, sqlx::Error> {
    sqlx::query_as(concat!(
        "SELECT ",
        run_columns!(),
        " FROM sync_runs WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await
}
