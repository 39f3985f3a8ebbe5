//! The S3 store: a bucket (`TRANSCRIPT_BUCKET`) the desktop client writes through presigned PUTs
//! (docs/design.md "Transcripts"). A presigned PUT is signed for `Content-Length`,
//! `x-amz-checksum-sha256`, `If-None-Match: *` and `Content-Type`, so S3 itself refuses another
//! length, another body and an overwrite; the server still verifies what was stored on
//! `complete` (local S3 servers enforce none of it). Reads are presigned GETs the web app
//! fetches directly.

use std::time::{Duration, SystemTime};

use aws_sdk_s3::Client;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::operation::get_object::GetObjectError;
use aws_sdk_s3::presigning::{PresignedRequest, PresigningConfig};
use base64::Engine;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use super::{Put, StoreError, UploadSpec, UploadTarget};

/// Region used with an emulator when the environment names none.
const EMULATOR_REGION: &str = "us-east-1";
/// The stored objects' type; signed, so the client must send exactly it (moto also stores a
/// presigned PUT's body only with it).
pub const CONTENT_TYPE: &str = "application/octet-stream";
/// A multipart upload's part size ([`S3Store::put_parts`]): S3 takes parts of 5 MiB to 5 GiB
/// (the last may be smaller) and at most 10,000 of them, so an object of up to 80 GB.
pub const PART_BYTES: usize = 8 * 1024 * 1024;
/// SigV4 presigned URLs live at most a week.
const MAX_PRESIGN: Duration = Duration::from_secs(604_800);

#[derive(Clone, Debug)]
pub struct S3Store {
    client: Client,
    bucket: String,
}

impl S3Store {
    pub fn new(client: Client, bucket: &str) -> Self {
        Self {
            client,
            bucket: bucket.to_owned(),
        }
    }

    /// As the settings say: `TRANSCRIPT_BUCKET`, pointed at `AWS_ENDPOINT_URL_S3` when set.
    pub async fn from_settings(
        settings: &syncplane_core::config::transcripts::TranscriptSettings,
    ) -> Self {
        Self::from_env(
            settings.bucket.as_deref().unwrap_or_default(),
            settings.s3_endpoint.as_deref(),
        )
        .await
    }

    /// From the environment's AWS configuration (the Lambda role's credentials and region),
    /// pointed at `endpoint` (`AWS_ENDPOINT_URL_S3`) when one is given: path-style addressing
    /// then (a local S3 server has no per-bucket host names). An endpoint with no credentials in
    /// the environment is an emulator and gets dummy ones.
    pub async fn from_env(bucket: &str, endpoint: Option<&str>) -> Self {
        if let Some(endpoint) = endpoint
            && std::env::var_os("AWS_ACCESS_KEY_ID").is_none()
        {
            return Self::for_emulator(endpoint, bucket);
        }
        let mut loader = aws_config::defaults(BehaviorVersion::latest());
        if let Some(endpoint) = endpoint {
            loader = loader.endpoint_url(endpoint);
        }
        let shared = loader.load().await;
        let mut builder = aws_sdk_s3::config::Builder::from(&shared);
        if shared.region().is_none() {
            builder = builder.region(Region::new(EMULATOR_REGION));
        }
        if endpoint.is_some() {
            builder = builder.force_path_style(true);
        }
        Self::new(Client::from_conf(builder.build()), bucket)
    }

    /// For an S3 emulator on loopback (tests, local runs): fixed region, dummy credentials,
    /// path-style addressing.
    pub fn for_emulator(endpoint: &str, bucket: &str) -> Self {
        Self::new(emulator_client(endpoint), bucket)
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// A presigned PUT of `spec`'s bytes, create-only, expiring at `spec.expires_at`; its
    /// `headers` are exactly the signed ones the client must send.
    pub async fn upload_target(&self, spec: &UploadSpec<'_>) -> Result<UploadTarget, StoreError> {
        let length = i64::try_from(spec.compressed_bytes)
            .map_err(|_| StoreError::Unavailable("segment length out of range".into()))?;
        let checksum = base64::engine::general_purpose::STANDARD.encode(spec.sha256);
        let presigned = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(spec.key)
            .content_length(length)
            .content_type(CONTENT_TYPE)
            .checksum_sha256(checksum)
            .if_none_match("*")
            .presigned(presigning(spec.expires_at)?)
            .await
            .map_err(|e| unavailable("presign PUT", e))?;
        Ok(UploadTarget {
            method: "PUT",
            url: presigned.uri().to_owned(),
            headers: signed_headers(&presigned),
            expires_at: spec.expires_at,
        })
    }

    /// PutObject with `If-None-Match: *`: S3's `412 PreconditionFailed` is an object already
    /// there ([`Put::Existed`]).
    pub async fn put(&self, key: &str, bytes: &[u8]) -> Result<Put, StoreError> {
        let checksum = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(bytes));
        let sent = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(CONTENT_TYPE)
            .checksum_sha256(checksum)
            .if_none_match("*")
            .body(bytes.to_vec().into())
            .send()
            .await;
        match sent {
            Ok(_) => Ok(Put::Created),
            Err(e) if status_of(&e) == Some(412) => Ok(Put::Existed),
            Err(e) => Err(unavailable("PutObject", e)),
        }
    }

    /// GetObject, read at most `max_bytes`: a larger object (by its `Content-Length`, or by
    /// what streams in) is [`StoreError::TooLarge`] without reading it all.
    pub async fn get(&self, key: &str, max_bytes: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let sent = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await;
        let out = match sent {
            Ok(out) => out,
            Err(e) if is_missing(&e) => return Ok(None),
            Err(e) => return Err(unavailable("GetObject", e)),
        };
        let too_large = StoreError::TooLarge { limit: max_bytes };
        let declared = out.content_length().and_then(|n| u64::try_from(n).ok());
        if declared.is_some_and(|n| n > max_bytes) {
            return Err(too_large);
        }
        let capacity = declared.unwrap_or(0).min(max_bytes);
        let mut bytes = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
        let mut body = out.body;
        while let Some(chunk) = body
            .try_next()
            .await
            .map_err(|e| StoreError::Unavailable(format!("GetObject body: {e}")))?
        {
            if (bytes.len() + chunk.len()) as u64 > max_bytes {
                return Err(too_large);
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Some(bytes))
    }

    /// DeleteObject (S3 answers success for a key with nothing under it).
    pub async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| unavailable("DeleteObject", e))
    }

    /// Write the chunks `parts` yields under `key` as one object, by multipart upload: the
    /// chunks are gathered into parts of [`PART_BYTES`] (S3's floor is 5 MiB but for the last),
    /// one part held at a time, so memory stays flat whatever the object's size. The object is
    /// stored as `content_type`, downloaded as `filename`. A failure (of the store, or `parts`
    /// yielding an error) aborts the upload: nothing half-written is left under `key`. Returns
    /// the bytes written.
    pub async fn put_parts<E: std::fmt::Display>(
        &self,
        key: &str,
        content_type: &str,
        filename: &str,
        parts: &mut tokio::sync::mpsc::Receiver<Result<Vec<u8>, E>>,
    ) -> Result<u64, StoreError> {
        let created = self
            .client
            .create_multipart_upload()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .content_disposition(format!("attachment; filename=\"{filename}\""))
            .send()
            .await
            .map_err(|e| unavailable("CreateMultipartUpload", e))?;
        let Some(upload_id) = created.upload_id().map(str::to_owned) else {
            return Err(StoreError::Unavailable(
                "CreateMultipartUpload answered no upload id".to_owned(),
            ));
        };
        let sent = match self.send_parts(key, &upload_id, parts).await {
            Ok((done, bytes)) => self
                .client
                .complete_multipart_upload()
                .bucket(&self.bucket)
                .key(key)
                .upload_id(&upload_id)
                .multipart_upload(
                    aws_sdk_s3::types::CompletedMultipartUpload::builder()
                        .set_parts(Some(done))
                        .build(),
                )
                .send()
                .await
                .map(|_| bytes)
                .map_err(|e| unavailable("CompleteMultipartUpload", e)),
            Err(e) => Err(e),
        };
        match sent {
            Ok(bytes) => Ok(bytes),
            Err(e) => {
                let aborted = self
                    .client
                    .abort_multipart_upload()
                    .bucket(&self.bucket)
                    .key(key)
                    .upload_id(&upload_id)
                    .send()
                    .await;
                if let Err(abort) = aborted {
                    tracing::warn!(error = %DisplayErrorContext(&abort), key, "multipart upload not aborted (the bucket's lifecycle rule removes it)");
                }
                Err(e)
            }
        }
    }

    async fn send_parts<E: std::fmt::Display>(
        &self,
        key: &str,
        upload_id: &str,
        parts: &mut tokio::sync::mpsc::Receiver<Result<Vec<u8>, E>>,
    ) -> Result<(Vec<aws_sdk_s3::types::CompletedPart>, u64), StoreError> {
        let mut done = Vec::new();
        let mut part = Vec::with_capacity(PART_BYTES);
        let mut total = 0u64;
        loop {
            let next = parts.recv().await;
            let last = next.is_none();
            if let Some(chunk) = next {
                let chunk = chunk.map_err(|e| StoreError::Unavailable(format!("export: {e}")))?;
                total += chunk.len() as u64;
                part.extend_from_slice(&chunk);
            }
            // Every part but the last is at least PART_BYTES; an empty object is one empty part.
            if part.len() >= PART_BYTES || (last && (!part.is_empty() || done.is_empty())) {
                let number = i32::try_from(done.len() + 1).unwrap_or(i32::MAX);
                let body = std::mem::replace(&mut part, Vec::with_capacity(PART_BYTES));
                let sent = self
                    .client
                    .upload_part()
                    .bucket(&self.bucket)
                    .key(key)
                    .upload_id(upload_id)
                    .part_number(number)
                    .body(body.into())
                    .send()
                    .await
                    .map_err(|e| unavailable("UploadPart", e))?;
                done.push(
                    aws_sdk_s3::types::CompletedPart::builder()
                        .part_number(number)
                        .set_e_tag(sent.e_tag().map(str::to_owned))
                        .build(),
                );
            }
            if last {
                return Ok((done, total));
            }
        }
    }

    /// A presigned GET of the object under `key`, valid until `expires_at`.
    pub async fn read_url(
        &self,
        key: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<String, StoreError> {
        let presigned = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .presigned(presigning(expires_at)?)
            .await
            .map_err(|e| unavailable("presign GET", e))?;
        Ok(presigned.uri().to_owned())
    }
}

/// An S3 client for an emulator: region us-east-1, static test credentials, path-style.
pub fn emulator_client(endpoint: &str) -> Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(EMULATOR_REGION))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(Credentials::new("test", "test", None, None, "emulator"))
        .build();
    Client::from_conf(config)
}

/// Signed at the start of the current second, valid until `expires_at`. S3 takes a presigned URL
/// to expire at `X-Amz-Date + X-Amz-Expires`, both whole seconds (the SDK writes the signing time
/// without its fraction and the lifetime truncated to seconds), so a URL signed at `now` itself
/// would expire up to two seconds before `expires_at`, and a 1-second intent's URL would be dead
/// on arrival. Signed from the whole second, an intent's URL (its `expires_at` is a whole
/// second) expires exactly at its `expiresAt`, the instant `complete` answers `410` from. A time
/// already past, or less than a second after the current one, is signed as a URL that expired
/// at `expires_at` (S3 refuses it as expired), never as a fresh one.
fn presigning(expires_at: DateTime<Utc>) -> Result<PresigningConfig, StoreError> {
    let now = Utc::now();
    let second = now - chrono::Duration::nanoseconds(i64::from(now.timestamp_subsec_nanos()));
    let (start, expires_in) = match (expires_at - second).to_std() {
        Ok(left) if expires_at > now && left.as_secs() >= 1 => (second, left.min(MAX_PRESIGN)),
        _ => (
            expires_at - chrono::Duration::seconds(1),
            Duration::from_secs(1),
        ),
    };
    let start = SystemTime::from(start);
    PresigningConfig::builder()
        .start_time(start)
        .expires_in(expires_in)
        .build()
        .map_err(|e| StoreError::Unavailable(format!("presigning: {e}")))
}

/// The headers a presigned request was signed with, lowercase, sorted.
fn signed_headers(presigned: &PresignedRequest) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = presigned
        .headers()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
        .collect();
    headers.sort();
    headers
}

fn status_of<E>(e: &SdkError<E, HttpResponse>) -> Option<u16> {
    e.raw_response().map(|r| r.status().as_u16())
}

/// `NoSuchKey` (a 404 without an error code too; never `NoSuchBucket`, a configuration error).
fn is_missing(e: &SdkError<GetObjectError, HttpResponse>) -> bool {
    e.as_service_error()
        .is_some_and(|s| s.is_no_such_key() || (s.code().is_none() && status_of(e) == Some(404)))
}

fn unavailable<E: std::error::Error + 'static>(what: &str, e: E) -> StoreError {
    StoreError::Unavailable(format!("{what}: {}", DisplayErrorContext(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// `X-Amz-Date + X-Amz-Expires` of a presigned URL: when S3 takes it to expire.
    fn s3_expiry(url: &str) -> DateTime<Utc> {
        let url = url::Url::parse(url).unwrap();
        let q = |name: &str| {
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
                .unwrap_or_else(|| panic!("{name} in {url}"))
        };
        let date = chrono::NaiveDateTime::parse_from_str(&q("X-Amz-Date"), "%Y%m%dT%H%M%SZ")
            .unwrap()
            .and_utc();
        date + chrono::Duration::seconds(q("X-Amz-Expires").parse().unwrap())
    }

    #[tokio::test]
    async fn a_presigned_put_expires_in_s3_exactly_at_the_intents_expires_at() {
        let store = S3Store::for_emulator("http://127.0.0.1:9", "b");
        let now = Utc::now().timestamp();
        // An intent's `expiresAt` is a whole second; one already past is an expired URL.
        for ttl in [1, 2, 300, -30] {
            let expires_at = Utc.timestamp_opt(now + ttl, 0).unwrap();
            let spec = UploadSpec {
                key: "k",
                upload_id: uuid::Uuid::nil(),
                compressed_bytes: 10,
                sha256: [0; 32],
                expires_at,
            };
            let target = store.upload_target(&spec).await.unwrap();
            assert_eq!(s3_expiry(&target.url), expires_at, "ttl {ttl}");
        }
    }
}
