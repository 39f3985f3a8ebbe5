//! Writing a repository's files inside the sync's transaction: documents (batched through
//! `sync_upsert_documents`, one subtransaction each), the README and the CODEOWNERS rules. A file
//! Postgres refuses is rolled back alone and reported; the others are written.

use sqlx::{Postgres, Transaction};

use super::model::DocumentWrite;
use crate::sync::parse::CodeOwnersRule;

/// What happened to one written document (identical ones are not reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DocOutcome {
    Inserted,
    Updated,
    Refused,
}

/// Documents per batch call, and body bytes per batch call: bounds one statement's size.
const BATCH_DOCUMENTS: usize = 500;
const BATCH_BYTES: usize = 16 * 1024 * 1024;

/// Upsert documents in batches: one round trip per batch through `sync_upsert_documents`, which
/// runs each document in its own subtransaction. If a batch call itself is refused (a value
/// Postgres cannot even accept as a parameter), that batch falls back to one savepoint per
/// document, so the refusal still stays with its document.
pub(super) async fn upsert_documents(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    documents: &[DocumentWrite],
) -> Result<Vec<(String, DocOutcome)>, sqlx::Error> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < documents.len() {
        let mut end = start;
        let mut bytes = 0;
        while end < documents.len()
            && end - start < BATCH_DOCUMENTS
            && (end == start || bytes < BATCH_BYTES)
        {
            bytes += documents[end].parsed.body.len() + documents[end].parsed.source.len();
            end += 1;
        }
        let batch = &documents[start..end];
        match upsert_batch(tx, repo_id, batch).await? {
            Some(rows) => out.extend(rows),
            None => {
                for doc in batch {
                    let outcome = match upsert_document(tx, repo_id, doc).await {
                        Ok(Some(true)) => DocOutcome::Inserted,
                        Ok(Some(false)) => DocOutcome::Updated,
                        Ok(None) => continue,
                        Err(e) => {
                            tracing::warn!(path = %doc.path, error = %e, "document refused by Postgres");
                            DocOutcome::Refused
                        }
                    };
                    out.push((doc.path.clone(), outcome));
                }
            }
        }
        start = end;
    }
    Ok(out)
}

/// One batch call under a savepoint; `None` when the call as a whole was refused.
async fn upsert_batch(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    batch: &[DocumentWrite],
) -> Result<Option<Vec<(String, DocOutcome)>>, sqlx::Error> {
    let paths: Vec<&str> = batch.iter().map(|d| d.path.as_str()).collect();
    let shas: Vec<&str> = batch.iter().map(|d| d.blob_sha.as_str()).collect();
    let sizes: Vec<i32> = batch
        .iter()
        .map(|d| i32::try_from(d.size).unwrap_or(i32::MAX))
        .collect();
    let titles: Vec<&str> = batch.iter().map(|d| d.parsed.title.as_str()).collect();
    let frontmatters: Vec<&serde_json::Value> =
        batch.iter().map(|d| &d.parsed.frontmatter).collect();
    let headings: Vec<serde_json::Value> = batch
        .iter()
        .map(|d| serde_json::to_value(&d.parsed.headings).unwrap_or_else(|_| serde_json::json!([])))
        .collect();
    let bodies: Vec<&str> = batch.iter().map(|d| d.parsed.body.as_str()).collect();
    let sources: Vec<&str> = batch.iter().map(|d| d.parsed.source.as_str()).collect();
    let mut sp = sqlx::Connection::begin(&mut **tx).await?;
    let rows: Result<Vec<(String, String)>, sqlx::Error> = sqlx::query_as(
        "SELECT doc_path, doc_outcome FROM sync_upsert_documents($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(repo_id)
    .bind(&paths)
    .bind(&shas)
    .bind(&sizes)
    .bind(&titles)
    .bind(&frontmatters)
    .bind(&headings)
    .bind(&bodies)
    .bind(&sources)
    .fetch_all(&mut *sp)
    .await;
    match rows {
        Ok(rows) => {
            sp.commit().await?;
            Ok(Some(
                rows.into_iter()
                    .map(|(path, outcome)| {
                        let outcome = match outcome.as_str() {
                            "inserted" => DocOutcome::Inserted,
                            "updated" => DocOutcome::Updated,
                            _ => DocOutcome::Refused,
                        };
                        if outcome == DocOutcome::Refused {
                            tracing::warn!(path = %path, "document refused by Postgres");
                        }
                        (path, outcome)
                    })
                    .collect(),
            ))
        }
        Err(e) => {
            tracing::warn!(error = %e, documents = batch.len(), "batch refused; one savepoint per document instead");
            sp.rollback().await?;
            Ok(None)
        }
    }
}

const UPSERT_DOCUMENT: &str = "INSERT INTO documents (repo_id, path, blob_sha, size_bytes, title, frontmatter, headings, body, source)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (repo_id, path) DO UPDATE SET
         blob_sha = excluded.blob_sha, size_bytes = excluded.size_bytes, title = excluded.title,
         frontmatter = excluded.frontmatter, headings = excluded.headings, body = excluded.body,
         source = excluded.source, updated_at = now()
     WHERE (documents.blob_sha, documents.size_bytes, documents.title, documents.frontmatter,
            documents.headings, documents.body, documents.source)
           IS DISTINCT FROM
           (excluded.blob_sha, excluded.size_bytes, excluded.title, excluded.frontmatter,
            excluded.headings, excluded.body, excluded.source)
     RETURNING (xmax = 0)";

const UPSERT_README: &str = "INSERT INTO readmes (repo_id, path, blob_sha, size_bytes, title, frontmatter, headings, body, source)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (repo_id) DO UPDATE SET
         path = excluded.path, blob_sha = excluded.blob_sha, size_bytes = excluded.size_bytes,
         title = excluded.title, frontmatter = excluded.frontmatter,
         headings = excluded.headings, body = excluded.body, source = excluded.source,
         updated_at = now()
     WHERE (readmes.path, readmes.blob_sha, readmes.title, readmes.frontmatter, readmes.headings,
            readmes.body, readmes.source)
           IS DISTINCT FROM
           (excluded.path, excluded.blob_sha, excluded.title, excluded.frontmatter,
            excluded.headings, excluded.body, excluded.source)
     RETURNING (xmax = 0)";

/// Insert or update one document under its own savepoint. `Some(true)` inserted, `Some(false)`
/// updated, `None` already identical.
async fn upsert_document(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    doc: &DocumentWrite,
) -> Result<Option<bool>, sqlx::Error> {
    upsert_parsed(tx, UPSERT_DOCUMENT, repo_id, doc).await
}

pub(super) async fn upsert_readme(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    doc: &DocumentWrite,
) -> Result<u64, sqlx::Error> {
    match upsert_parsed(tx, UPSERT_README, repo_id, doc).await {
        Ok(written) => Ok(u64::from(written.is_some())),
        Err(e) => {
            // A README Postgres refuses is dropped like a refused document; the sync goes on.
            tracing::warn!(path = %doc.path, error = %e, "README refused by Postgres");
            Ok(0)
        }
    }
}

/// Run an upsert of a parsed file (`sql` binds the same nine columns) under a savepoint, so a
/// refusal rolls back this file only.
async fn upsert_parsed(
    tx: &mut Transaction<'_, Postgres>,
    sql: &'static str,
    repo_id: i64,
    doc: &DocumentWrite,
) -> Result<Option<bool>, sqlx::Error> {
    let mut sp = sqlx::Connection::begin(&mut **tx).await?;
    let result: Result<Option<bool>, sqlx::Error> = sqlx::query_scalar(sql)
        .bind(repo_id)
        .bind(&doc.path)
        .bind(&doc.blob_sha)
        .bind(i32::try_from(doc.size).unwrap_or(i32::MAX))
        .bind(&doc.parsed.title)
        .bind(&doc.parsed.frontmatter)
        .bind(sqlx::types::Json(&doc.parsed.headings))
        .bind(&doc.parsed.body)
        .bind(&doc.parsed.source)
        .fetch_optional(&mut *sp)
        .await;
    match result {
        Ok(v) => {
            sp.commit().await?;
            Ok(v)
        }
        Err(e) => {
            sp.rollback().await?;
            Err(e)
        }
    }
}

pub(super) async fn replace_code_owners(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    rules: &[CodeOwnersRule],
) -> Result<u64, sqlx::Error> {
    let mut written = sqlx::query("DELETE FROM code_owners WHERE repo_id = $1")
        .bind(repo_id)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    if !rules.is_empty() {
        let lines: Vec<i32> = rules.iter().map(|r| r.line as i32).collect();
        let patterns: Vec<&str> = rules.iter().map(|r| r.pattern.as_str()).collect();
        // Owners as a JSON array per rule: Postgres has no array-of-arrays of unequal length.
        let owners: Vec<serde_json::Value> =
            rules.iter().map(|r| serde_json::json!(r.owners)).collect();
        written += sqlx::query(
            "INSERT INTO code_owners (repo_id, line, pattern, owners)
             SELECT $1, l, p, ARRAY(SELECT jsonb_array_elements_text(o))
             FROM unnest($2::int[], $3::text[], $4::jsonb[]) AS t(l, p, o)",
        )
        .bind(repo_id)
        .bind(&lines)
        .bind(&patterns)
        .bind(&owners)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    }
    Ok(written)
}
