//! Schema parse (contract step 5): the envelope and session tables, field by field, from the
//! already decoded and duplicate-free JSON. Every violation is a 400 naming the field; unknown
//! fields are ignored (a newer client may send fields this server predates), and so are the
//! retired ones (`tokenSeries`, an event's `summary` and `data`): they are never read into the
//! typed batch, so nothing downstream can store them.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

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
        v => return Err(root.field("schemaVersion", v).err("must be the number 2")),
    }
    let batch_id = root.field("batchId", &raw.batch_id).req_str(1, 128)?;
    let mode = match raw.mode.as_ref().and_then(Json::as_str) {
        Some("backfill") => Mode::Backfill,
        Some("incremental") => Mode::Incremental,
        _ => {
            return Err(root
                .field("mode", &raw.mode)
                .err("must be \"backfill\" or \"incremental\""));
        }
    };
    let compute_target_id = root
        .field("computeTargetId", &raw.compute_target_id)
        .req_str(1, 128)?;
    if raw.encoding.as_ref().is_some_and(|v| v.as_str().is_none()) {
        return Err(root
            .field("encoding", &raw.encoding)
            .err("must be a string"));
    }
    let session_count = root.field("sessionCount", &raw.session_count).req_int()?;
    let raw_sessions = match raw.sessions {
        Some(Items::List(items)) => items,
        _ => return Err(root.field("sessions", &NONE).err("required array")),
    };
    if raw_sessions.is_empty() || raw_sessions.len() > MAX_SESSIONS_PER_BATCH {
        return Err(root
            .field("sessions", &NONE)
            .err("must hold 1 to 200 sessions"));
    }
    if session_count != raw_sessions.len() as u64 {
        return Err(root
            .field("sessionCount", &NONE)
            .err("must equal the number of sessions"));
    }

    let mut sessions = Vec::with_capacity(raw_sessions.len());
    for (index, raw) in raw_sessions.into_iter().enumerate() {
        let at = Path::Item {
            array: "sessions",
            index,
        };
        match raw {
            Item::Object(raw) => sessions.push(parse_session(*raw, &at)?),
            Item::NotObject => {
                return Err(IngestError::bad_request(format!("{at}: must be an object")));
            }
        }
    }
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
    Ok(Batch {
        batch_id,
        mode,
        compute_target_id,
        sessions,
    })
}

/// No value, for errors about a field as a whole.
const NONE: Option<Scalar<'static>> = None;

/// The envelope as sent: each field any JSON value (null counts as omitted), unknown ones skipped.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEnvelope<'a> {
    #[serde(borrow)]
    schema_version: Option<Scalar<'a>>,
    #[serde(borrow)]
    batch_id: Option<Scalar<'a>>,
    #[serde(borrow)]
    mode: Option<Scalar<'a>>,
    #[serde(borrow)]
    compute_target_id: Option<Scalar<'a>>,
    #[serde(borrow)]
    encoding: Option<Scalar<'a>>,
    #[serde(borrow)]
    session_count: Option<Scalar<'a>>,
    #[serde(borrow)]
    sessions: Option<Items<Box<RawSession<'a>>>>,
}

/// A session as sent. Its retired fields (`tokenSeries`) have no place here: never read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSession<'a> {
    #[serde(borrow)]
    session_id: Option<Scalar<'a>>,
    #[serde(borrow)]
    updated_at: Option<Scalar<'a>>,
    #[serde(borrow)]
    data_revision: Option<Scalar<'a>>,
    #[serde(borrow)]
    chunk: Option<Item<RawChunk<'a>>>,
    #[serde(borrow)]
    agent: Option<Scalar<'a>>,
    #[serde(borrow)]
    model: Option<Scalar<'a>>,
    #[serde(borrow)]
    title: Option<Scalar<'a>>,
    #[serde(borrow)]
    status: Option<Scalar<'a>>,
    #[serde(borrow)]
    started_at: Option<Scalar<'a>>,
    #[serde(borrow)]
    ended_at: Option<Scalar<'a>>,
    #[serde(borrow)]
    repository: Option<Item<RawRepository<'a>>>,
    #[serde(borrow)]
    usage: Option<Item<RawUsage<'a>>>,
    #[serde(borrow)]
    events: Option<Checked<RawEvent<'a>>>,
    #[serde(borrow)]
    token_events: Option<Checked<RawTokenEvent<'a>>>,
    #[serde(borrow)]
    artifact_refs: Option<Checked<RawArtifactRef<'a>>>,
    #[serde(borrow)]
    frustration: Option<Item<RawFrustration<'a>>>,
}

/// The nested objects as sent: their fields only, unknown keys skipped unread.
#[derive(Deserialize)]
struct RawChunk<'a> {
    #[serde(borrow)]
    index: Option<Scalar<'a>>,
    #[serde(borrow)]
    total: Option<Scalar<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRepository<'a> {
    #[serde(borrow)]
    remote_url: Option<Scalar<'a>>,
    #[serde(borrow)]
    branch: Option<Scalar<'a>>,
    #[serde(borrow)]
    commit_sha: Option<Scalar<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawUsage<'a> {
    #[serde(borrow)]
    input_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    output_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    cache_read_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    cache_write_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    cost_usd: Option<Scalar<'a>>,
}

#[derive(Deserialize)]
struct RawFrustration<'a> {
    #[serde(borrow)]
    score: Option<Scalar<'a>>,
    signals: Option<Signals>,
}

/// A nested object field and the path its own fields are named under; a value that is not an
/// object is a 400.
fn object<T>(
    field: &Field<'_, '_, Scalar<'_>>,
    value: Option<Item<T>>,
) -> Result<Option<(T, Path<'static>)>, IngestError> {
    match value {
        None => Ok(None),
        Some(Item::Object(t)) => Ok(Some((t, Path::Text(field.name())))),
        Some(Item::NotObject) => Err(field.err("must be an object")),
    }
}

/// An event as sent. The retired `summary` and `data` have no place here: never read. Events
/// are tens of thousands per batch, so their fields are [`Scalar`]s, not JSON trees.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEvent<'a> {
    #[serde(borrow)]
    seq: Option<Scalar<'a>>,
    #[serde(borrow)]
    ts: Option<Scalar<'a>>,
    #[serde(borrow)]
    kind: Option<Scalar<'a>>,
    #[serde(borrow)]
    tool_name: Option<Scalar<'a>>,
    #[serde(borrow)]
    duration_ms: Option<Scalar<'a>>,
    #[serde(borrow)]
    input_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    output_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    is_error: Option<Scalar<'a>>,
}

/// A token event as sent.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTokenEvent<'a> {
    #[serde(borrow)]
    ts: Option<Scalar<'a>>,
    #[serde(borrow)]
    input_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    output_tokens: Option<Scalar<'a>>,
}

/// An artifact reference as sent.
#[derive(Deserialize)]
struct RawArtifactRef<'a> {
    #[serde(borrow)]
    kind: Option<Scalar<'a>>,
    #[serde(borrow, rename = "ref")]
    reference: Option<Scalar<'a>>,
}

/// One field as sent, without building a JSON value: a string borrowed from the body when it has
/// no escapes, a number as read, and an object or array only noted (it is never a valid event
/// field).
enum Scalar<'de> {
    Str(Cow<'de, str>),
    U64(u64),
    I64(i64),
    F64(f64),
    Bool(bool),
    Null,
    Nested,
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Scalar<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Str(Cow::Owned(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar<'a>, E> {
                Ok(Scalar::U64(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar<'a>, E> {
                Ok(Scalar::I64(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar<'a>, E> {
                Ok(Scalar::F64(v))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_unit<E>(self) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Null)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Nested)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Nested)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// What the field checks read of a JSON value as sent ([`Scalar`]).
trait Json {
    fn is_null(&self) -> bool;
    fn as_str(&self) -> Option<&str>;
    fn as_bool(&self) -> Option<bool>;
    fn as_f64(&self) -> Option<f64>;
    /// A whole number from 0 to 2^53 - 1 (`5.0` is the number 5).
    fn whole(&self) -> Option<u64>;
}

impl Json for Scalar<'_> {
    fn is_null(&self) -> bool {
        matches!(self, Scalar::Null)
    }
    fn as_str(&self) -> Option<&str> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }
    fn as_bool(&self) -> Option<bool> {
        match self {
            Scalar::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::U64(u) => Some(*u as f64),
            Scalar::I64(i) => Some(*i as f64),
            Scalar::F64(f) => Some(*f),
            _ => None,
        }
    }
    fn whole(&self) -> Option<u64> {
        match self {
            Scalar::U64(u) => (*u <= MAX_SAFE_INTEGER).then_some(*u),
            // serde_json reads a non-negative integer as u64: an i64 is negative.
            Scalar::I64(_) => None,
            Scalar::F64(f) => whole_float(*f),
            _ => None,
        }
    }
}

/// Visitor methods for every JSON scalar (bool, numbers, string, null), each answering `$v`.
macro_rules! scalars_are {
    ($v:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($v)
        }
    };
}

/// A field that must be an array of objects: anything else is kept as a verdict, not a serde
/// error, so the 400 names the field like every other rule.
enum Items<T> {
    List(Vec<Item<T>>),
    NotArray,
}

enum Item<T> {
    Object(T),
    NotObject,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Items<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Items<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Items<T>, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Items::List(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Items<T>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Items::NotArray)
            }
            scalars_are!(Items::NotArray);
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Item<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Item<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Item<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Item::Object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item<T>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Item::NotObject)
            }
            scalars_are!(Item::NotObject);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// `frustration.signals` as sent: the strings while every item is a storable string; after the
/// first that is not, the rest is skipped unread.
enum Signals {
    Strings(Vec<String>),
    Invalid,
    NotArray,
}

impl<'de> Deserialize<'de> for Signals {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Signals;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Signals, A::Error> {
                let mut strings = Vec::new();
                while let Some(item) = seq.next_element::<Scalar<'_>>()? {
                    match item.as_str().filter(|s| storable(s).is_ok()) {
                        Some(s) => strings.push(s.to_owned()),
                        None => {
                            while seq.next_element::<IgnoredAny>()?.is_some() {}
                            return Ok(Signals::Invalid);
                        }
                    }
                }
                Ok(Signals::Strings(strings))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Signals, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Signals::NotArray)
            }
            scalars_are!(Signals::NotArray);
        }
        d.deserialize_any(V)
    }
}

/// An item of an array of objects that is checked as it is read (see [`Checked`]).
trait CheckItem: Sized {
    type Checked;
    /// The item's checks; `at` only names it in an error.
    fn check(&self, at: &Path<'_>) -> Result<Self::Checked, IngestError>;
}

impl CheckItem for RawEvent<'_> {
    type Checked = Event;
    fn check(&self, at: &Path<'_>) -> Result<Event, IngestError> {
        Ok(Event {
            seq: at.field("seq", &self.seq).req_int()?,
            ts: at.field("ts", &self.ts).req_instant()?,
            kind: at.field("kind", &self.kind).req_str(1, 64)?,
            tool_name: at.field("toolName", &self.tool_name).opt_str()?,
            duration_ms: at.field("durationMs", &self.duration_ms).opt_int()?,
            input_tokens: at.field("inputTokens", &self.input_tokens).opt_int()?,
            output_tokens: at.field("outputTokens", &self.output_tokens).opt_int()?,
            is_error: at.field("isError", &self.is_error).opt_bool()?,
        })
    }
}

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

impl CheckItem for RawArtifactRef<'_> {
    type Checked = ArtifactRef;
    fn check(&self, at: &Path<'_>) -> Result<ArtifactRef, IngestError> {
        Ok(ArtifactRef {
            kind: at.field("kind", &self.kind).req_str(0, usize::MAX)?,
            reference: at.field("ref", &self.reference).req_str(0, usize::MAX)?,
        })
    }
}

/// An array of objects (`events`, `tokenEvents`, `artifactRefs`) checked as it is read: the batch
/// holds checked items only, never a raw one per item (a raw event is about 200 bytes, a JSON
/// object several hundred; 4 MiB of `{},` is a million items). The first item that fails is kept
/// as sent and its 400 is built in the session's order of checks, as if the array had been read
/// whole; the items after it are skipped unread.
enum Checked<R: CheckItem> {
    List {
        items: Vec<R::Checked>,
        first_bad: Option<(usize, Item<R>)>,
    },
    NotArray,
}

impl<R: CheckItem> Checked<R> {
    /// The checked items, or the 400 for the array or its first bad item, named by `field`.
    fn into_items<J: Json>(self, field: &Field<'_, '_, J>) -> Result<Vec<R::Checked>, IngestError> {
        let (items, first_bad) = match self {
            Checked::NotArray => return Err(field.err("must be an array")),
            Checked::List { items, first_bad } => (items, first_bad),
        };
        let Some((index, item)) = first_bad else {
            return Ok(items);
        };
        let array = field.name();
        let at = Path::Item {
            array: &array,
            index,
        };
        Err(match item {
            Item::Object(raw) => raw
                .check(&at)
                .err()
                .unwrap_or_else(|| IngestError::bad_request(format!("{at}: invalid"))),
            Item::NotObject => IngestError::bad_request(format!("{at}: must be an object")),
        })
    }
}

impl<'de, R: CheckItem + Deserialize<'de>> Deserialize<'de> for Checked<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<R>(PhantomData<R>);
        impl<'de, R: CheckItem + Deserialize<'de>> Visitor<'de> for V<R> {
            type Value = Checked<R>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked<R>, A::Error> {
                let unnamed = Path::Text(String::new());
                let mut items = Vec::new();
                let mut first_bad = None;
                while first_bad.is_none() {
                    let Some(item) = seq.next_element::<Item<R>>()? else {
                        break;
                    };
                    let checked = match &item {
                        Item::Object(raw) => raw.check(&unnamed).ok(),
                        Item::NotObject => None,
                    };
                    match checked {
                        Some(checked) => items.push(checked),
                        None => first_bad = Some((items.len(), item)),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Checked::List { items, first_bad })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked<R>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Checked::NotArray)
            }
            scalars_are!(Checked::NotArray);
        }
        d.deserialize_any(V(PhantomData))
    }
}

fn parse_session(raw: RawSession, at: &Path<'_>) -> Result<Session, IngestError> {
    let chunk = match object(&at.field("chunk", &NONE), raw.chunk)? {
        None => Chunk { index: 0, total: 1 },
        Some((c, path)) => {
            let index = path.field("index", &c.index).req_int()?;
            let total = path.field("total", &c.total).req_int()?;
            if total == 0 || total > MAX_CHUNKS || index >= total {
                return Err(at
                    .field("chunk", &NONE)
                    .err("needs 0 <= index < total <= 1000"));
            }
            // Both fit: total <= 1000.
            Chunk {
                index: index as u32,
                total: total as u32,
            }
        }
    };
    let repository = match object(&at.field("repository", &NONE), raw.repository)? {
        None => None,
        Some((r, path)) => Some(Repository {
            remote_url: path.field("remoteUrl", &r.remote_url).opt_str()?,
            branch: path.field("branch", &r.branch).opt_str()?,
            commit_sha: path.field("commitSha", &r.commit_sha).opt_str()?,
        }),
    };
    let usage = match object(&at.field("usage", &NONE), raw.usage)? {
        None => None,
        Some((u, path)) => Some(Usage {
            input_tokens: path.field("inputTokens", &u.input_tokens).opt_int()?,
            output_tokens: path.field("outputTokens", &u.output_tokens).opt_int()?,
            cache_read_tokens: path
                .field("cacheReadTokens", &u.cache_read_tokens)
                .opt_int()?,
            cache_write_tokens: path
                .field("cacheWriteTokens", &u.cache_write_tokens)
                .opt_int()?,
            cost_usd: path.field("costUsd", &u.cost_usd).opt_non_negative()?,
        }),
    };
    let events = match raw.events {
        None => None,
        Some(events) => Some(events.into_items(&at.field("events", &NONE))?),
    };
    let token_events = match raw.token_events {
        None => None,
        Some(items) => Some(items.into_items(&at.field("tokenEvents", &NONE))?),
    };
    let artifact_refs = match raw.artifact_refs {
        None => None,
        Some(items) => Some(items.into_items(&at.field("artifactRefs", &NONE))?),
    };
    let frustration = match object(&at.field("frustration", &NONE), raw.frustration)? {
        None => None,
        Some((f, path)) => {
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
                _ => {
                    return Err(path
                        .field("signals", &NONE)
                        .err("required array of strings"));
                }
            };
            Some(Frustration { score, signals })
        }
    };
    Ok(Session {
        session_id: at.field("sessionId", &raw.session_id).req_str(1, 200)?,
        updated_at: at.field("updatedAt", &raw.updated_at).req_time()?,
        data_revision: at
            .field("dataRevision", &raw.data_revision)
            .req_str(1, 128)?,
        chunk,
        agent: at.field("agent", &raw.agent).req_str(1, 64)?,
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

/// Where an object is, for error messages. An array item's path is only spelled out when an
/// error needs it: a batch has tens of thousands of events and almost never an error.
enum Path<'p> {
    Text(String),
    Item { array: &'p str, index: usize },
}

impl<'p> Path<'p> {
    /// A field of the object at this path; null counts as omitted.
    fn field<'v, 'k, J: Json>(&'k self, key: &'k str, value: &'v Option<J>) -> Field<'v, 'k, J>
    where
        'p: 'k,
    {
        Field::new(self, key, value.as_ref())
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Text(p) => f.write_str(p),
            Path::Item { array, index } => write!(f, "{array}[{index}]"),
        }
    }
}

/// One field's value and where it is, for typed reads with errors that name the field.
struct Field<'v, 'k, J> {
    owner: &'k Path<'k>,
    key: &'k str,
    /// Present and not null.
    value: Option<&'v J>,
}

impl<'v, 'k, J: Json> Field<'v, 'k, J> {
    fn new(owner: &'k Path<'k>, key: &'k str, value: Option<&'v J>) -> Self {
        Self {
            owner,
            key,
            value: value.filter(|v| !v.is_null()),
        }
    }

    fn name(&self) -> String {
        match self.owner {
            Path::Text(p) if p.is_empty() => self.key.to_owned(),
            owner => format!("{owner}.{}", self.key),
        }
    }

    fn err(&self, rule: &str) -> IngestError {
        IngestError::bad_request(format!("{}: {rule}", self.name()))
    }

    fn req_str(&self, min: usize, max: usize) -> Result<String, IngestError> {
        let s = self
            .value
            .and_then(J::as_str)
            .ok_or_else(|| self.err("required string"))?;
        check_len(s, min, max).map_err(|rule| self.err(&rule))?;
        storable(s).map_err(|rule| self.err(rule))?;
        Ok(s.to_owned())
    }

    fn opt_str(&self) -> Result<Option<String>, IngestError> {
        match self.value {
            None => Ok(None),
            Some(v) => {
                let s = v.as_str().ok_or_else(|| self.err("must be a string"))?;
                storable(s).map_err(|rule| self.err(rule))?;
                Ok(Some(s.to_owned()))
            }
        }
    }

    fn opt_bool(&self) -> Result<Option<bool>, IngestError> {
        match self.value {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.err("must be a boolean")),
        }
    }

    fn req_int(&self) -> Result<u64, IngestError> {
        self.opt_int()?.ok_or_else(|| self.err("required integer"))
    }

    fn opt_int(&self) -> Result<Option<u64>, IngestError> {
        match self.value {
            None => Ok(None),
            Some(v) => v
                .whole()
                .map(Some)
                .ok_or_else(|| self.err("must be a whole number from 0 to 2^53 - 1")),
        }
    }

    fn req_number(&self) -> Result<f64, IngestError> {
        self.value
            .and_then(J::as_f64)
            .ok_or_else(|| self.err("required number"))
    }

    fn opt_non_negative(&self) -> Result<Option<f64>, IngestError> {
        match self.value {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(n) if n >= 0.0 && n.is_finite() => Ok(Some(n)),
                _ => Err(self.err("must be a non-negative number")),
            },
        }
    }

    fn req_time(&self) -> Result<Timestamp, IngestError> {
        self.opt_time()?
            .ok_or_else(|| self.err("required RFC 3339 time"))
    }

    /// A required RFC 3339 time where only the instant is kept (no copy of the text).
    fn req_instant(&self) -> Result<DateTime<Utc>, IngestError> {
        match self.value.and_then(J::as_str) {
            Some(s) => DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| self.err("must be an RFC 3339 time")),
            None if self.value.is_some() => Err(self.err("must be an RFC 3339 time")),
            None => Err(self.err("required RFC 3339 time")),
        }
    }

    fn opt_time(&self) -> Result<Option<Timestamp>, IngestError> {
        match self.value {
            None => Ok(None),
            Some(v) => match v.as_str() {
                Some(s) => DateTime::parse_from_rfc3339(s)
                    .map(|t| {
                        Some(Timestamp {
                            at: t.with_timezone(&Utc),
                            raw: s.to_owned(),
                        })
                    })
                    .map_err(|_| self.err("must be an RFC 3339 time")),
                None => Err(self.err("must be an RFC 3339 time")),
            },
        }
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
fn whole_float(f: f64) -> Option<u64> {
    (f >= 0.0 && f.fract() == 0.0 && f <= MAX_SAFE_INTEGER as f64).then_some(f as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

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
