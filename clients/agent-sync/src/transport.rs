//! The transport: hello, then POSTs, each read into an [`Answer`].
//!
//! Spec, "Compression and byte ceilings": compression is capability-gated, never assumed. The
//! client first asks `GET /api/agent-sessions/hello`; only when the hello-ack advertises
//! `agentSessionSyncCompression` does it gzip, and the signal is the `Content-Encoding: gzip`
//! header (the envelope's `encoding` field is informational). A server without hello (an older
//! deploy answering 404) gets plain JSON: both skew directions degrade to uncompressed. The ack
//! keeps that it was a 404 ([`HelloAck::answered`]): a URL that reaches no ingest function
//! answers 404 too, and a one-shot push tells the two apart by the sync route's answer (issue 21,
//! point 9). The client's deadline sits below the server function's ceiling (10 s), so a slow
//! upsert that still commits meets an idempotent retry rather than duplicated work.
//!
//! A gzip body goes as `Content-Type: application/octet-stream`: a deployed API Gateway HTTP API
//! hands `application/json` bodies to the function as text, where gzip bytes (not UTF-8) would
//! not survive, while a binary type arrives base64 and intact. Plain JSON stays `application/json`.
//!
//! The hello-ack is kept for the lane's life, but an answer that contradicts it (415: the server
//! no longer takes gzip; 413: its caps are tighter than advertised) makes the lane ask again
//! ([`contradicts_hello`]). `Retry-After` is read in both of HTTP's forms ([`RetryAfter`]).
//! What it reads is an [`Answer`] ([`crate::answer`]), which [`crate::outcome`] classifies.
//!
//! Spec, "The metadata sync contract": success is exactly `{"success": true, "data": {"synced":
//! true}}` with no continuation field; anything else is not an ack.

use std::time::Duration;

use serde_json::{Value, json};
use syncplane_contract::header::{BINARY_CONTENT_TYPE, GZIP, JSON_CONTENT_TYPE};
use syncplane_contract::{COMPRESSION_CAPABILITY, FUNCTION_TIMEOUT_SECS, path};

use crate::answer::{Answer, RetryAfter};
use crate::chunker::{Envelope, Limits, SCHEMA_VERSION};
use crate::lane_core::http::{self, cap, error_code, timed_out};
pub use crate::lane_core::http::{TokenHandle, TransportError};

pub const HELLO_PATH: &str = path::HELLO;
pub const SYNC_PATH: &str = path::SYNC;
/// The ingest function's ceiling is 10 s; the client gives up 2 s before it.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(FUNCTION_TIMEOUT_SECS - 2);

/// `Content-Type` and `Content-Encoding` of a body: binary when gzipped, so API Gateway passes
/// the bytes through base64 instead of handing them to the function as (mangled) text.
pub fn content_headers(gzip: bool) -> (&'static str, Option<&'static str>) {
    if gzip {
        (BINARY_CONTENT_TYPE, Some(GZIP))
    } else {
        (JSON_CONTENT_TYPE, None)
    }
}

/// An answer that says the cached hello-ack no longer describes the server: 415 (it does not
/// take the encoding the hello advertised, e.g. rolled back to a build without gzip) or 413 (a
/// body planned within the advertised caps was too large, so the caps have tightened).
pub fn contradicts_hello(answer: &Answer) -> bool {
    matches!(
        answer,
        Answer::Http {
            status: 413 | 415,
            ..
        }
    )
}

/// What the hello-ack told the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelloAck {
    pub compression: bool,
    /// The server's caps, never looser than the contract's.
    pub limits: Limits,
    /// Whether hello was answered. `false`: it was `404`, from a server older than hello, or
    /// from a URL that reaches no ingest function at all (issue 21, point 9: `cargo lambda
    /// watch` serves the function under `/lambda-url/ingest`); only a `404` on the sync route
    /// as well tells the two apart.
    pub answered: bool,
}

impl HelloAck {
    /// What an old server without hello gets: plain JSON under the contract's caps.
    pub const LEGACY: HelloAck = HelloAck {
        compression: false,
        limits: Limits::CONTRACT,
        answered: false,
    };
}

#[derive(Debug, Clone)]
pub struct Transport {
    http: reqwest::Client,
    base: String,
    token: TokenHandle,
}

impl Transport {
    pub fn new(
        base_url: &str,
        token: TokenHandle,
        deadline: Duration,
    ) -> Result<Self, TransportError> {
        let (http, base, _) = http::client(base_url, deadline)?;
        Ok(Self { http, base, token })
    }

    pub fn token(&self) -> &TokenHandle {
        &self.token
    }

    /// The URL of `path` (`HELLO_PATH`, `SYNC_PATH`) on this transport's server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Ask the server what it supports. `Err` is the answer when it is not a usable hello-ack.
    pub async fn hello(&self) -> Result<HelloAck, Answer> {
        let Some(token) = self.token.get() else {
            return Err(Answer::NoToken);
        };
        let sent = self
            .http
            .get(self.url(HELLO_PATH))
            .bearer_auth(token)
            .send()
            .await;
        let (status, _, body) = read(sent).await?;
        if status == 404 {
            return Ok(HelloAck::LEGACY);
        }
        let ack = (status == 200)
            .then(|| parse_hello(&body))
            .flatten()
            .ok_or_else(|| failure(status, None, &body))?;
        Ok(ack)
    }

    /// POST one envelope.
    pub async fn post(&self, envelope: &Envelope) -> Answer {
        let Some(token) = self.token.get() else {
            return Answer::NoToken;
        };
        let (content_type, encoding) = content_headers(envelope.gzip);
        let mut req = self
            .http
            .post(self.url(SYNC_PATH))
            .bearer_auth(token)
            .header(reqwest::header::CONTENT_TYPE, content_type);
        if let Some(encoding) = encoding {
            req = req.header(reqwest::header::CONTENT_ENCODING, encoding);
        }
        match read(req.body(envelope.body.clone()).send().await).await {
            Err(a) => a,
            Ok((status, retry_after, body)) => {
                if (200..300).contains(&status) {
                    Answer::Http {
                        status,
                        code: None,
                        retry_after: None,
                        exact_success: is_exact_success(&body),
                    }
                } else {
                    failure(status, retry_after, &body)
                }
            }
        }
    }
}

/// Status, `Retry-After` and body, or the transport failure.
async fn read(
    sent: Result<reqwest::Response, reqwest::Error>,
) -> Result<(u16, Option<RetryAfter>, Vec<u8>), Answer> {
    let resp = sent.map_err(thrown)?;
    let status = resp.status().as_u16();
    let retry_after = http::retry_after(&resp);
    let body = resp.bytes().await.map_err(thrown)?;
    Ok((status, retry_after, body.to_vec()))
}

/// A reqwest failure: our own deadline, or a thrown transport error.
fn thrown(e: reqwest::Error) -> Answer {
    if timed_out(&e, "transport error") {
        Answer::DeadlineExceeded
    } else {
        Answer::ConnectionDropped
    }
}

fn failure(status: u16, retry_after: Option<RetryAfter>, body: &[u8]) -> Answer {
    let code = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| error_code(&v).map(str::to_owned));
    Answer::Http {
        status,
        code,
        retry_after,
        exact_success: false,
    }
}

/// Exactly the contract's success body, nothing more (a continuation field would be a server
/// this client does not understand).
pub fn is_exact_success(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .is_ok_and(|v| v == json!({"success": true, "data": {"synced": true}}))
}

fn parse_hello(body: &[u8]) -> Option<HelloAck> {
    let v: Value = serde_json::from_slice(body).ok()?;
    if v["success"] != true {
        return None;
    }
    let data = &v["data"];
    if data["schemaVersion"].as_f64() != Some(SCHEMA_VERSION as f64) {
        tracing::warn!(schema = %data["schemaVersion"], "the server pins another schema version");
        return None;
    }
    let contract = Limits::default();
    let limit = |key: &str, ours: usize| cap(data, key, ours as u64) as usize;
    Some(HelloAck {
        compression: data["capabilities"][COMPRESSION_CAPABILITY] == true,
        limits: Limits {
            max_sessions_per_batch: limit("maxSessionsPerBatch", contract.max_sessions_per_batch),
            max_wire_bytes: limit("maxWireBytes", contract.max_wire_bytes),
            max_decoded_bytes: limit("maxDecodedBytes", contract.max_decoded_bytes),
        },
        answered: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_success_body_is_an_ack() {
        assert!(is_exact_success(
            br#"{"success":true,"data":{"synced":true}}"#
        ));
        assert!(is_exact_success(
            br#"{ "data": {"synced": true}, "success": true }"#
        ));
        for body in [
            &br#"{"success":true,"data":{"synced":true,"pendingFragments":[]}}"#[..],
            br#"{"success":true,"data":{"synced":false}}"#,
            br#"{"success":true}"#,
            br#"{"success":true,"data":{"synced":true},"extra":1}"#,
            b"ok",
            b"",
        ] {
            assert!(!is_exact_success(body), "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn the_hello_ack_gates_compression_and_never_loosens_the_caps() {
        let ack = parse_hello(
            br#"{"success":true,"data":{"schemaVersion":2,"capabilities":{"agentSessionSyncCompression":true},
                "limits":{"maxSessionsPerBatch":500,"maxWireBytes":100000,"maxDecodedBytes":4194304}}}"#,
        )
        .unwrap();
        assert!(ack.compression);
        assert_eq!(
            ack.limits.max_sessions_per_batch, 200,
            "never above the contract"
        );
        assert_eq!(
            ack.limits.max_wire_bytes, 100_000,
            "a tighter server cap is kept"
        );
        let plain =
            parse_hello(br#"{"success":true,"data":{"schemaVersion":2,"capabilities":{}}}"#)
                .unwrap();
        assert!(!plain.compression);
        assert_eq!(plain.limits, Limits::default());
        assert_eq!(
            parse_hello(br#"{"success":true,"data":{"schemaVersion":3}}"#),
            None
        );
    }

    #[test]
    fn a_gzip_body_is_labelled_binary_and_plain_json_as_json() {
        assert_eq!(
            content_headers(true),
            ("application/octet-stream", Some("gzip"))
        );
        assert_eq!(content_headers(false), ("application/json", None));
    }

    #[test]
    fn only_413_and_415_contradict_the_hello() {
        let http = |status| Answer::Http {
            status,
            code: None,
            retry_after: None,
            exact_success: false,
        };
        assert!(contradicts_hello(&http(415)));
        assert!(contradicts_hello(&http(413)));
        for status in [400, 404, 409, 429, 500] {
            assert!(!contradicts_hello(&http(status)), "{status}");
        }
        assert!(!contradicts_hello(&Answer::ConnectionDropped));
    }

    #[test]
    fn a_bad_url_is_refused_with_the_setting_named() {
        let e = Transport::new("ftp://x", TokenHandle::default(), DEFAULT_DEADLINE).unwrap_err();
        assert!(e.to_string().contains("ingest URL"), "{e}");
    }
}
