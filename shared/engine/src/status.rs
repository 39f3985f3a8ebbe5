//! A read-only status report: repositories with their sync state, and recent runs. Serves the
//! CLI's `status` (and the same shapes the sync API answers with).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoStatus {
    pub github_id: i64,
    pub full_name: String,
    pub sync_status: String,
    pub sync_error: Option<String>,
    pub last_synced_at: Option<DateTime<Utc>>,
    pub sync_requested_at: Option<DateTime<Utc>>,
    pub document_count: i64,
    pub warning_count: i64,
}

#[derive(Debug, Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub id: i64,
    pub trigger: String,
    pub scope: Option<String>,
    pub status: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    #[row(flatten)]
    pub github: GithubSpend,
}

/// What a run spent on GitHub: requests by kind, and rate-limit units (REST core units, GraphQL
/// points; the two are separate budgets).
#[derive(Debug, Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct GithubSpend {
    pub rest_requests: i32,
    pub graphql_requests: i32,
    pub rest_units: i32,
    pub graphql_points: i32,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantStatus {
    pub migrated: bool,
    pub repos: Vec<RepoStatus>,
    pub recent_runs: Vec<RunSummary>,
}

impl TenantStatus {
    pub fn render_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        if !self.migrated {
            s.push_str("  database not migrated (run `syncplane migrate`)\n");
            return s;
        }
        let _ = writeln!(s, "  repositories: {}", self.repos.len());
        for r in &self.repos {
            let _ = writeln!(
                s,
                "    {:<40} {:<8} docs {:>5}  warnings {:>3}  {}",
                r.full_name,
                r.sync_status,
                r.document_count,
                r.warning_count,
                r.sync_error.as_deref().unwrap_or("")
            );
        }
        let _ = writeln!(s, "  recent runs: {}", self.recent_runs.len());
        for run in &self.recent_runs {
            let g = &run.github;
            let _ = writeln!(
                s,
                "    #{:<6} {:<9} {:<8} {:<30} {}  GitHub: {} REST + {} GraphQL requests, {} REST units + {} GraphQL points",
                run.id,
                run.trigger,
                run.status,
                run.scope.as_deref().unwrap_or("(all)"),
                run.started_at.format("%Y-%m-%d %H:%M:%S"),
                g.rest_requests,
                g.graphql_requests,
                g.rest_units,
                g.graphql_points
            );
        }
        s
    }
}

pub async fn tenant_status(pool: &PgPool) -> Result<TenantStatus, sqlx::Error> {
    let migrated: bool = sqlx::query_scalar("SELECT to_regclass('repos') IS NOT NULL")
        .fetch_one(pool)
        .await?;
    if !migrated {
        return Ok(TenantStatus {
            migrated,
            repos: Vec::new(),
            recent_runs: Vec::new(),
        });
    }
    let repos = sqlx::query_as::<_, (i64, String, String, Option<String>, Option<DateTime<Utc>>, Option<DateTime<Utc>>, i64, i64)>(
        "SELECT r.github_id, r.owner || '/' || r.name, r.sync_status, r.sync_error, r.last_synced_at,
                r.sync_requested_at,
                (SELECT count(*) FROM documents d WHERE d.repo_id = r.id),
                jsonb_array_length(r.warnings)::bigint
         FROM repos r ORDER BY lower(r.owner), lower(r.name)",
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|(github_id, full_name, sync_status, sync_error, last_synced_at, sync_requested_at, document_count, warning_count)| RepoStatus {
        github_id,
        full_name,
        sync_status,
        sync_error,
        last_synced_at,
        sync_requested_at,
        document_count,
        warning_count,
    })
    .collect();
    let recent_runs = sqlx::query_as::<_, RunSummary>(
        "SELECT id, trigger, scope, status, started_at, finished_at,
                github_rest_requests AS rest_requests, github_graphql_requests AS graphql_requests,
                github_rest_units AS rest_units, github_graphql_points AS graphql_points
         FROM sync_runs ORDER BY started_at DESC, id DESC LIMIT 10",
    )
    .fetch_all(pool)
    .await?;
    Ok(TenantStatus {
        migrated,
        repos,
        recent_runs,
    })
}
