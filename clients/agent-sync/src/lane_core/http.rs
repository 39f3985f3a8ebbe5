//! The HTTP plumbing of both lanes' transports: the metadata lane's ([`crate::transport`]) and the
//! transcript lane's ([`crate::transcripts::transport`]).
//!
//! Spec, "Two independent lanes": each lane has its own HTTP client (own connections, own
//! deadline) and the two share only the device token ([`TokenHandle`]), so a stalled upload
//! never holds a metadata batch, and the reverse. What the two do alike is here: the base URL
//! checked and the client built ([`client`]), an answer's `Retry-After` ([`retry_after`]) and
//! `error.code` ([`error_code`]), a failed request told apart as the device's own deadline or a
//! thrown transport error ([`timed_out`]), and a cap of the hello-ack, never looser than the
//! contract's ([`cap`]).

use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;

use crate::answer::RetryAfter;

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
    pub(crate) fn get(&self) -> Option<String> {
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

/// A lane's own HTTP client of the ingest function at `base_url` (http or https), with
/// `deadline` on every request and on connecting; with the base URL without its trailing slash,
/// and the URL as parsed.
pub(crate) fn client(
    base_url: &str,
    deadline: Duration,
) -> Result<(reqwest::Client, String, reqwest::Url), TransportError> {
    let bad = |reason: String| TransportError::BadUrl {
        url: base_url.to_owned(),
        reason,
    };
    let parsed = reqwest::Url::parse(base_url).map_err(|e| bad(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https".into()));
    }
    let http = reqwest::Client::builder()
        .timeout(deadline)
        .connect_timeout(deadline)
        .build()
        .map_err(|e| TransportError::Client(e.to_string()))?;
    Ok((http, base_url.trim_end_matches('/').to_owned(), parsed))
}

/// An answer's `Retry-After`, in either of HTTP's forms (`None`: absent or unreadable).
pub(crate) fn retry_after(resp: &reqwest::Response) -> Option<RetryAfter> {
    resp.headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(RetryAfter::parse)
}

/// Whether a failed request met the device's own deadline; otherwise it was thrown (refused,
/// reset, dropped), which is logged as `what`.
pub(crate) fn timed_out(e: &reqwest::Error, what: &str) -> bool {
    if e.is_timeout() {
        return true;
    }
    tracing::debug!(error = %e, "{what}");
    false
}

/// `error.code` of a failure envelope.
pub(crate) fn error_code(v: &Value) -> Option<&str> {
    v["error"]["code"].as_str()
}

/// The cap a hello-ack's `data` advertises under `limits.<key>`, never looser than `ours`.
pub(crate) fn cap(data: &Value, key: &str, ours: u64) -> u64 {
    data["limits"][key]
        .as_u64()
        .map_or(ours, |theirs| ours.min(theirs))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_cap_is_the_tighter_of_the_servers_and_ours_and_a_code_is_read_if_there() {
        let data = json!({"limits": {"a": 10, "b": 1000, "c": "x"}});
        assert_eq!(cap(&data, "a", 100), 10);
        assert_eq!(cap(&data, "b", 100), 100, "never looser");
        assert_eq!(cap(&data, "c", 100), 100);
        assert_eq!(cap(&json!({}), "a", 100), 100);
        let v = json!({"success": false, "error": {"code": "rate_limited"}});
        assert_eq!(error_code(&v), Some("rate_limited"));
        for none in [json!({"error": "x"}), json!([1]), Value::Null] {
            assert_eq!(error_code(&none), None, "{none}");
        }
    }

    #[test]
    fn a_base_url_must_be_http_and_loses_its_trailing_slash() {
        let (_, base, parsed) =
            client("https://api.example.com/prod/", Duration::from_secs(1)).unwrap();
        assert_eq!(base, "https://api.example.com/prod");
        assert_eq!(
            parsed.origin().ascii_serialization(),
            "https://api.example.com"
        );
        for bad in ["ftp://x", "not a url"] {
            let e = client(bad, Duration::from_secs(1)).unwrap_err();
            assert!(e.to_string().contains("invalid ingest URL"), "{e}");
        }
    }
}
