//! Repositories on the read API: `GET /api/repos` in keyset pages, `GET /api/repos/{owner}/{name}`
//! with its sync state, and the lookup every per-repository route starts with. Rows are keyed by
//! GitHub id and renamed in place by the engine, so a renamed repository answers under its new
//! name and the old one is `unknown_repository`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::PgPool;
use syncplane_engine::sync::persist::RepoMeta;

use super::super::error::{ApiError, db_failure};
use super::cursor;
use super::params::Params;
use crate::read::RepoView;

pub const DEFAULT_LIMIT: i64 = 100;
pub const MAX_LIMIT: i64 = 500;

/// A stored repository, as the per-repository routes need it.
#[derive(Debug, Clone, syncplane_core::FromRow)]
pub struct Repo {
    pub id: i64,
    pub owner: String,
    pub name: String,
    pub html_url: Option<String>,
    pub head_commit_sha: Option<String>,
    pub codeowners_path: Option<String>,
}

impl Repo {
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

/// The stored repository called `owner/name` now (case-insensitive, as GitHub names are).
pub async fn find(pool: &PgPool, owner: &str, name: &str) -> Result<Repo, ApiError> {
    sqlx::query_as(
        "SELECT id, owner, name, html_url, head_commit_sha, codeowners_path FROM repos
         WHERE lower(owner) = lower($1) AND lower(name) = lower($2)
         ORDER BY updated_at DESC, id LIMIT 1",
    )
    .bind(owner)
    .bind(name)
    .fetch_optional(pool)
    .await
    .map_err(db_failure("find repository"))?
    .ok_or(ApiError::UnknownRepository)
}

/// The listing key: the order `GET /api/repos` pages in, served by `repos_listing_idx`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListKey {
    owner: String,
    name: String,
    id: i64,
}

#[derive(syncplane_core::FromRow)]
struct ListRow {
    lower_owner: String,
    lower_name: String,
    #[row(flatten)]
    view: RepoView,
}

/// `GET /api/repos?limit=&cursor=`: one page and the cursor of the next (null at the end).
pub async fn list(pool: &PgPool, params: &Params) -> Result<Value, ApiError> {
    let limit = params.limit(DEFAULT_LIMIT, MAX_LIMIT)?;
    let after: Option<ListKey> = params
        .one("cursor")?
        .map(|c| cursor::decode("repos", "", c))
        .transpose()?;
    let (owner, name, id) = match &after {
        Some(k) => (Some(k.owner.as_str()), Some(k.name.as_str()), Some(k.id)),
        None => (None, None, None),
    };
    let mut rows: Vec<ListRow> = sqlx::query_as(
        "SELECT lower(r.owner) AS lower_owner, lower(r.name) AS lower_name,
                r.owner || '/' || r.name AS full_name, r.github_id, r.sync_status, r.sync_error,
                r.sync_error_code, r.last_synced_at, r.warnings, r.head_commit_sha,
                (SELECT count(*) FROM documents d WHERE d.repo_id = r.id) AS document_count
         FROM repos r
         WHERE $1::text IS NULL OR (lower(r.owner), lower(r.name), r.github_id) > ($1, $2, $3)
         ORDER BY lower(r.owner), lower(r.name), r.github_id
         LIMIT $4",
    )
    .bind(owner)
    .bind(name)
    .bind(id)
    .bind(limit + 1)
    .fetch_all(pool)
    .await
    .map_err(db_failure("list repositories"))?;
    let next = next_cursor(&mut rows, limit, |last| {
        let key = ListKey {
            owner: last.lower_owner.clone(),
            name: last.lower_name.clone(),
            id: last.view.github_id,
        };
        cursor::encode("repos", "", &key)
    });
    let repos: Vec<RepoView> = rows.into_iter().map(|r| r.view).collect();
    Ok(json!({ "repositories": repos, "nextCursor": next }))
}

/// Keep `limit` of the `limit + 1` rows fetched; the cursor of the last kept one when more exist.
pub(crate) fn next_cursor<T>(
    rows: &mut Vec<T>,
    limit: i64,
    cursor_of: impl Fn(&T) -> String,
) -> Option<String> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if rows.len() <= limit {
        return None;
    }
    rows.truncate(limit);
    rows.last().map(cursor_of)
}

#[derive(Debug, Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
struct RepoDetail {
    full_name: String,
    github_id: i64,
    #[serde(flatten)]
    #[row(flatten)]
    meta: RepoMeta,
    docs_path: Option<String>,
    head_commit_sha: Option<String>,
    codeowners_path: Option<String>,
    sync_status: String,
    sync_error: Option<String>,
    sync_error_code: Option<String>,
    last_synced_at: Option<DateTime<Utc>>,
    warnings: Value,
    document_count: i64,
    has_readme: bool,
}

/// `GET /api/repos/{owner}/{name}`.
pub async fn detail(pool: &PgPool, repo: &Repo) -> Result<Value, ApiError> {
    let detail: RepoDetail = sqlx::query_as(
        "SELECT r.owner || '/' || r.name AS full_name, r.github_id, r.default_branch, r.private,
                r.archived, r.html_url, r.description, r.docs_path, r.head_commit_sha,
                r.codeowners_path, r.sync_status, r.sync_error, r.sync_error_code,
                r.last_synced_at, r.warnings,
                (SELECT count(*) FROM documents d WHERE d.repo_id = r.id) AS document_count,
                EXISTS (SELECT 1 FROM readmes m WHERE m.repo_id = r.id) AS has_readme
         FROM repos r WHERE r.id = $1",
    )
    .bind(repo.id)
    .fetch_optional(pool)
    .await
    .map_err(db_failure("read repository"))?
    .ok_or(ApiError::UnknownRepository)?;
    Ok(json!(detail))
}
