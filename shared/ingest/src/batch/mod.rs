//! Schema parse (contract step 5): the envelope and session tables, field by field, from the
//! already decoded and duplicate-free JSON. Every violation is a 400 naming the field; unknown
//! fields are ignored (a newer client may send fields this server predates), and so are the
//! retired ones (`tokenSeries`, an event's `summary` and `data`): they are never read into the
//! typed batch, so nothing downstream can store them.
//!
//! [`parse`] reads the body into [`raw`] mirrors of the contract's tables, checks each field with
//! [`checks`] and yields the typed batch of [`model`]; the bounds are the wire contract's
//! (`syncplane_contract`).

mod checks;
mod model;
mod raw;

use std::collections::HashSet;

use syncplane_contract::{
    MAX_CHUNKS, MAX_FRUSTRATION_SIGNALS, MAX_SESSIONS_PER_BATCH, SCHEMA_VERSION, chars,
};

use self::checks::{CheckItem, Json, Path};
use self::raw::{
    Checked, Item, Items, NONE, RawArtifactRef, RawChunk, RawEnvelope, RawEvent, RawFrustration,
    RawRepository, RawSession, RawTokenEvent, RawUsage, Scalar, Signals, object,
};
use crate::error::IngestError;

pub use self::model::{
    ArtifactRef, Batch, Chunk, Event, Frustration, Mode, Repository, Session, Timestamp,
    TokenEvent, Usage,
};

/// Parse and check the whole envelope from the decoded bytes, which step 2 has already found to
/// be one JSON document without duplicate keys ([`super::strict_json::check`]).
///
/// The bytes are read straight into field-by-field mirrors of the contract's tables (every field
/// an optional [`Scalar`] or a mirror of its nested object, unknown fields skipped unread), then
/// each field is checked by type and bound. Nothing becomes a JSON tree, and arrays of objects
/// are checked item by item as they are read ([`Checked`]): what the parse holds is the checked
/// batch and the bytes it borrows from, whatever the body (issue 12: 4 MiB of `0,` in one JSON
/// tree would be two million 32-byte values).
pub fn parse(bytes: &[u8]) -> Result<Batch, IngestError> {
    let raw: Item<RawEnvelope> = serde_json::from_slice(bytes).map_err(|e| {
        // Unreachable after step 2's check; kept as a 400 rather than trusted.
        tracing::debug!(error = %e, "schema parse of checked JSON failed");
        IngestError::bad_request("invalid JSON")
    })?;
    let Item::Object(raw) = raw else {
        return Err(IngestError::bad_request("the body must be a JSON object"));
    };
    let root = Path::Text(String::new());

    match &raw.schema_version {
        Some(n) if n.as_f64() == Some(SCHEMA_VERSION as f64) => {}
        v => {
            return Err(root
                .field("schemaVersion", v)
                .err(&format!("must be the number {SCHEMA_VERSION}")));
        }
    }
    let batch_id = root
        .field("batchId", &raw.batch_id)
        .req_str(1, chars::BATCH_ID)?;
    let mode = mode_of(&root, &raw.mode)?;
    let compute_target_id = root
        .field("computeTargetId", &raw.compute_target_id)
        .req_str(1, chars::COMPUTE_TARGET_ID)?;
    if raw.encoding.as_ref().is_some_and(|v| v.as_str().is_none()) {
        return Err(root
            .field("encoding", &raw.encoding)
            .err("must be a string"));
    }
    let session_count = root.field("sessionCount", &raw.session_count).req_int()?;
    let sessions = sessions_of(&root, raw.sessions, session_count)?;
    check_unique(&sessions)?;
    Ok(Batch {
        batch_id,
        mode,
        compute_target_id,
        sessions,
    })
}

/// The envelope's `mode`.
fn mode_of(root: &Path<'_>, mode: &Option<Scalar<'_>>) -> Result<Mode, IngestError> {
    match mode.as_ref().and_then(Json::as_str) {
        Some("backfill") => Ok(Mode::Backfill),
        Some("incremental") => Ok(Mode::Incremental),
        _ => Err(root
            .field("mode", mode)
            .err("must be \"backfill\" or \"incremental\"")),
    }
}

/// The envelope's `sessions`: 1 to [`MAX_SESSIONS_PER_BATCH`] objects, as many as
/// `sessionCount` declares, each parsed in order.
fn sessions_of(
    root: &Path<'_>,
    sessions: Option<Items<Box<RawSession<'_>>>>,
    session_count: u64,
) -> Result<Vec<Session>, IngestError> {
    let raw_sessions = match sessions {
        Some(Items::List(items)) => items,
        _ => return Err(root.field("sessions", &NONE).err("required array")),
    };
    if raw_sessions.is_empty() || raw_sessions.len() > MAX_SESSIONS_PER_BATCH {
        return Err(root
            .field("sessions", &NONE)
            .err(&format!("must hold 1 to {MAX_SESSIONS_PER_BATCH} sessions")));
    }
    if session_count != raw_sessions.len() as u64 {
        return Err(root
            .field("sessionCount", &NONE)
            .err("must equal the number of sessions"));
    }
    raw_sessions
        .into_iter()
        .enumerate()
        .map(|(index, raw)| {
            let at = Path::Item {
                array: "sessions",
                index,
            };
            match raw {
                Item::Object(raw) => parse_session(*raw, &at),
                Item::NotObject => {
                    Err(IngestError::bad_request(format!("{at}: must be an object")))
                }
            }
        })
        .collect()
}

/// The same session and chunk index at most once in a batch, and each event `seq` at most once
/// per session (across all its chunks).
fn check_unique(sessions: &[Session]) -> Result<(), IngestError> {
    let mut chunks_seen = HashSet::new();
    let mut seqs_seen: HashSet<(&str, u64)> = HashSet::new();
    for (i, s) in sessions.iter().enumerate() {
        if !chunks_seen.insert((s.session_id.as_str(), s.chunk.index)) {
            return Err(IngestError::bad_request(format!(
                "sessions[{i}]: the same session and chunk index appear twice in the batch"
            )));
        }
        for (j, e) in s.events.iter().flatten().enumerate() {
            if !seqs_seen.insert((s.session_id.as_str(), e.seq)) {
                return Err(IngestError::bad_request(format!(
                    "sessions[{i}].events[{j}].seq: must be unique within the session"
                )));
            }
        }
    }
    Ok(())
}

/// One session, checked in the order of its 400s: the nested objects and arrays first, then the
/// scalar fields in table order.
fn parse_session(raw: RawSession, at: &Path<'_>) -> Result<Session, IngestError> {
    let chunk = chunk_of(at, raw.chunk)?;
    let repository = repository_of(at, raw.repository)?;
    let usage = usage_of(at, raw.usage)?;
    let events = items_of(at, "events", raw.events)?;
    let token_events = items_of(at, "tokenEvents", raw.token_events)?;
    let artifact_refs = items_of(at, "artifactRefs", raw.artifact_refs)?;
    let frustration = frustration_of(at, raw.frustration)?;
    Ok(Session {
        session_id: at
            .field("sessionId", &raw.session_id)
            .req_str(1, chars::SESSION_ID)?,
        updated_at: at.field("updatedAt", &raw.updated_at).req_time()?,
        data_revision: at
            .field("dataRevision", &raw.data_revision)
            .req_str(1, chars::DATA_REVISION)?,
        chunk,
        agent: at.field("agent", &raw.agent).req_str(1, chars::AGENT)?,
        model: at.field("model", &raw.model).opt_str()?,
        title: at.field("title", &raw.title).opt_str()?,
        status: at.field("status", &raw.status).opt_str()?,
        started_at: at.field("startedAt", &raw.started_at).opt_time()?,
        ended_at: at.field("endedAt", &raw.ended_at).opt_time()?,
        repository,
        usage,
        events,
        token_events,
        artifact_refs,
        frustration,
    })
}

/// `chunk`: absent is chunk 0 of 1; else 0 <= index < total <= [`MAX_CHUNKS`].
fn chunk_of(at: &Path<'_>, raw: Option<Item<RawChunk<'_>>>) -> Result<Chunk, IngestError> {
    let Some((c, path)) = object(&at.field("chunk", &NONE), raw)? else {
        return Ok(Chunk { index: 0, total: 1 });
    };
    let index = path.field("index", &c.index).req_int()?;
    let total = path.field("total", &c.total).req_int()?;
    if total == 0 || total > u64::from(MAX_CHUNKS) || index >= total {
        return Err(at
            .field("chunk", &NONE)
            .err(&format!("needs 0 <= index < total <= {MAX_CHUNKS}")));
    }
    // Both fit: total <= MAX_CHUNKS.
    Ok(Chunk {
        index: index as u32,
        total: total as u32,
    })
}

fn repository_of(
    at: &Path<'_>,
    raw: Option<Item<RawRepository<'_>>>,
) -> Result<Option<Repository>, IngestError> {
    let Some((r, path)) = object(&at.field("repository", &NONE), raw)? else {
        return Ok(None);
    };
    Ok(Some(Repository {
        remote_url: path.field("remoteUrl", &r.remote_url).opt_str()?,
        branch: path.field("branch", &r.branch).opt_str()?,
        commit_sha: path.field("commitSha", &r.commit_sha).opt_str()?,
    }))
}

fn usage_of(at: &Path<'_>, raw: Option<Item<RawUsage<'_>>>) -> Result<Option<Usage>, IngestError> {
    let Some((u, path)) = object(&at.field("usage", &NONE), raw)? else {
        return Ok(None);
    };
    Ok(Some(Usage {
        input_tokens: path.field("inputTokens", &u.input_tokens).opt_int()?,
        output_tokens: path.field("outputTokens", &u.output_tokens).opt_int()?,
        cache_read_tokens: path
            .field("cacheReadTokens", &u.cache_read_tokens)
            .opt_int()?,
        cache_write_tokens: path
            .field("cacheWriteTokens", &u.cache_write_tokens)
            .opt_int()?,
        cost_usd: path.field("costUsd", &u.cost_usd).opt_non_negative()?,
    }))
}

/// An optional array of objects, its items checked as they were read.
fn items_of<R: CheckItem>(
    at: &Path<'_>,
    key: &str,
    raw: Option<Checked<R>>,
) -> Result<Option<Vec<R::Checked>>, IngestError> {
    raw.map(|items| items.into_items(&at.field(key, &NONE)))
        .transpose()
}

fn frustration_of(
    at: &Path<'_>,
    raw: Option<Item<RawFrustration<'_>>>,
) -> Result<Option<Frustration>, IngestError> {
    let Some((f, path)) = object(&at.field("frustration", &NONE), raw)? else {
        return Ok(None);
    };
    let score = path.field("score", &f.score).req_number()?;
    if !(0.0..=1.0).contains(&score) {
        return Err(path.field("score", &NONE).err("must be between 0 and 1"));
    }
    let signals = match f.signals {
        Some(Signals::Strings(signals)) => signals,
        Some(Signals::Invalid) => {
            return Err(path
                .field("signals", &NONE)
                .err("must be an array of strings without NUL"));
        }
        Some(Signals::TooMany) => {
            return Err(path.field("signals", &NONE).err(&format!(
                "must hold at most {MAX_FRUSTRATION_SIGNALS} signals"
            )));
        }
        _ => {
            return Err(path
                .field("signals", &NONE)
                .err("required array of strings"));
        }
    };
    Ok(Some(Frustration { score, signals }))
}

/// An event's checks (contract "Event").
impl CheckItem for RawEvent<'_> {
    type Checked = Event;
    fn check(&self, at: &Path<'_>) -> Result<Event, IngestError> {
        Ok(Event {
            seq: at.field("seq", &self.seq).req_int()?,
            ts: at.field("ts", &self.ts).req_instant()?,
            kind: at.field("kind", &self.kind).req_str(1, chars::EVENT_KIND)?,
            tool_name: at.field("toolName", &self.tool_name).opt_str()?,
            duration_ms: at.field("durationMs", &self.duration_ms).opt_int()?,
            input_tokens: at.field("inputTokens", &self.input_tokens).opt_int()?,
            output_tokens: at.field("outputTokens", &self.output_tokens).opt_int()?,
            is_error: at.field("isError", &self.is_error).opt_bool()?,
        })
    }
}

/// A token event's checks (contract "Session", `tokenEvents`).
impl CheckItem for RawTokenEvent<'_> {
    type Checked = TokenEvent;
    fn check(&self, at: &Path<'_>) -> Result<TokenEvent, IngestError> {
        Ok(TokenEvent {
            ts: at.field("ts", &self.ts).req_time()?,
            input_tokens: at.field("inputTokens", &self.input_tokens).req_int()?,
            output_tokens: at.field("outputTokens", &self.output_tokens).req_int()?,
        })
    }
}

/// An artifact reference's checks (contract "Session", `artifactRefs`: empty strings allowed).
impl CheckItem for RawArtifactRef<'_> {
    type Checked = ArtifactRef;
    fn check(&self, at: &Path<'_>) -> Result<ArtifactRef, IngestError> {
        Ok(ArtifactRef {
            kind: at.field("kind", &self.kind).req_str(0, usize::MAX)?,
            reference: at.field("ref", &self.reference).req_str(0, usize::MAX)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use syncplane_contract::MAX_SAFE_INTEGER;

    fn envelope(sessions: Value) -> Value {
        let n = sessions.as_array().map_or(0, Vec::len);
        json!({"schemaVersion": 2, "batchId": "b", "mode": "incremental",
               "computeTargetId": "t", "sessionCount": n, "sessions": sessions})
    }

    fn parse_value(doc: &Value) -> Result<Batch, IngestError> {
        parse(&serde_json::to_vec(doc).unwrap())
    }

    fn session() -> Value {
        json!({"sessionId": "s", "updatedAt": "2026-01-01T00:00:00Z", "dataRevision": "r",
               "agent": "claude"})
    }

    #[test]
    fn a_minimal_batch_parses_and_unknown_fields_are_ignored() {
        let mut s = session();
        s["somethingNew"] = json!({"x": 1});
        s["tokenSeries"] = json!([[1, 2]]);
        let b = parse_value(&envelope(json!([s]))).unwrap();
        assert_eq!(b.sessions[0].chunk, Chunk { index: 0, total: 1 });
    }

    #[test]
    fn whole_numbers_only() {
        let whole = |json: &str| {
            serde_json::from_str::<Scalar<'_>>(json)
                .ok()
                .and_then(|n| n.whole())
        };
        assert_eq!(whole("5.0"), Some(5));
        assert_eq!(whole("5.5"), None);
        assert_eq!(whole("-1"), None);
        assert_eq!(whole("9007199254740991"), Some(MAX_SAFE_INTEGER));
        assert_eq!(whole("9007199254740992"), None);
    }

    #[test]
    fn a_nul_character_in_any_string_is_refused() {
        let mut s = session();
        s["title"] = json!("a\u{0}b");
        let err = parse_value(&envelope(json!([s]))).unwrap_err();
        assert!(err.to_string().contains("sessions[0].title"), "{err}");
        let mut s = session();
        s["events"] = json!([{"seq": 1, "ts": "2026-01-01T00:00:00Z", "kind": "a\u{0}"}]);
        assert!(parse_value(&envelope(json!([s]))).is_err());
        let mut s = session();
        s["frustration"] = json!({"score": 0.5, "signals": ["\u{0}"]});
        assert!(parse_value(&envelope(json!([s]))).is_err());
    }

    /// Issue 21 point 19: `frustration.signals` is capped like the envelope's `sessions`: at
    /// the cap it parses, one over is the same 400 naming the field and the cap.
    #[test]
    fn frustration_signals_are_capped_at_the_contract_limit() {
        let with_signals = |n: usize| {
            let mut s = session();
            let signals: Vec<String> = (0..n).map(|i| format!("signal-{i}")).collect();
            s["frustration"] = json!({"score": 0.5, "signals": signals});
            envelope(json!([s]))
        };
        let batch = parse_value(&with_signals(MAX_FRUSTRATION_SIGNALS)).unwrap();
        let f = batch.sessions[0].frustration.as_ref().unwrap();
        assert_eq!(f.signals.len(), MAX_FRUSTRATION_SIGNALS);
        assert_eq!(
            err_of(&with_signals(MAX_FRUSTRATION_SIGNALS + 1)),
            format!(
                "sessions[0].frustration.signals: must hold at most {MAX_FRUSTRATION_SIGNALS} signals"
            )
        );
        assert_eq!(MAX_FRUSTRATION_SIGNALS, 100, "the wire contract's number");
    }

    fn err_of(doc: &Value) -> String {
        parse_value(doc).unwrap_err().to_string()
    }

    #[test]
    fn each_shape_error_names_its_place() {
        let with = |f: &dyn Fn(&mut Value)| {
            let mut s = session();
            f(&mut s);
            err_of(&envelope(json!([s])))
        };
        assert!(err_of(&envelope(json!([5]))).contains("sessions[0]: must be an object"));
        assert!(
            with(&|s| s["events"] = json!("x")).contains("sessions[0].events: must be an array")
        );
        assert!(
            with(&|s| s["events"] =
                json!([{"seq": 1, "ts": "2026-01-01T00:00:00Z", "kind": "k"}, 7]))
            .contains("sessions[0].events[1]: must be an object")
        );
        assert!(
            with(&|s| s["events"] =
                json!([{"seq": {"n": 1}, "ts": "2026-01-01T00:00:00Z", "kind": "k"}]))
            .contains("sessions[0].events[0].seq: must be a whole number")
        );
        assert!(
            with(&|s| s["events"] = json!([{"seq": 1, "ts": 5, "kind": "k"}]))
                .contains("sessions[0].events[0].ts: must be an RFC 3339 time")
        );
        assert!(
            with(&|s| s["events"] = json!([{"seq": 1, "ts": "2026-01-01T00:00:00Z"}]))
                .contains("sessions[0].events[0].kind: required string")
        );
        assert!(
            with(&|s| s["events"] =
                json!([{"seq": 1, "ts": "2026-01-01T00:00:00Z", "kind": "k", "isError": "no"}]))
            .contains("sessions[0].events[0].isError: must be a boolean")
        );
    }

    #[test]
    fn events_read_escapes_numbers_and_skip_retired_fields() {
        let mut s = session();
        s["events"] = json!([
            {"seq": 5.0, "ts": "2026-01-01T00:00:00.5+01:00", "kind": "a\"b\u{e9}",
             "toolName": null, "durationMs": 9007199254740991u64, "isError": true,
             "summary": "old text", "data": {"nested": [1, {"x": 2}]}},
        ]);
        let b = parse_value(&envelope(json!([s]))).unwrap();
        let e = &b.sessions[0].events.as_ref().unwrap()[0];
        assert_eq!(e.seq, 5);
        assert_eq!(e.kind, "a\"b\u{e9}");
        assert_eq!(e.tool_name, None, "null is omitted");
        assert_eq!(e.duration_ms, Some(MAX_SAFE_INTEGER));
        assert_eq!(e.is_error, Some(true));
        assert_eq!(e.ts.to_rfc3339(), "2025-12-31T23:00:00.500+00:00");
        // A \u escape on the wire (not borrowable) reads the same as the plain character.
        let raw = br#"{"schemaVersion":2,"batchId":"b","mode":"backfill","computeTargetId":"t",
            "sessionCount":1,"sessions":[{"sessionId":"s","updatedAt":"2026-01-01T00:00:00Z",
            "dataRevision":"r","agent":"a","events":[{"seq":1,"ts":"2026-01-01T00:00:00Z",
            "kind":"\u00e9\n","toolName":"t\/x"}]}]}"#;
        let b = parse(raw).unwrap();
        let e = &b.sessions[0].events.as_ref().unwrap()[0];
        assert_eq!(
            (e.kind.as_str(), e.tool_name.as_deref()),
            ("\u{e9}\n", Some("t/x"))
        );
        for bad in [
            json!(-1),
            json!(1.5),
            json!(9007199254740992u64),
            json!("1"),
        ] {
            let mut s = session();
            s["events"] = json!([{"seq": bad, "ts": "2026-01-01T00:00:00Z", "kind": "k"}]);
            assert!(parse_value(&envelope(json!([s]))).is_err());
        }
    }

    /// Mangled bodies never panic the check or the parse: each answers Ok or an error.
    #[test]
    fn mangled_bodies_are_errors_not_panics() {
        let mut s = session();
        s["events"] = json!([{"seq": 1, "ts": "2026-01-01T00:00:00Z", "kind": "k\u{e9}",
                              "toolName": "t", "durationMs": 2.0, "isError": false}]);
        s["usage"] = json!({"inputTokens": 1, "costUsd": 0.5});
        s["chunk"] = json!({"index": 0, "total": 2});
        let valid = serde_json::to_vec(&envelope(json!([s]))).unwrap();
        const PIECES: &[u8] = b"{}[]\",:0-e.\\u";
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..4000 {
            let mut body = valid.clone();
            for _ in 0..=(next() % 4) {
                let i = (next() as usize) % body.len();
                match next() % 3 {
                    0 => body[i] = PIECES[(next() as usize) % PIECES.len()],
                    1 => {
                        body.remove(i);
                    }
                    _ => body.insert(i, (next() % 256) as u8),
                }
            }
            if super::super::strict_json::check(&body).is_ok() {
                let _ = parse(&body);
            }
        }
    }

    #[test]
    fn string_lengths_count_characters_not_bytes() {
        let mut s = session();
        s["agent"] = json!("é".repeat(64));
        assert!(parse_value(&envelope(json!([s.clone()]))).is_ok());
        s["agent"] = json!("é".repeat(65));
        assert!(parse_value(&envelope(json!([s]))).is_err());
    }
}
