//! The app's session store, as the lane sees it: list what changed after a cursor, load one.
//!
//! Spec, "Memory is bounded the same way": the lane lists metadata only and hydrates a small
//! batch of full sessions at a time, releasing them before the next, so peak retained hydration
//! is one pass, not the backlog. Two stores ship with the crate: [`MemoryStore`] (embedding
//! tests, benchmarks) and [`JsonDirStore`] (the CLI: one JSON file per session).
//!
//! A `*.json` file of a [`JsonDirStore`] that is not a session is skipped, with a warning that
//! names the file and where its parse failed, once per file while it stays so (issue 21, point
//! 12: the listing runs every pass); [`JsonDirStore::skipped_files`] says how many are.
//!
//! A session whose `updatedAt` is not RFC 3339 cannot be placed against the cursor, so it is not
//! in a listing's sessions; [`SessionStore::listing`] names it instead, and the lane reports it
//! and sets it aside (spec, "Retries, backoff, and dead-lettering": a payload the device cannot
//! produce is a deterministic dead letter) rather than letting it vanish.

use std::collections::{BTreeMap, BTreeSet};
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

/// One listing: the sessions updated after the cursor, and the ones that could not be placed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub sessions: Vec<SessionMeta>,
    /// Ids of sessions whose `updatedAt` cannot be read (listed whatever the cursor).
    pub unreadable: Vec<String>,
}

/// What the lane needs of the app's store.
pub trait SessionStore: Send {
    /// Metadata of every session updated strictly after `after` (all of them for `None`).
    fn list_updated_after(
        &self,
        after: Option<DateTime<Utc>>,
    ) -> Result<Vec<SessionMeta>, StoreError>;

    /// [`Self::list_updated_after`] plus the sessions whose `updatedAt` cannot be read. The lane
    /// calls this; a store that can hold such sessions overrides it so they are reported (the
    /// default names none, for stores whose update times are always valid).
    fn listing(&self, after: Option<DateTime<Utc>>) -> Result<Listing, StoreError> {
        Ok(Listing {
            sessions: self.list_updated_after(after)?,
            unreadable: Vec::new(),
        })
    }

    /// One full session; `None` when the store no longer has it.
    fn load(&self, session_id: &str) -> Result<Option<LocalSession>, StoreError>;
}

/// [`SessionStore::list_updated_after`] for a store whose own [`SessionStore::listing`] reports the
/// unreadable sessions too (both stores of this crate): its sessions, as the trait requires.
macro_rules! sessions_from_listing {
    () => {
        fn list_updated_after(
            &self,
            after: Option<DateTime<Utc>>,
        ) -> Result<Vec<SessionMeta>, StoreError> {
            self.listing(after).map(|l| l.sessions)
        }
    };
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
    sessions_from_listing!();

    fn listing(&self, after: Option<DateTime<Utc>>) -> Result<Listing, StoreError> {
        let m = self
            .0
            .lock()
            .map_err(|_| StoreError::Other("poisoned".into()))?;
        let mut out = Listing::default();
        for s in m.values() {
            match s.meta() {
                Some(meta) if after.is_none_or(|a| meta.updated_at > a) => out.sessions.push(meta),
                Some(_) => {}
                None => out.unreadable.push(s.session_id.clone()),
            }
        }
        Ok(out)
    }

    fn load(&self, session_id: &str) -> Result<Option<LocalSession>, StoreError> {
        let m = self
            .0
            .lock()
            .map_err(|_| StoreError::Other("poisoned".into()))?;
        Ok(m.get(session_id).map(|s| (**s).clone()))
    }
}

/// A directory of `*.json` files, one [`LocalSession`] each (file name free, `sessionId` inside):
/// the wire contract's session in camelCase, plus the local fields the lane strips
/// (`tokenSeries`, an event's `summary` and `data`). `examples/sessions` is one.
#[derive(Debug, Clone)]
pub struct JsonDirStore {
    dir: PathBuf,
    /// Files that are not sessions, each warned about once.
    skipped: Arc<Mutex<BTreeSet<PathBuf>>>,
}

/// The fields discovery reads (the rest of the file is skipped, not kept).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaOnly {
    session_id: String,
    /// Read as any value so a missing or mistyped one is reported, not taken for a stray file.
    #[serde(default)]
    updated_at: serde_json::Value,
    data_revision: String,
    #[serde(default)]
    artifact_refs: Option<Vec<ArtifactRef>>,
}

impl JsonDirStore {
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            skipped: Arc::default(),
        }
    }

    /// How many `*.json` files the last listings skipped as not sessions.
    pub fn skipped_files(&self) -> usize {
        self.skipped.lock().map_or(0, |s| s.len())
    }

    /// Note whether `path` parsed; a file that does not is warned about once while it stays so.
    fn note(&self, path: &Path, parsed: Result<(), &serde_json::Error>) {
        let Ok(mut skipped) = self.skipped.lock() else {
            return;
        };
        match parsed {
            Ok(()) => {
                skipped.remove(path);
            }
            Err(e) if skipped.insert(path.to_owned()) => tracing::warn!(
                file = %path.display(),
                error = %e,
                "not a session file (a JSON object with sessionId, updatedAt, dataRevision); skipped"
            ),
            Err(_) => {}
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
    sessions_from_listing!();

    fn listing(&self, after: Option<DateTime<Utc>>) -> Result<Listing, StoreError> {
        let mut out = Listing::default();
        for path in self.files()? {
            let m = match serde_json::from_slice::<MetaOnly>(&self.read(&path)?) {
                Ok(m) => m,
                Err(e) => {
                    self.note(&path, Err(&e));
                    continue;
                }
            };
            self.note(&path, Ok(()));
            let Some(updated_at) = m
                .updated_at
                .as_str()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc))
            else {
                // Named, not skipped: the lane reports it and sets it aside.
                out.unreadable.push(m.session_id);
                continue;
            };
            if after.is_none_or(|a| updated_at > a) {
                out.sessions.push(SessionMeta {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::tests::typical;

    #[test]
    fn a_session_whose_updated_at_cannot_be_read_is_named_by_the_listing_not_dropped() {
        let store = MemoryStore::default();
        store.put(typical("ok", 1));
        let mut bad = typical("bad", 1);
        bad.updated_at = "yesterday".into();
        store.put(bad);
        let after = DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        for cursor in [None, Some(after)] {
            let l = store.listing(cursor).unwrap();
            assert_eq!(l.unreadable, ["bad"], "whatever the cursor");
        }
        let all = store.listing(None).unwrap();
        assert_eq!(all.sessions.len(), 1);
        assert_eq!(store.list_updated_after(None).unwrap(), all.sessions);

        let dir = std::env::temp_dir().join(format!("agent-store-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("ok.json"),
            serde_json::to_vec(&typical("ok", 1)).unwrap(),
        )
        .unwrap();
        for (file, updated) in [
            ("text", serde_json::json!("yesterday")),
            ("number", serde_json::json!(5)),
        ] {
            let mut v = serde_json::to_value(typical(file, 1)).unwrap();
            v["updatedAt"] = updated;
            std::fs::write(dir.join(format!("{file}.json")), v.to_string()).unwrap();
        }
        let mut missing = serde_json::to_value(typical("missing", 1)).unwrap();
        missing.as_object_mut().unwrap().remove("updatedAt");
        std::fs::write(dir.join("missing.json"), missing.to_string()).unwrap();
        std::fs::write(dir.join("stray.json"), b"[1, 2]").unwrap();
        let l = JsonDirStore::new(&dir).listing(None).unwrap();
        assert_eq!(l.unreadable, ["missing", "number", "text"]);
        assert_eq!(l.sessions.len(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A `tracing` writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_file_that_is_not_a_session_is_warned_about_once_with_its_parse_position_and_counted() {
        let dir = std::env::temp_dir().join(format!("agent-store-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("ok.json"),
            serde_json::to_vec(&typical("ok", 1)).unwrap(),
        )
        .unwrap();
        std::fs::write(dir.join("broken.json"), "{\"sessionId\": \"b\",\n  oops").unwrap();
        let store = JsonDirStore::new(&dir);
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..3 {
                assert_eq!(store.listing(None).unwrap().sessions.len(), 1);
            }
        });
        let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let warned: Vec<_> = log.lines().filter(|l| l.contains("broken.json")).collect();
        assert_eq!(warned.len(), 1, "once over three listings: {log}");
        assert!(warned[0].contains("line 2 column 3"), "{}", warned[0]);
        assert_eq!(store.skipped_files(), 1);
        // Repaired: no longer counted.
        std::fs::write(
            dir.join("broken.json"),
            serde_json::to_vec(&typical("b", 1)).unwrap(),
        )
        .unwrap();
        assert_eq!(store.listing(None).unwrap().sessions.len(), 2);
        assert_eq!(store.skipped_files(), 0);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
