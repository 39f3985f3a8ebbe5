//! Persist (spec "One repository", step 5): one transaction per repository.
//!
//! The repository row, documents, README and code owners are written together, with a savepoint
//! per document so one document Postgres refuses never fails the others. Every write is guarded
//! by `IS DISTINCT FROM`, so a sync that finds nothing new writes nothing (idempotence).

use std::collections::{HashMap, HashSet};

use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use crate::github::RepoInfo;
use crate::sync::failure::{DATABASE_ERROR, REAPED_ERROR};
use crate::sync::listings::{self, Listing, Listings};
use crate::sync::parse::{CodeOwnersRule, ParsedDocument};
use crate::sync::selection::Warning;

/// What is stored for a repository, as the head check and the diff need it.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    pub id: Option<i64>,
    pub tree_sha: Option<String>,
    pub head_etag: Option<String>,
    pub fingerprint: Option<String>,
    pub head_commit_sha: Option<String>,
    /// The run recorded as failed during which this row was last written, when no successful run
    /// has covered the repository since: that run's write committed although it was recorded
    /// failed (a lost COMMIT reply, or a process that died after committing).
    pub written_by_failed_run: Option<i64>,
    /// The docs folder's tree SHA the last complete plan used.
    pub docs_tree_sha: Option<String>,
    /// path → blob SHA of every stored document.
    pub documents: HashMap<String, String>,
    pub readme: Option<(String, String)>,
    pub codeowners: Option<(String, String)>,
}

/// Load the head-check markers of a repository by its GitHub id (empty when it has no row yet);
/// [`load_contents`] adds the stored blob SHAs when a re-plan needs them.
#[derive(sqlx::FromRow)]
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

/// The head-check markers stored after a sync; all `None` clears them (the next sync re-plans).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Markers {
    pub head_commit_sha: Option<String>,
    pub tree_sha: Option<String>,
    pub head_etag: Option<String>,
    pub fingerprint: Option<String>,
    /// `repos.docs_tree_sha`: cleared with the others.
    pub docs_tree_sha: Option<String>,
}

/// The repository row's status after a sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// `None` is ok; otherwise (code, fixed message).
    pub error: Option<(&'static str, &'static str)>,
    pub warnings: Vec<Warning>,
}

/// A parsed document ready to store.
pub struct DocumentWrite {
    pub path: String,
    pub blob_sha: String,
    pub size: u64,
    pub parsed: ParsedDocument,
}

/// CODEOWNERS as planned: absent, unchanged, or new rules.
pub enum CodeOwnersWrite {
    /// The plan has no CODEOWNERS file: delete stored rules.
    Absent,
    /// Same blob as stored, or not fetched this time: leave stored rules.
    Keep,
    Replace {
        path: String,
        blob_sha: String,
        rules: Vec<CodeOwnersRule>,
    },
}

/// The README as planned.
pub enum ReadmeWrite {
    Absent,
    Keep,
    Replace(DocumentWrite),
}

/// Everything one sync writes.
pub struct Write<'a> {
    pub repo: &'a RepoInfo,
    pub docs_folder: Option<String>,
    pub documents: Vec<DocumentWrite>,
    /// Paths the plan keeps (fetched or unchanged); stored documents outside it are deleted.
    /// `None` keeps every stored document (a failure path that must not delete).
    pub keep_paths: Option<HashSet<String>>,
    pub readme: ReadmeWrite,
    pub codeowners: CodeOwnersWrite,
    pub markers: Markers,
    pub status: Status,
    /// The tree listings the plan used, and the ones stored before it (`None`: leave them).
    pub trees: Option<(&'a Listings, &'a Listings)>,
}

/// Counts of what a write changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub added: u32,
    pub changed: u32,
    pub removed: u32,
    /// Documents Postgres refused (each became a warning).
    pub refused: u32,
    /// Rows of any table actually written (0 for an idempotent re-sync).
    pub rows_written: u64,
    /// Wall time spent in Postgres reading the stored state and writing (benchmarks report it).
    pub db_time: std::time::Duration,
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
    let inserted: Option<i64> = sqlx::query_scalar(
        "INSERT INTO repos (github_id, owner, name, default_branch, private, archived, html_url, description)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (github_id) DO NOTHING
         RETURNING id",
    )
    .bind(repo.github_id)
    .bind(&repo.owner)
    .bind(&repo.name)
    .bind(&repo.default_branch)
    .bind(repo.private)
    .bind(repo.archived)
    .bind(&repo.html_url)
    .bind(&repo.description)
    .fetch_optional(&mut *conn)
    .await?;
    match inserted {
        Some(id) => Ok(id),
        // Inserted concurrently by another writer between the two statements.
        None => {
            sqlx::query_scalar("SELECT id FROM repos WHERE github_id = $1")
                .bind(repo.github_id)
                .fetch_one(&mut *conn)
                .await
        }
    }
}

/// Write one sync's results in one transaction. Documents Postgres refuses are rolled back to
/// their savepoint and returned as warnings; everything else commits together.
pub async fn write(pool: &PgPool, w: Write<'_>) -> Result<(Counts, Vec<Warning>), sqlx::Error> {
    let started = std::time::Instant::now();
    let mut tx = pool.begin().await?;
    let repo_id = ensure_row(&mut tx, w.repo).await?;
    let mut counts = Counts::default();
    let mut refused_warnings = Vec::new();
    let mut refused_paths = HashSet::new();

    for (path, outcome) in upsert_documents(&mut tx, repo_id, &w.documents).await? {
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
                refused_paths.insert(path.clone());
                refused_warnings.push(Warning {
                    path,
                    reason: crate::sync::selection::SkipReason::Unstorable,
                    detail: Some("the database refused this document".to_owned()),
                });
            }
        }
    }

    if let Some(keep) = &w.keep_paths {
        let keep: Vec<&str> = keep
            .iter()
            .filter(|p| !refused_paths.contains(*p))
            .map(String::as_str)
            .collect();
        let removed = sqlx::query("DELETE FROM documents WHERE repo_id = $1 AND path <> ALL($2)")
            .bind(repo_id)
            .bind(&keep)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        counts.removed += removed as u32;
        counts.rows_written += removed;
    }

    match &w.readme {
        ReadmeWrite::Keep => {}
        ReadmeWrite::Absent => {
            counts.rows_written += sqlx::query("DELETE FROM readmes WHERE repo_id = $1")
                .bind(repo_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        }
        ReadmeWrite::Replace(doc) => {
            counts.rows_written += upsert_readme(&mut tx, repo_id, doc).await?;
        }
    }

    let (co_path, co_sha) = match &w.codeowners {
        CodeOwnersWrite::Keep => (None, None),
        CodeOwnersWrite::Absent => {
            counts.rows_written += sqlx::query("DELETE FROM code_owners WHERE repo_id = $1")
                .bind(repo_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            (Some(None), Some(None))
        }
        CodeOwnersWrite::Replace {
            path,
            blob_sha,
            rules,
        } => {
            counts.rows_written += replace_code_owners(&mut tx, repo_id, rules).await?;
            (Some(Some(path.as_str())), Some(Some(blob_sha.as_str())))
        }
    };

    let mut warnings = w.status.warnings.clone();
    warnings.extend(refused_warnings.iter().cloned());
    let warnings = crate::sync::selection::cap_warnings(warnings);
    if let Some((used, stored)) = w.trees {
        listings::save(&mut tx, repo_id, used, stored).await?;
    }
    counts.rows_written += update_repo_row(
        &mut tx,
        repo_id,
        w.repo,
        &RowUpdate {
            docs_folder: w.docs_folder.as_deref(),
            markers: &w.markers,
            error: w.status.error,
            warnings: &warnings,
            codeowners: co_path.zip(co_sha),
            content_changed: counts.added + counts.changed + counts.removed > 0,
        },
    )
    .await?;
    tx.commit().await?;
    counts.db_time = started.elapsed();
    Ok((counts, refused_warnings))
}

/// What happened to one written document (identical ones are not reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DocOutcome {
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
async fn upsert_documents(
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
            bytes += documents[end].parsed.body.len();
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
    let mut sp = sqlx::Connection::begin(&mut **tx).await?;
    let rows: Result<Vec<(String, String)>, sqlx::Error> = sqlx::query_as(
        "SELECT doc_path, doc_outcome FROM sync_upsert_documents($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(repo_id)
    .bind(&paths)
    .bind(&shas)
    .bind(&sizes)
    .bind(&titles)
    .bind(&frontmatters)
    .bind(&headings)
    .bind(&bodies)
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

const UPSERT_DOCUMENT: &str = "INSERT INTO documents (repo_id, path, blob_sha, size_bytes, title, frontmatter, headings, body)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (repo_id, path) DO UPDATE SET
         blob_sha = excluded.blob_sha, size_bytes = excluded.size_bytes, title = excluded.title,
         frontmatter = excluded.frontmatter, headings = excluded.headings, body = excluded.body,
         updated_at = now()
     WHERE (documents.blob_sha, documents.size_bytes, documents.title, documents.frontmatter,
            documents.headings, documents.body)
           IS DISTINCT FROM
           (excluded.blob_sha, excluded.size_bytes, excluded.title, excluded.frontmatter,
            excluded.headings, excluded.body)
     RETURNING (xmax = 0)";

const UPSERT_README: &str = "INSERT INTO readmes (repo_id, path, blob_sha, size_bytes, title, frontmatter, headings, body)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (repo_id) DO UPDATE SET
         path = excluded.path, blob_sha = excluded.blob_sha, size_bytes = excluded.size_bytes,
         title = excluded.title, frontmatter = excluded.frontmatter,
         headings = excluded.headings, body = excluded.body, updated_at = now()
     WHERE (readmes.path, readmes.blob_sha, readmes.title, readmes.frontmatter, readmes.headings, readmes.body)
           IS DISTINCT FROM
           (excluded.path, excluded.blob_sha, excluded.title, excluded.frontmatter, excluded.headings, excluded.body)
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

async fn upsert_readme(
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

/// Run an upsert of a parsed file (`sql` binds the same eight columns) under a savepoint, so a
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

async fn replace_code_owners(
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

struct RowUpdate<'a> {
    docs_folder: Option<&'a str>,
    markers: &'a Markers,
    error: Option<(&'static str, &'static str)>,
    warnings: &'a [Warning],
    /// `None`: leave the CODEOWNERS columns; `Some((path, sha))`: set them (to null when absent).
    codeowners: Option<(Option<&'a str>, Option<&'a str>)>,
    content_changed: bool,
}

/// Refresh the repository row: metadata, markers, status. Written only when a value differs.
async fn update_repo_row(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    repo: &RepoInfo,
    u: &RowUpdate<'_>,
) -> Result<u64, sqlx::Error> {
    let (status, code, message) = match u.error {
        None => ("ok", None, None),
        Some((code, message)) => ("error", Some(code), Some(message)),
    };
    let (set_co, co_path, co_sha) = match u.codeowners {
        None => (false, None, None),
        Some((p, s)) => (true, p, s),
    };
    let warnings = serde_json::to_value(u.warnings).unwrap_or_else(|_| serde_json::json!([]));
    let result = sqlx::query(
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
    .bind(repo_id)
    .bind(&repo.owner)
    .bind(&repo.name)
    .bind(&repo.default_branch)
    .bind(repo.private)
    .bind(repo.archived)
    .bind(&repo.html_url)
    .bind(&repo.description)
    .bind(u.docs_folder)
    .bind(&u.markers.head_commit_sha)
    .bind(&u.markers.tree_sha)
    .bind(&u.markers.head_etag)
    .bind(&u.markers.fingerprint)
    .bind(status)
    .bind(code)
    .bind(message)
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
/// markers and root listing, mark the repository ok, and touch nothing else. The warnings and the
/// docs folder stay: they came from the same listings.
pub async fn move_markers(
    pool: &PgPool,
    repo: &RepoInfo,
    markers: &Markers,
    root: Listing,
    stored: &Listings,
) -> Result<u64, sqlx::Error> {
    let mut used = stored.clone();
    used.insert(String::new(), root);
    let mut tx = pool.begin().await?;
    let id = ensure_row(&mut tx, repo).await?;
    let mut written = listings::save(&mut tx, id, &used, stored).await?;
    written += sqlx::query(
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
    .bind(id)
    .bind(&repo.owner)
    .bind(&repo.name)
    .bind(&repo.default_branch)
    .bind(repo.private)
    .bind(repo.archived)
    .bind(&repo.html_url)
    .bind(&repo.description)
    .bind(&markers.head_commit_sha)
    .bind(&markers.tree_sha)
    .bind(&markers.head_etag)
    .bind(&markers.fingerprint)
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
    let (status, code, message) = match error {
        None => ("ok", None, None),
        Some((code, message)) => ("error", Some(code), Some(message)),
    };
    let mut tx = pool.begin().await?;
    let id = ensure_row(&mut tx, repo).await?;
    let written = sqlx::query(
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
    .bind(id)
    .bind(&repo.owner)
    .bind(&repo.name)
    .bind(&repo.default_branch)
    .bind(repo.private)
    .bind(repo.archived)
    .bind(&repo.html_url)
    .bind(&repo.description)
    .bind(status)
    .bind(code)
    .bind(message)
    .bind(etag)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(written)
}
