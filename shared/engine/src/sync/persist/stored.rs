//! Reading what is stored for a repository: the head-check markers (and whether a run recorded
//! failed wrote them), then the stored blob SHAs when a re-plan needs them.

use std::collections::HashMap;

use sqlx::PgPool;

use super::model::Stored;
use crate::sync::failure::{DATABASE_ERROR, REAPED_ERROR};

/// The repository row's head-check markers, as `load` reads them.
#[derive(syncplane_core::FromRow)]
struct RepoMarkers {
    id: i64,
    tree_sha: Option<String>,
    head_etag: Option<String>,
    selection_fingerprint: Option<String>,
    head_commit_sha: Option<String>,
    docs_tree_sha: Option<String>,
    codeowners_path: Option<String>,
    codeowners_blob_sha: Option<String>,
    written_by_failed_run: Option<i64>,
}

/// The error codes of failed runs whose writes may nevertheless have committed.
const COMMITTED_ANYWAY: &[&str] = &[DATABASE_ERROR, REAPED_ERROR];

/// Load the head-check markers of a repository by its GitHub id (empty when it has no row yet);
/// [`load_contents`] adds the stored blob SHAs when a re-plan needs them.
pub async fn load(pool: &PgPool, github_id: i64) -> Result<Stored, sqlx::Error> {
    // Failed runs are few (a partial index serves them); the check costs no extra round trip.
    let row: Option<RepoMarkers> = sqlx::query_as(
        "SELECT r.id, r.tree_sha, r.head_etag, r.selection_fingerprint, r.head_commit_sha,
                r.docs_tree_sha, r.codeowners_path, r.codeowners_blob_sha,
                (SELECT f.id FROM sync_runs f
                  WHERE f.status = 'failed' AND f.error = ANY($2)
                    AND r.updated_at BETWEEN f.started_at AND f.finished_at
                    AND (f.scope IS NULL OR f.scope = r.owner || '/' || r.name)
                    AND NOT EXISTS (
                        SELECT 1 FROM sync_runs s
                         WHERE s.status IN ('success', 'partial') AND s.started_at > f.started_at
                           AND (s.scope IS NULL OR s.scope = r.owner || '/' || r.name))
                  ORDER BY f.started_at DESC LIMIT 1) AS written_by_failed_run
         FROM repos r WHERE r.github_id = $1",
    )
    .bind(github_id)
    .bind(COMMITTED_ANYWAY)
    .fetch_optional(pool)
    .await?;
    let Some(RepoMarkers {
        id,
        tree_sha,
        head_etag,
        selection_fingerprint: fingerprint,
        head_commit_sha,
        docs_tree_sha,
        codeowners_path: co_path,
        codeowners_blob_sha: co_sha,
        written_by_failed_run,
    }) = row
    else {
        return Ok(Stored::default());
    };
    Ok(Stored {
        id: Some(id),
        tree_sha,
        head_etag,
        fingerprint,
        head_commit_sha,
        written_by_failed_run,
        docs_tree_sha,
        documents: HashMap::new(),
        readme: None,
        codeowners: co_path.zip(co_sha),
    })
}

/// Fill in the stored documents' and README's blob SHAs, which only a re-plan needs (an unchanged
/// repository never reads them).
pub async fn load_contents(pool: &PgPool, stored: &mut Stored) -> Result<(), sqlx::Error> {
    let Some(id) = stored.id else {
        return Ok(());
    };
    stored.documents = sqlx::query_as::<_, (String, String)>(
        "SELECT path, blob_sha FROM documents WHERE repo_id = $1",
    )
    .bind(id)
    .fetch_all(pool)
    .await?
    .into_iter()
    .collect();
    stored.readme = sqlx::query_as::<_, (String, String)>(
        "SELECT path, blob_sha FROM readmes WHERE repo_id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?;
    Ok(())
}
