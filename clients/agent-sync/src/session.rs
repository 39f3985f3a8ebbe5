//! The local session record and the sanitized projection that crosses the boundary.
//!
//! Spec, "What crosses the boundary" and "Event fragments are retired": the metadata lane never
//! sends the full local record. The per-turn and per-tool text of an event (`summary`, `data`)
//! stays on the device (the transcript lane carries it, redacted), and so does the per-turn
//! token series (`tokenSeries`); timestamped `tokenEvents` are kept. Optional fields are additive
//! and omission means "no replacement data", so an absent field is left out, never sent as null.
//!
//! The projection is a type ([`WireSession`]) with no field for the stripped data, so nothing
//! the app stores locally can leak onto the wire by accident; it borrows from the local record,
//! so projecting costs no copies.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A session as the app's store holds it (camelCase JSON, the contract's names).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalSession {
    pub session_id: String,
    /// RFC 3339; the store's update time, which drives the cursor.
    pub updated_at: String,
    pub data_revision: String,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<Repository>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<LocalEvent>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_events: Option<Vec<TokenEvent>>,
    /// Local only: stripped before sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_series: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_refs: Option<Vec<ArtifactRef>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frustration: Option<Frustration>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Repository {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_sha: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// An event as the device stores it: columnar metadata plus the local-only text.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalEvent {
    pub seq: u64,
    pub ts: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Local only: per-turn text, never on the metadata lane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Local only: per-tool text, never on the metadata lane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TokenEvent {
    pub ts: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct ArtifactRef {
    pub kind: String,
    #[serde(rename = "ref")]
    pub reference: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Frustration {
    pub score: f64,
    pub signals: Vec<String>,
}

/// What discovery needs of a session without loading it: identity, update time, and the
/// derived-data fingerprint whose change re-selects it (spec "Cursors and eventual consistency").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionMeta {
    pub session_id: String,
    pub updated_at: DateTime<Utc>,
    pub data_revision: String,
    /// [`refs_fingerprint`] of the session's artifact refs.
    pub refs_fingerprint: String,
}

impl LocalSession {
    /// The update time as an instant; `None` when the store holds something that is not RFC 3339.
    pub fn updated_instant(&self) -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(&self.updated_at)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    pub fn meta(&self) -> Option<SessionMeta> {
        Some(SessionMeta {
            session_id: self.session_id.clone(),
            updated_at: self.updated_instant()?,
            data_revision: self.data_revision.clone(),
            refs_fingerprint: refs_fingerprint(self.artifact_refs.as_deref()),
        })
    }

    pub fn event_count(&self) -> usize {
        self.events.as_ref().map_or(0, Vec::len)
    }
}

/// A short stable digest of a session's artifact refs (order-sensitive, as the store keeps them).
pub fn refs_fingerprint(refs: Option<&[ArtifactRef]>) -> String {
    let mut h = Sha256::new();
    for r in refs.unwrap_or_default() {
        h.update(r.kind.as_bytes());
        h.update([0]);
        h.update(r.reference.as_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..12])
}

/// `{"index": i, "total": n}`: a session's place in its chunk sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Chunk {
    pub index: u32,
    pub total: u32,
}

/// The sanitized projection of one chunk of a session, as it is serialized into an envelope.
///
/// Chunk 0 (and an unchunked session) carries every optional field; a later chunk carries only
/// the identity, its events and its place in the sequence, because the server merges chunks and
/// an omitted field never clears what an earlier chunk stored.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireSession<'a> {
    session_id: &'a str,
    updated_at: &'a str,
    data_revision: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    chunk: Option<Chunk>,
    agent: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    started_at: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ended_at: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repository: Option<&'a Repository>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<&'a Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<WireEvents<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token_events: Option<&'a [TokenEvent]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    artifact_refs: Option<&'a [ArtifactRef]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frustration: Option<&'a Frustration>,
}

impl<'a> WireSession<'a> {
    /// The whole session as one unchunked item (chunk 0 of 1, so no `chunk` field).
    pub fn whole(s: &'a LocalSession) -> Self {
        Self::chunk_of(s, None, s.events.as_deref())
    }

    /// Chunk `chunk` carrying `events`: chunk 0 with every optional field, a later one bare.
    pub fn chunk_of(
        s: &'a LocalSession,
        chunk: Option<Chunk>,
        events: Option<&'a [LocalEvent]>,
    ) -> Self {
        let first = chunk.is_none_or(|c| c.index == 0);
        let when = |v| if first { v } else { None };
        Self {
            session_id: &s.session_id,
            updated_at: &s.updated_at,
            data_revision: &s.data_revision,
            chunk,
            agent: &s.agent,
            model: when(s.model.as_deref()),
            title: when(s.title.as_deref()),
            status: when(s.status.as_deref()),
            started_at: when(s.started_at.as_deref()),
            ended_at: when(s.ended_at.as_deref()),
            repository: if first { s.repository.as_ref() } else { None },
            usage: if first { s.usage.as_ref() } else { None },
            events: events.map(WireEvents),
            token_events: if first {
                s.token_events.as_deref()
            } else {
                None
            },
            artifact_refs: if first {
                s.artifact_refs.as_deref()
            } else {
                None
            },
            frustration: if first { s.frustration.as_ref() } else { None },
        }
    }
}

/// Events serialized as columnar metadata only (no `summary`, no `data`).
#[derive(Debug, Clone, Copy)]
pub struct WireEvents<'a>(pub &'a [LocalEvent]);

impl Serialize for WireEvents<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(WireEvent::of))
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireEvent<'a> {
    seq: u64,
    ts: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
}

impl<'a> WireEvent<'a> {
    pub fn of(e: &'a LocalEvent) -> Self {
        Self {
            seq: e.seq,
            ts: &e.ts,
            kind: &e.kind,
            tool_name: e.tool_name.as_deref(),
            duration_ms: e.duration_ms,
            input_tokens: e.input_tokens,
            output_tokens: e.output_tokens,
            is_error: e.is_error,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A typical session: a few dozen events with local text, a token series, token events.
    pub fn typical(id: &str, events: u64) -> LocalSession {
        serde_json::from_value(json!({
            "sessionId": id, "updatedAt": "2026-03-01T10:00:00Z", "dataRevision": "r1",
            "agent": "claude-code", "model": "opus", "title": "fix the build", "status": "done",
            "startedAt": "2026-03-01T09:00:00Z", "endedAt": "2026-03-01T10:00:00Z",
            "repository": {"remoteUrl": "https://github.com/acme/app", "branch": "main", "commitSha": "abc"},
            "usage": {"inputTokens": 10, "outputTokens": 20, "costUsd": 0.5},
            "events": (0..events).map(|seq| json!({
                "seq": seq, "ts": "2026-03-01T09:30:00Z", "kind": "tool_call", "toolName": "bash",
                "durationMs": 12, "inputTokens": 3, "outputTokens": 4, "isError": false,
                "summary": "ran the tests", "data": {"stdout": "ok"}
            })).collect::<Vec<_>>(),
            "tokenEvents": [{"ts": "2026-03-01T09:30:00Z", "inputTokens": 1, "outputTokens": 2}],
            "tokenSeries": [[1, 2], [3, 4]],
            "artifactRefs": [{"kind": "pr", "ref": "acme/app#1"}],
        }))
        .unwrap()
    }

    #[test]
    fn the_projection_strips_event_text_and_the_token_series_and_keeps_token_events() {
        let s = typical("s1", 2);
        let wire = serde_json::to_value(WireSession::whole(&s)).unwrap();
        assert!(wire.get("tokenSeries").is_none());
        assert_eq!(wire["tokenEvents"][0]["inputTokens"], 1);
        for e in wire["events"].as_array().unwrap() {
            assert!(e.get("summary").is_none() && e.get("data").is_none(), "{e}");
            assert_eq!(e["toolName"], "bash");
        }
        assert!(wire.get("chunk").is_none(), "unchunked: implicitly 0 of 1");
        assert_eq!(wire["artifactRefs"][0]["ref"], "acme/app#1");
    }

    #[test]
    fn a_later_chunk_carries_identity_and_events_only() {
        let s = typical("s1", 4);
        let events = &s.events.as_ref().unwrap()[2..];
        let c = Chunk { index: 1, total: 2 };
        let wire = serde_json::to_value(WireSession::chunk_of(&s, Some(c), Some(events))).unwrap();
        let keys: Vec<_> = wire.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "agent",
                "chunk",
                "dataRevision",
                "events",
                "sessionId",
                "updatedAt"
            ]
        );
        assert_eq!(wire["chunk"], json!({"index": 1, "total": 2}));
    }

    #[test]
    fn the_refs_fingerprint_changes_with_the_refs() {
        let mut s = typical("s1", 0);
        let before = s.meta().unwrap().refs_fingerprint;
        s.artifact_refs.as_mut().unwrap().push(ArtifactRef {
            kind: "commit".into(),
            reference: "abc".into(),
        });
        assert_ne!(s.meta().unwrap().refs_fingerprint, before);
    }
}
