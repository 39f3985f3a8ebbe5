//! Schema parse (contract step 5): the envelope and session tables, field by field, from the
//! already decoded and duplicate-free JSON. Every violation is a 400 naming the field; unknown
//! fields are ignored (a newer client may send fields this server predates), and so are the
//! retired ones (`tokenSeries`, an event's `summary` and `data`): they are never read into the
//! typed batch, so nothing downstream can store them.

use std::collections::HashSet;
use std::fmt;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::error::IngestError;
use super::{MAX_SESSIONS_PER_BATCH, SCHEMA_VERSION};

/// Largest integer a JSON number carries exactly: 2^53 - 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;
/// At most this many chunks in one session's sequence.
pub const MAX_CHUNKS: u64 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Backfill,
    Incremental,
}

#[derive(Debug, Clone)]
pub struct Batch {
    pub batch_id: String,
    pub mode: Mode,
    pub compute_target_id: String,
    pub sessions: Vec<Session>,
}

/// An RFC 3339 time: the instant, and the text as the client sent it (kept in the blob).
#[derive(Debug, Clone, PartialEq)]
pub struct Timestamp {
    pub at: DateTime<Utc>,
    pub raw: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub index: u32,
    pub total: u32,
}

impl Chunk {
    pub fn is_last(&self) -> bool {
        self.index + 1 == self.total
    }
}

#[derive(Debug, Clone)]
pub struct Session {
    pub session_id: String,
    pub updated_at: Timestamp,
    pub data_revision: String,
    pub chunk: Chunk,
    pub agent: String,
    pub model: Option<String>,
    pub title: Option<String>,
    pub status: Option<String>,
    pub started_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
    pub repository: Option<Repository>,
    pub usage: Option<Usage>,
    pub events: Option<Vec<Event>>,
    pub token_events: Option<Vec<TokenEvent>>,
    pub artifact_refs: Option<Vec<ArtifactRef>>,
    pub frustration: Option<Frustration>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Repository {
    pub remote_url: Option<String>,
    pub branch: Option<String>,
    pub commit_sha: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    pub cache_write_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

/// Columnar event metadata: all an event keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub seq: u64,
    /// The instant only: an event's time is stored as a column, never as the client's text.
    pub ts: DateTime<Utc>,
    pub kind: String,
    pub tool_name: Option<String>,
    pub duration_ms: Option<u64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub is_error: Option<bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TokenEvent {
    pub ts: Timestamp,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactRef {
    pub kind: String,
    pub reference: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Frustration {
    pub score: f64,
    pub signals: Vec<String>,
}

/// Step 3's input: the envelope's `computeTargetId`, which must be a string (else 400: nothing to
/// resolve). Its length is checked with the rest of the schema.
pub fn compute_target_id(doc: &Value) -> Result<&str, IngestError> {
    let object = doc
        .as_object()
        .ok_or_else(|| IngestError::bad_request("the body must be a JSON object"))?;
    object
        .get("computeTargetId")
        .and_then(Value::as_str)
        .ok_or_else(|| IngestError::bad_request("computeTargetId: required string"))
}

/// Parse and check the whole envelope.
pub fn parse(doc: &Value) -> Result<Batch, IngestError> {
    let top = Obj::root(doc)?;
    match top.map.get("schemaVersion") {
        Some(Value::Number(n))
            if n.as_u64() == Some(SCHEMA_VERSION) || n.as_f64() == Some(SCHEMA_VERSION as f64) => {}
        _ => return Err(top.err("schemaVersion", "must be the number 2")),
    }
    let batch_id = top.req_str("batchId", 1, 128)?;
    let mode = match top.map.get("mode").and_then(Value::as_str) {
        Some("backfill") => Mode::Backfill,
        Some("incremental") => Mode::Incremental,
        _ => return Err(top.err("mode", "must be \"backfill\" or \"incremental\"")),
    };
    let compute_target_id = top.req_str("computeTargetId", 1, 128)?;
    if let Some(v) = top.map.get("encoding")
        && !v.is_string()
        && !v.is_null()
    {
        return Err(top.err("encoding", "must be a string"));
    }
    let session_count = top.req_int("sessionCount")?;
    let raw_sessions = top
        .map
        .get("sessions")
        .and_then(Value::as_array)
        .ok_or_else(|| top.err("sessions", "required array"))?;
    if raw_sessions.is_empty() || raw_sessions.len() > MAX_SESSIONS_PER_BATCH {
        return Err(top.err("sessions", "must hold 1 to 200 sessions"));
    }
    if session_count != raw_sessions.len() as u64 {
        return Err(top.err("sessionCount", "must equal the number of sessions"));
    }

    let mut sessions = Vec::with_capacity(raw_sessions.len());
    let mut chunks_seen = HashSet::new();
    let mut seqs_seen: HashSet<(&str, u64)> = HashSet::new();
    for (i, raw) in raw_sessions.iter().enumerate() {
        let session = parse_session(raw, i)?;
        sessions.push(session);
    }
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
    Ok(Batch {
        batch_id,
        mode,
        compute_target_id,
        sessions,
    })
}

fn parse_session(raw: &Value, index: usize) -> Result<Session, IngestError> {
    let o = Obj::at(
        raw,
        Path::Item {
            array: "sessions",
            index,
        },
    )?;
    let chunk = match o.opt_obj("chunk")? {
        None => Chunk { index: 0, total: 1 },
        Some(c) => {
            let index = c.req_int("index")?;
            let total = c.req_int("total")?;
            if total == 0 || total > MAX_CHUNKS || index >= total {
                return Err(o.err("chunk", "needs 0 <= index < total <= 1000"));
            }
            // Both fit: total <= 1000.
            Chunk {
                index: index as u32,
                total: total as u32,
            }
        }
    };
    let repository = match o.opt_obj("repository")? {
        None => None,
        Some(r) => Some(Repository {
            remote_url: r.opt_str("remoteUrl")?,
            branch: r.opt_str("branch")?,
            commit_sha: r.opt_str("commitSha")?,
        }),
    };
    let usage = match o.opt_obj("usage")? {
        None => None,
        Some(u) => Some(Usage {
            input_tokens: u.opt_int("inputTokens")?,
            output_tokens: u.opt_int("outputTokens")?,
            cache_read_tokens: u.opt_int("cacheReadTokens")?,
            cache_write_tokens: u.opt_int("cacheWriteTokens")?,
            cost_usd: u.opt_non_negative("costUsd")?,
        }),
    };
    let events = o.opt_each("events", |e| {
        Ok(Event {
            seq: e.req_int("seq")?,
            ts: e.req_instant("ts")?,
            kind: e.req_str("kind", 1, 64)?,
            tool_name: e.opt_str("toolName")?,
            duration_ms: e.opt_int("durationMs")?,
            input_tokens: e.opt_int("inputTokens")?,
            output_tokens: e.opt_int("outputTokens")?,
            is_error: e.opt_bool("isError")?,
        })
    })?;
    let token_events = o.opt_each("tokenEvents", |t| {
        Ok(TokenEvent {
            ts: t.req_time("ts")?,
            input_tokens: t.req_int("inputTokens")?,
            output_tokens: t.req_int("outputTokens")?,
        })
    })?;
    let artifact_refs = o.opt_each("artifactRefs", |a| {
        Ok(ArtifactRef {
            kind: a.req_str("kind", 0, usize::MAX)?,
            reference: a.req_str("ref", 0, usize::MAX)?,
        })
    })?;
    let frustration = match o.opt_obj("frustration")? {
        None => None,
        Some(f) => {
            let score = f.req_number("score")?;
            if !(0.0..=1.0).contains(&score) {
                return Err(f.err("score", "must be between 0 and 1"));
            }
            let signals = match f.map.get("signals") {
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|s| {
                        s.as_str()
                            .filter(|s| storable(s).is_ok())
                            .map(str::to_owned)
                    })
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| f.err("signals", "must be an array of strings without NUL"))?,
                _ => return Err(f.err("signals", "required array of strings")),
            };
            Some(Frustration { score, signals })
        }
    };
    Ok(Session {
        session_id: o.req_str("sessionId", 1, 200)?,
        updated_at: o.req_time("updatedAt")?,
        data_revision: o.req_str("dataRevision", 1, 128)?,
        chunk,
        agent: o.req_str("agent", 1, 64)?,
        model: o.opt_str("model")?,
        title: o.opt_str("title")?,
        status: o.opt_str("status")?,
        started_at: o.opt_time("startedAt")?,
        ended_at: o.opt_time("endedAt")?,
        repository,
        usage,
        events,
        token_events,
        artifact_refs,
        frustration,
    })
}

/// Where an object is, for error messages. An array item's path is only spelled out when an
/// error needs it: a batch has tens of thousands of events and almost never an error.
enum Path<'p> {
    Text(String),
    Item { array: &'p str, index: usize },
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Text(p) => f.write_str(p),
            Path::Item { array, index } => write!(f, "{array}[{index}]"),
        }
    }
}

/// A JSON object and its path, for typed reads with errors that name the field.
struct Obj<'a, 'p> {
    map: &'a Map<String, Value>,
    path: Path<'p>,
}

impl<'a, 'p> Obj<'a, 'p> {
    fn root(v: &'a Value) -> Result<Self, IngestError> {
        v.as_object()
            .map(|map| Self {
                map,
                path: Path::Text(String::new()),
            })
            .ok_or_else(|| IngestError::bad_request("the body must be a JSON object"))
    }

    fn at(v: &'a Value, path: Path<'p>) -> Result<Self, IngestError> {
        match v.as_object() {
            Some(map) => Ok(Self { map, path }),
            None => Err(IngestError::bad_request(format!(
                "{path}: must be an object"
            ))),
        }
    }

    fn field(&self, key: &str) -> String {
        match &self.path {
            Path::Text(p) if p.is_empty() => key.to_owned(),
            path => format!("{path}.{key}"),
        }
    }

    fn err(&self, key: &str, rule: &str) -> IngestError {
        IngestError::bad_request(format!("{}: {rule}", self.field(key)))
    }

    /// A present, non-null value (null counts as omitted).
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn req_str(&self, key: &str, min: usize, max: usize) -> Result<String, IngestError> {
        let s = self
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| self.err(key, "required string"))?;
        check_len(s, min, max).map_err(|rule| self.err(key, &rule))?;
        storable(s).map_err(|rule| self.err(key, rule))?;
        Ok(s.to_owned())
    }

    fn opt_str(&self, key: &str) -> Result<Option<String>, IngestError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => {
                storable(s).map_err(|rule| self.err(key, rule))?;
                Ok(Some(s.clone()))
            }
            Some(_) => Err(self.err(key, "must be a string")),
        }
    }

    fn opt_bool(&self, key: &str) -> Result<Option<bool>, IngestError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.err(key, "must be a boolean")),
        }
    }

    fn req_int(&self, key: &str) -> Result<u64, IngestError> {
        self.opt_int(key)?
            .ok_or_else(|| self.err(key, "required integer"))
    }

    fn opt_int(&self, key: &str) -> Result<Option<u64>, IngestError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => whole_number(v)
                .map(Some)
                .ok_or_else(|| self.err(key, "must be a whole number from 0 to 2^53 - 1")),
        }
    }

    fn req_number(&self, key: &str) -> Result<f64, IngestError> {
        self.get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| self.err(key, "required number"))
    }

    fn opt_non_negative(&self, key: &str) -> Result<Option<f64>, IngestError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(n) if n >= 0.0 && n.is_finite() => Ok(Some(n)),
                _ => Err(self.err(key, "must be a non-negative number")),
            },
        }
    }

    fn req_time(&self, key: &str) -> Result<Timestamp, IngestError> {
        self.opt_time(key)?
            .ok_or_else(|| self.err(key, "required RFC 3339 time"))
    }

    /// A required RFC 3339 time where only the instant is kept (no copy of the text).
    fn req_instant(&self, key: &str) -> Result<DateTime<Utc>, IngestError> {
        match self.get(key) {
            Some(Value::String(s)) => DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| self.err(key, "must be an RFC 3339 time")),
            _ => Err(self.err(key, "required RFC 3339 time")),
        }
    }

    fn opt_time(&self, key: &str) -> Result<Option<Timestamp>, IngestError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => DateTime::parse_from_rfc3339(s)
                .map(|t| {
                    Some(Timestamp {
                        at: t.with_timezone(&Utc),
                        raw: s.clone(),
                    })
                })
                .map_err(|_| self.err(key, "must be an RFC 3339 time")),
            Some(_) => Err(self.err(key, "must be an RFC 3339 time")),
        }
    }

    fn opt_obj(&self, key: &str) -> Result<Option<Obj<'a, 'static>>, IngestError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => Obj::at(v, Path::Text(self.field(key))).map(Some),
        }
    }

    /// An optional array of objects, each read by `item`.
    fn opt_each<T>(
        &self,
        key: &str,
        item: impl for<'q> Fn(&Obj<'a, 'q>) -> Result<T, IngestError>,
    ) -> Result<Option<Vec<T>>, IngestError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let items = v
            .as_array()
            .ok_or_else(|| self.err(key, "must be an array"))?;
        let base = self.field(key);
        items
            .iter()
            .enumerate()
            .map(|(index, v)| {
                item(&Obj::at(
                    v,
                    Path::Item {
                        array: &base,
                        index,
                    },
                )?)
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

fn check_len(s: &str, min: usize, max: usize) -> Result<(), String> {
    let n = s.chars().count();
    if n < min || n > max {
        Err(format!("must be {min} to {max} characters"))
    } else {
        Ok(())
    }
}

/// Postgres text and jsonb cannot hold U+0000: such a string is bad input (400), not a database
/// failure (500).
fn storable(s: &str) -> Result<(), &'static str> {
    if s.contains('\0') {
        Err("must not contain the NUL character (U+0000)")
    } else {
        Ok(())
    }
}

/// A whole JSON number from 0 to 2^53 - 1 (`5.0` is the number 5).
fn whole_number(v: &Value) -> Option<u64> {
    let n = v.as_number()?;
    if let Some(u) = n.as_u64() {
        return (u <= MAX_SAFE_INTEGER).then_some(u);
    }
    let f = n.as_f64()?;
    (f >= 0.0 && f.fract() == 0.0 && f <= MAX_SAFE_INTEGER as f64).then_some(f as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(sessions: Value) -> Value {
        let n = sessions.as_array().map_or(0, Vec::len);
        json!({"schemaVersion": 2, "batchId": "b", "mode": "incremental",
               "computeTargetId": "t", "sessionCount": n, "sessions": sessions})
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
        let b = parse(&envelope(json!([s]))).unwrap();
        assert_eq!(b.sessions[0].chunk, Chunk { index: 0, total: 1 });
    }

    #[test]
    fn whole_numbers_only() {
        assert_eq!(whole_number(&json!(5.0)), Some(5));
        assert_eq!(whole_number(&json!(5.5)), None);
        assert_eq!(whole_number(&json!(-1)), None);
        assert_eq!(
            whole_number(&json!(9007199254740991u64)),
            Some(MAX_SAFE_INTEGER)
        );
        assert_eq!(whole_number(&json!(9007199254740992u64)), None);
    }

    #[test]
    fn a_nul_character_in_any_string_is_refused() {
        let mut s = session();
        s["title"] = json!("a\u{0}b");
        let err = parse(&envelope(json!([s]))).unwrap_err();
        assert!(err.to_string().contains("sessions[0].title"), "{err}");
        let mut s = session();
        s["events"] = json!([{"seq": 1, "ts": "2026-01-01T00:00:00Z", "kind": "a\u{0}"}]);
        assert!(parse(&envelope(json!([s]))).is_err());
        let mut s = session();
        s["frustration"] = json!({"score": 0.5, "signals": ["\u{0}"]});
        assert!(parse(&envelope(json!([s]))).is_err());
    }

    #[test]
    fn string_lengths_count_characters_not_bytes() {
        let mut s = session();
        s["agent"] = json!("é".repeat(64));
        assert!(parse(&envelope(json!([s.clone()]))).is_ok());
        s["agent"] = json!("é".repeat(65));
        assert!(parse(&envelope(json!([s]))).is_err());
    }
}
