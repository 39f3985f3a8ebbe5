//! The columnar event rows, keyed by (session, seq): how the upsert writes them.
//!
//! A batch may carry tens of thousands of events, so each kind of session takes the cheapest
//! path that keeps the contract's rules:
//! - a session this batch creates has no stored events: its events are appended with one binary
//!   `COPY` (no conflict to resolve, nothing to compare);
//! - a stored session's events are compared with the stored rows of the same seqs: missing seqs
//!   are appended, differing rows updated, equal ones left alone, so a repeated batch writes
//!   nothing;
//! - chunk 0 of a new revision also deletes, by key, the stored events it does not carry;
//! - the session's `event_count` is then known without counting rows: a replaced session holds
//!   exactly the batch's events, any other its stored count plus the seqs appended.
//!
//! Every session's row is locked by the session upsert before any of this runs, and the batch
//! holds the session's advisory lock, so nothing else writes these sessions' events meanwhile.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, TimeZone, Utc};
use sqlx::{Postgres, Transaction};

use super::batch::Event;
use super::error::{IngestError, db_failure};

/// A stored event row: session, seq, ts, kind, tool name, duration, input and output tokens,
/// error flag.
type StoredRow = (
    i64,
    i64,
    DateTime<Utc>,
    String,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<bool>,
);

/// One session's events to write, by seq.
pub(crate) struct SessionEvents<'a> {
    pub session_pk: i64,
    pub events: Vec<&'a Event>,
}

/// Append event rows known to be absent (a new session's, or seqs a stored session lacks).
pub async fn append(
    tx: &mut Transaction<'_, Postgres>,
    sessions: &[SessionEvents<'_>],
) -> Result<(), IngestError> {
    if sessions.iter().all(|s| s.events.is_empty()) {
        return Ok(());
    }
    let data = encode_binary_copy(sessions);
    let mut copy = tx
        .copy_in_raw(
            "COPY agent_session_events (session_pk, seq, ts, kind, tool_name, duration_ms,
                    input_tokens, output_tokens, is_error) FROM STDIN (FORMAT binary)",
        )
        .await
        .map_err(db_failure("copy events"))?;
    if let Err(e) = copy.send(data).await {
        // Aborting tells the server; the transaction is rolled back by the caller's `?`.
        let _ = copy.abort("send failed").await;
        return Err(db_failure("copy events")(e));
    }
    copy.finish().await.map_err(db_failure("copy events"))?;
    Ok(())
}

/// A stored session's events from this batch.
pub(crate) struct StoredSession<'a> {
    pub session_pk: i64,
    /// The events of this batch, by seq.
    pub events: Vec<&'a Event>,
    /// Chunk 0 of a new revision carried events: stored events it does not carry go.
    pub replace: bool,
    /// The session's `event_count` as stored before this batch.
    pub stored_count: i32,
}

/// Write stored sessions' events, touching only what differs: the stored rows are read (one
/// index range scan per session, so the cost follows the batch, not the table) and compared
/// here; differing rows are updated and, for a replacing session, the stored seqs it does not
/// carry deleted by key. The missing seqs are returned for the caller to append with the new
/// sessions' events, in one COPY. Every statement finds rows by primary key,
/// so no plan depends on the table's statistics (a growing table's stale statistics once made
/// the planner scan all events for a delete by session). Returns the events to append and each
/// session's event count where it changed.
pub(crate) async fn write_stored<'a>(
    tx: &mut Transaction<'_, Postgres>,
    sessions: &[StoredSession<'a>],
) -> Result<(Vec<SessionEvents<'a>>, Vec<(i64, i32)>), IngestError> {
    let sessions: Vec<&StoredSession<'_>> = sessions
        .iter()
        .filter(|s| s.replace || !s.events.is_empty())
        .collect();
    if sessions.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let stored = read_stored(tx, &sessions).await?;
    let mut diff = Diff::default();
    let none = HashMap::new();
    for s in &sessions {
        diff.add(s, stored.get(&s.session_pk).unwrap_or(&none));
    }
    delete(tx, &diff.gone_pk, &diff.gone_seq).await?;
    update(tx, &diff.differing).await?;
    Ok((diff.missing, diff.counts))
}

/// The stored rows of each session's seq range (all of them for a replacing session), by session
/// and seq.
async fn read_stored(
    tx: &mut Transaction<'_, Postgres>,
    sessions: &[&StoredSession<'_>],
) -> Result<HashMap<i64, HashMap<i64, StoredRow>>, IngestError> {
    let (mut pks, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new());
    for s in sessions {
        pks.push(s.session_pk);
        if s.replace {
            // Every stored event: those outside the new revision go.
            lo.push(0);
            hi.push(i64::MAX);
        } else {
            lo.push(s.events.iter().map(|e| seq(e)).min().unwrap_or(0));
            hi.push(s.events.iter().map(|e| seq(e)).max().unwrap_or(0));
        }
    }
    let rows: Vec<StoredRow> = sqlx::query_as(
        "SELECT e.session_pk, e.seq, e.ts, e.kind, e.tool_name, e.duration_ms, e.input_tokens,
                e.output_tokens, e.is_error
           FROM unnest($1::int8[], $2::int8[], $3::int8[]) AS r(pk, lo, hi)
           CROSS JOIN LATERAL (
               -- OFFSET 0 keeps this a per-session index range scan, never a scan of the table.
               SELECT * FROM agent_session_events e
                WHERE e.session_pk = r.pk AND e.seq BETWEEN r.lo AND r.hi OFFSET 0) AS e",
    )
    .bind(&pks)
    .bind(&lo)
    .bind(&hi)
    .fetch_all(&mut **tx)
    .await
    .map_err(db_failure("read stored events"))?;
    let mut stored: HashMap<i64, HashMap<i64, StoredRow>> = HashMap::new();
    for r in rows {
        stored.entry(r.0).or_default().insert(r.1, r);
    }
    Ok(stored)
}

/// What the stored sessions' events need, found by comparing them with the stored rows.
#[derive(Default)]
struct Diff<'a> {
    /// Seqs not stored: appended by the caller.
    missing: Vec<SessionEvents<'a>>,
    /// Stored rows whose values changed: updated.
    differing: Vec<SessionEvents<'a>>,
    /// Stored seqs a replacing session does not carry: deleted, by key.
    gone_pk: Vec<i64>,
    gone_seq: Vec<i64>,
    /// Each session's event count where it changed.
    counts: Vec<(i64, i32)>,
}

impl<'a> Diff<'a> {
    /// Compare one session's events of this batch with its stored `rows`.
    fn add(&mut self, s: &StoredSession<'a>, rows: &HashMap<i64, StoredRow>) {
        let (mut add, mut change) = (Vec::new(), Vec::new());
        for e in &s.events {
            match rows.get(&seq(e)) {
                None => add.push(*e),
                Some(row) if !same(row, e) => change.push(*e),
                Some(_) => {}
            }
        }
        let count = if s.replace {
            let carried: HashSet<i64> = s.events.iter().map(|e| seq(e)).collect();
            for &k in rows.keys() {
                if !carried.contains(&k) {
                    self.gone_pk.push(s.session_pk);
                    self.gone_seq.push(k);
                }
            }
            // After the replace the session holds exactly this batch's events.
            s.events.len()
        } else {
            usize::try_from(s.stored_count).unwrap_or(0) + add.len()
        };
        // Bounded by the stored rows plus the decoded cap, far below i32::MAX.
        let count = count as i32;
        if count != s.stored_count {
            self.counts.push((s.session_pk, count));
        }
        if !add.is_empty() {
            self.missing.push(SessionEvents {
                session_pk: s.session_pk,
                events: add,
            });
        }
        if !change.is_empty() {
            self.differing.push(SessionEvents {
                session_pk: s.session_pk,
                events: change,
            });
        }
    }
}

/// Delete event rows by key.
async fn delete(
    tx: &mut Transaction<'_, Postgres>,
    pks: &[i64],
    seqs: &[i64],
) -> Result<(), IngestError> {
    if pks.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "DELETE FROM agent_session_events e
          USING unnest($1::int8[], $2::int8[]) AS k(pk, seq)
          WHERE e.session_pk = k.pk AND e.seq = k.seq",
    )
    .bind(pks)
    .bind(seqs)
    .execute(&mut **tx)
    .await
    .map_err(db_failure("replace events"))?;
    Ok(())
}

/// A stored row equals the event as Postgres would store it (times in whole microseconds).
fn same(row: &StoredRow, e: &Event) -> bool {
    pg_micros(row.2) == pg_micros(e.ts)
        && row.3 == e.kind
        && row.4.as_deref() == e.tool_name.as_deref()
        && row.5 == e.duration_ms.map(int)
        && row.6 == e.input_tokens.map(int)
        && row.7 == e.output_tokens.map(int)
        && row.8 == e.is_error
}

/// Rewrite stored rows whose values changed (a replay with different metadata).
async fn update(
    tx: &mut Transaction<'_, Postgres>,
    sessions: &[SessionEvents<'_>],
) -> Result<(), IngestError> {
    let total: usize = sessions.iter().map(|s| s.events.len()).sum();
    if total == 0 {
        return Ok(());
    }
    let mut pk = Vec::with_capacity(total);
    let mut seqs = Vec::with_capacity(total);
    let mut ts = Vec::with_capacity(total);
    let mut kind = Vec::with_capacity(total);
    let mut tool = Vec::with_capacity(total);
    let mut duration = Vec::with_capacity(total);
    let mut input = Vec::with_capacity(total);
    let mut output = Vec::with_capacity(total);
    let mut is_error = Vec::with_capacity(total);
    for s in sessions {
        for e in &s.events {
            pk.push(s.session_pk);
            seqs.push(seq(e));
            ts.push(e.ts);
            kind.push(e.kind.as_str());
            tool.push(e.tool_name.as_deref());
            duration.push(e.duration_ms.map(int));
            input.push(e.input_tokens.map(int));
            output.push(e.output_tokens.map(int));
            is_error.push(e.is_error);
        }
    }
    sqlx::query(
        "UPDATE agent_session_events e
            SET ts = u.ts, kind = u.kind, tool_name = u.tool, duration_ms = u.dur,
                input_tokens = u.inp, output_tokens = u.outp, is_error = u.err
           FROM unnest($1::int8[], $2::int8[], $3::timestamptz[], $4::text[], $5::text[],
                       $6::int8[], $7::int8[], $8::int8[], $9::bool[])
                AS u(pk, seq, ts, kind, tool, dur, inp, outp, err)
          WHERE e.session_pk = ANY($10) AND e.session_pk = u.pk AND e.seq = u.seq",
    )
    .bind(&pk)
    .bind(&seqs)
    .bind(&ts)
    .bind(&kind)
    .bind(&tool)
    .bind(&duration)
    .bind(&input)
    .bind(&output)
    .bind(&is_error)
    // The sessions again, so the planner reads only their rows whatever the table's size.
    .bind(sessions.iter().map(|s| s.session_pk).collect::<Vec<_>>())
    .execute(&mut **tx)
    .await
    .map_err(db_failure("update events"))?;
    Ok(())
}

/// Write the promoted `event_count` of stored sessions whose count changed (by primary key).
pub(crate) async fn write_counts(
    tx: &mut Transaction<'_, Postgres>,
    counts: &[(i64, i32)],
) -> Result<(), IngestError> {
    if counts.is_empty() {
        return Ok(());
    }
    let (ids, ns): (Vec<i64>, Vec<i32>) = counts.iter().copied().unzip();
    sqlx::query(
        "UPDATE agent_sessions s SET event_count = c.n
           FROM unnest($1::int8[], $2::int4[]) AS c(id, n)
          WHERE s.id = c.id AND s.event_count <> c.n",
    )
    .bind(&ids)
    .bind(&ns)
    .execute(&mut **tx)
    .await
    .map_err(db_failure("count events"))?;
    Ok(())
}

/// Bounded by 2^53 - 1 at parse, so the conversions to int8 are lossless.
fn int(v: u64) -> i64 {
    v as i64
}

fn seq(e: &Event) -> i64 {
    int(e.seq)
}

/// Postgres's binary timestamp: microseconds since 2000-01-01 UTC, truncated exactly as sqlx
/// encodes a bound `DateTime<Utc>`, so a row written by COPY compares equal to the same event
/// bound later.
fn pg_micros(at: DateTime<Utc>) -> i64 {
    let epoch = Utc.with_ymd_and_hms(2000, 1, 1, 0, 0, 0).single();
    epoch
        .and_then(|epoch| (at - epoch).num_microseconds())
        // RFC 3339 years are 0000 to 9999, well inside the range.
        .unwrap_or_default()
}

/// `COPY ... (FORMAT binary)` data for the event rows: the fixed header, one tuple per event
/// (field count, then each field as length + big-endian bytes, -1 for NULL), the trailer.
fn encode_binary_copy(sessions: &[SessionEvents<'_>]) -> Vec<u8> {
    const FIELDS: i16 = 9;
    let rows: usize = sessions.iter().map(|s| s.events.len()).sum();
    let mut out = Vec::with_capacity(19 + rows * 96 + 2);
    out.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    out.extend_from_slice(&0i32.to_be_bytes()); // flags
    out.extend_from_slice(&0i32.to_be_bytes()); // header extension length
    for s in sessions {
        for e in &s.events {
            out.extend_from_slice(&FIELDS.to_be_bytes());
            put_i64(&mut out, Some(s.session_pk));
            put_i64(&mut out, Some(seq(e)));
            put_i64(&mut out, Some(pg_micros(e.ts)));
            put_text(&mut out, Some(&e.kind));
            put_text(&mut out, e.tool_name.as_deref());
            put_i64(&mut out, e.duration_ms.map(int));
            put_i64(&mut out, e.input_tokens.map(int));
            put_i64(&mut out, e.output_tokens.map(int));
            match e.is_error {
                Some(b) => {
                    out.extend_from_slice(&1i32.to_be_bytes());
                    out.push(u8::from(b));
                }
                None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
    }
    out.extend_from_slice(&(-1i16).to_be_bytes());
    out
}

fn put_i64(out: &mut Vec<u8>, v: Option<i64>) {
    match v {
        Some(v) => {
            out.extend_from_slice(&8i32.to_be_bytes());
            out.extend_from_slice(&v.to_be_bytes());
        }
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
    }
}

fn put_text(out: &mut Vec<u8>, v: Option<&str>) {
    match v {
        // Strings are bounded at parse (kind 64 characters, others by the decoded cap), far
        // below i32::MAX bytes.
        Some(v) => {
            out.extend_from_slice(&(v.len() as i32).to_be_bytes());
            out.extend_from_slice(v.as_bytes());
        }
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
    }
}
