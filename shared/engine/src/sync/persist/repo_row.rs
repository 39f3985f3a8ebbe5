//! The repository row: created on first sight, then refreshed (metadata, head markers, status),
//! each write guarded by `IS DISTINCT FROM` so an unchanged repository writes nothing.

use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{PgConnection, PgPool, Postgres, Row, Transaction};

use super::model::Markers;
use crate::sync::listings::{self, Listing, Listings};
use crate::sync::selection::Warning;
use syncplane_github::RepoInfo;

/// A statement that takes positional binds.
type PgQuery<'q> = Query<'q, Postgres, PgArguments>;

/// The repository's metadata columns, bound in the one order every statement here names them:
/// `owner, name, default_branch, private, archived, html_url, description`.
fn bind_metadata<'q>(q: PgQuery<'q>, repo: &'q RepoInfo) -> PgQuery<'q> {
    q.bind(&repo.owner)
        .bind(&repo.name)
        .bind(&repo.default_branch)
        .bind(repo.private)
        .bind(repo.archived)
        .bind(&repo.html_url)
        .bind(&repo.description)
}

/// The head markers, in order: `head_commit_sha, tree_sha, head_etag, selection_fingerprint`.
fn bind_markers<'q>(q: PgQuery<'q>, markers: &'q Markers) -> PgQuery<'q> {
    q.bind(&markers.head_commit_sha)
        .bind(&markers.tree_sha)
        .bind(&markers.head_etag)
        .bind(&markers.fingerprint)
}

/// The status columns, in order: `sync_status, sync_error_code, sync_error` (`ok` and nulls when
/// there is no error).
fn bind_status<'q>(q: PgQuery<'q>, error: Option<(&'static str, &'static str)>) -> PgQuery<'q> {
    let (status, code, message) = match error {
        None => ("ok", None, None),
        Some((code, message)) => ("error", Some(code), Some(message)),
    };
    q.bind(status).bind(code).bind(message)
}

/// A repository as its row describes it: the [`RepoInfo`] columns, for callers that act on a
/// stored repository without asking GitHub first (the drain; `syncplane sync --repo`).
#[derive(Debug, syncplane_core::FromRow)]
pub struct StoredInfo {
    pub(crate) github_id: i64,
    pub(crate) node_id: Option<String>,
    pub(crate) owner: String,
    pub(crate) name: String,
    #[row(flatten)]
    pub(crate) meta: RepoMeta,
}

/// What GitHub said of a repository when it was last described (its branch, visibility, address
/// and description), as its row keeps them: read by the sync and shown by the read API.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct RepoMeta {
    pub default_branch: Option<String>,
    pub private: bool,
    pub archived: bool,
    pub html_url: Option<String>,
    pub description: Option<String>,
}

impl RepoMeta {
    /// Whether `repo`, as GitHub describes it now, says the same.
    pub fn matches(&self, repo: &RepoInfo) -> bool {
        self.default_branch == repo.default_branch
            && self.private == repo.private
            && self.archived == repo.archived
            && self.html_url == repo.html_url
            && self.description == repo.description
    }
}

impl From<StoredInfo> for RepoInfo {
    fn from(r: StoredInfo) -> Self {
        let RepoMeta {
            default_branch,
            private,
            archived,
            html_url,
            description,
        } = r.meta;
        RepoInfo {
            github_id: r.github_id,
            owner: r.owner,
            name: r.name,
            private,
            archived,
            default_branch,
            html_url,
            description,
            node_id: r.node_id,
        }
    }
}

/// The stored repository named `owner/name` (any case, as GitHub compares names), when exactly
/// one row has that name and its last sync succeeded: what it says is what GitHub said then, and
/// a sync from it needs no `GET /repos/{owner}/{name}` (issue 21 point 17). `None` (ask GitHub)
/// for no row, two rows (a rename the listing has not caught up with), or a row whose last sync
/// failed or never finished (its name, branch or visibility may be what failed).
pub async fn stored_info(
    pool: &PgPool,
    owner: &str,
    name: &str,
) -> Result<Option<RepoInfo>, sqlx::Error> {
    #[derive(syncplane_core::FromRow)]
    struct Row {
        #[row(flatten)]
        info: StoredInfo,
        sync_status: String,
    }
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT github_id, owner, name, default_branch, private, archived, html_url, description,
                node_id, sync_status
         FROM repos WHERE lower(owner) = lower($1) AND lower(name) = lower($2)
         ORDER BY id LIMIT 2",
    )
    .bind(owner)
    .bind(name)
    .fetch_all(pool)
    .await?;
    Ok(match <[Row; 1]>::try_from(rows) {
        Ok([row]) if row.sync_status == "ok" => Some(row.info.into()),
        _ => None,
    })
}

/// Ensure the repository has a row (so markers and locks have something to point at) and return
/// its id. An existing row is not touched (looked up first, so no identity value is spent).
pub async fn ensure_row(conn: &mut PgConnection, repo: &RepoInfo) -> Result<i64, sqlx::Error> {
    let existing: Option<i64> = sqlx::query_scalar("SELECT id FROM repos WHERE github_id = $1")
        .bind(repo.github_id)
        .fetch_optional(&mut *conn)
        .await?;
    if let Some(id) = existing {
        return Ok(id);
    }
    let insert = sqlx::query(
        "INSERT INTO repos (github_id, owner, name, default_branch, private, archived, html_url, description)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (github_id) DO NOTHING
         RETURNING id",
    )
    .bind(repo.github_id);
    let inserted = bind_metadata(insert, repo)
        .fetch_optional(&mut *conn)
        .await?;
    match inserted {
        Some(row) => row.try_get(0),
        // Inserted concurrently by another writer between the two statements.
        None => {
            sqlx::query_scalar("SELECT id FROM repos WHERE github_id = $1")
                .bind(repo.github_id)
                .fetch_one(&mut *conn)
                .await
        }
    }
}

/// What `update_repo_row` records of CODEOWNERS: `None` leaves the columns; `Some((path, sha))`
/// sets them (to null when absent).
pub(super) type CodeOwnersColumns<'a> = Option<(Option<&'a str>, Option<&'a str>)>;

/// The repository row's new values after a full write.
pub(super) struct RowUpdate<'a> {
    pub(super) docs_folder: Option<&'a str>,
    pub(super) markers: &'a Markers,
    pub(super) error: Option<(&'static str, &'static str)>,
    pub(super) warnings: &'a [Warning],
    pub(super) codeowners: CodeOwnersColumns<'a>,
    pub(super) content_changed: bool,
}

/// Refresh the repository row: metadata, markers, status. Written only when a value differs.
pub(super) async fn update_repo_row(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    repo: &RepoInfo,
    u: &RowUpdate<'_>,
) -> Result<u64, sqlx::Error> {
    let (set_co, co_path, co_sha) = match u.codeowners {
        None => (false, None, None),
        Some((p, s)) => (true, p, s),
    };
    let warnings = serde_json::to_value(u.warnings).unwrap_or_else(|_| serde_json::json!([]));
    let update = sqlx::query(
        "UPDATE repos SET
             owner = $2, name = $3, default_branch = $4, private = $5, archived = $6,
             html_url = $7, description = $8, docs_path = $9,
             head_commit_sha = $10, tree_sha = $11, head_etag = $12, selection_fingerprint = $13,
             sync_status = $14, sync_error_code = $15, sync_error = $16, warnings = $17,
             docs_tree_sha = $22,
             codeowners_path = CASE WHEN $18 THEN $19 ELSE codeowners_path END,
             codeowners_blob_sha = CASE WHEN $18 THEN $20 ELSE codeowners_blob_sha END,
             last_synced_at = CASE WHEN $21 OR last_synced_at IS NULL OR $14 = 'ok' AND sync_status <> 'ok'
                                   THEN now() ELSE last_synced_at END,
             updated_at = clock_timestamp()
         WHERE id = $1 AND (
             (owner, name, default_branch, private, archived, html_url, description, docs_path,
              head_commit_sha, tree_sha, head_etag, selection_fingerprint,
              sync_status, sync_error_code, sync_error, warnings, docs_tree_sha)
             IS DISTINCT FROM
             ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $22)
             OR ($18 AND (codeowners_path, codeowners_blob_sha) IS DISTINCT FROM ($19, $20))
             OR $21)",
    )
    .bind(repo_id);
    let update = bind_metadata(update, repo).bind(u.docs_folder);
    let update = bind_status(bind_markers(update, u.markers), u.error);
    let result = update
        .bind(&warnings)
        .bind(set_co)
        .bind(co_path)
        .bind(co_sha)
        .bind(u.content_changed)
        .bind(&u.markers.docs_tree_sha)
        .execute(&mut **tx)
        .await?;
    Ok(result.rows_affected())
}

/// A root tree change that left everything the plan read as it was (issue 10): store the new head
/// markers and, when the root was read (`trees`: it and the stored listings), the root listing;
/// mark the repository ok, and touch nothing else (issue 23: a probe reads no root listing). The warnings and the
/// docs folder stay: they came from the same listings.
pub async fn move_markers(
    pool: &PgPool,
    repo: &RepoInfo,
    markers: &Markers,
    trees: Option<(Listing, &Listings)>,
) -> Result<u64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let id = ensure_row(&mut tx, repo).await?;
    let mut written = match trees {
        Some((root, stored)) => {
            let mut used = stored.clone();
            used.insert(String::new(), root);
            listings::save(&mut tx, id, &used, stored).await?
        }
        None => 0,
    };
    let update = sqlx::query(
        "UPDATE repos SET
             owner = $2, name = $3, default_branch = $4, private = $5, archived = $6,
             html_url = $7, description = $8, head_commit_sha = $9, tree_sha = $10,
             head_etag = $11, selection_fingerprint = $12, docs_tree_sha = $13,
             sync_status = 'ok', sync_error_code = NULL, sync_error = NULL,
             last_synced_at = CASE WHEN last_synced_at IS NULL OR sync_status <> 'ok'
                                   THEN now() ELSE last_synced_at END,
             updated_at = clock_timestamp()
         WHERE id = $1",
    )
    .bind(id);
    written += bind_markers(bind_metadata(update, repo), markers)
        .bind(&markers.docs_tree_sha)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(written)
}

/// Refresh metadata and status only (an unchanged repository, or a failure that keeps content
/// and markers). Writes nothing when every value already matches.
pub async fn refresh_status(
    pool: &PgPool,
    repo: &RepoInfo,
    error: Option<(&'static str, &'static str)>,
    etag: Option<&str>,
) -> Result<u64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let id = ensure_row(&mut tx, repo).await?;
    let update = sqlx::query(
        "UPDATE repos SET
             owner = $2, name = $3, default_branch = $4, private = $5, archived = $6,
             html_url = $7, description = $8, sync_status = $9, sync_error_code = $10,
             sync_error = $11, head_etag = COALESCE($12, head_etag), updated_at = clock_timestamp()
         WHERE id = $1 AND
             (owner, name, default_branch, private, archived, html_url, description,
              sync_status, sync_error_code, sync_error, head_etag)
             IS DISTINCT FROM
             ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, COALESCE($12, head_etag))",
    )
    .bind(id);
    let written = bind_status(bind_metadata(update, repo), error)
        .bind(etag)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(written)
}
