//! The transport: hello, then POSTs, each read into an [`Answer`].
//!
//! Spec, "Compression and byte ceilings": compression is capability-gated, never assumed. The
//! client first asks `GET /api/agent-sessions/hello`; only when the hello-ack advertises
//! `agentSessionSyncCompression` does it gzip, and the signal is the `Content-Encoding: gzip`
//! header (the envelope's `encoding` field is informational). A server without hello (an older
//! deploy answering 404) gets plain JSON: both skew directions degrade to uncompressed. The
//! client's deadline sits below the server function's ceiling (10 s), so a slow upsert that still
//! commits meets an idempotent retry rather than duplicated work.
//!
//! Spec, "The metadata sync contract": success is exactly `{"success": true, "data": {"synced":
//! true}}` with no continuation field; anything else is not an ack.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::{Value, json};

use crate::chunker::{Envelope, Limits, SCHEMA_VERSION};
use crate::outcome::Answer;

pub const HELLO_PATH: &str = "/api/agent-sessions/hello";
pub const SYNC_PATH: &str = "/api/agent-sessions/sync";
/// The ingest function's ceiling is 10 s; the client gives up 2 s before it.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(8);

/// What the hello-ack told the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelloAck {
    pub compression: bool,
    /// The server's caps, never looser than the contract's.
    pub limits: Limits,
}

impl HelloAck {
    /// What an old server without hello gets: plain JSON under the contract's caps.
    pub const LEGACY: HelloAck = HelloAck {
        compression: false,
        limits: Limits {
            max_sessions_per_batch: 200,
            max_wire_bytes: 262_144,
            max_decoded_bytes: 4_194_304,
        },
    };
}

/// The device token, replaceable while the lane runs (a new sign-in resumes a paused lane).
#[derive(Debug, Clone, Default)]
pub struct TokenHandle(Arc<RwLock<Option<String>>>);

impl TokenHandle {
    pub fn new(token: Option<String>) -> Self {
        Self(Arc::new(RwLock::new(token)))
    }
    pub fn set(&self, token: Option<String>) {
        if let Ok(mut t) = self.0.write() {
            *t = token;
        }
    }
    fn get(&self) -> Option<String> {
        self.0.read().ok().and_then(|t| t.clone())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("invalid ingest URL {url:?}: {reason}; pass the ingest base URL, e.g. https://host")]
    BadUrl { url: String, reason: String },
    #[error("could not build the HTTP client: {0}")]
    Client(String),
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
        let parsed = reqwest::Url::parse(base_url).map_err(|e| TransportError::BadUrl {
            url: base_url.to_owned(),
            reason: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(TransportError::BadUrl {
                url: base_url.to_owned(),
                reason: "the scheme must be http or https".into(),
            });
        }
        let http = reqwest::Client::builder()
            .timeout(deadline)
            .connect_timeout(deadline)
            .build()
            .map_err(|e| TransportError::Client(e.to_string()))?;
        Ok(Self {
            http,
            base: base_url.trim_end_matches('/').to_owned(),
            token,
        })
    }

    pub fn token(&self) -> &TokenHandle {
        &self.token
    }

    /// Ask the server what it supports. `Err` is the answer when it is not a usable hello-ack.
    pub async fn hello(&self) -> Result<HelloAck, Answer> {
        let Some(token) = self.token.get() else {
            return Err(Answer::NoToken);
        };
        let sent = self
            .http
            .get(format!("{}{HELLO_PATH}", self.base))
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
        let mut req = self
            .http
            .post(format!("{}{SYNC_PATH}", self.base))
            .bearer_auth(token)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        if envelope.gzip {
            req = req.header(reqwest::header::CONTENT_ENCODING, "gzip");
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
) -> Result<(u16, Option<Duration>, Vec<u8>), Answer> {
    let resp = sent.map_err(thrown)?;
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let body = resp.bytes().await.map_err(thrown)?;
    Ok((status, retry_after, body.to_vec()))
}

/// A reqwest failure: our own deadline, or a thrown transport error.
fn thrown(e: reqwest::Error) -> Answer {
    if e.is_timeout() {
        Answer::DeadlineExceeded
    } else {
        tracing::debug!(error = %e, "transport error");
        Answer::ConnectionDropped
    }
}

fn failure(status: u16, retry_after: Option<Duration>, body: &[u8]) -> Answer {
    let code = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("error")?.get("code")?.as_str().map(str::to_owned));
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
    let cap = |key: &str, ours: usize| {
        data["limits"][key]
            .as_u64()
            .map_or(ours, |theirs| ours.min(theirs as usize))
    };
    Some(HelloAck {
        compression: data["capabilities"]["agentSessionSyncCompression"] == true,
        limits: Limits {
            max_sessions_per_batch: cap("maxSessionsPerBatch", contract.max_sessions_per_batch),
            max_wire_bytes: cap("maxWireBytes", contract.max_wire_bytes),
            max_decoded_bytes: cap("maxDecodedBytes", contract.max_decoded_bytes),
        },
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
    fn a_bad_url_is_refused_with_the_setting_named() {
        let e = Transport::new("ftp://x", TokenHandle::default(), DEFAULT_DEADLINE).unwrap_err();
        assert!(e.to_string().contains("ingest URL"), "{e}");
    }
}
