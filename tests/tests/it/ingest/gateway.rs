//! Request bodies as a deployed API Gateway HTTP API (payload format 2.0) hands them to the ingest
//! function (issue 13 point 7; README "Request bodies through API Gateway"). API Gateway chooses by
//! `Content-Type` alone: `text/*`, `application/json`, `application/xml` and
//! `application/javascript` arrive as a string (`isBase64Encoded: false`), anything else base64
//! (`isBase64Encoded: true`). A base64 event carries a gzip batch intact whatever its label; a
//! gzip batch delivered as text has lost bytes that a JSON string cannot hold, and the handler
//! refuses it with a 400 (never a 500, nothing stored), so a client must not rely on that path.

use serde_json::Value;
use shared::ingest::handle;
use syncplane_tests::apigw::{checked_reply, event, from_event};

use super::support::{Env, batch, env, events, gzip, session};

/// A one-session batch of two events, gzipped as the desktop client sends it.
fn wire() -> Vec<u8> {
    let doc = batch(vec![{
        let mut s = session("s-1", "r1", "2026-01-01T00:00:00Z");
        s["events"] = events([1, 2]);
        s
    }]);
    gzip(&serde_json::to_vec(&doc).unwrap())
}

async fn deliver(env: &Env, event: Value) -> syncplane_tests::apigw::Reply {
    checked_reply(
        "POST",
        "/api/agent-sessions/sync",
        handle(&env.state, from_event(event)).await,
    )
}

#[tokio::test]
async fn a_base64_event_carries_a_gzip_batch_to_the_handler_intact() {
    // application/octet-stream is what API Gateway base64-encodes; application/json is the
    // label the desktop client uses (the events/ingest-sync.json sample has that shape).
    for content_type in ["application/octet-stream", "application/json"] {
        let env = env().await;
        let auth = env.bearer();
        let e = event(
            "POST",
            "/api/agent-sessions/sync",
            &[
                ("authorization", &auth),
                ("content-type", content_type),
                ("content-encoding", "gzip"),
            ],
            Some(&wire()),
        );
        assert_eq!(e["isBase64Encoded"], true);
        let r = deliver(&env, e).await;
        assert_eq!(r.status, 200, "{content_type}: {}", r.body);
        assert_eq!(env.written().await, (1, 2), "{content_type}");
    }
}

#[tokio::test]
async fn a_gzip_batch_delivered_as_text_is_refused_with_a_400_and_nothing_stored() {
    let env = env().await;
    let auth = env.bearer();
    let bytes = wire();
    let mut e = event(
        "POST",
        "/api/agent-sessions/sync",
        &[
            ("authorization", &auth),
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        None,
    );
    // What a text delivery of these bytes can be at best: every byte that is not UTF-8 replaced.
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert_ne!(text.as_bytes(), bytes.as_slice(), "gzip is not UTF-8");
    e["body"] = Value::String(text);
    e["isBase64Encoded"] = Value::Bool(false);
    let r = deliver(&env, e).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("gzip")),
        "{}",
        r.body
    );
    assert_eq!(env.written().await, (0, 0));
}
