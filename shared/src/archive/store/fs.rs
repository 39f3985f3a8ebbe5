//! The direct transport's store: segments as files under a data directory
//! (`TRANSCRIPT_DATA_DIR`), written by the ingest function itself. (Skeleton: filled in by the
//! transcript server work.)

use std::path::PathBuf;

use super::{Put, StoreError, UploadSpec, UploadTarget};

#[derive(Clone, Debug)]
pub struct FsStore {
    pub root: PathBuf,
}

impl FsStore {
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
}
