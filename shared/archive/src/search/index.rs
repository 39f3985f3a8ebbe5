//! Indexing recorded segments (migrations 0015 and 0018): each line's searchable text
//! ([`super::extract`]), in groups of consecutive lines whose terms are all their lexemes (words
//! through [`super::lexer`], code tokens from [`super::tokens`]), prepared off the async runtime
//! ([`prepare`]) and written with their line numbers ([`write`]).
//!
//! The transaction that records a segment ([`crate::files::complete`], whichever path called it)
//! queues it in `transcript_index_queue` with its first line number; [`drain`] indexes what is
//! queued, each segment in one transaction that writes its lines and takes it off the queue. So
//! nothing recorded is left unindexed (a crash leaves it queued), and the complete route does
//! not wait for the index. Who drains: `syncplane serve` at once (every 250 ms), the worker
//! after each S3 notification it completes, and the archive's hourly retention job for anything
//! left over.

use chrono::{DateTime, Utc};
use sqlx::postgres::types::Oid;
use sqlx::postgres::{PgArgumentBuffer, PgHasArrayType, PgTypeInfo};
use sqlx::{PgPool, Postgres, Transaction};

use super::extract::Extractor;
use super::lexer;
use super::tokens::code_tokens;
use crate::segment::{self, Claim};
use crate::store::{Store, StoreError};

/// Longest text of one line's part, in bytes: a longer line is several parts, so all of it is
/// searchable and each part's lexemes stay far from Postgres's limits.
pub const MAX_PART_BYTES: usize = 16 * 1024;
/// A group of consecutive lines of one segment is one row of the index (migration 0018): at most
/// this many lines (a long line's parts count one each) ...
pub const MAX_GROUP_LINES: usize = 16;
/// ... and at most this much text (a part is at most a quarter of it).
pub const MAX_GROUP_BYTES: usize = 64 * 1024;
/// Lines per insert statement (a statement holds whole groups, at least one).
const LINES_PER_STATEMENT: usize = 1_000;

/// One line (or one part of a long line) to write.
#[derive(Debug, Clone)]
struct Entry {
    segment_line: i32,
    line: i64,
    part: i32,
    role: Option<&'static str>,
    tool_name: Option<String>,
    at: Option<DateTime<Utc>>,
    body: String,
}

/// A group: the entries it holds, and all their lexemes without positions.
#[derive(Debug, Clone)]
struct Group {
    entries: std::ops::Range<usize>,
    terms: BinaryVector,
}
/// A `tsvector` sent in Postgres's binary form ([`lexer::Terms::take_binary`]).
#[derive(Debug, Clone)]
pub struct BinaryVector(pub Vec<u8>);

/// `tsvector` and `tsvector[]`: fixed type ids of every Postgres (`pg_type`).
const TSVECTOR_OID: u32 = 3614;
const TSVECTOR_ARRAY_OID: u32 = 3643;

impl sqlx::Type<Postgres> for BinaryVector {
    fn type_info() -> PgTypeInfo {
        PgTypeInfo::with_oid(Oid(TSVECTOR_OID))
    }
}

impl PgHasArrayType for BinaryVector {
    fn array_type_info() -> PgTypeInfo {
        PgTypeInfo::with_oid(Oid(TSVECTOR_ARRAY_OID))
    }
}

impl sqlx::Encode<'_, Postgres> for BinaryVector {
    fn encode_by_ref(
        &self,
        buf: &mut PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        buf.extend(self.0.iter().copied());
        Ok(sqlx::encode::IsNull::No)
    }
}

/// A segment's lines, ready to write, in groups, and its number of lines.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    entries: Vec<Entry>,
    groups: Vec<Group>,
    /// Lines in the segment (lines with no text are not written but are counted).
    pub lines: i64,
    /// Bytes of text the entries hold.
    pub text_bytes: u64,
}

impl Prepared {
    /// Entries (lines, and parts of long lines) to write.
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// Groups (rows of the index) to write.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// The entries since the last group, made a group of `terms`.
    fn close_group(&mut self, terms: &mut lexer::Terms, lexer: &lexer::Lexer) {
        let start = self.groups.last().map_or(0, |g| g.entries.end);
        if start < self.entries.len() {
            self.groups.push(Group {
                entries: start..self.entries.len(),
                terms: BinaryVector(terms.take_binary(lexer)),
            });
        }
    }
}

/// Prepare the lines of a segment's `decoded` bytes; line numbers are relative (1 = its first).
pub fn prepare(decoded: &[u8]) -> Prepared {
    let mut x = Extractor::default();
    let mut lexer = lexer::Lexer::default();
    let mut terms = lexer::Terms::default();
    let mut out = Prepared::default();
    let mut last_at = None;
    let mut group_bytes = 0;
    let body = decoded.strip_suffix(b"\n").unwrap_or(decoded);
    if decoded.is_empty() {
        return out;
    }
    for (i, line) in body.split(|b| *b == b'\n').enumerate() {
        out.lines += 1;
        let e = x.line(line);
        let at = e.at.or(last_at);
        last_at = at;
        if e.text.is_empty() {
            continue;
        }
        for (part, text) in parts(&e.text).enumerate() {
            let mut in_group = out.entries.len() - out.groups.last().map_or(0, |g| g.entries.end);
            if in_group > 0 && group_bytes + text.len() > MAX_GROUP_BYTES {
                out.close_group(&mut terms, &lexer);
                (in_group, group_bytes) = (0, 0);
            }
            out.text_bytes += text.len() as u64;
            group_bytes += text.len();
            out.entries.push(Entry {
                segment_line: i32::try_from(i).unwrap_or(i32::MAX),
                line: out.lines,
                part: i32::try_from(part).unwrap_or(i32::MAX),
                role: e.role.map(|r| r.as_str()),
                tool_name: e.tool_name.clone(),
                at,
                body: text.to_owned(),
            });
            lexer.add_terms(text, &code_tokens(text), &mut terms);
            if in_group + 1 >= MAX_GROUP_LINES {
                out.close_group(&mut terms, &lexer);
                group_bytes = 0;
            }
        }
    }
    out.close_group(&mut terms, &lexer);
    out
}

/// `text` in parts of at most [`MAX_PART_BYTES`], cut at a character boundary (after a newline
/// or a space where one is near).
fn parts(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.len().min(MAX_PART_BYTES);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        if end < rest.len()
            && let Some(space) = rest[..end].rfind(['\n', ' '])
            && space > end / 2
        {
            end = space + 1;
        }
        let (part, tail) = rest.split_at(end);
        rest = tail;
        Some(part)
    })
}

/// Where a segment's rows go.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub org_id: i64,
    pub file_row: i64,
    pub generation: i32,
    pub segment_offset: i64,
    pub compute_target_id: &'a str,
    pub session_id: &'a str,
    /// The file's lines before this segment in its generation.
    pub lines_before: i64,
    /// When the segment was recorded: the time of a line with none of its own (nor one before it
    /// in the segment).
    pub recorded_at: DateTime<Utc>,
}

/// Write `prepared` at `place` in `tx`.
pub async fn write(
    tx: &mut Transaction<'_, Postgres>,
    place: &Place<'_>,
    prepared: &Prepared,
) -> Result<(), sqlx::Error> {
    let mut groups = prepared.groups.as_slice();
    while let Some(first) = groups.first() {
        let n = groups
            .iter()
            .take_while(|g| g.entries.end - first.entries.start <= LINES_PER_STATEMENT)
            .count()
            .max(1);
        let (chunk, rest) = groups.split_at(n);
        insert_groups(tx, place, &prepared.entries, chunk).await?;
        groups = rest;
    }
    Ok(())
}

/// One statement: `groups`, their lines sent once as arrays and each group's as a slice of them.
async fn insert_groups(
    tx: &mut Transaction<'_, Postgres>,
    place: &Place<'_>,
    entries: &[Entry],
    groups: &[Group],
) -> Result<(), sqlx::Error> {
    let base = groups.first().map_or(0, |g| g.entries.start);
    let end = groups.last().map_or(0, |g| g.entries.end);
    let lines = &entries[base..end];
    let at = |e: &Entry| e.at.unwrap_or(place.recorded_at);
    let bound = |i: usize| i32::try_from(i - base).unwrap_or(i32::MAX);
    let span = |g: &Group| {
        lines[g.entries.start - base..g.entries.end - base]
            .iter()
            .map(at)
    };
    sqlx::query(
        "INSERT INTO transcript_line_groups (org_id, file_row, generation, segment_offset,
                compute_target_id, session_id, at, first_at, terms, line_nos, segment_lines,
                parts, roles, tool_names, ats, bodies)
         SELECT $1, $2, $3, $4, $5, $6, g.at, g.first_at, g.terms,
                ($7::bigint[])[g.lo:g.hi], ($8::int[])[g.lo:g.hi], ($9::int[])[g.lo:g.hi],
                ($10::text[])[g.lo:g.hi], ($11::text[])[g.lo:g.hi],
                ($12::timestamptz[])[g.lo:g.hi], ($13::text[])[g.lo:g.hi]
           FROM unnest($14::int[], $15::int[], $16::timestamptz[], $17::timestamptz[],
                       $18::tsvector[]) AS g(lo, hi, at, first_at, terms)",
    )
    .bind(place.org_id)
    .bind(place.file_row)
    .bind(place.generation)
    .bind(place.segment_offset)
    .bind(place.compute_target_id)
    .bind(place.session_id)
    .bind(
        lines
            .iter()
            .map(|e| place.lines_before + e.line)
            .collect::<Vec<_>>(),
    )
    .bind(lines.iter().map(|e| e.segment_line).collect::<Vec<_>>())
    .bind(lines.iter().map(|e| e.part).collect::<Vec<_>>())
    .bind(lines.iter().map(|e| e.role).collect::<Vec<_>>())
    .bind(
        lines
            .iter()
            .map(|e| e.tool_name.as_deref())
            .collect::<Vec<_>>(),
    )
    .bind(lines.iter().map(at).collect::<Vec<_>>())
    .bind(lines.iter().map(|e| e.body.as_str()).collect::<Vec<_>>())
    // Slices are 1-based and inclusive.
    .bind(
        groups
            .iter()
            .map(|g| bound(g.entries.start) + 1)
            .collect::<Vec<_>>(),
    )
    .bind(
        groups
            .iter()
            .map(|g| bound(g.entries.end))
            .collect::<Vec<_>>(),
    )
    .bind(
        groups
            .iter()
            .map(|g| span(g).max().unwrap_or(place.recorded_at))
            .collect::<Vec<_>>(),
    )
    .bind(
        groups
            .iter()
            .map(|g| span(g).min().unwrap_or(place.recorded_at))
            .collect::<Vec<_>>(),
    )
    .bind(groups.iter().map(|g| &g.terms).collect::<Vec<_>>())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// What a [`drain`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Segments indexed (or dropped: of an older generation, or unreadable).
    pub segments: u64,
    /// Lines and bytes of text written.
    pub lines: u64,
    pub text_bytes: u64,
}

/// Why a drain stopped early (what is queued stays queued).
#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(syncplane_core::FromRow)]
struct Queued {
    file_row: i64,
    generation: i32,
    segment_offset: i64,
    first_line: i64,
    #[row(flatten)]
    segment: SegmentRef,
    org_id: i64,
    compute_target_id: String,
    session_id: String,
    current_generation: i32,
    recorded_at: DateTime<Utc>,
}

/// Index up to `max_segments` queued segments, oldest first; concurrent drains take different
/// segments (`SKIP LOCKED`). While one segment's lines are written, the next one's are read and
/// prepared (each segment in a transaction of its own).
pub async fn drain(pool: &PgPool, store: &Store, max_segments: u64) -> Result<Drained, DrainError> {
    let mut done = Drained::default();
    let mut claimed = 0;
    let mut next = None;
    if max_segments > 0 {
        next = claim(pool, store).await?;
        claimed += u64::from(next.is_some());
    }
    while let Some(current) = next.take() {
        let prepared = match current.prepared {
            Some(task) => Some(
                task.await
                    .map_err(|e| StoreError::Unavailable(format!("segment task failed: {e}")))??,
            ),
            None => None,
        };
        if claimed < max_segments {
            next = claim(pool, store).await?;
            claimed += u64::from(next.is_some());
        }
        finish(current.tx, &current.q, prepared, &mut done).await?;
    }
    Ok(done)
}

/// A queued segment taken in a transaction of its own (its queue row held), its lines being read
/// and prepared meanwhile (`None`: of an older generation, nothing to index).
struct Claimed {
    tx: Transaction<'static, Postgres>,
    q: Queued,
    prepared: Option<tokio::task::JoinHandle<Result<Prepared, DrainError>>>,
}

/// The oldest queued segment no other drain holds, its preparation started.
async fn claim(pool: &PgPool, store: &Store) -> Result<Option<Claimed>, DrainError> {
    let mut tx = pool.begin().await?;
    // A commit lost in a crash loses the lines and the queue row's removal together: the
    // segment is queued again, so nothing is lost by not waiting for the flush.
    sqlx::query("SET LOCAL synchronous_commit = off")
        .execute(&mut *tx)
        .await?;
    let Some(q) = next_queued(&mut tx).await? else {
        return Ok(None);
    };
    let prepared = (q.generation == q.current_generation).then(|| {
        let (store, segment) = (store.clone(), q.segment.clone());
        tokio::spawn(async move { read_and_prepare(&store, &segment).await })
    });
    Ok(Some(Claimed { tx, q, prepared }))
}

/// Write a claimed segment's lines (none when `prepared` is), take it off the queue, commit.
async fn finish(
    mut tx: Transaction<'static, Postgres>,
    q: &Queued,
    prepared: Option<Prepared>,
    done: &mut Drained,
) -> Result<(), DrainError> {
    if let Some(prepared) = prepared {
        let place = Place {
            org_id: q.org_id,
            file_row: q.file_row,
            generation: q.generation,
            segment_offset: q.segment_offset,
            compute_target_id: &q.compute_target_id,
            session_id: &q.session_id,
            lines_before: q.first_line - 1,
            recorded_at: q.recorded_at,
        };
        // In a savepoint: rows Postgres refuses (no segment's content should be, but one
        // must not stop the queue) leave the segment unindexed, said in the log.
        let mut part = sqlx::Acquire::begin(&mut *tx).await?;
        match write(&mut part, &place, &prepared).await {
            Ok(()) => {
                part.commit().await?;
                done.lines += prepared.entries.len() as u64;
                done.text_bytes += prepared.text_bytes;
            }
            Err(sqlx::Error::Database(e)) => {
                part.rollback().await?;
                tracing::warn!(key = %q.segment.object_key, error = %e, "segment not indexed: its rows were refused");
            }
            Err(e) => return Err(e.into()),
        }
    }
    sqlx::query(
        "DELETE FROM transcript_index_queue
          WHERE file_row = $1 AND generation = $2 AND segment_offset = $3",
    )
    .bind(q.file_row)
    .bind(q.generation)
    .bind(q.segment_offset)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    done.segments += 1;
    Ok(())
}

async fn next_queued(tx: &mut Transaction<'_, Postgres>) -> Result<Option<Queued>, sqlx::Error> {
    sqlx::query_as(
        "SELECT q.file_row, q.generation, q.segment_offset, q.first_line, s.start_offset,
                s.object_key,
                s.compressed_bytes, s.decoded_bytes, s.source_bytes, s.sha256, f.org_id,
                f.compute_target_id, f.session_id, f.generation AS current_generation,
                s.created_at AS recorded_at
           FROM transcript_index_queue q
           JOIN transcript_segments s
             ON s.file_row = q.file_row AND s.generation = q.generation
            AND s.start_offset = q.segment_offset
           JOIN transcript_files f ON f.id = q.file_row
          ORDER BY q.queued_at, q.file_row, q.segment_offset
          LIMIT 1
            FOR UPDATE OF q SKIP LOCKED
            FOR SHARE OF s, f SKIP LOCKED",
    )
    .fetch_optional(&mut **tx)
    .await
}

/// The segment's object, verified again (bounded) and prepared; an object that is gone or no
/// longer what was recorded is indexed as nothing (logged), so it does not block the queue.
async fn read_and_prepare(store: &Store, segment: &SegmentRef) -> Result<Prepared, DrainError> {
    let prepared = read_stored(store, segment, |bytes, claim| {
        segment::verify_decoded(bytes, claim).map(|d| prepare(&d))
    })
    .await?;
    Ok(prepared.unwrap_or_default())
}

/// A recorded segment's object read again, verified (bounded) and given to `read` off the async
/// runtime; `None` (logged) when it is gone or no longer what was recorded.
async fn read_stored<T: Send + 'static>(
    store: &Store,
    s: &SegmentRef,
    read: fn(&[u8], &Claim) -> Result<T, segment::Mismatch>,
) -> Result<Option<T>, DrainError> {
    let as_u64 = |n: i64| u64::try_from(n).unwrap_or(0);
    let bytes = match store.get(&s.object_key, as_u64(s.compressed_bytes)).await {
        Ok(Some(bytes)) => bytes,
        Ok(None) | Err(StoreError::TooLarge { .. }) => {
            tracing::warn!(key = %s.object_key, "recorded segment gone or changed in the store");
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    let claim = Claim {
        source_bytes: as_u64(s.source_bytes),
        decoded_bytes: as_u64(s.decoded_bytes),
        compressed_bytes: as_u64(s.compressed_bytes),
        sha256: s.sha256.clone().try_into().unwrap_or([0; 32]),
    };
    let verdict = tokio::task::spawn_blocking(move || read(&bytes, &claim))
        .await
        .map_err(|e| StoreError::Unavailable(format!("segment task failed: {e}")))?;
    Ok(verdict
        .inspect_err(
            |m| tracing::warn!(key = %s.object_key, problem = %m, "recorded segment unreadable"),
        )
        .ok())
}

/// Queue a segment just recorded (in the recording transaction), its first line `first_line`.
pub async fn enqueue(
    tx: &mut Transaction<'_, Postgres>,
    file_row: i64,
    generation: i32,
    segment_offset: i64,
    first_line: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO transcript_index_queue (file_row, generation, segment_offset, first_line)
         VALUES ($1, $2, $3, $4)",
    )
    .bind(file_row)
    .bind(generation)
    .bind(segment_offset)
    .bind(first_line)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A new generation of `file_row` recorded: the lines of the others (and their queued segments)
/// are no longer the file's.
pub async fn forget_other_generations(
    tx: &mut Transaction<'_, Postgres>,
    file_row: i64,
    generation: i32,
) -> Result<(), sqlx::Error> {
    // The queue first: a drain indexing an old segment holds its queue row, so this waits for it
    // to commit, and the lines it wrote are then deleted too.
    for statement in [
        "DELETE FROM transcript_index_queue WHERE file_row = $1 AND generation <> $2",
        "DELETE FROM transcript_line_groups WHERE file_row = $1 AND generation <> $2",
    ] {
        sqlx::query(statement)
            .bind(file_row)
            .bind(generation)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// What a [`backfill`] queued.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Backfilled {
    pub files: u64,
    pub segments: u64,
}

#[derive(Clone, syncplane_core::FromRow)]
struct SegmentRef {
    start_offset: i64,
    object_key: String,
    compressed_bytes: i64,
    decoded_bytes: i64,
    source_bytes: i64,
    sha256: Vec<u8>,
}

/// Queue again, whole, every file whose current generation has a segment neither indexed nor
/// queued: segments recorded before the search existed (migration 0015) or left out. Each such
/// file's lines are numbered again from its first segment (each read once from the store to
/// count its lines, one at a time); [`drain`] then indexes them. `syncplane transcripts
/// reindex` runs it; running it again finds nothing to do.
pub async fn backfill(pool: &PgPool, store: &Store) -> Result<Backfilled, DrainError> {
    let files: Vec<i64> = sqlx::query_scalar(
        "SELECT DISTINCT f.id FROM transcript_files f
           JOIN transcript_segments s ON s.file_row = f.id AND s.generation = f.generation
          WHERE NOT EXISTS (SELECT 1 FROM transcript_line_groups l WHERE l.file_row = s.file_row
                               AND l.generation = s.generation AND l.segment_offset = s.start_offset)
            AND NOT EXISTS (SELECT 1 FROM transcript_index_queue q WHERE q.file_row = s.file_row
                               AND q.generation = s.generation AND q.segment_offset = s.start_offset)
          ORDER BY f.id",
    )
    .fetch_all(pool)
    .await?;
    let mut done = Backfilled::default();
    for file_row in files {
        done.segments += requeue_file(pool, store, file_row).await?;
        done.files += 1;
    }
    Ok(done)
}

/// One file of [`backfill`], in one transaction holding the file's row.
async fn requeue_file(pool: &PgPool, store: &Store, file_row: i64) -> Result<u64, DrainError> {
    let mut tx = pool.begin().await?;
    let generation: i32 =
        sqlx::query_scalar("SELECT generation FROM transcript_files WHERE id = $1 FOR UPDATE")
            .bind(file_row)
            .fetch_one(&mut *tx)
            .await?;
    for statement in [
        "DELETE FROM transcript_index_queue WHERE file_row = $1",
        "DELETE FROM transcript_line_groups WHERE file_row = $1",
    ] {
        sqlx::query(statement)
            .bind(file_row)
            .execute(&mut *tx)
            .await?;
    }
    let segments: Vec<SegmentRef> = sqlx::query_as(
        "SELECT start_offset, object_key, compressed_bytes, decoded_bytes, source_bytes, sha256
           FROM transcript_segments WHERE file_row = $1 AND generation = $2
          ORDER BY start_offset",
    )
    .bind(file_row)
    .bind(generation)
    .fetch_all(&mut *tx)
    .await?;
    let mut next_line = 1i64;
    for s in &segments {
        enqueue(&mut tx, file_row, generation, s.start_offset, next_line).await?;
        next_line += stored_lines(store, s).await?;
    }
    sqlx::query("UPDATE transcript_files SET line_count = $2 WHERE id = $1")
        .bind(file_row)
        .bind(next_line - 1)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(segments.len() as u64)
}

/// The lines of a stored segment (0 when it is gone or no longer what was recorded).
async fn stored_lines(store: &Store, s: &SegmentRef) -> Result<i64, DrainError> {
    Ok(read_stored(store, s, segment::verify_lines)
        .await?
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines in decoded bytes by the rule `segment::verify_lines` counts them by (each ends with
    /// `\n`; a last line without one counts): the oracle for [`prepare`]'s count.
    fn count_lines(decoded: &[u8]) -> i64 {
        let newlines = decoded.iter().filter(|b| **b == b'\n').count();
        let unterminated = usize::from(decoded.last().is_some_and(|b| *b != b'\n'));
        i64::try_from(newlines + unterminated).unwrap_or(i64::MAX)
    }

    #[test]
    fn every_line_is_counted_and_a_long_one_is_written_in_parts() {
        let long = "word ".repeat(MAX_PART_BYTES / 2);
        let text = format!(
            "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"hello\"}}}}\n{{}}\n{}\n",
            serde_json::json!({"type":"user","message":{"role":"user","content": long}})
        );
        let p = prepare(text.as_bytes());
        assert_eq!(p.lines, 3);
        assert_eq!(count_lines(text.as_bytes()), 3);
        assert_eq!(count_lines(b"a\nb"), 2);
        assert_eq!(count_lines(b""), 0);
        let third: Vec<&Entry> = p.entries.iter().filter(|r| r.line == 3).collect();
        assert_eq!(
            third.len(),
            3,
            "{} bytes in parts of {MAX_PART_BYTES}",
            long.len()
        );
        assert!(third.iter().all(|r| r.body.len() <= MAX_PART_BYTES));
        let joined: String = third.iter().map(|r| r.body.as_str()).collect();
        assert!(joined == long.trim(), "the parts are the whole text");
        assert!(
            p.entries.iter().all(|r| r.line != 2),
            "a line with no text has no row"
        );
    }

    /// The lexemes of a binary `tsvector` ([`lexer::Lexer::binary_vector`]), in order.
    fn lexemes(v: &BinaryVector) -> Vec<String> {
        let mut rest = &v.0[4..];
        let mut out = Vec::new();
        while let Some(nul) = rest.iter().position(|b| *b == 0) {
            out.push(String::from_utf8(rest[..nul].to_vec()).unwrap());
            let n = usize::from(u16::from_be_bytes([rest[nul + 1], rest[nul + 2]]));
            rest = &rest[nul + 3 + 2 * n..];
        }
        out
    }

    #[test]
    fn consecutive_lines_are_grouped_within_the_bounds_and_a_group_holds_each_lexeme_once() {
        let line = |i: usize, words: &str| {
            serde_json::json!({"type":"user","message":{"role":"user","content": format!("{words} word{i}")}})
                .to_string()
        };
        let mut text = String::new();
        for i in 0..40 {
            text.push_str(&line(i, "shared ECONNREFUSED tls"));
            text.push('\n');
        }
        // Lines of 20 KiB (two parts each): the byte bound closes groups before the line bound.
        let long = "bulk ".repeat(4 * 1024);
        for i in 0..6 {
            text.push_str(&line(i, &long));
            text.push('\n');
        }
        let p = prepare(text.as_bytes());
        assert_eq!(p.lines, 46);
        let mut next = 0;
        for g in &p.groups {
            assert_eq!(
                g.entries.start, next,
                "groups are consecutive and cover every entry"
            );
            next = g.entries.end;
            let n = g.entries.len();
            assert!((1..=MAX_GROUP_LINES).contains(&n), "{n} entries");
            let bytes: usize = p.entries[g.entries.clone()]
                .iter()
                .map(|e| e.body.len())
                .sum();
            assert!(
                n == 1 || bytes <= MAX_GROUP_BYTES,
                "{bytes} bytes in {n} entries"
            );
            let mut union: Vec<String> = p.entries[g.entries.clone()]
                .iter()
                .flat_map(|e| {
                    lexemes(&BinaryVector(lexer::binary_vector(
                        &e.body,
                        &code_tokens(&e.body),
                    )))
                })
                .collect();
            union.sort();
            union.dedup();
            let terms = lexemes(&g.terms);
            assert_eq!(
                terms, union,
                "the group's terms are its lines' lexemes, once each"
            );
        }
        assert_eq!(next, p.entries.len());
        assert_eq!(
            &p.groups[0].entries,
            &(0..MAX_GROUP_LINES),
            "16 short lines are a group"
        );
        let last = p.groups.last().unwrap();
        assert!(
            last.entries.len() < MAX_GROUP_LINES,
            "long lines close groups by their bytes"
        );
        assert!(lexemes(&p.groups[0].terms).contains(&"econnrefused".to_owned()));
    }

    #[test]
    fn parts_cut_at_a_character_boundary() {
        let text = "é".repeat(MAX_PART_BYTES);
        let all: Vec<&str> = parts(&text).collect();
        assert!(all.len() >= 2);
        assert_eq!(all.concat(), text);
    }
}
