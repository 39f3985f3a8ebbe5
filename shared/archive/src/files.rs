//! What Postgres keeps of the archive (contract "Identity and offsets"): each file's generation
//! and acknowledged offset, its verified segments, and the upload intents in flight.
//!
//! The acknowledged offset moves only in [`complete`]: the stored object is read back and
//! verified ([`super::segment::verify`]), then one transaction locks the file row, checks that
//! the file is still where the intent found it, records the segment, moves the offset and marks
//! the upload completed. A completed upload completed again answers the file's state
//! (idempotent); so the ingest route and the worker's S3 notification can both complete one
//! upload without harm.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::error::ArchiveError;
pub use super::key::FileName;
pub use super::position::FileState;
use super::search::index;
use super::segment::{self, Claim, Mismatch};
use super::store::{Store, StoreError};

/// The state of `name`'s file (`{0, 0}` when there is none).
pub async fn state(pool: &PgPool, name: &FileName<'_>) -> Result<FileState, sqlx::Error> {
    let row: Option<(i32, i64)> = sqlx::query_as(
        "SELECT generation, acked_offset FROM transcript_files
          WHERE org_id = $1 AND compute_target_id = $2 AND session_id = $3 AND file_id = $4",
    )
    .bind(name.org_id)
    .bind(name.compute_target_id)
    .bind(name.session_id)
    .bind(name.file_id)
    .fetch_optional(pool)
    .await?;
    Ok(row.map_or(
        FileState {
            generation: 0,
            acked_offset: 0,
        },
        |(g, o)| FileState::of(g, o),
    ))
}

/// An upload intent to record.
#[derive(Debug, Clone)]
pub struct NewUpload<'a> {
    pub upload_id: uuid::Uuid,
    pub file: FileName<'a>,
    pub generation: u32,
    pub offset: u64,
    pub claim: Claim,
    pub object_key: &'a str,
    pub expires_at: DateTime<Utc>,
}

/// Record an upload intent after the position check (contract step 8): a generation older than
/// the file's, the file's generation at another offset than the acknowledged one, or a new
/// generation not at 0 is [`ArchiveError::OffsetMismatch`] with the file's state. A file seen
/// for the first time gets its row here, at the intent's generation with nothing acknowledged.
pub async fn create_upload(pool: &PgPool, up: &NewUpload<'_>) -> Result<(), ArchiveError> {
    match try_create_upload(pool, up).await {
        // Two first intents of one file at once: the other's row was not in this statement's
        // snapshot; once more sees it.
        Err(ArchiveError::Db(sqlx::Error::RowNotFound)) => try_create_upload(pool, up).await,
        other => other,
    }
}

async fn try_create_upload(pool: &PgPool, up: &NewUpload<'_>) -> Result<(), ArchiveError> {
    let mut tx = pool.begin().await?;
    let f = &up.file;
    let (file_row, generation, acked): (i64, i32, i64) = sqlx::query_as(
        "WITH ins AS (
            INSERT INTO transcript_files (org_id, compute_target_id, session_id, file_id, generation)
            VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (compute_target_id, session_id, file_id) DO NOTHING
            RETURNING id, generation, acked_offset)
         SELECT id, generation, acked_offset FROM ins
         UNION ALL
         SELECT id, generation, acked_offset FROM transcript_files
          WHERE compute_target_id = $2 AND session_id = $3 AND file_id = $4
         LIMIT 1",
    )
    .bind(f.org_id)
    .bind(f.compute_target_id)
    .bind(f.session_id)
    .bind(f.file_id)
    .bind(as_i32(up.generation))
    .fetch_one(&mut *tx)
    .await?;
    let state = FileState::of(generation, acked);
    if !state.accepts(up.generation, up.offset) {
        return Err(ArchiveError::OffsetMismatch(state));
    }
    let query = sqlx::query(
        "INSERT INTO transcript_uploads (id, file_row, generation, start_offset, source_bytes,
                decoded_bytes, compressed_bytes, sha256, object_key, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(up.upload_id);
    let place = SegmentPlace {
        file_row,
        generation: up.generation,
        offset: up.offset,
        claim: &up.claim,
        object_key: up.object_key,
    };
    place
        .bind(query)
        .bind(up.expires_at)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// An upload intent as recorded, with its file's owner and state.
#[derive(Debug, Clone)]
pub struct Upload {
    pub id: uuid::Uuid,
    pub file_row: i64,
    pub org_id: i64,
    pub compute_target_id: String,
    pub session_id: String,
    pub generation: u32,
    pub offset: u64,
    pub claim: Claim,
    pub object_key: String,
    pub expired: bool,
    pub completed: bool,
    /// The file's state now.
    pub file: FileState,
}

/// The upload `id`, if there is one.
pub async fn upload(pool: &PgPool, id: uuid::Uuid) -> Result<Option<Upload>, sqlx::Error> {
    type Row = (
        i64,
        i64,
        String,
        String,
        i32,
        i64,
        i64,
        i64,
        i64,
        Vec<u8>,
        String,
        bool,
        bool,
        (i32, i64),
    );
    let row: Option<Row> = sqlx::query_as(
        "SELECT u.file_row, f.org_id, f.compute_target_id, f.session_id, u.generation,
                u.start_offset,
                u.source_bytes, u.decoded_bytes, u.compressed_bytes, u.sha256, u.object_key,
                u.expires_at < now(), u.completed_at IS NOT NULL, (f.generation, f.acked_offset)
           FROM transcript_uploads u JOIN transcript_files f ON f.id = u.file_row
          WHERE u.id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| Upload {
        id,
        file_row: r.0,
        org_id: r.1,
        compute_target_id: r.2,
        session_id: r.3,
        generation: u32::try_from(r.4).unwrap_or(0),
        offset: as_u64(r.5),
        claim: Claim {
            source_bytes: as_u64(r.6),
            decoded_bytes: as_u64(r.7),
            compressed_bytes: as_u64(r.8),
            sha256: r.9.try_into().unwrap_or([0; 32]),
        },
        object_key: r.10,
        expired: r.11,
        completed: r.12,
        file: FileState::of(r.13.0, r.13.1),
    }))
}

/// The upload stored under `key` that is waiting to be completed (the newest), else the newest
/// of any (for the worker's S3 notification).
pub async fn upload_by_key(pool: &PgPool, key: &str) -> Result<Option<uuid::Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT id FROM transcript_uploads WHERE object_key = $1
          ORDER BY (completed_at IS NULL AND expires_at >= now()) DESC, created_at DESC
          LIMIT 1",
    )
    .bind(key)
    .fetch_optional(pool)
    .await
}

/// What completing came to: the file's state, and the segment when this call recorded it (`None`
/// for an upload completed before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completed {
    pub state: FileState,
    pub recorded: Option<Claim>,
}

/// Verify what is stored for `upload_id` and record it (see the module doc).
pub async fn complete_upload(
    pool: &PgPool,
    store: &Store,
    upload_id: uuid::Uuid,
) -> Result<FileState, ArchiveError> {
    complete(pool, store, upload_id).await.map(|c| c.state)
}

/// [`complete_upload`], saying whether this call recorded the segment.
pub async fn complete(
    pool: &PgPool,
    store: &Store,
    upload_id: uuid::Uuid,
) -> Result<Completed, ArchiveError> {
    let up = upload(pool, upload_id)
        .await?
        .ok_or(ArchiveError::UnknownUpload)?;
    if up.completed {
        return Ok(Completed {
            state: up.file,
            recorded: None,
        });
    }
    if up.expired {
        return Err(ArchiveError::UploadExpired);
    }
    if !up.file.accepts(up.generation, up.offset) {
        return Err(ArchiveError::OffsetMismatch(up.file));
    }
    let lines = verify_stored(store, &up).await?;
    record(pool, &up, lines).await
}

/// Read the object back and verify it, counting its lines (the search index numbers them); a
/// mismatch deletes it.
async fn verify_stored(store: &Store, up: &Upload) -> Result<i64, ArchiveError> {
    let verdict: Result<i64, Mismatch> =
        match store.get(&up.object_key, up.claim.compressed_bytes).await {
            Ok(None) => return Err(ArchiveError::UploadMissing),
            Ok(Some(bytes)) => {
                let claim = up.claim;
                tokio::task::spawn_blocking(move || segment::verify_lines(&bytes, &claim))
                    .await
                    .map_err(|e| StoreError::Unavailable(format!("verify task failed: {e}")))?
                    .inspect_err(|m| {
                        tracing::info!(upload = %up.id, problem = %m, "stored segment rejected");
                    })
            }
            Err(StoreError::TooLarge { .. }) => Err(Mismatch::Length),
            Err(e) => return Err(e.into()),
        };
    match verdict {
        Ok(lines) => Ok(lines),
        Err(m) => {
            if let Err(e) = store.delete(&up.object_key).await {
                tracing::warn!(upload = %up.id, error = %e, "rejected segment not deleted");
            }
            Err(ArchiveError::BadSegment(m))
        }
    }
}

/// One transaction: lock the file, check its position again, record the segment and queue it for
/// the search index ([`crate::search::index`]), move the acknowledged offset, mark the upload
/// completed.
async fn record(pool: &PgPool, up: &Upload, lines: i64) -> Result<Completed, ArchiveError> {
    let mut tx = pool.begin().await?;
    let (generation, acked, line_count): (i32, i64, i64) = sqlx::query_as(
        "SELECT generation, acked_offset, line_count FROM transcript_files WHERE id = $1
            FOR UPDATE",
    )
    .bind(up.file_row)
    .fetch_one(&mut *tx)
    .await?;
    let state = FileState::of(generation, acked);
    // Completed meanwhile by another caller (the route and the worker): the same answer.
    let done: bool =
        sqlx::query_scalar("SELECT completed_at IS NOT NULL FROM transcript_uploads WHERE id = $1")
            .bind(up.id)
            .fetch_one(&mut *tx)
            .await?;
    if done {
        return Ok(Completed {
            state,
            recorded: None,
        });
    }
    if !state.accepts(up.generation, up.offset) {
        return Err(ArchiveError::OffsetMismatch(state));
    }
    let query = sqlx::query(
        "INSERT INTO transcript_segments (file_row, generation, start_offset, source_bytes,
                decoded_bytes, compressed_bytes, sha256, object_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    );
    let place = SegmentPlace {
        file_row: up.file_row,
        generation: up.generation,
        offset: up.offset,
        claim: &up.claim,
        object_key: &up.object_key,
    };
    place.bind(query).execute(&mut *tx).await?;
    let same_generation = generation == as_i32(up.generation);
    if !same_generation {
        // A new generation replaces the old one's searchable lines.
        index::forget_other_generations(&mut tx, up.file_row, as_i32(up.generation)).await?;
    }
    let lines_before = if same_generation { line_count } else { 0 };
    index::enqueue(
        &mut tx,
        up.file_row,
        as_i32(up.generation),
        as_i64(up.offset),
        lines_before + 1,
    )
    .await?;
    let (generation, acked): (i32, i64) = sqlx::query_as(
        "UPDATE transcript_files
            SET decoded_bytes = CASE WHEN generation = $2 THEN decoded_bytes + $4 ELSE $4 END,
                line_count = CASE WHEN generation = $2 THEN line_count + $5 ELSE $5 END,
                generation = $2, acked_offset = $3, updated_at = now()
          WHERE id = $1
          RETURNING generation, acked_offset",
    )
    .bind(up.file_row)
    .bind(as_i32(up.generation))
    .bind(as_i64(up.offset + up.claim.source_bytes))
    .bind(as_i64(up.claim.decoded_bytes))
    .bind(lines)
    .fetch_one(&mut *tx)
    .await?;
    sqlx::query("UPDATE transcript_uploads SET completed_at = now() WHERE id = $1")
        .bind(up.id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Completed {
        state: FileState::of(generation, acked),
        recorded: Some(up.claim),
    })
}

/// A segment's place and claim, as an intent and a recorded segment both store them.
struct SegmentPlace<'a> {
    file_row: i64,
    generation: u32,
    offset: u64,
    claim: &'a Claim,
    object_key: &'a str,
}

impl<'a> SegmentPlace<'a> {
    /// Bind the file's row, generation, offset, the claim's three sizes and hash, and the object
    /// key, in that order, after what `query` has bound.
    fn bind(
        &self,
        query: sqlx::query::Query<'a, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'a, sqlx::Postgres, sqlx::postgres::PgArguments> {
        query
            .bind(self.file_row)
            .bind(as_i32(self.generation))
            .bind(as_i64(self.offset))
            .bind(as_i64(self.claim.source_bytes))
            .bind(as_i64(self.claim.decoded_bytes))
            .bind(as_i64(self.claim.compressed_bytes))
            .bind(self.claim.sha256.as_slice())
            .bind(self.object_key)
    }
}

/// Offsets and sizes are capped far below `i64::MAX` (contract caps, checked at the intent).
fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Generations are checked to fit at the intent.
fn as_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn as_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
