//! Request bodies as a deployed API Gateway HTTP API (payload format 2.0) hands them to the ingest
//! function (issue 13 point 7; docs/local.md "Request bodies through API Gateway"). API
//! Gateway chooses by `Content-Type` alone: `text/*`, `application/json`, `application/xml` and
//! `application/javascript` arrive as a string (`isBase64Encoded: false`), anything else base64
//! (`isBase64Encoded: true`; `syncplane_tests::apigw::event` builds events by that rule). A gzip
//! batch labelled `application/octet-stream` arrives base64 and intact; a gzip batch labelled as
//! text has lost bytes that a JSON string cannot hold, and the handler refuses it with a 400
//! (never a 500, nothing stored), so a client must not rely on that path.

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
    // application/octet-stream (what the desktop client sends with gzip) and no content type
    // at all are the labels API Gateway base64-encodes.
    for content_type in [Some("application/octet-stream"), None] {
        let env = env().await;
        let auth = env.bearer();
        let mut headers = vec![
            ("authorization", auth.as_str()),
            ("content-encoding", "gzip"),
        ];
        headers.extend(content_type.map(|t| ("content-type", t)));
        let e = event("POST", "/api/agent-sessions/sync", &headers, Some(&wire()));
        assert_eq!(e["isBase64Encoded"], true, "{content_type:?}");
        let r = deliver(&env, e).await;
        assert_eq!(r.status, 200, "{content_type:?}: {}", r.body);
        assert_eq!(env.written().await, (1, 2), "{content_type:?}");
    }
}

#[tokio::test]
async fn a_gzip_batch_delivered_as_text_is_refused_with_a_400_and_nothing_stored() {
    let env = env().await;
    let auth = env.bearer();
    let bytes = wire();
    for content_type in [
        "application/json",
        "application/json; charset=utf-8",
        "text/plain",
    ] {
        let e = event(
            "POST",
            "/api/agent-sessions/sync",
            &[
                ("authorization", &auth),
                ("content-type", content_type),
                ("content-encoding", "gzip"),
            ],
            Some(&bytes),
        );
        // What a text delivery of these bytes can be at best: every byte that is not UTF-8
        // replaced.
        assert_eq!(e["isBase64Encoded"], false, "{content_type}");
        assert_ne!(
            e["body"].as_str().map(str::as_bytes),
            Some(bytes.as_slice()),
            "gzip is not UTF-8"
        );
        let r = deliver(&env, e).await;
        assert_eq!(r.status, 400, "{content_type}: {}", r.body);
        assert!(
            r.body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("gzip")),
            "{}",
            r.body
        );
    }
    assert_eq!(env.written().await, (0, 0));
}

#[tokio::test]
async fn a_plain_json_batch_labelled_application_json_arrives_as_text_intact() {
    let env = env().await;
    let auth = env.bearer();
    let doc = batch(vec![session("s-1", "r1", "2026-01-01T00:00:00Z")]);
    let e = event(
        "POST",
        "/api/agent-sessions/sync",
        &[
            ("authorization", &auth),
            ("content-type", "application/json"),
        ],
        Some(&serde_json::to_vec(&doc).unwrap()),
    );
    assert_eq!(e["isBase64Encoded"], false);
    let r = deliver(&env, e).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(env.written().await, (1, 0));
}
