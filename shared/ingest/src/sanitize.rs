//! Sanitize at ingest (contract "Session" and "Event"): what of a session may be stored.
//!
//! The stored blob is built from the validated, typed session, never from the raw payload, so
//! the retired fields cannot reach the database whatever a stale client sends: an event's
//! `summary` and `data` and the session's `tokenSeries` are never read. `tokenEvents` are kept.
//! Events themselves live as columnar rows, not in the blob; `chunk` is transport, not data.
//! `frustration` is kept only when the org opted in, and then in its own column.

use serde_json::{Map, Value, json};

use super::batch::{Frustration, Session};

/// A session as it may be stored.
#[derive(Debug, Clone)]
pub struct Sanitized {
    /// The session's stored fields; an omitted (or null) optional field is absent.
    pub blob: Map<String, Value>,
    /// `Some` only when the org opted in and the client sent one.
    pub frustration: Option<Value>,
}

pub fn sanitize(s: &Session, frustration_opt_in: bool) -> Sanitized {
    let mut blob = Map::new();
    blob.insert("sessionId".into(), json!(s.session_id));
    blob.insert("updatedAt".into(), json!(s.updated_at.raw));
    blob.insert("dataRevision".into(), json!(s.data_revision));
    blob.insert("agent".into(), json!(s.agent));
    put(&mut blob, "model", s.model.as_ref().map(|v| json!(v)));
    put(&mut blob, "title", s.title.as_ref().map(|v| json!(v)));
    put(&mut blob, "status", s.status.as_ref().map(|v| json!(v)));
    put(
        &mut blob,
        "startedAt",
        s.started_at.as_ref().map(|t| json!(t.raw)),
    );
    put(
        &mut blob,
        "endedAt",
        s.ended_at.as_ref().map(|t| json!(t.raw)),
    );
    if let Some(r) = &s.repository {
        let mut o = Map::new();
        put(&mut o, "remoteUrl", r.remote_url.as_ref().map(|v| json!(v)));
        put(&mut o, "branch", r.branch.as_ref().map(|v| json!(v)));
        put(&mut o, "commitSha", r.commit_sha.as_ref().map(|v| json!(v)));
        blob.insert("repository".into(), Value::Object(o));
    }
    if let Some(u) = &s.usage {
        let mut o = Map::new();
        put(&mut o, "inputTokens", u.input_tokens.map(|v| json!(v)));
        put(&mut o, "outputTokens", u.output_tokens.map(|v| json!(v)));
        put(
            &mut o,
            "cacheReadTokens",
            u.cache_read_tokens.map(|v| json!(v)),
        );
        put(
            &mut o,
            "cacheWriteTokens",
            u.cache_write_tokens.map(|v| json!(v)),
        );
        put(&mut o, "costUsd", u.cost_usd.map(|v| json!(v)));
        blob.insert("usage".into(), Value::Object(o));
    }
    if let Some(items) = &s.token_events {
        let list = items
            .iter()
            .map(|t| json!({"ts": t.ts.raw, "inputTokens": t.input_tokens, "outputTokens": t.output_tokens}))
            .collect();
        blob.insert("tokenEvents".into(), Value::Array(list));
    }
    if let Some(items) = &s.artifact_refs {
        let list = items
            .iter()
            .map(|a| json!({"kind": a.kind, "ref": a.reference}))
            .collect();
        blob.insert("artifactRefs".into(), Value::Array(list));
    }
    let frustration = match (&s.frustration, frustration_opt_in) {
        (Some(Frustration { score, signals }), true) => {
            Some(json!({"score": score, "signals": signals}))
        }
        _ => None,
    };
    Sanitized { blob, frustration }
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        map.insert(key.to_owned(), v);
    }
}

/// Apply a newer sanitized session onto the stored blob: omission never clears (absent keys keep
/// the stored value, objects merge key by key), a present value or array replaces, so an empty
/// array replaces with empty.
pub fn merge(stored: &mut Map<String, Value>, newer: Map<String, Value>) {
    for (key, value) in newer {
        match (stored.get_mut(&key), value) {
            (Some(Value::Object(old)), Value::Object(new)) => merge(old, new),
            (_, value) => {
                stored.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_omitted_and_replaces_present() {
        let mut stored =
            json!({"title": "a", "tokenEvents": [1], "usage": {"inputTokens": 1, "costUsd": 2.0}})
                .as_object()
                .cloned()
                .unwrap();
        let newer = json!({"tokenEvents": [], "usage": {"inputTokens": 5}})
            .as_object()
            .cloned()
            .unwrap();
        merge(&mut stored, newer);
        assert_eq!(
            Value::Object(stored),
            json!({"title": "a", "tokenEvents": [], "usage": {"inputTokens": 5, "costUsd": 2.0}})
        );
    }
}
