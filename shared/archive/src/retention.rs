//! Retention per organization (issue 20 §7: "retention per organization (a setting, with a
//! deletion path that removes objects and rows)"): `orgs.transcript_retention_days`, `NULL` keeps
//! everything. [`expire`] deletes, in bounded batches:
//!
//! 1. segments recorded longer ago than their org's retention: the objects first
//!    (`Store::delete`), then the rows, so a crash in between leaves rows whose objects are gone
//!    and the next run deletes them again (deleting a missing object is success); the file's
//!    `decoded_bytes` follows, and the completed intents of those segments go with them;
//! 2. files left with no segment, untouched for as long, with no intent in flight;
//! 3. intents never completed and expired for [`UPLOAD_GRACE`], with their object unless a
//!    recorded segment or another live intent names the same (content-addressed) key. These go
//!    whatever the org's retention: they were never archived.
//!
//! `syncplane transcripts expire` runs it for every tenant.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

use super::store::{Store, StoreError};

/// Rows handled per batch (each batch one transaction after its objects are deleted).
pub const DEFAULT_BATCH: i64 = 500;
/// How long after its expiry a never-completed intent is kept (a PUT signed until the expiry may
/// still be arriving).
pub(crate) const UPLOAD_GRACE: chrono::Duration = chrono::Duration::hours(1);

/// What a run deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Expired {
    pub segments: u64,
    pub files: u64,
    pub uploads: u64,
    /// Objects deleted from the store (segments' and abandoned intents').
    pub objects: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum RetentionError {
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Set (`Some(days)`, 1 to 36,500) or clear (`None`: keep forever) an org's retention. Returns
/// whether the org exists; days out of range is the database's refusal.
pub async fn set_retention(
    pool: &PgPool,
    org_id: i64,
    days: Option<u32>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("UPDATE orgs SET transcript_retention_days = $2 WHERE id = $1")
        .bind(org_id)
        .bind(days.map(|d| d as i32))
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// One run over the database `pool` and its `store`, as of `now`, `batch` rows at a time.
pub async fn expire(
    pool: &PgPool,
    store: &Store,
    now: DateTime<Utc>,
    batch: i64,
) -> Result<Expired, RetentionError> {
    let sweep = Sweep {
        pool,
        store,
        now,
        batch: batch.max(1),
    };
    let mut done = Expired::default();
    while sweep.segments(&mut done).await? == sweep.batch {}
    while sweep.files(&mut done).await? == sweep.batch {}
    while sweep.uploads(&mut done).await? == sweep.batch {}
    Ok(done)
}

/// One run's database, store, time and batch size: each method expires one batch of its kind
/// and returns how many rows it selected (fewer than `batch`: that kind is done).
struct Sweep<'a> {
    pool: &'a PgPool,
    store: &'a Store,
    now: DateTime<Utc>,
    batch: i64,
}

#[derive(syncplane_core::FromRow)]
struct Segment {
    file_row: i64,
    generation: i32,
    start_offset: i64,
    object_key: String,
}

#[derive(syncplane_core::FromRow)]
struct Upload {
    id: uuid::Uuid,
    object_key: String,
    /// Whether a recorded segment or another live or completed intent names the same key.
    shared: bool,
}

impl Sweep<'_> {
    /// One batch of segments past their org's retention.
    async fn segments(&self, done: &mut Expired) -> Result<i64, RetentionError> {
        let due: Vec<Segment> = sqlx::query_as(
            "SELECT s.file_row, s.generation, s.start_offset, s.object_key
           FROM transcript_segments s
           JOIN transcript_files f ON f.id = s.file_row
           JOIN orgs o ON o.id = f.org_id
          WHERE o.transcript_retention_days IS NOT NULL
            AND s.created_at < $1 - make_interval(days => o.transcript_retention_days)
          ORDER BY s.created_at LIMIT $2",
        )
        .bind(self.now)
        .bind(self.batch)
        .fetch_all(self.pool)
        .await?;
        for s in &due {
            self.store.delete(&s.object_key).await?;
            done.objects += 1;
        }
        let rows: Vec<i64> = due.iter().map(|s| s.file_row).collect();
        let gens: Vec<i32> = due.iter().map(|s| s.generation).collect();
        let offsets: Vec<i64> = due.iter().map(|s| s.start_offset).collect();
        let mut tx = self.pool.begin().await?;
        // The files' archived bytes follow (the current generation's only, as recorded).
        sqlx::query(
        "WITH gone AS (
            DELETE FROM transcript_segments s
             USING unnest($1::int8[], $2::int4[], $3::int8[]) AS d(file_row, generation, start_offset)
             WHERE s.file_row = d.file_row AND s.generation = d.generation
               AND s.start_offset = d.start_offset
            RETURNING s.file_row, s.generation, s.start_offset, s.decoded_bytes),
         bytes AS (
            UPDATE transcript_files f
               SET decoded_bytes = greatest(0, f.decoded_bytes - g.bytes)
              FROM (SELECT gone.file_row, gone.generation, sum(gone.decoded_bytes) AS bytes
                      FROM gone GROUP BY gone.file_row, gone.generation) g
             WHERE f.id = g.file_row AND f.generation = g.generation)
         DELETE FROM transcript_uploads u USING gone
          WHERE u.file_row = gone.file_row AND u.generation = gone.generation
            AND u.start_offset = gone.start_offset AND u.completed_at IS NOT NULL",
    )
    .bind(&rows)
    .bind(&gens)
    .bind(&offsets)
    .execute(&mut *tx)
    .await?;
        tx.commit().await?;
        done.segments += due.len() as u64;
        Ok(due.len() as i64)
    }

    /// One batch of files with no segment left, untouched for their org's retention, with no
    /// intent in flight.
    async fn files(&self, done: &mut Expired) -> Result<i64, RetentionError> {
        let deleted = sqlx::query(
            "DELETE FROM transcript_files WHERE id IN (
            SELECT f.id FROM transcript_files f JOIN orgs o ON o.id = f.org_id
             WHERE o.transcript_retention_days IS NOT NULL
               AND f.updated_at < $1 - make_interval(days => o.transcript_retention_days)
               AND NOT EXISTS (SELECT 1 FROM transcript_segments s WHERE s.file_row = f.id)
               AND NOT EXISTS (SELECT 1 FROM transcript_uploads u
                                WHERE u.file_row = f.id AND u.completed_at IS NULL
                                  AND u.expires_at > $1)
             LIMIT $2)",
        )
        .bind(self.now)
        .bind(self.batch)
        .execute(self.pool)
        .await?
        .rows_affected();
        done.files += deleted;
        Ok(i64::try_from(deleted).unwrap_or(i64::MAX))
    }

    /// One batch of intents never completed and expired for [`UPLOAD_GRACE`].
    async fn uploads(&self, done: &mut Expired) -> Result<i64, RetentionError> {
        let due: Vec<Upload> = sqlx::query_as(
            "SELECT u.id, u.object_key,
                EXISTS (SELECT 1 FROM transcript_segments s
                         WHERE s.file_row = u.file_row AND s.generation = u.generation
                           AND s.start_offset = u.start_offset AND s.object_key = u.object_key)
                OR EXISTS (SELECT 1 FROM transcript_uploads o
                            WHERE o.object_key = u.object_key AND o.id <> u.id
                              AND (o.completed_at IS NOT NULL OR o.expires_at >= $1 - $3))
                AS shared
           FROM transcript_uploads u
          WHERE u.completed_at IS NULL AND u.expires_at < $1 - $3
          ORDER BY u.expires_at LIMIT $2",
        )
        .bind(self.now)
        .bind(self.batch)
        .bind(UPLOAD_GRACE)
        .fetch_all(self.pool)
        .await?;
        for u in due.iter().filter(|u| !u.shared) {
            self.store.delete(&u.object_key).await?;
            done.objects += 1;
        }
        let ids: Vec<uuid::Uuid> = due.iter().map(|u| u.id).collect();
        let gone = sqlx::query(
            "DELETE FROM transcript_uploads WHERE id = ANY($1) AND completed_at IS NULL",
        )
        .bind(&ids)
        .execute(self.pool)
        .await?;
        done.uploads += gone.rows_affected();
        Ok(due.len() as i64)
    }
}
