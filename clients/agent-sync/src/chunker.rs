//! The chunker: sessions into envelopes that the server will take.
//!
//! Spec, "The metadata sync contract": one JSON envelope per batch (pinned schema version 2, a
//! batch id, the mode, a session count, the sessions); at most 200 sessions, and the declared
//! `sessionCount` is the array's length. "Compression and byte ceilings": the device bounds both
//! dimensions before it sends, the bytes on the wire (256 KiB) and the decoded bytes (4 MiB),
//! because a very compressible payload can pass the first and still break the second. "Oversized
//! sessions are chunked": a session too large for one envelope becomes an ordered sequence of
//! chunks stamped with index and total; an unchunked session is implicitly chunk 0 of 1.
//! "Retries, backoff, and dead-lettering": a payload that stays oversize after chunking, or that
//! cannot be serialized, is a deterministic dead letter (the same bytes would fail the same way).
//!
//! How: each session is serialized once (the sanitized projection, [`crate::session`]); one whose
//! solo envelope exceeds the budget is split at event boundaries, and every piece is proved to
//! fit alone (for gzip by compressing it); pieces are then packed in order, and every envelope
//! is measured as it will be sent: decoded length, then the actual gzip bytes, an envelope over
//! the wire cap being split in two until it fits. The plan is a pure function of its input.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

use syncplane_contract::MAX_CHUNKS;

use crate::session::{Chunk, LocalEvent, LocalSession, WireEvent, WireSession};

// The server's caps (a hello-ack's `limits`, the contract's by default) and the pinned schema
// version, as the planner's callers name them.
pub use syncplane_contract::{Limits, SCHEMA_VERSION};

/// Below this a decoded envelope cannot gzip past the wire cap (deflate adds at most ~5 bytes
/// per 64 KiB stored block plus an 18-byte frame), so no trial compression is needed.
const GZIP_SLACK: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Backfill,
    Incremental,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Backfill => "backfill",
            Self::Incremental => "incremental",
        }
    }
}

/// Why a session cannot be sent at all: both are deterministic dead letters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsendable {
    /// Still over a cap after chunking (a header or one event too big, or over 1,000 chunks).
    Oversize,
    /// The projection could not be serialized.
    Serialization(String),
}

/// One item of an envelope's `sessions` array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub session_id: String,
    pub chunk: Chunk,
}

/// One request body, measured.
#[derive(Debug, Clone)]
pub struct Envelope {
    pub batch_id: String,
    /// The bytes to POST (gzip when `gzip`).
    pub body: Vec<u8>,
    pub gzip: bool,
    pub decoded_len: usize,
    pub items: Vec<Item>,
}

/// Envelopes in send order, and the sessions that can never be sent.
#[derive(Debug, Default)]
pub struct Plan {
    pub envelopes: Vec<Envelope>,
    pub unsendable: Vec<(String, Unsendable)>,
}

struct Piece {
    session_id: String,
    chunk: Chunk,
    json: Vec<u8>,
}

/// Turn `sessions` (in the order given) into envelopes for `target`.
pub fn plan(
    sessions: &[LocalSession],
    mode: Mode,
    target: &str,
    limits: &Limits,
    gzip: bool,
) -> Plan {
    let mut out = Plan::default();
    let frame = Frame::new(mode, target, gzip);
    // Decoded bytes one envelope may hold: without gzip the wire cap binds the plain JSON.
    let decoded_cap = if gzip {
        limits.max_decoded_bytes
    } else {
        limits.max_decoded_bytes.min(limits.max_wire_bytes)
    };
    let mut pieces = Vec::new();
    for s in sessions {
        match pieces_of(s, &frame, limits, decoded_cap, gzip) {
            Ok(p) => pieces.extend(p),
            Err(why) => out.unsendable.push((s.session_id.clone(), why)),
        }
    }
    let mut start = 0;
    while start < pieces.len() {
        let mut end = start;
        let mut len = 0;
        while end < pieces.len()
            && end - start < limits.max_sessions_per_batch
            && frame.len(end + 1 - start, len + pieces[end].json.len()) <= decoded_cap
        {
            len += pieces[end].json.len();
            end += 1;
        }
        // Every piece fits alone (pieces_of proved it), so `end > start`.
        end = end.max(start + 1);
        frame.seal(&pieces[start..end], limits, &mut out.envelopes);
        start = end;
    }
    out
}

/// The envelope around the sessions array, written by hand so its length is known exactly.
struct Frame {
    mode: Mode,
    target_json: String,
    gzip: bool,
}

impl Frame {
    fn new(mode: Mode, target: &str, gzip: bool) -> Self {
        Self {
            mode,
            target_json: serde_json::Value::from(target).to_string(),
            gzip,
        }
    }

    fn head(&self, batch_id: &str, count: usize) -> String {
        let encoding = if self.gzip {
            r#""encoding":"gzip","#
        } else {
            ""
        };
        format!(
            r#"{{"schemaVersion":{SCHEMA_VERSION},"batchId":"{batch_id}","mode":"{}","computeTargetId":{},{encoding}"sessionCount":{count},"sessions":["#,
            self.mode.as_str(),
            self.target_json,
        )
    }

    /// Decoded length of an envelope of `count` pieces totalling `pieces_len` bytes.
    fn len(&self, count: usize, pieces_len: usize) -> usize {
        // A batch id is a 36-character UUID.
        self.head(&"x".repeat(36), count).len() + pieces_len + count.saturating_sub(1) + 2
    }

    fn body(&self, batch_id: &str, pieces: &[Piece]) -> Vec<u8> {
        let head = self.head(batch_id, pieces.len());
        let mut body = Vec::with_capacity(
            head.len() + pieces.iter().map(|p| p.json.len() + 1).sum::<usize>() + 2,
        );
        body.extend_from_slice(head.as_bytes());
        for (i, p) in pieces.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(&p.json);
        }
        body.extend_from_slice(b"]}");
        body
    }

    /// Build, measure and (when gzip) compress; an envelope over the wire cap is split in two.
    fn seal(&self, pieces: &[Piece], limits: &Limits, out: &mut Vec<Envelope>) {
        let batch_id = uuid::Uuid::new_v4().to_string();
        let decoded = self.body(&batch_id, pieces);
        let body = if self.gzip {
            gzip(&decoded)
        } else {
            decoded.clone()
        };
        if body.len() > limits.max_wire_bytes && pieces.len() > 1 {
            let (a, b) = pieces.split_at(pieces.len() / 2);
            self.seal(a, limits, out);
            self.seal(b, limits, out);
            return;
        }
        out.push(Envelope {
            batch_id,
            body,
            gzip: self.gzip,
            decoded_len: decoded.len(),
            items: pieces
                .iter()
                .map(|p| Item {
                    session_id: p.session_id.clone(),
                    chunk: p.chunk,
                })
                .collect(),
        });
    }
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::with_capacity(bytes.len() / 4), Compression::default());
    // Writing to a Vec cannot fail.
    let _ = e.write_all(bytes);
    e.finish().unwrap_or_default()
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Vec<u8>, Unsendable> {
    serde_json::to_vec(v).map_err(|e| Unsendable::Serialization(e.to_string()))
}

/// One session as pieces that each fit an envelope alone, halving the piece budget until the
/// compressed size fits too.
fn pieces_of(
    s: &LocalSession,
    frame: &Frame,
    limits: &Limits,
    decoded_cap: usize,
    gzip: bool,
) -> Result<Vec<Piece>, Unsendable> {
    let mut budget = decoded_cap.saturating_sub(frame.len(1, 0));
    let whole = to_json(&WireSession::whole(s))?;
    if whole.len() <= budget && fits_wire(frame, &whole, limits, gzip) {
        return Ok(vec![Piece {
            session_id: s.session_id.clone(),
            chunk: Chunk { index: 0, total: 1 },
            json: whole,
        }]);
    }
    drop(whole);
    let events = s.events.as_deref().unwrap_or_default();
    let event_lens = events
        .iter()
        .map(|e| to_json(&WireEvent::of(e)).map(|j| j.len() + 1))
        .collect::<Result<Vec<_>, _>>()?;
    // Halving stops when a piece could no longer hold the session's header.
    loop {
        let pieces = split(s, events, &event_lens, budget)?;
        if pieces
            .iter()
            .all(|p| fits_wire(frame, &p.json, limits, gzip))
        {
            return Ok(pieces);
        }
        budget /= 2;
    }
}

/// Would a solo envelope of `json` be within the wire cap?
fn fits_wire(frame: &Frame, json: &[u8], limits: &Limits, gzip: bool) -> bool {
    let decoded = frame.len(1, json.len());
    if !gzip {
        return decoded <= limits.max_wire_bytes;
    }
    if decoded + GZIP_SLACK <= limits.max_wire_bytes {
        return true;
    }
    let probe = Piece {
        session_id: String::new(),
        chunk: Chunk { index: 0, total: 1 },
        json: json.to_vec(),
    };
    gzip_len(&frame.body(&"x".repeat(36), std::slice::from_ref(&probe))) <= limits.max_wire_bytes
}

fn gzip_len(bytes: &[u8]) -> usize {
    gzip(bytes).len()
}

/// Split the events so each chunk's JSON is at most `budget` bytes.
fn split(
    s: &LocalSession,
    events: &[LocalEvent],
    event_lens: &[usize],
    budget: usize,
) -> Result<Vec<Piece>, Unsendable> {
    if events.is_empty() {
        return Err(Unsendable::Oversize);
    }
    // Header lengths with the widest chunk numbers, so real pieces are never longer.
    let wide = Chunk {
        index: MAX_CHUNKS - 1,
        total: MAX_CHUNKS,
    };
    let first = to_json(&WireSession::chunk_of(
        s,
        Some(Chunk { index: 0, ..wide }),
        Some(&[]),
    ))?
    .len();
    let later = to_json(&WireSession::chunk_of(s, Some(wide), Some(&[])))?.len();
    let mut ranges = Vec::new();
    let mut start = 0;
    let mut len = first;
    for (i, l) in event_lens.iter().enumerate() {
        if len + l > budget && i > start {
            ranges.push(start..i);
            start = i;
            len = later;
        }
        if len + l > budget {
            return Err(Unsendable::Oversize);
        }
        len += l;
    }
    ranges.push(start..events.len());
    if ranges.len() > MAX_CHUNKS as usize {
        return Err(Unsendable::Oversize);
    }
    let total = ranges.len() as u32;
    ranges
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let chunk = Chunk {
                index: i as u32,
                total,
            };
            Ok(Piece {
                session_id: s.session_id.clone(),
                chunk,
                json: to_json(&WireSession::chunk_of(s, Some(chunk), Some(&events[r])))?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::tests::typical;
    use serde_json::Value;

    fn decoded(e: &Envelope) -> Value {
        let bytes = if e.gzip {
            let mut d = flate2::read::GzDecoder::new(&e.body[..]);
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut d, &mut out).unwrap();
            out
        } else {
            e.body.clone()
        };
        assert_eq!(bytes.len(), e.decoded_len);
        serde_json::from_slice(&bytes).unwrap()
    }

    /// Every envelope within both caps, `sessionCount` equal to the array, items as declared.
    fn assert_within(plan: &Plan, limits: &Limits) {
        for e in &plan.envelopes {
            assert!(
                e.body.len() <= limits.max_wire_bytes,
                "wire {}",
                e.body.len()
            );
            assert!(e.decoded_len <= limits.max_decoded_bytes);
            let doc = decoded(e);
            let sessions = doc["sessions"].as_array().unwrap();
            assert_eq!(doc["sessionCount"], sessions.len());
            assert!(sessions.len() <= limits.max_sessions_per_batch);
            assert_eq!(doc["schemaVersion"], 2);
            assert_eq!(doc["batchId"], e.batch_id);
            assert_eq!(sessions.len(), e.items.len());
        }
    }

    /// The events of every chunk of `id`, in send order, with the chunk numbers checked.
    fn reassembled(plan: &Plan, id: &str) -> (u32, Vec<u64>) {
        let mut seqs = Vec::new();
        let mut next = 0;
        let mut total = 0;
        for e in &plan.envelopes {
            for s in decoded(e)["sessions"].as_array().unwrap() {
                if s["sessionId"] != id {
                    continue;
                }
                let (index, t) = match s.get("chunk") {
                    Some(c) => (c["index"].as_u64().unwrap(), c["total"].as_u64().unwrap()),
                    None => (0, 1),
                };
                assert_eq!(index, next, "chunks in order");
                total = t as u32;
                next += 1;
                seqs.extend(
                    s["events"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|e| e["seq"].as_u64().unwrap()),
                );
            }
        }
        assert_eq!(next, total as u64, "the whole sequence is planned");
        (total, seqs)
    }

    #[test]
    fn batches_hold_at_most_200_sessions_and_declare_their_count() {
        let sessions: Vec<_> = (0..401).map(|i| typical(&format!("s{i}"), 1)).collect();
        let limits = Limits::default();
        let plan = plan(&sessions, Mode::Backfill, "laptop-1", &limits, true);
        let sizes: Vec<_> = plan.envelopes.iter().map(|e| e.items.len()).collect();
        assert_eq!(sizes, [200, 200, 1]);
        assert_within(&plan, &limits);
        let doc = decoded(&plan.envelopes[0]);
        assert_eq!(doc["mode"], "backfill");
        assert_eq!(doc["computeTargetId"], "laptop-1");
        assert!(plan.unsendable.is_empty());
    }

    #[test]
    fn an_unchunked_session_is_chunk_0_of_1_and_carries_no_chunk_field() {
        let plan = plan(
            &[typical("s1", 3)],
            Mode::Incremental,
            "t",
            &Limits::default(),
            false,
        );
        let e = &plan.envelopes[0];
        assert_eq!(e.items[0].chunk, Chunk { index: 0, total: 1 });
        assert!(decoded(e)["sessions"][0].get("chunk").is_none());
    }

    /// Without gzip the plain JSON is what goes on the wire: exactly the cap fits, a byte more
    /// splits the session.
    #[test]
    fn plain_json_exactly_at_the_wire_cap_fits_and_one_byte_more_is_chunked() {
        let limits = Limits {
            max_wire_bytes: 8_192,
            ..Limits::default()
        };
        let mut s = typical("s1", 20);
        let pad = |s: &mut LocalSession, n: usize| s.title = Some("t".repeat(n));
        pad(&mut s, 0);
        let base = plan(&[s.clone()], Mode::Backfill, "t", &limits, false).envelopes[0]
            .body
            .len();
        pad(&mut s, limits.max_wire_bytes - base);
        let exact = plan(&[s.clone()], Mode::Backfill, "t", &limits, false);
        assert_eq!(exact.envelopes.len(), 1);
        assert_eq!(exact.envelopes[0].body.len(), limits.max_wire_bytes);
        assert_eq!(exact.envelopes[0].items[0].chunk.total, 1);
        pad(&mut s, limits.max_wire_bytes - base + 1);
        let over = plan(&[s], Mode::Backfill, "t", &limits, false);
        assert!(over.envelopes.len() >= 2);
        assert_within(&over, &limits);
        let (total, seqs) = reassembled(&over, "s1");
        assert!(total >= 2);
        assert_eq!(seqs, (0..20).collect::<Vec<_>>());
    }

    /// A very compressible session passes the wire cap easily; the decoded cap is what splits it.
    #[test]
    fn a_compressible_session_over_4_mib_decoded_is_split_by_the_decoded_cap() {
        let s = typical("big", 40_000);
        let whole = serde_json::to_vec(&WireSession::whole(&s)).unwrap().len();
        assert!(whole > syncplane_contract::MAX_DECODED_BYTES, "{whole}");
        let limits = Limits::default();
        let plan = plan(&[s], Mode::Backfill, "t", &limits, true);
        assert_within(&plan, &limits);
        let (total, seqs) = reassembled(&plan, "big");
        assert!(total >= 2);
        assert_eq!(seqs, (0..40_000).collect::<Vec<_>>());
        assert!(plan.envelopes.iter().any(|e| e.decoded_len > 3_000_000));
    }

    /// Incompressible events: the compressed size binds, so pieces are halved until they fit.
    #[test]
    fn an_incompressible_session_is_split_by_the_compressed_size() {
        let mut s = typical("noise", 4_000);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for e in s.events.as_mut().unwrap() {
            let mut name = String::new();
            for _ in 0..8 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                name.push_str(&format!("{x:016x}"));
            }
            e.tool_name = Some(name);
        }
        let limits = Limits::default();
        let plan = plan(&[s], Mode::Backfill, "t", &limits, true);
        assert!(plan.unsendable.is_empty());
        assert_within(&plan, &limits);
        let (total, seqs) = reassembled(&plan, "noise");
        assert!(total >= 3, "{total}");
        assert_eq!(seqs, (0..4_000).collect::<Vec<_>>());
    }

    #[test]
    fn a_session_that_stays_oversize_is_a_deterministic_dead_letter() {
        let limits = Limits::default();
        // No events to split on and a header over the wire cap.
        let mut header = typical("fat", 0);
        header.title = Some("x".repeat(limits.max_wire_bytes));
        // One event alone over the cap.
        let mut event = typical("fat-event", 2);
        event.events.as_mut().unwrap()[1].tool_name = Some("y".repeat(limits.max_wire_bytes));
        let ok = typical("ok", 1);
        for _ in 0..2 {
            let plan = plan(
                &[header.clone(), ok.clone(), event.clone()],
                Mode::Backfill,
                "t",
                &limits,
                false,
            );
            assert_eq!(
                plan.unsendable,
                [
                    ("fat".to_owned(), Unsendable::Oversize),
                    ("fat-event".to_owned(), Unsendable::Oversize)
                ]
            );
            assert_eq!(plan.envelopes.len(), 1);
            assert_eq!(plan.envelopes[0].items[0].session_id, "ok");
        }
    }

    #[test]
    fn more_than_1000_chunks_is_oversize() {
        let limits = Limits {
            max_wire_bytes: 2_048,
            ..Limits::default()
        };
        let s = typical("long", 20_000);
        let plan = plan(&[s], Mode::Backfill, "t", &limits, false);
        assert_eq!(plan.unsendable, [("long".to_owned(), Unsendable::Oversize)]);
        assert!(plan.envelopes.is_empty());
    }

    #[test]
    fn chunks_of_several_sessions_pack_together_in_order() {
        let limits = Limits {
            max_wire_bytes: 16_384,
            ..Limits::default()
        };
        let sessions = [typical("a", 2), typical("b", 200), typical("c", 2)];
        let plan = plan(&sessions, Mode::Backfill, "t", &limits, false);
        assert_within(&plan, &limits);
        let order: Vec<_> = plan
            .envelopes
            .iter()
            .flat_map(|e| {
                e.items
                    .iter()
                    .map(|i| (i.session_id.clone(), i.chunk.index))
            })
            .collect();
        assert_eq!(order.first().unwrap(), &("a".to_owned(), 0));
        assert_eq!(order.last().unwrap(), &("c".to_owned(), 0));
        assert_eq!(reassembled(&plan, "b").1, (0..200).collect::<Vec<_>>());
    }
}
