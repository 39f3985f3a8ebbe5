//! The transcript lane's HTTP calls: hello, a file's state, an upload intent, the upload itself,
//! and `complete` (docs/transcript-wire-contract.md, "Routes").
//!
//! Spec, "Two independent lanes": this transport has its own HTTP client (own connections, own
//! deadline) and shares only the device token ([`TokenHandle`]) with the metadata lane's, so a
//! stalled upload never holds a metadata batch, and the reverse.
//!
//! - hello: `agentTranscriptUpload` (`presigned` or `direct`) and the segment caps; a server
//!   without the key (or without hello) has no transcript lane ([`Api::hello`] is `Ok(None)`).
//! - the upload: presigned, the URL is absolute and the client sends exactly the headers given
//!   (no token: S3 authenticates the signature); `200` and `412` (the object was already there)
//!   are both success, `403` is a spent URL: ask a new intent. Direct, the URL is a path on the
//!   ingest function: it is joined to the configured server's origin as it is (a path prefix the
//!   server put in it is kept, never doubled), with the device token and
//!   `Content-Type: application/octet-stream`. The token goes to the configured origin only.
//!
//! [`Api`] is what the lane calls; [`TranscriptTransport`] implements it over HTTP, and tests
//! implement it in memory.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use syncplane_contract::header::BINARY_CONTENT_TYPE;
use syncplane_contract::path::HELLO;
use syncplane_contract::transcripts::{
    MAX_SEGMENT_BYTES, MAX_SEGMENT_BYTES_KEY, MAX_SEGMENT_DECODED_BYTES,
    MAX_SEGMENT_DECODED_BYTES_KEY, Refusal, TRANSPORT_DIRECT, TRANSPORT_PRESIGNED,
    UPLOAD_CAPABILITY, path,
};

use crate::answer::RetryAfter;
use crate::lane_core::http::{self, cap, error_code, timed_out};
use crate::transcripts::outcome::{Failure, FileState, classify};
use crate::transport::{TokenHandle, TransportError};

/// Where the bytes of a segment go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadMode {
    /// Straight to S3 through a presigned PUT.
    Presigned,
    /// To the ingest function itself.
    Direct,
}

/// What the hello-ack says of the transcript lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    pub mode: UploadMode,
    /// The server's caps, never looser than the contract's.
    pub max_segment_bytes: u64,
    pub max_segment_decoded_bytes: u64,
}

/// Which file a request is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileRef<'a> {
    pub compute_target_id: &'a str,
    pub session_id: &'a str,
    pub file_id: &'a str,
}

/// The body of `POST .../intent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentRequest {
    pub compute_target_id: String,
    pub session_id: String,
    pub file_id: String,
    pub generation: u32,
    pub offset: u64,
    pub source_bytes: u64,
    pub decoded_bytes: u64,
    pub compressed_bytes: u64,
    pub sha256: String,
}

/// Where and how to PUT the bytes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadSpec {
    #[serde(default = "put")]
    pub method: String,
    pub url: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub expires_at: Option<String>,
}

fn put() -> String {
    "PUT".into()
}

/// An upload intent, as the server granted it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Intent {
    pub upload_id: String,
    pub upload: UploadSpec,
    #[serde(default)]
    pub object_key: Option<String>,
}

/// The lane's calls (HTTP in [`TranscriptTransport`], in memory in tests).
pub trait Api {
    /// `Ok(None)`: the server has no transcript lane.
    fn hello(&self) -> impl Future<Output = Result<Option<Hello>, Failure>> + Send;
    fn state(&self, file: FileRef<'_>) -> impl Future<Output = Result<FileState, Failure>> + Send;
    fn intent(&self, req: &IntentRequest) -> impl Future<Output = Result<Intent, Failure>> + Send;
    /// PUT the compressed bytes where the intent says.
    fn upload(
        &self,
        intent: &Intent,
        body: &[u8],
    ) -> impl Future<Output = Result<(), Failure>> + Send;
    fn complete(&self, upload_id: &str) -> impl Future<Output = Result<FileState, Failure>> + Send;
}

/// The device's deadline for an upload's PUT (the JSON calls use the lane's deadline).
pub const DEFAULT_UPLOAD_DEADLINE: Duration = Duration::from_secs(60);

/// The transcript lane's HTTP client.
#[derive(Debug, Clone)]
pub struct TranscriptTransport {
    http: reqwest::Client,
    base: String,
    origin: String,
    token: TokenHandle,
    upload_deadline: Duration,
}

impl TranscriptTransport {
    /// A client of the ingest function at `base_url` (as the metadata lane's [`crate::Transport`]).
    pub fn new(
        base_url: &str,
        token: TokenHandle,
        deadline: Duration,
    ) -> Result<Self, TransportError> {
        let (http, base, parsed) = http::client(base_url, deadline)?;
        Ok(Self {
            http,
            base,
            origin: parsed.origin().ascii_serialization(),
            token,
            upload_deadline: DEFAULT_UPLOAD_DEADLINE,
        })
    }

    pub fn with_upload_deadline(mut self, deadline: Duration) -> Self {
        self.upload_deadline = deadline;
        self
    }

    pub fn token(&self) -> &TokenHandle {
        &self.token
    }

    /// The absolute URL of an intent's upload, and whether it is the configured origin's (the
    /// only one the device token is sent to).
    pub fn upload_url(&self, url: &str) -> Option<(String, bool)> {
        if url.starts_with('/') && !url.starts_with("//") {
            return Some((format!("{}{url}", self.origin), true));
        }
        let parsed = reqwest::Url::parse(url).ok()?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return None;
        }
        let ours = parsed.origin().ascii_serialization() == self.origin;
        Some((url.to_owned(), ours))
    }

    async fn call(&self, req: reqwest::RequestBuilder) -> Result<(u16, Value), Failure> {
        let token = self.token.get().ok_or(Failure::Unauthenticated)?;
        let resp = req.bearer_auth(token).send().await.map_err(thrown)?;
        let status = resp.status().as_u16();
        let retry_after = http::retry_after(&resp);
        let body = resp.bytes().await.map_err(thrown)?;
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            return Ok((status, v));
        }
        Err(failure(status, &v, retry_after))
    }

    async fn data<T: for<'de> Deserialize<'de>>(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<T, Failure> {
        let (status, v) = self.call(req).await?;
        if v["success"] != true {
            return Err(Failure::ServerFailure(status));
        }
        serde_json::from_value(v["data"].clone()).map_err(|_| Failure::ServerFailure(status))
    }
}

/// What an S3 error answer to a presigned PUT says, in the lane's terms: a checksum S3 computed
/// otherwise, or a body cut short, are bytes damaged on the way (sent again); an entity too large
/// is a segment over the caps; anything else has no code this client acts on.
fn s3_refusal(body: &str) -> Option<Refusal> {
    let code = body.split("<Code>").nth(1)?.split("</Code>").next()?;
    match code {
        "BadDigest"
        | "InvalidDigest"
        | "XAmzContentSHA256Mismatch"
        | "XAmzContentChecksumMismatch" => Some(Refusal::ChecksumMismatch),
        "IncompleteBody" => Some(Refusal::LengthMismatch),
        "EntityTooLarge" => Some(Refusal::SegmentTooLarge),
        _ => None,
    }
}

fn thrown(e: reqwest::Error) -> Failure {
    if timed_out(&e, "transcript transport error") {
        Failure::Timeout
    } else {
        Failure::TransportError
    }
}

fn failure(status: u16, v: &Value, retry_after: Option<RetryAfter>) -> Failure {
    let code = error_code(v);
    let data = serde_json::from_value::<FileState>(v["data"].clone()).ok();
    classify(status, code, data, retry_after)
}

/// The hello-ack's transcript part: `None` without the capability (or with one this client
/// does not know).
pub fn parse_hello(v: &Value) -> Option<Hello> {
    if v["success"] != true {
        return None;
    }
    let data = &v["data"];
    let mode = match data["capabilities"][UPLOAD_CAPABILITY].as_str()? {
        TRANSPORT_PRESIGNED => UploadMode::Presigned,
        TRANSPORT_DIRECT => UploadMode::Direct,
        other => {
            tracing::warn!(mode = other, "unknown transcript upload mode: lane idle");
            return None;
        }
    };
    Some(Hello {
        mode,
        max_segment_bytes: cap(data, MAX_SEGMENT_BYTES_KEY, MAX_SEGMENT_BYTES),
        max_segment_decoded_bytes: cap(
            data,
            MAX_SEGMENT_DECODED_BYTES_KEY,
            MAX_SEGMENT_DECODED_BYTES,
        ),
    })
}

impl Api for TranscriptTransport {
    async fn hello(&self) -> Result<Option<Hello>, Failure> {
        match self
            .call(self.http.get(format!("{}{HELLO}", self.base)))
            .await
        {
            Ok((_, v)) => Ok(parse_hello(&v)),
            // A server older than hello has no transcript lane either.
            Err(Failure::ServerFailure(404)) => Ok(None),
            Err(f) => Err(f),
        }
    }

    async fn state(&self, file: FileRef<'_>) -> Result<FileState, Failure> {
        let mut url =
            reqwest::Url::parse(&format!("{}{}", self.base, path::STATE)).map_err(|_| {
                Failure::Refused {
                    status: 400,
                    refusal: Some(Refusal::InvalidRequest),
                }
            })?;
        url.query_pairs_mut()
            .append_pair("computeTargetId", file.compute_target_id)
            .append_pair("sessionId", file.session_id)
            .append_pair("fileId", file.file_id);
        let req = self.http.get(url);
        self.data(req).await
    }

    async fn intent(&self, body: &IntentRequest) -> Result<Intent, Failure> {
        let req = self
            .http
            .post(format!("{}{}", self.base, path::INTENT))
            .json(body);
        self.data(req).await
    }

    async fn upload(&self, intent: &Intent, body: &[u8]) -> Result<(), Failure> {
        let Some((url, ours)) = self.upload_url(&intent.upload.url) else {
            tracing::warn!("the intent's upload URL cannot be used");
            return Err(Failure::UploadRefused);
        };
        let method = reqwest::Method::from_bytes(intent.upload.method.as_bytes())
            .map_err(|_| Failure::UploadRefused)?;
        let mut req = self
            .http
            .request(method, url)
            .timeout(self.upload_deadline)
            .body(body.to_vec());
        for (k, v) in &intent.upload.headers {
            // The length is the body's own; the host is the URL's.
            if k.eq_ignore_ascii_case("content-length") || k.eq_ignore_ascii_case("host") {
                continue;
            }
            req = req.header(k.as_str(), v.as_str());
        }
        if !ours {
            let resp = req.send().await.map_err(thrown)?;
            let status = resp.status().as_u16();
            return match status {
                200..=299 | 412 => Ok(()),
                403 | 404 => Err(Failure::UploadRefused),
                400 | 413 => {
                    let body = resp.text().await.unwrap_or_default();
                    Err(Failure::Refused {
                        status,
                        refusal: s3_refusal(&body),
                    })
                }
                _ => Err(Failure::ServerFailure(status)),
            };
        }
        if !intent
            .upload
            .headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("content-type"))
        {
            req = req.header(reqwest::header::CONTENT_TYPE, BINARY_CONTENT_TYPE);
        }
        match self.call(req).await {
            Ok(_) => Ok(()),
            Err(Failure::ServerFailure(412)) => Ok(()),
            Err(Failure::ServerFailure(404)) => Err(Failure::UploadRefused),
            Err(f) => Err(f),
        }
    }

    async fn complete(&self, upload_id: &str) -> Result<FileState, Failure> {
        let req = self
            .http
            .post(format!("{}{}", self.base, path::COMPLETE))
            .json(&serde_json::json!({ "uploadId": upload_id }));
        self.data(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_s3_error_answer_names_the_refusal_when_it_is_one_the_lane_acts_on() {
        let xml = |code: &str| {
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>m</Message></Error>"
            )
        };
        assert_eq!(
            s3_refusal(&xml("BadDigest")),
            Some(Refusal::ChecksumMismatch)
        );
        assert_eq!(
            s3_refusal(&xml("XAmzContentChecksumMismatch")),
            Some(Refusal::ChecksumMismatch)
        );
        assert_eq!(
            s3_refusal(&xml("IncompleteBody")),
            Some(Refusal::LengthMismatch)
        );
        assert_eq!(
            s3_refusal(&xml("EntityTooLarge")),
            Some(Refusal::SegmentTooLarge)
        );
        assert_eq!(s3_refusal(&xml("InvalidArgument")), None);
        assert_eq!(s3_refusal("not xml"), None);
    }
    use serde_json::json;

    #[test]
    fn the_hello_ack_names_the_transport_and_never_loosens_the_caps() {
        let h = parse_hello(&json!({"success": true, "data": {
            "capabilities": {"agentSessionSyncCompression": true, "agentTranscriptUpload": "direct"},
            "limits": {"maxSegmentBytes": 1_000_000, "maxSegmentDecodedBytes": 99_999_999}}}))
        .unwrap();
        assert_eq!(h.mode, UploadMode::Direct);
        assert_eq!(
            h.max_segment_bytes, 1_000_000,
            "a tighter server cap is kept"
        );
        assert_eq!(h.max_segment_decoded_bytes, MAX_SEGMENT_DECODED_BYTES);
        let p = parse_hello(&json!({"success": true, "data": {
            "capabilities": {"agentTranscriptUpload": "presigned"}}}))
        .unwrap();
        assert_eq!(p.mode, UploadMode::Presigned);
        for none in [
            json!({"success": true, "data": {"capabilities": {"agentSessionSyncCompression": true}}}),
            json!({"success": true, "data": {"capabilities": {"agentTranscriptUpload": "carrier-pigeon"}}}),
            json!({"success": false}),
        ] {
            assert_eq!(parse_hello(&none), None, "{none}");
        }
    }

    #[test]
    fn a_direct_upload_path_keeps_its_prefix_on_the_configured_origin_and_only_it_gets_the_token() {
        let t = TranscriptTransport::new(
            "https://api.example.com/prod/",
            TokenHandle::default(),
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(
            t.upload_url("/prod/api/agent-sessions/transcripts/uploads/u1"),
            Some((
                "https://api.example.com/prod/api/agent-sessions/transcripts/uploads/u1".into(),
                true
            ))
        );
        assert_eq!(
            t.upload_url("https://bucket.s3.amazonaws.com/k?X-Amz-Signature=1"),
            Some((
                "https://bucket.s3.amazonaws.com/k?X-Amz-Signature=1".into(),
                false
            ))
        );
        assert_eq!(
            t.upload_url("https://api.example.com/x").map(|u| u.1),
            Some(true)
        );
        assert_eq!(t.upload_url("//evil.example/x").map(|u| u.1), None);
        assert_eq!(t.upload_url("file:///etc/passwd"), None);
    }
}
