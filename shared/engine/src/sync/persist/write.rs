//! One sync's write: everything in one transaction, the repository row last.

use std::collections::HashSet;

use sqlx::{PgPool, Postgres, Transaction};

use super::documents::{self, DocOutcome};
use super::model::{CodeOwnersWrite, Counts, DocumentWrite, ReadmeWrite, Write};
use super::repo_row::{self, CodeOwnersColumns, RowUpdate};
use crate::sync::listings;
use crate::sync::selection::{self, SkipReason, Warning};

/// Write one sync's results in one transaction. Documents Postgres refuses are rolled back to
/// their savepoint and returned as warnings; everything else commits together.
pub async fn write(pool: &PgPool, w: Write<'_>) -> Result<(Counts, Vec<Warning>), sqlx::Error> {
    let started = std::time::Instant::now();
    let mut tx = pool.begin().await?;
    let repo_id = repo_row::ensure_row(&mut tx, w.repo).await?;
    let mut counts = Counts::default();
    let refused = write_documents(&mut tx, repo_id, &w.documents, &mut counts).await?;
    if let Some(keep) = &w.keep_paths {
        let removed = delete_unkept(&mut tx, repo_id, keep, &refused.paths).await?;
        counts.removed += removed as u32;
        counts.rows_written += removed;
    }
    counts.rows_written += write_readme(&mut tx, repo_id, &w.readme).await?;
    let (written, codeowners) = write_codeowners(&mut tx, repo_id, &w.codeowners).await?;
    counts.rows_written += written;

    let mut warnings = w.status.warnings.clone();
    warnings.extend(refused.warnings.iter().cloned());
    let warnings = selection::cap_warnings(warnings);
    if let Some((used, stored)) = w.trees {
        listings::save(&mut tx, repo_id, used, stored).await?;
    }
    counts.rows_written += repo_row::update_repo_row(
        &mut tx,
        repo_id,
        w.repo,
        &RowUpdate {
            docs_folder: w.docs_folder.as_deref(),
            markers: &w.markers,
            error: w.status.error,
            warnings: &warnings,
            codeowners,
            content_changed: counts.added + counts.changed + counts.removed > 0,
        },
    )
    .await?;
    tx.commit().await?;
    counts.db_time = started.elapsed();
    Ok((counts, refused.warnings))
}

/// The documents Postgres refused: a warning each, and their paths (their stale rows go).
#[derive(Default)]
struct Refused {
    warnings: Vec<Warning>,
    paths: HashSet<String>,
}

/// Upsert the documents and count what happened to each.
async fn write_documents(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    docs: &[DocumentWrite],
    counts: &mut Counts,
) -> Result<Refused, sqlx::Error> {
    let mut refused = Refused::default();
    for (path, outcome) in documents::upsert_documents(tx, repo_id, docs).await? {
        match outcome {
            DocOutcome::Inserted => {
                counts.rows_written += 1;
                counts.added += 1;
            }
            DocOutcome::Updated => {
                counts.rows_written += 1;
                counts.changed += 1;
            }
            DocOutcome::Refused => {
                counts.refused += 1;
                refused.paths.insert(path.clone());
                refused.warnings.push(Warning {
                    path,
                    reason: SkipReason::Unstorable,
                    detail: Some("the database refused this document".to_owned()),
                });
            }
        }
    }
    Ok(refused)
}

/// Delete the stored documents the plan does not keep (and the refused ones). Returns how many.
async fn delete_unkept(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    keep: &HashSet<String>,
    refused: &HashSet<String>,
) -> Result<u64, sqlx::Error> {
    let keep: Vec<&str> = keep
        .iter()
        .filter(|p| !refused.contains(*p))
        .map(String::as_str)
        .collect();
    Ok(
        sqlx::query("DELETE FROM documents WHERE repo_id = $1 AND path <> ALL($2)")
            .bind(repo_id)
            .bind(&keep)
            .execute(&mut **tx)
            .await?
            .rows_affected(),
    )
}

/// The README as planned. Returns the rows written.
async fn write_readme(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    readme: &ReadmeWrite,
) -> Result<u64, sqlx::Error> {
    match readme {
        ReadmeWrite::Keep => Ok(0),
        ReadmeWrite::Absent => Ok(sqlx::query("DELETE FROM readmes WHERE repo_id = $1")
            .bind(repo_id)
            .execute(&mut **tx)
            .await?
            .rows_affected()),
        ReadmeWrite::Replace(doc) => documents::upsert_readme(tx, repo_id, doc).await,
    }
}

/// CODEOWNERS as planned. Returns the rows written and what the repository row records of it.
async fn write_codeowners<'w>(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    codeowners: &'w CodeOwnersWrite,
) -> Result<(u64, CodeOwnersColumns<'w>), sqlx::Error> {
    match codeowners {
        CodeOwnersWrite::Keep => Ok((0, None)),
        CodeOwnersWrite::Absent => {
            let written = sqlx::query("DELETE FROM code_owners WHERE repo_id = $1")
                .bind(repo_id)
                .execute(&mut **tx)
                .await?
                .rows_affected();
            Ok((written, Some((None, None))))
        }
        CodeOwnersWrite::Replace {
            path,
            blob_sha,
            rules,
        } => {
            let written = documents::replace_code_owners(tx, repo_id, rules).await?;
            Ok((
                written,
                Some((Some(path.as_str()), Some(blob_sha.as_str()))),
            ))
        }
    }
}
