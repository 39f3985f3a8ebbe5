//! The S3 store: a bucket written through presigned PUTs
//! (`TRANSCRIPT_BUCKET`). (Skeleton: filled in by the
//! transcript server work.)

use chrono::{DateTime, Utc};

use super::{Put, StoreError, UploadSpec, UploadTarget};

#[derive(Clone, Debug)]
pub struct S3Store {
    pub bucket: String,
}

impl S3Store {
    /// Minimal stub until the S3 work lands (the transcript server work needs the call).
    pub async fn from_settings(s: &crate::config::transcripts::TranscriptSettings) -> Self {
        Self {
            bucket: s.bucket.clone().unwrap_or_default(),
        }
    }
    pub async fn upload_target(&self, _spec: &UploadSpec<'_>) -> Result<UploadTarget, StoreError> {
        Err(StoreError::Unavailable("not built".into()))
    }
    pub async fn put(&self, _key: &str, _bytes: &[u8]) -> Result<Put, StoreError> {
        Err(StoreError::Unavailable("not built".into()))
    }
    pub async fn get(&self, _key: &str, _max_bytes: u64) -> Result<Option<Vec<u8>>, StoreError> {
        Err(StoreError::Unavailable("not built".into()))
    }
    pub async fn delete(&self, _key: &str) -> Result<(), StoreError> {
        Err(StoreError::Unavailable("not built".into()))
    }
    pub async fn read_url(
        &self,
        _key: &str,
        _expires_at: DateTime<Utc>,
    ) -> Result<String, StoreError> {
        Err(StoreError::Unavailable("not built".into()))
    }
}
