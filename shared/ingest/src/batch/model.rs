//! The typed batch: what the schema parse yields, checked field by field, and all that reaches
//! sanitize and the upsert (contract "The batch": the envelope, session and event tables, minus
//! the retired fields, which are never read).

use chrono::{DateTime, Utc};

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
    pub(crate) fn is_last(&self) -> bool {
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
