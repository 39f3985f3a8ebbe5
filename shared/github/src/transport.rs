//! One HTTP round trip to GitHub, and the request and answer types every call is made of (REST
//! and GraphQL alike): what to send ([`Call`]), what came back ([`Reply`]), the documented status
//! check and the body decoding. The transport counts what it sends and receives and keeps the
//! last rate-limit headers; credentials, retries and rate-limit waits are the client's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, HeaderValue, IF_NONE_MATCH};
use http::{HeaderMap, Method, StatusCode};
use serde::de::DeserializeOwned;
use tracing::{debug, warn};
use url::Url;

use super::error::{GithubError, from_transport};
use super::rate_limit::RateLimit;
use super::usage::{RequestKind, UsageCounters};

/// GitHub's JSON media type (the default `Accept`).
pub(super) const JSON: &str = "application/vnd.github+json";
/// A blob's raw bytes.
pub(super) const RAW: &str = "application/vnd.github.raw+json";
const API_VERSION: &str = "2022-11-28";

/// One request to make (the credential is added per attempt).
pub(super) struct Call {
    pub(super) method: Method,
    pub(super) url: Url,
    pub(super) accept: &'static str,
    pub(super) if_none_match: Option<String>,
    /// Non-2xx statuses the caller interprets itself (304 on a conditional request, 409 on
    /// the commits of an empty repository).
    pub(super) passthrough: &'static [u16],
    /// A JSON request body (GraphQL); `None` sends none (an empty one on a POST).
    pub(super) json_body: Option<Vec<u8>>,
    /// Which API it is, for the per-kind request counts.
    pub(super) kind: RequestKind,
}

impl Call {
    /// A REST `GET` of `url` asking for JSON.
    pub(super) fn get(url: Url) -> Self {
        Self {
            method: Method::GET,
            url,
            accept: JSON,
            if_none_match: None,
            passthrough: &[],
            json_body: None,
            kind: RequestKind::Rest,
        }
    }
}

/// An answer whose body has been read.
pub(super) struct Reply {
    pub(super) status: StatusCode,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
}

/// Rate-limit waits already taken by one call.
#[derive(Default)]
pub(super) struct Waits {
    pub(super) waited: Duration,
    pub(super) count: u32,
}

/// Whether the answer is the caller's to read: a success, or a status it asked to see.
pub(super) fn is_pass(call: &Call, status: StatusCode) -> bool {
    status.is_success() || call.passthrough.contains(&status.as_u16())
}

/// The documented success status; any other is unexpected.
pub(super) fn expect_status(reply: &Reply, expected: StatusCode) -> Result<(), GithubError> {
    if reply.status == expected {
        Ok(())
    } else {
        Err(GithubError::Unexpected {
            status: reply.status.as_u16(),
        })
    }
}

/// A JSON body as GitHub documents it; anything else is `Decode`.
pub(super) fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, GithubError> {
    serde_json::from_slice(body).map_err(|e| {
        debug!(error = %e, "GitHub body not as documented");
        GithubError::Decode
    })
}

/// The HTTP side of one client (shared by its clones): the connection pool and the counters.
pub(super) struct Transport {
    /// Built on the first request: loading the TLS roots costs tens of milliseconds, which a
    /// function that never calls GitHub (the webhook answers before any job runs) should not
    /// pay at cold start.
    http: OnceLock<reqwest::Client>,
    request_timeout: Duration,
    connect_timeout: Duration,
    requests: AtomicU64,
    pub(super) usage: UsageCounters,
    bytes: AtomicU64,
    last_rate_limit: Mutex<Option<RateLimit>>,
}

impl Transport {
    /// `request_timeout` bounds a whole request, body included.
    pub(super) fn new(request_timeout: Duration, connect_timeout: Duration) -> Self {
        Self {
            http: OnceLock::new(),
            request_timeout,
            connect_timeout,
            requests: AtomicU64::new(0),
            usage: UsageCounters::default(),
            bytes: AtomicU64::new(0),
            last_rate_limit: Mutex::new(None),
        }
    }

    /// HTTP requests sent, token exchanges included.
    pub(super) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Body bytes received (after content decoding).
    pub(super) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The last rate-limit headers seen.
    pub(super) fn rate_limit(&self) -> Option<RateLimit> {
        self.last_rate_limit
            .lock()
            .map(|g| g.clone())
            .unwrap_or(None)
    }

    /// The HTTP client, built on first use (two racing first callers may both build one; one wins).
    fn http(&self) -> Result<&reqwest::Client, GithubError> {
        if let Some(http) = self.http.get() {
            return Ok(http);
        }
        let mut defaults = HeaderMap::new();
        defaults.insert(ACCEPT, HeaderValue::from_static(JSON));
        defaults.insert(
            "x-github-api-version",
            HeaderValue::from_static(API_VERSION),
        );
        let built = reqwest::Client::builder()
            .user_agent(concat!("syncplane/", env!("CARGO_PKG_VERSION")))
            .default_headers(defaults)
            .timeout(self.request_timeout)
            .connect_timeout(self.connect_timeout)
            .build()
            .map_err(|e| {
                warn!(error = %e, "cannot build the GitHub HTTP client");
                GithubError::Transport
            })?;
        Ok(self.http.get_or_init(|| built))
    }

    /// One HTTP round trip: counts it, reads the body, records the rate-limit headers.
    pub(super) async fn send_once(
        &self,
        call: &Call,
        authorization: &str,
    ) -> Result<Reply, GithubError> {
        let mut auth = HeaderValue::from_str(authorization).map_err(|_| GithubError::Decode)?;
        auth.set_sensitive(true);
        let mut request = self
            .http()?
            .request(call.method.clone(), call.url.clone())
            .header(AUTHORIZATION, auth)
            .header(ACCEPT, call.accept);
        if let Some(etag) = &call.if_none_match {
            request = request.header(IF_NONE_MATCH, etag.as_str());
        }
        if let Some(body) = &call.json_body {
            request = request
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
        } else if call.method == Method::POST {
            // An explicit empty body, so the request carries `Content-Length: 0`.
            request = request.body(Vec::<u8>::new());
        }

        self.requests.fetch_add(1, Ordering::Relaxed);
        self.usage.count(call.kind);
        let response = request.send().await.map_err(|e| {
            debug!(method = %call.method, path = call.url.path(), error = %e, "GitHub request failed");
            from_transport(&e)
        })?;
        let status = response.status();
        let headers = response.headers().clone();
        let snapshot = RateLimit::from_headers(&headers);
        if let Some(snap) = &snapshot
            && let Ok(mut last) = self.last_rate_limit.lock()
        {
            *last = Some(snap.clone());
        }
        let body = response.bytes().await.map_err(|e| {
            debug!(method = %call.method, path = call.url.path(), error = %e, "GitHub body broke off");
            from_transport(&e)
        })?;
        self.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
        debug!(
            method = %call.method,
            path = call.url.path(),
            status = status.as_u16(),
            rate_remaining = snapshot.as_ref().map(|s| s.remaining),
            "GitHub request"
        );
        Ok(Reply {
            status,
            headers,
            body,
        })
    }
}
