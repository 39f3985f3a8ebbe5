//! `GET /api/agent-sessions/transcripts/lines`: one file's decompressed JSON Lines, paged by line
//! (contract "Reading"): `limit` 1 to 500 lines (default 100), at most 1 MiB of text per page, an
//! opaque `nextCursor`; a file over 64 MiB decoded is 413 (read its segments). A segment always
//! ends with a line, so a page position is a segment and a line in it.
//!
//! Bounded throughout: a segment is read at most [`MAX_SEGMENT_BYTES`] from the store and inflated
//! at most to its recorded `decodedBytes` ([`read_segment`]: never past the contract's
//! `MAX_SEGMENT_DECODED_BYTES`, zstd's window bounded as on upload); one segment
//! is held at a time. A single line over the page's 1 MiB is 413 too: read its segment.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::StatusCode;
use lambda_http::Request;
use serde_json::{Value, json};
use syncplane_contract::transcripts::{
    DEFAULT_LINES_PER_PAGE, MAX_LINES_FILE_BYTES, MAX_LINES_PAGE_BYTES, MAX_LINES_PER_PAGE,
    MAX_SEGMENT_BYTES, Refusal,
};

use super::access::{FileRow, Params, Reading, file_row, store_failure};
use crate::error::{IngestError, db_failure};
use syncplane_archive::store::{Store, StoreError};

/// Where a page starts: the file's generation, a segment's start offset, a line in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub generation: i32,
    pub offset: i64,
    pub line: usize,
}

impl Cursor {
    /// Opaque to clients: base64url of `generation:offset:line`.
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}:{}:{}", self.generation, self.offset, self.line))
    }

    /// A cursor this route handed out; anything else is `None`.
    pub fn decode(raw: &str) -> Option<Self> {
        if raw.is_empty() || raw.len() > 128 {
            return None;
        }
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(raw).ok()?).ok()?;
        let mut parts = text.split(':');
        let cursor = Self {
            generation: parts.next()?.parse().ok().filter(|g| *g >= 1)?,
            offset: parts.next()?.parse().ok().filter(|o| *o >= 0)?,
            line: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(cursor)
    }
}

/// A stored segment of a file: where it starts, its decoded size, its object.
#[derive(syncplane_core::FromRow)]
pub(crate) struct SegmentRow {
    pub start_offset: i64,
    pub decoded_bytes: i64,
    pub object_key: String,
}

/// One page of a file's lines.
pub async fn lines(
    r: &Reading<'_>,
    org_id: i64,
    req: &Request,
) -> Result<(StatusCode, Value), IngestError> {
    let params = Params::parse(
        req,
        &["computeTargetId", "sessionId", "fileId", "cursor", "limit"],
    )?;
    let session = params.session()?;
    let file_id = params.file_id()?;
    let limit = params
        .number("limit", 1, MAX_LINES_PER_PAGE as u64)?
        .map_or(DEFAULT_LINES_PER_PAGE, |n| n as usize);
    let cursor = params
        .get("cursor")
        .map(|raw| {
            Cursor::decode(raw).ok_or_else(|| {
                IngestError::refused(Refusal::InvalidCursor, "cursor: not one this route gave")
            })
        })
        .transpose()?;
    let Some(f) = file_row(r.pool, org_id, &session, &file_id).await? else {
        return Err(IngestError::NotFound);
    };
    if f.decoded_bytes as u64 > MAX_LINES_FILE_BYTES {
        return Err(IngestError::refused(
            Refusal::FileTooLarge,
            format!("the file is over {MAX_LINES_FILE_BYTES} bytes decoded: read its segments"),
        ));
    }
    let start = match cursor {
        Some(c) if c.generation != f.generation => {
            return Err(IngestError::refused(
                Refusal::InvalidCursor,
                "cursor: the file has a newer generation; start again",
            ));
        }
        Some(c) => c,
        None => Cursor {
            generation: f.generation,
            offset: 0,
            line: 0,
        },
    };
    let segments = page_segments(r, &f, start.offset, limit).await?;
    if cursor.is_none() && segments.is_empty() {
        return Err(IngestError::NotFound);
    }
    let (lines, next) = collect(r, &f, start, &segments, limit).await?;
    let mut page = json!({ "lines": lines });
    if let Some(next) = next {
        page["nextCursor"] = json!(next.encode());
    }
    Ok((StatusCode::OK, page))
}

/// The segments a page can need from `from` on: each holds at least one line, so `limit + 1`
/// (the last tells whether a next page exists).
async fn page_segments(
    r: &Reading<'_>,
    f: &FileRow,
    from: i64,
    limit: usize,
) -> Result<Vec<SegmentRow>, IngestError> {
    sqlx::query_as(
        "SELECT start_offset, decoded_bytes, object_key FROM transcript_segments
          WHERE file_row = $1 AND generation = $2 AND start_offset >= $3
          ORDER BY start_offset LIMIT $4",
    )
    .bind(f.id)
    .bind(f.generation)
    .bind(from)
    .bind(limit as i64 + 1)
    .fetch_all(r.pool)
    .await
    .map_err(db_failure("list transcript segments"))
}

/// Lines from `start` until `limit` lines or the page's byte cap; the cursor of the first line
/// not returned, if any.
async fn collect(
    r: &Reading<'_>,
    f: &FileRow,
    start: Cursor,
    segments: &[SegmentRow],
    limit: usize,
) -> Result<(Vec<String>, Option<Cursor>), IngestError> {
    let mut out: Vec<String> = Vec::new();
    let mut bytes = 0usize;
    for s in segments {
        // A cursor's segment may have been expired meanwhile: continue at the next one.
        let skip = if s.start_offset == start.offset {
            start.line
        } else {
            0
        };
        let decoded = inflate(r, s).await?;
        for (i, line) in split_lines(&decoded).enumerate().skip(skip) {
            let here = Cursor {
                generation: f.generation,
                offset: s.start_offset,
                line: i,
            };
            if out.len() == limit {
                return Ok((out, Some(here)));
            }
            if bytes + line.len() > MAX_LINES_PAGE_BYTES {
                if out.is_empty() {
                    // One line over the page's cap: this route cannot answer it.
                    return Err(IngestError::refused(
                        Refusal::LineTooLarge,
                        format!("a line is over {MAX_LINES_PAGE_BYTES} bytes: read its segment"),
                    ));
                }
                return Ok((out, Some(here)));
            }
            bytes += line.len();
            out.push(String::from_utf8_lossy(line).into_owned());
        }
    }
    // Every segment read and the page not full: more segments only if the query was cut (a
    // segment of no line at all is possible, if never sent).
    let next = (segments.len() > limit)
        .then(|| segments.last())
        .flatten()
        .map(|last| Cursor {
            generation: f.generation,
            offset: last.start_offset + 1,
            line: 0,
        });
    Ok((out, next))
}

/// The lines of a segment's decoded bytes (each ends with `\n`; a last one without is a line).
fn split_lines(decoded: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = decoded.strip_suffix(b"\n").unwrap_or(decoded);
    let empty = decoded.is_empty();
    body.split(|b| *b == b'\n').filter(move |_| !empty)
}

/// A segment's stored bytes, inflated: exactly its recorded `decodedBytes`, never more.
async fn inflate(r: &Reading<'_>, s: &SegmentRow) -> Result<Vec<u8>, IngestError> {
    read_segment(r.store, s)
        .await
        .map_err(store_failure("read a segment"))?
        .ok_or_else(|| {
            tracing::error!(
                key = s.object_key,
                "a recorded segment is not in the store or does not inflate to its recorded size"
            );
            IngestError::IngestionFailed
        })
}

/// A recorded segment read back from `store` and inflated to exactly its recorded size
/// (`syncplane_archive::segment::decode_exact`); `None` when its object is gone or is not what
/// was recorded. The `lines` route and the transcript export read segments through it.
pub(crate) async fn read_segment(
    store: &Store,
    s: &SegmentRow,
) -> Result<Option<Vec<u8>>, StoreError> {
    let Some(compressed) = store.get(&s.object_key, MAX_SEGMENT_BYTES).await? else {
        return Ok(None);
    };
    let decoded_bytes = u64::try_from(s.decoded_bytes).unwrap_or(0);
    Ok(syncplane_archive::segment::decode_exact(
        &compressed,
        decoded_bytes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_decodes_to_what_it_encoded_and_nothing_else_decodes() {
        let c = Cursor {
            generation: 3,
            offset: 1_048_576,
            line: 17,
        };
        assert_eq!(Cursor::decode(&c.encode()), Some(c));
        for bad in [
            "",
            "!!",
            "MTox",
            "MDoxOjI",
            "LTE6MDow",
            &URL_SAFE_NO_PAD.encode("1:2:3:4"),
        ] {
            assert_eq!(Cursor::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn segment_lines_end_with_newlines() {
        let lines: Vec<&[u8]> = split_lines(b"a\n\nb\n").collect();
        assert_eq!(lines, vec![&b"a"[..], b"", b"b"]);
        assert_eq!(split_lines(b"a\nb").count(), 2);
        assert_eq!(split_lines(b"").count(), 0);
    }
}
