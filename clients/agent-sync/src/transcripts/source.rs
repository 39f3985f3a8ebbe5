//! Where transcripts come from: a [`TranscriptSource`] discovers the local transcript files and
//! reads their bytes from an offset, never the whole file at once.
//!
//! Contract, "Identity and offsets": a file is named by its session (1 to 200 characters) and a
//! `fileId` of 1 to 256 bytes of `A-Z a-z 0-9 . _ -`, not starting with `.`; offsets count bytes
//! of the local file as it is on the device, before redaction. A file name that is not a valid
//! `fileId` is turned into one ([`file_id_for`]): the invalid bytes become `_`, and the name's
//! SHA-256 prefix is appended so two names never meet on one id.
//!
//! [`JsonlDirSource`] reads a directory in either (or both) of two layouts:
//! - `<dir>/<session>.jsonl`: one transcript per session, the session id is the file's stem and
//!   the file id its name;
//! - `<dir>/<session>/<file>.jsonl`: a session's directory of transcripts (the main one and its
//!   sub-agents'), the session id is the directory's name and the file id each file's name.
//!
//! Anything else (other extensions, deeper directories, names starting with `.`) is not a
//! transcript. [`MemorySource`] keeps files in memory for tests and embedding experiments.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use syncplane_contract::transcripts::{MAX_FILE_ID_BYTES, valid_file_id};

/// A session id's characters at most (contract "Identity and offsets").
pub const MAX_SESSION_ID_CHARS: usize = 200;

/// One local transcript file, as discovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptFile {
    pub session_id: String,
    /// Contract-valid (see [`file_id_for`]).
    pub file_id: String,
    /// Where the source finds it (a real path for [`JsonlDirSource`]).
    pub path: PathBuf,
    /// Its length when discovered.
    pub len: u64,
    /// What changes when the file is written (its modification time and inode, for a
    /// [`JsonlDirSource`]; a write counter for a [`MemorySource`]); `None` when unknown. Another
    /// stamp at the same length is how a rewrite in place that keeps the length is noticed.
    pub stamp: Option<i64>,
}

/// The stamp of a file's metadata: its modification time in nanoseconds and, on Unix, its inode
/// (a file replaced by another of the same length and time is still another file).
fn stamp_of(meta: &std::fs::Metadata) -> Option<i64> {
    let modified = meta.modified().ok()?;
    let nanos = modified
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    #[cfg(unix)]
    let inode = {
        use std::os::unix::fs::MetadataExt;
        meta.ino() as i64
    };
    #[cfg(not(unix))]
    let inode = 0i64;
    Some(nanos.wrapping_mul(31).wrapping_add(inode))
}

/// The app's transcripts: discovery and windowed reads.
pub trait TranscriptSource {
    /// Every transcript file there is now.
    fn discover(&self) -> io::Result<Vec<TranscriptFile>>;
    /// Up to `max` bytes of `file` from `offset` (fewer at the end of the file).
    fn read_at(&self, file: &TranscriptFile, offset: u64, max: usize) -> io::Result<Vec<u8>>;
    /// The file's current length; `None` when it is gone.
    fn len_of(&self, file: &TranscriptFile) -> io::Result<Option<u64>>;
}

/// A contract-valid `fileId` for a file name: the name itself when valid, else the name with
/// every invalid byte as `_` (no leading `.`), cut to fit, plus `-` and 16 hex digits of the
/// name's SHA-256, so distinct names stay distinct.
pub fn file_id_for(name: &str) -> String {
    if valid_file_id(name) {
        return name.to_owned();
    }
    let digest = hex::encode(Sha256::digest(name.as_bytes()));
    let tag = &digest[..16];
    let mut cleaned: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
                b as char
            } else {
                '_'
            }
        })
        .collect();
    cleaned = cleaned.trim_start_matches('.').to_owned();
    cleaned.truncate(MAX_FILE_ID_BYTES - tag.len() - 1);
    if cleaned.is_empty() {
        format!("t-{tag}")
    } else {
        format!("{cleaned}-{tag}")
    }
}

/// Whether `id` can name a session (contract: 1 to 200 characters).
pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty() && id.chars().count() <= MAX_SESSION_ID_CHARS
}

/// A directory of `*.jsonl` transcripts (layouts in the module documentation).
#[derive(Debug, Clone)]
pub struct JsonlDirSource {
    root: PathBuf,
}

impl JsonlDirSource {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The transcript at `path` for `session_id` (what a hook names), if it can be one.
    pub fn file(session_id: &str, path: &Path) -> io::Result<TranscriptFile> {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        if !valid_session_id(session_id) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a session id is 1 to 200 characters",
            ));
        }
        let meta = std::fs::metadata(path)?;
        Ok(TranscriptFile {
            session_id: session_id.to_owned(),
            file_id: file_id_for(name),
            path: path.to_owned(),
            len: meta.len(),
            stamp: stamp_of(&meta),
        })
    }

    /// `(name, path, len, stamp, is_dir)` of the entries of `dir` that can be transcripts.
    fn jsonl_files(dir: &Path) -> io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let meta = entry.metadata()?;
            if meta.is_dir() {
                out.push((name, entry.path(), 0, None, true));
            } else if meta.is_file() && name.ends_with(".jsonl") {
                out.push((name, entry.path(), meta.len(), stamp_of(&meta), false));
            }
        }
        out.sort();
        Ok(out)
    }
}

impl TranscriptSource for JsonlDirSource {
    fn discover(&self) -> io::Result<Vec<TranscriptFile>> {
        let mut files = Vec::new();
        let mut push = |session: &str, name: &str, path: PathBuf, len: u64, stamp: Option<i64>| {
            if valid_session_id(session) {
                files.push(TranscriptFile {
                    session_id: session.to_owned(),
                    file_id: file_id_for(name),
                    path,
                    len,
                    stamp,
                });
            } else {
                tracing::warn!(session, "not a session id (1 to 200 characters): skipped");
            }
        };
        for (name, path, len, stamp, dir) in Self::jsonl_files(&self.root)? {
            if !dir {
                let stem = name.trim_end_matches(".jsonl");
                push(stem, &name, path, len, stamp);
                continue;
            }
            for (inner, p, l, s, d) in Self::jsonl_files(&path)? {
                if !d {
                    push(&name, &inner, p, l, s);
                }
            }
        }
        Ok(files)
    }

    fn read_at(&self, file: &TranscriptFile, offset: u64, max: usize) -> io::Result<Vec<u8>> {
        let mut f = File::open(&file.path)?;
        f.seek(SeekFrom::Start(offset))?;
        let mut buf = Vec::with_capacity(max.min(1 << 20));
        f.take(max as u64).read_to_end(&mut buf)?;
        Ok(buf)
    }

    fn len_of(&self, file: &TranscriptFile) -> io::Result<Option<u64>> {
        match std::fs::metadata(&file.path) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A directory entry that can be a transcript: (name, path, length, stamp, is a directory).
type Entry = (String, PathBuf, u64, Option<i64>, bool);

/// Files by (session, file id): their bytes and how many times they were written.
type Files = BTreeMap<(String, String), (Vec<u8>, i64)>;

/// Transcripts in memory, keyed by (session, file id); clones share the files.
#[derive(Debug, Clone, Default)]
pub struct MemorySource {
    files: Arc<Mutex<Files>>,
}

impl MemorySource {
    fn with<T>(&self, f: impl FnOnce(&mut Files) -> T) -> T {
        match self.files.lock() {
            Ok(mut g) => f(&mut g),
            Err(p) => f(&mut p.into_inner()),
        }
    }

    /// Replace the file's bytes (a rewrite when it existed).
    pub fn put(&self, session: &str, file_id: &str, bytes: impl Into<Vec<u8>>) {
        let bytes = bytes.into();
        self.with(|m| {
            let entry = m.entry((session.into(), file_id.into())).or_default();
            entry.0 = bytes;
            entry.1 += 1;
        });
    }

    /// Append to the file (creating it).
    pub fn append(&self, session: &str, file_id: &str, bytes: &[u8]) {
        self.with(|m| {
            let entry = m.entry((session.into(), file_id.into())).or_default();
            entry.0.extend_from_slice(bytes);
            entry.1 += 1;
        });
    }

    pub fn remove(&self, session: &str, file_id: &str) {
        self.with(|m| m.remove(&(session.into(), file_id.into())));
    }

    /// The file as a [`TranscriptFile`], if it exists.
    pub fn file(&self, session: &str, file_id: &str) -> Option<TranscriptFile> {
        self.with(|m| {
            m.get(&(session.into(), file_id.into()))
                .map(|(b, writes)| TranscriptFile {
                    session_id: session.into(),
                    file_id: file_id.into(),
                    path: PathBuf::from(session).join(file_id),
                    len: b.len() as u64,
                    stamp: Some(*writes),
                })
        })
    }

    fn bytes_of<T>(&self, file: &TranscriptFile, f: impl FnOnce(&[u8]) -> T) -> Option<T> {
        self.with(|m| {
            m.get(&(file.session_id.clone(), file.file_id.clone()))
                .map(|(b, _)| f(b))
        })
    }
}

impl TranscriptSource for MemorySource {
    fn discover(&self) -> io::Result<Vec<TranscriptFile>> {
        let keys: Vec<(String, String)> = self.with(|m| m.keys().cloned().collect());
        Ok(keys.iter().filter_map(|(s, f)| self.file(s, f)).collect())
    }

    fn read_at(&self, file: &TranscriptFile, offset: u64, max: usize) -> io::Result<Vec<u8>> {
        self.bytes_of(file, |b| {
            let start = usize::try_from(offset).unwrap_or(usize::MAX).min(b.len());
            let end = start.saturating_add(max).min(b.len());
            b[start..end].to_vec()
        })
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such transcript"))
    }

    fn len_of(&self, file: &TranscriptFile) -> io::Result<Option<u64>> {
        Ok(self.bytes_of(file, |b| b.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_becomes_a_contract_valid_file_id_and_distinct_names_stay_distinct() {
        assert_eq!(file_id_for("s-1.jsonl"), "s-1.jsonl");
        for name in [
            "a b.jsonl",
            ".hidden.jsonl",
            "é.jsonl",
            "..",
            &"x".repeat(300),
        ] {
            let id = file_id_for(name);
            assert!(valid_file_id(&id), "{name:?} -> {id:?}");
        }
        assert_ne!(file_id_for("a b.jsonl"), file_id_for("a?b.jsonl"));
        assert_ne!(file_id_for("a b.jsonl"), "a_b.jsonl");
    }

    #[test]
    fn a_directory_is_read_in_both_layouts_and_nothing_else() {
        let root = std::env::temp_dir().join(format!("jsonl-src-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(root.join("s-2/deeper")).unwrap();
        std::fs::write(root.join("s-1.jsonl"), b"{}\n").unwrap();
        std::fs::write(root.join("notes.txt"), b"x").unwrap();
        std::fs::write(root.join(".hidden.jsonl"), b"x").unwrap();
        std::fs::write(root.join("s-2/main.jsonl"), b"{}\n{}\n").unwrap();
        std::fs::write(root.join("s-2/agent a.jsonl"), b"").unwrap();
        std::fs::write(root.join("s-2/deeper/x.jsonl"), b"").unwrap();
        let src = JsonlDirSource::new(&root);
        let found: Vec<(String, String, u64)> = src
            .discover()
            .unwrap()
            .into_iter()
            .map(|f| (f.session_id, f.file_id, f.len))
            .collect();
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found.contains(&("s-1".into(), "s-1.jsonl".into(), 3)));
        assert!(found.contains(&("s-2".into(), "main.jsonl".into(), 6)));
        assert!(
            found
                .iter()
                .any(|f| f.0 == "s-2" && f.1.starts_with("agent_a.jsonl-"))
        );
        let main = src
            .discover()
            .unwrap()
            .into_iter()
            .find(|f| f.file_id == "main.jsonl")
            .unwrap();
        assert_eq!(src.read_at(&main, 3, 100).unwrap(), b"{}\n");
        assert_eq!(src.read_at(&main, 0, 2).unwrap(), b"{}");
        std::fs::remove_dir_all(root).unwrap();
        assert_eq!(src.len_of(&main).unwrap(), None, "gone");
    }
}
