//! Where transcript segments are stored (docs/design.md "Transcripts"): an S3 bucket, written
//! through presigned PUTs that sign `Content-Length`, the SHA-256 checksum and `If-None-Match: *`
//! ([`s3`]), or a directory for the direct transport, written by the ingest function itself
//! ([`fs`]). Every write is create-only: an object already under its key is success.
//!
//! The interface both sides implement (the same method names on [`fs::FsStore`] and
//! [`s3::S3Store`]); callers use [`Store`] only.

pub mod fs;
pub mod s3;

use chrono::{DateTime, Utc};

/// What a write came to (create-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    Created,
    /// An object was already under the key: success, the segment is content-addressed.
    Existed,
}

/// Where and how the client sends a segment's bytes (the intent's `upload`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadTarget {
    pub method: &'static str,
    pub url: String,
    /// Exactly the headers the client sends (lowercase names).
    pub headers: Vec<(String, String)>,
    pub expires_at: DateTime<Utc>,
}

/// What a segment's upload is signed for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadSpec<'a> {
    pub key: &'a str,
    pub upload_id: uuid::Uuid,
    pub compressed_bytes: u64,
    /// SHA-256 of the compressed bytes.
    pub sha256: [u8; 32],
    pub expires_at: DateTime<Utc>,
}

/// The store could not be reached or refused (503 `store_unavailable` to a client; the detail
/// goes to the logs).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("object store unavailable: {0}")]
    Unavailable(String),
    #[error("object larger than {limit} bytes")]
    TooLarge { limit: u64 },
}

/// The configured store.
#[derive(Clone, Debug)]
pub enum Store {
    Direct(fs::FsStore),
    S3(s3::S3Store),
}

impl Store {
    /// The hello-ack's `agentTranscriptUpload`.
    pub fn transport(&self) -> &'static str {
        match self {
            Self::Direct(_) => syncplane_contract::transcripts::TRANSPORT_DIRECT,
            Self::S3(_) => syncplane_contract::transcripts::TRANSPORT_PRESIGNED,
        }
    }

    /// Where the client sends the bytes of `spec`.
    pub async fn upload_target(&self, spec: &UploadSpec<'_>) -> Result<UploadTarget, StoreError> {
        match self {
            Self::Direct(s) => s.upload_target(spec).await,
            Self::S3(s) => s.upload_target(spec).await,
        }
    }

    /// Write `bytes` under `key`, create-only.
    pub async fn put(&self, key: &str, bytes: &[u8]) -> Result<Put, StoreError> {
        match self {
            Self::Direct(s) => s.put(key, bytes).await,
            Self::S3(s) => s.put(key, bytes).await,
        }
    }

    /// The object under `key`, read at most `max_bytes` (more is [`StoreError::TooLarge`]);
    /// `None` when there is none.
    pub async fn get(&self, key: &str, max_bytes: u64) -> Result<Option<Vec<u8>>, StoreError> {
        match self {
            Self::Direct(s) => s.get(key, max_bytes).await,
            Self::S3(s) => s.get(key, max_bytes).await,
        }
    }

    /// Delete the object under `key` (none there is success).
    pub async fn delete(&self, key: &str) -> Result<(), StoreError> {
        match self {
            Self::Direct(s) => s.delete(key).await,
            Self::S3(s) => s.delete(key).await,
        }
    }

    /// A URL the web app reads one segment from (a presigned GET; in direct mode `None`: the
    /// read route serves it).
    pub async fn read_url(
        &self,
        key: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        match self {
            Self::Direct(_) => Ok(None),
            Self::S3(s) => s.read_url(key, expires_at).await.map(Some),
        }
    }
}
