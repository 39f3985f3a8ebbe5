//! `GET /api/agent-sessions/transcripts` (a session's files with their segments, each with the URL
//! the web app fetches it from) and `GET .../segment` (one segment's stored bytes, direct mode).
//! Only current generations are listed; an older generation's segments are not reachable here.

use chrono::Utc;
use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use serde_json::Value;
use syncplane_contract::transcripts::{MAX_SEGMENT_BYTES, Refusal, path};

use super::access::{FileRow, Params, Reading, SessionKey, file_row, store_failure};
use crate::error::{IngestError, db_failure};
use syncplane_core::http::route_path;

/// Files of one session listed at most: more is 413 (no session has this many transcripts).
pub const MAX_LISTED_FILES: i64 = 1_000;
/// Segments of one listing at most, all files together: with a presigned URL each (about 1.3 KB
/// of JSON), more would not fit Lambda's 6 MB answer. More is 413.
pub const MAX_LISTED_SEGMENTS: i64 = 4_000;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileOut {
    file_id: String,
    generation: i32,
    acked_offset: i64,
    decoded_bytes: i64,
    segments: Vec<SegmentOut>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SegmentOut {
    offset: i64,
    source_bytes: i64,
    decoded_bytes: i64,
    compressed_bytes: i64,
    sha256: String,
    url: String,
}

#[derive(syncplane_core::FromRow)]
struct SegmentRow {
    file_row: i64,
    start_offset: i64,
    source_bytes: i64,
    decoded_bytes: i64,
    compressed_bytes: i64,
    sha256: Vec<u8>,
    object_key: String,
}

/// The listing: 404 `not_found` when the reader's org has no transcript of the session.
pub async fn files(
    r: &Reading<'_>,
    org_id: i64,
    req: &Request,
) -> Result<(StatusCode, Value), IngestError> {
    let params = Params::parse(req, &["computeTargetId", "sessionId"])?;
    let session = params.session()?;
    let rows = session_files(r, org_id, &session).await?;
    let segments = current_segments(r, &rows).await?;
    if segments.is_empty() {
        return Err(IngestError::NotFound);
    }
    let expires_at = Utc::now() + r.url_ttl;
    let prefix = path_prefix(req);
    let mut out: Vec<FileOut> = Vec::with_capacity(rows.len());
    let mut segments = segments.into_iter().peekable();
    for f in rows {
        let mut listed = Vec::new();
        while let Some(s) = segments.next_if(|s| s.file_row == f.id) {
            let url = match r.store.read_url(&s.object_key, expires_at).await {
                Ok(Some(url)) => url,
                Ok(None) => segment_route(&prefix, &session, &f, s.start_offset),
                Err(e) => return Err(store_failure("presign a segment read")(e)),
            };
            listed.push(SegmentOut {
                offset: s.start_offset,
                source_bytes: s.source_bytes,
                decoded_bytes: s.decoded_bytes,
                compressed_bytes: s.compressed_bytes,
                sha256: hex::encode(&s.sha256),
                url,
            });
        }
        out.push(FileOut {
            file_id: f.file_id,
            generation: f.generation,
            acked_offset: f.acked_offset,
            decoded_bytes: f.decoded_bytes,
            segments: listed,
        });
    }
    Ok((StatusCode::OK, serde_json::json!({ "files": out })))
}

/// The session's files of `org_id`, in `fileId` order (bytewise: ids are ASCII).
async fn session_files(
    r: &Reading<'_>,
    org_id: i64,
    session: &SessionKey,
) -> Result<Vec<FileRow>, IngestError> {
    let rows: Vec<FileRow> = sqlx::query_as(
        "SELECT id, file_id, generation, acked_offset, decoded_bytes FROM transcript_files
          WHERE org_id = $1 AND compute_target_id = $2 AND session_id = $3
          ORDER BY file_id COLLATE \"C\" LIMIT $4",
    )
    .bind(org_id)
    .bind(&session.compute_target_id)
    .bind(&session.session_id)
    .bind(MAX_LISTED_FILES + 1)
    .fetch_all(r.pool)
    .await
    .map_err(db_failure("list transcript files"))?;
    if rows.len() as i64 > MAX_LISTED_FILES {
        return Err(too_many());
    }
    Ok(rows)
}

/// The segments of each file's current generation, by file (in `rows`' order) and offset.
async fn current_segments(
    r: &Reading<'_>,
    rows: &[FileRow],
) -> Result<Vec<SegmentRow>, IngestError> {
    let ids: Vec<i64> = rows.iter().map(|f| f.id).collect();
    let mut segments: Vec<SegmentRow> = sqlx::query_as(
        "SELECT s.file_row, s.start_offset, s.source_bytes, s.decoded_bytes, s.compressed_bytes,
                s.sha256, s.object_key
           FROM transcript_segments s
           JOIN transcript_files f ON f.id = s.file_row AND s.generation = f.generation
          WHERE f.id = ANY($1)
          ORDER BY s.file_row, s.start_offset LIMIT $2",
    )
    .bind(&ids)
    .bind(MAX_LISTED_SEGMENTS + 1)
    .fetch_all(r.pool)
    .await
    .map_err(db_failure("list transcript segments"))?;
    if segments.len() as i64 > MAX_LISTED_SEGMENTS {
        return Err(too_many());
    }
    // Files come in `fileId` order, segments by row id: put them in the files' order.
    let order = |row: i64| ids.iter().position(|id| *id == row);
    segments.sort_by_key(|s| (order(s.file_row), s.start_offset));
    Ok(segments)
}

/// What the request's path has in front of the route (API Gateway's named stage), kept in the
/// direct mode's segment URLs so they reach this function the way the listing did.
fn path_prefix(req: &Request) -> String {
    let full = req.uri().path();
    full.strip_suffix(route_path(req))
        .unwrap_or_default()
        .to_owned()
}

/// The segment route's URL (a path on this origin) for one segment.
fn segment_route(prefix: &str, session: &SessionKey, f: &FileRow, offset: i64) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("computeTargetId", &session.compute_target_id)
        .append_pair("sessionId", &session.session_id)
        .append_pair("fileId", &f.file_id)
        .append_pair("generation", &f.generation.to_string())
        .append_pair("offset", &offset.to_string())
        .finish();
    format!("{prefix}{}?{query}", path::SEGMENT)
}

/// One segment's stored bytes (`application/zstd`), of the file's current generation only.
pub async fn segment(
    r: &Reading<'_>,
    org_id: i64,
    req: &Request,
) -> Result<Response<Body>, IngestError> {
    let params = Params::parse(
        req,
        &[
            "computeTargetId",
            "sessionId",
            "fileId",
            "generation",
            "offset",
        ],
    )?;
    let session = params.session()?;
    let file_id = params.file_id()?;
    let generation = params.number("generation", 1, i32::MAX as u64)?;
    let offset = params.number("offset", 0, i64::MAX as u64)?;
    let (Some(generation), Some(offset)) = (generation, offset) else {
        return Err(IngestError::refused(
            Refusal::InvalidParameter,
            "generation and offset: required",
        ));
    };
    let Some(f) = file_row(r.pool, org_id, &session, &file_id).await? else {
        return Err(IngestError::NotFound);
    };
    if f.generation as u64 != generation {
        return Err(IngestError::NotFound);
    }
    let key: Option<String> = sqlx::query_scalar(
        "SELECT object_key FROM transcript_segments
          WHERE file_row = $1 AND generation = $2 AND start_offset = $3",
    )
    .bind(f.id)
    .bind(f.generation)
    .bind(offset as i64)
    .fetch_optional(r.pool)
    .await
    .map_err(db_failure("read transcript segment"))?;
    let Some(key) = key else {
        return Err(IngestError::NotFound);
    };
    let Some(bytes) = r
        .store
        .get(&key, MAX_SEGMENT_BYTES)
        .await
        .map_err(store_failure("read a segment"))?
    else {
        tracing::warn!(key, "a recorded segment has no object in the store");
        return Err(IngestError::NotFound);
    };
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/zstd")
        .header("cache-control", "private, max-age=86400, immutable")
        .body(Body::Binary(bytes))
        .map_err(|_| IngestError::IngestionFailed)
}

/// A session with more files or segments than one listing answers.
fn too_many() -> IngestError {
    IngestError::refused(
        Refusal::ListingTooLarge,
        format!(
            "the session has more than {MAX_LISTED_FILES} files or {MAX_LISTED_SEGMENTS} segments"
        ),
    )
}
