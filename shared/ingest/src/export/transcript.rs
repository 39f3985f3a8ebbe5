//! The transcript export: a session's transcript files (one, with `fileId`, else every file of
//! the session in `fileId` order) as they were uploaded, so with every secret the client
//! redacted already gone: each file's current generation, its segments in order, one stored
//! segment read and inflated at a time (at most its recorded `decodedBytes`). Files follow one
//! another; a file that does not end with a line break gets one.

use sqlx::PgPool;
use syncplane_archive::store::Store;
use syncplane_contract::transcripts::{Refusal, valid_file_id};

use super::{Chunks, ExportError};
use crate::error::{IngestError, db_failure};
use crate::transcripts::read::{Params, SegmentRow, read_segment};

/// The route's query parameters.
pub const PARAMS: &[&str] = &["computeTargetId", "sessionId", "fileId"];
/// The body's media type.
pub const CONTENT_TYPE: &str = "application/x-ndjson";
/// Segments read per query.
const PAGE_SEGMENTS: i64 = 100;

/// What to export: the session's files, found.
#[derive(Debug, Clone)]
pub struct Plan {
    pub org_id: i64,
    pub compute_target_id: String,
    pub session_id: String,
    /// `(row id, generation)` of each file, in `fileId` order.
    pub files: Vec<(i64, i32)>,
}

impl Plan {
    /// The session's files `params` name (404 when the org has none of them).
    pub async fn find(pool: &PgPool, org_id: i64, params: &Params) -> Result<Self, IngestError> {
        let session = params.session()?;
        let file_id = params.get("fileId");
        if file_id.is_some_and(|f| !valid_file_id(f)) {
            return Err(IngestError::refused(
                Refusal::InvalidFileId,
                "fileId: 1 to 256 bytes of A-Z a-z 0-9 . _ -, not starting with .",
            ));
        }
        let files = files(
            pool,
            org_id,
            &session.compute_target_id,
            &session.session_id,
            file_id,
        )
        .await
        .map_err(db_failure("export: the session's transcript files"))?;
        if files.is_empty() {
            return Err(IngestError::NotFound);
        }
        Ok(Self {
            org_id,
            compute_target_id: session.compute_target_id,
            session_id: session.session_id,
            files,
        })
    }
}

/// `(row id, generation)` of the org's session's files (the one named `file_id`, else all), in
/// `fileId` order.
pub async fn files(
    pool: &PgPool,
    org_id: i64,
    compute_target_id: &str,
    session_id: &str,
    file_id: Option<&str>,
) -> Result<Vec<(i64, i32)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, generation FROM transcript_files
          WHERE org_id = $1 AND compute_target_id = $2 AND session_id = $3
            AND ($4::text IS NULL OR file_id = $4)
          ORDER BY file_id",
    )
    .bind(org_id)
    .bind(compute_target_id)
    .bind(session_id)
    .bind(file_id)
    .fetch_all(pool)
    .await
}

/// Write the files of `plan` to `out`.
pub async fn write(
    plan: &Plan,
    pool: &PgPool,
    store: &Store,
    out: &mut Chunks,
) -> Result<(), ExportError> {
    for &(file, generation) in &plan.files {
        let mut from = 0i64;
        let mut ends_with_line = true;
        loop {
            let segments: Vec<SegmentRow> = sqlx::query_as(
                "SELECT start_offset, decoded_bytes, object_key FROM transcript_segments
                  WHERE file_row = $1 AND generation = $2 AND start_offset >= $3
                  ORDER BY start_offset LIMIT $4",
            )
            .bind(file)
            .bind(generation)
            .bind(from)
            .bind(PAGE_SEGMENTS)
            .fetch_all(pool)
            .await?;
            for s in &segments {
                let decoded = read_segment(store, s)
                    .await?
                    .ok_or_else(|| ExportError::Segment(s.object_key.clone()))?;
                if let Some(last) = decoded.last() {
                    ends_with_line = *last == b'\n';
                }
                out.push(&decoded).await?;
            }
            match segments.last() {
                Some(last) if segments.len() as i64 == PAGE_SEGMENTS => {
                    from = last.start_offset + 1
                }
                _ => break,
            }
        }
        if !ends_with_line {
            out.push(b"\n").await?;
        }
    }
    Ok(())
}
