//! The direct transport's store: segments as files under a data directory
//! (`TRANSCRIPT_DATA_DIR`), written by the ingest function itself.
//!
//! A write is create-only: the bytes go to a temporary file in the target directory, are synced,
//! then hard-linked to their key; a key already there is [`Put::Existed`] (success: keys are
//! content-addressed), so concurrent or retried writes of one segment are harmless and a reader
//! never sees a half-written object. Keys are checked ([`crate::key::safe_key`]) so no
//! key names a path outside the root. The root itself must exist: a missing or unusable root is
//! [`StoreError::Unavailable`] (the store is down), never created on the fly.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::{Put, StoreError, UploadSpec, UploadTarget};
use crate::key::safe_key;

#[derive(Clone, Debug)]
pub struct FsStore {
    pub root: PathBuf,
}

impl FsStore {
    /// The direct upload: `PUT {UPLOADS}/{uploadId}` on the ingest function, as a path; the route
    /// puts the request's own prefix (a stage) in front of it.
    pub async fn upload_target(&self, spec: &UploadSpec<'_>) -> Result<UploadTarget, StoreError> {
        self.check_root().await?;
        Ok(UploadTarget {
            method: "PUT",
            url: format!(
                "{}/{}",
                syncplane_contract::transcripts::path::UPLOADS,
                spec.upload_id
            ),
            headers: vec![
                (
                    "content-length".to_owned(),
                    spec.compressed_bytes.to_string(),
                ),
                (
                    "content-type".to_owned(),
                    "application/octet-stream".to_owned(),
                ),
            ],
            expires_at: spec.expires_at,
        })
    }

    pub async fn put(&self, key: &str, bytes: &[u8]) -> Result<Put, StoreError> {
        let path = self.path_of(key)?;
        let root = self.root.clone();
        let bytes = bytes.to_vec();
        blocking(move || put_blocking(&root, &path, &bytes)).await
    }

    pub async fn get(&self, key: &str, max_bytes: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path_of(key)?;
        self.check_root().await?;
        blocking(move || get_blocking(&path, max_bytes)).await
    }

    pub async fn delete(&self, key: &str) -> Result<(), StoreError> {
        let path = self.path_of(key)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(unavailable("delete", &e)),
        }
    }

    fn path_of(&self, key: &str) -> Result<PathBuf, StoreError> {
        if !safe_key(key) {
            return Err(StoreError::Unavailable(
                "an object key that is not a safe relative path".into(),
            ));
        }
        Ok(self.root.join(key))
    }

    /// The root must be a directory.
    async fn check_root(&self) -> Result<(), StoreError> {
        match tokio::fs::metadata(&self.root).await {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(StoreError::Unavailable(
                "the data directory is not a directory".into(),
            )),
            Err(e) => Err(unavailable("data directory", &e)),
        }
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Unavailable(format!("store task failed: {e}")))?
}

fn unavailable(what: &str, e: &std::io::Error) -> StoreError {
    StoreError::Unavailable(format!("{what}: {e}"))
}

/// Create-only: temp file, sync, hard link to the key (an existing key is `Existed`).
fn put_blocking(root: &Path, path: &Path, bytes: &[u8]) -> Result<Put, StoreError> {
    if !root.is_dir() {
        return Err(StoreError::Unavailable(
            "the data directory is missing".into(),
        ));
    }
    if path.exists() {
        return Ok(Put::Existed);
    }
    let dir = path
        .parent()
        .ok_or_else(|| StoreError::Unavailable("a key without a directory".into()))?;
    std::fs::create_dir_all(dir).map_err(|e| unavailable("create directory", &e))?;
    let tmp = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()
    })();
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
    // The temporary name goes whatever happened; a leftover is never read (keys never start
    // with a dot).
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(Put::Created),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Put::Existed),
        Err(e) => Err(unavailable("write", &e)),
    }
}

/// The object, read at most `max_bytes` (more is `TooLarge`).
fn get_blocking(path: &Path, max_bytes: u64) -> Result<Option<Vec<u8>>, StoreError> {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unavailable("read", &e)),
    };
    let len = f.metadata().map_err(|e| unavailable("read", &e))?.len();
    if len > max_bytes {
        return Err(StoreError::TooLarge { limit: max_bytes });
    }
    let mut out = Vec::with_capacity(len as usize);
    f.take(max_bytes + 1)
        .read_to_end(&mut out)
        .map_err(|e| unavailable("read", &e))?;
    if out.len() as u64 > max_bytes {
        return Err(StoreError::TooLarge { limit: max_bytes });
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_root() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("syncplane-fs-store-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[tokio::test]
    async fn writes_are_create_only_and_keys_stay_under_the_root() {
        let root = temp_root();
        let store = FsStore { root: root.clone() };
        let key = "transcripts/1/ab/f.jsonl/1/0-x.zst";
        assert_eq!(store.put(key, b"one").await.unwrap(), Put::Created);
        assert_eq!(store.put(key, b"two").await.unwrap(), Put::Existed);
        assert_eq!(
            store.get(key, 10).await.unwrap().as_deref(),
            Some(&b"one"[..])
        );
        assert!(matches!(
            store.get(key, 2).await,
            Err(StoreError::TooLarge { limit: 2 })
        ));
        assert_eq!(store.get("transcripts/none", 10).await.unwrap(), None);
        store.delete(key).await.unwrap();
        store.delete(key).await.unwrap();
        assert_eq!(store.get(key, 10).await.unwrap(), None);
        for bad in ["../escape", "/abs", "a/../../b", "a/.tmp-x"] {
            assert!(store.put(bad, b"x").await.is_err(), "{bad}");
        }
        let leftovers: Vec<_> = walk(&root);
        assert!(
            leftovers.iter().all(|p| !p.contains(".tmp-")),
            "{leftovers:?}"
        );
        std::fs::remove_dir_all(&root).unwrap();
        let gone = FsStore { root };
        assert!(matches!(
            gone.put(key, b"x").await,
            Err(StoreError::Unavailable(_))
        ));
    }

    fn walk(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p.display().to_string());
            }
        }
        out
    }
}
