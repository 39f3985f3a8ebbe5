//! The app's session store, as the lane sees it: list what changed after a cursor, load one.
//!
//! Spec, "Memory is bounded the same way": the lane lists metadata only and hydrates a small
//! batch of full sessions at a time, releasing them before the next, so peak retained hydration
//! is one pass, not the backlog. Two stores ship with the crate: [`MemoryStore`] (embedding
//! tests, benchmarks) and [`JsonDirStore`] (the CLI: one JSON file per session).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::session::{ArtifactRef, LocalSession, SessionMeta, refs_fingerprint};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("session store {path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("session store: {0}")]
    Other(String),
    /// The session exists but cannot be read into a [`LocalSession`]: retrying cannot help.
    #[error("session {session_id} cannot be read: {cause}")]
    Unreadable { session_id: String, cause: String },
}

/// What the lane needs of the app's store.
pub trait SessionStore: Send {
    /// Metadata of every session updated strictly after `after` (all of them for `None`).
    fn list_updated_after(
        &self,
        after: Option<DateTime<Utc>>,
    ) -> Result<Vec<SessionMeta>, StoreError>;

    /// One full session; `None` when the store no longer has it.
    fn load(&self, session_id: &str) -> Result<Option<LocalSession>, StoreError>;
}

/// Sessions in memory, shareable with the code that changes them.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore(Arc<Mutex<BTreeMap<String, Arc<LocalSession>>>>);

impl MemoryStore {
    pub fn put(&self, s: LocalSession) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(s.session_id.clone(), Arc::new(s));
        }
    }
    pub fn len(&self) -> usize {
        self.0.lock().map(|m| m.len()).unwrap_or(0)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SessionStore for MemoryStore {
    fn list_updated_after(
        &self,
        after: Option<DateTime<Utc>>,
    ) -> Result<Vec<SessionMeta>, StoreError> {
        let m = self
            .0
            .lock()
            .map_err(|_| StoreError::Other("poisoned".into()))?;
        Ok(m.values()
            .filter_map(|s| s.meta())
            .filter(|m| after.is_none_or(|a| m.updated_at > a))
            .collect())
    }

    fn load(&self, session_id: &str) -> Result<Option<LocalSession>, StoreError> {
        let m = self
            .0
            .lock()
            .map_err(|_| StoreError::Other("poisoned".into()))?;
        Ok(m.get(session_id).map(|s| (**s).clone()))
    }
}

/// A directory of `*.json` files, one [`LocalSession`] each (file name free, `sessionId` inside).
#[derive(Debug, Clone)]
pub struct JsonDirStore {
    dir: PathBuf,
}

/// The fields discovery reads (the rest of the file is skipped, not kept).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaOnly {
    session_id: String,
    updated_at: String,
    data_revision: String,
    #[serde(default)]
    artifact_refs: Option<Vec<ArtifactRef>>,
}

impl JsonDirStore {
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
        }
    }

    fn files(&self) -> Result<Vec<PathBuf>, StoreError> {
        let io = |cause| StoreError::Io {
            path: self.dir.clone(),
            cause,
        };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
        files.sort();
        Ok(files)
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>, StoreError> {
        std::fs::read(path).map_err(|cause| StoreError::Io {
            path: path.to_owned(),
            cause,
        })
    }
}

impl SessionStore for JsonDirStore {
    fn list_updated_after(
        &self,
        after: Option<DateTime<Utc>>,
    ) -> Result<Vec<SessionMeta>, StoreError> {
        let mut out = Vec::new();
        for path in self.files()? {
            let Ok(m) = serde_json::from_slice::<MetaOnly>(&self.read(&path)?) else {
                tracing::warn!(file = %path.display(), "not a session file; skipped");
                continue;
            };
            let Some(updated_at) = DateTime::parse_from_rfc3339(&m.updated_at)
                .ok()
                .map(|t| t.with_timezone(&Utc))
            else {
                tracing::warn!(file = %path.display(), "updatedAt is not RFC 3339; skipped");
                continue;
            };
            if after.is_none_or(|a| updated_at > a) {
                out.push(SessionMeta {
                    refs_fingerprint: refs_fingerprint(m.artifact_refs.as_deref()),
                    session_id: m.session_id,
                    updated_at,
                    data_revision: m.data_revision,
                });
            }
        }
        Ok(out)
    }

    fn load(&self, session_id: &str) -> Result<Option<LocalSession>, StoreError> {
        // The file is named after the session when the CLI's users follow the convention.
        let named = self.dir.join(format!("{session_id}.json"));
        let candidates = if named.exists() {
            vec![named]
        } else {
            self.files()?
        };
        for path in candidates {
            let bytes = self.read(&path)?;
            match serde_json::from_slice::<LocalSession>(&bytes) {
                Ok(s) if s.session_id == session_id => return Ok(Some(s)),
                Ok(_) => {}
                Err(e) => {
                    let named = serde_json::from_slice::<MetaOnly>(&bytes)
                        .is_ok_and(|m| m.session_id == session_id);
                    if named {
                        return Err(StoreError::Unreadable {
                            session_id: session_id.to_owned(),
                            cause: e.to_string(),
                        });
                    }
                }
            }
        }
        Ok(None)
    }
}
