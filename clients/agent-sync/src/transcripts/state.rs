//! The transcript lane's durable state, in the same SQLite file as the metadata lane's
//! ([`crate::State`]) but in tables of its own, through a connection of its own: per file, the
//! generation and the acknowledged offset, the start, end and SHA-256 of the source bytes of the
//! last acknowledged segment, a hash of the file's first 64 KiB and the SHA-256 state of the whole
//! acknowledged prefix (to notice a rewrite, one that keeps the length included), the length and
//! stamp a sweep last saw, when it is due (a sweep that saw it change, a hook), its retry count
//! and consecutive failures of one kind; and the lane's dead-letter set.
//!
//! Contract, "Client rules": "The acknowledged offset is kept by the server; the client keeps its
//! own copy and the SHA-256 of its last acknowledged segment's source bytes to notice a rewrite,
//! and re-asks the server after any lost answer" (`known` off: ask before sending). "A crash
//! re-sends at most the segment in flight": progress is written when `complete` answers.
//! Dead letters: at most 1,000 files, oldest evicted (an evicted file is no longer pending; the
//! next sweep that sees it grow brings it back); transient ones return when their window opens,
//! deterministic ones only on a cold restart. Like the metadata lane's, the state is scoped to
//! the signed-in identity and compute target: another one clears it. What the two states do
//! alike (opening the file, the scope, the per-kind failure budget, the dead-letter set) is the
//! shared core's (`lane_core::db`); the tables are this lane's own.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use crate::lane_core::db::{Release, Tables};
use crate::lane_core::dead_letter::Class;
use crate::transcripts::outcome::Kind;
use crate::transcripts::source::TranscriptFile;

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("transcript state database: {0}")]
    Db(#[from] rusqlite::Error),
    #[error("transcript state lock file: {0}")]
    Lock(#[from] std::io::Error),
}

/// One of the two advisory locks beside the state file (flock, released when the process ends
/// however it ends): which process uploads now, and which process is the background flusher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// Held while segments are sent: a lane's tick, a flusher's pass, a terminal hook. The lane
    /// of a `push`, an embedded lane and hook processes over one state file never send the same
    /// bytes twice: each reads the files' progress after taking it.
    Upload,
    /// Held by the one background flusher a state file has (`syncplane-agent transcripts
    /// flush`, started by activity hooks).
    Flusher,
}

/// A held lock (none for an in-memory state: one process, one lane).
#[derive(Debug)]
pub struct LockGuard(#[allow(dead_code)] Option<std::fs::File>);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS transcript_scope (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    identity TEXT NOT NULL,
    compute_target TEXT NOT NULL,
    swept INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS transcript_files (
    session_id TEXT NOT NULL,
    file_id TEXT NOT NULL,
    path TEXT NOT NULL,
    seen_len INTEGER NOT NULL DEFAULT -1,
    seen_stamp INTEGER,
    generation INTEGER NOT NULL DEFAULT 0,
    acked_offset INTEGER NOT NULL DEFAULT 0,
    check_start INTEGER NOT NULL DEFAULT 0,
    check_end INTEGER NOT NULL DEFAULT 0,
    check_sha TEXT,
    head_len INTEGER NOT NULL DEFAULT 0,
    head_sha TEXT,
    prefix_state BLOB,
    known INTEGER NOT NULL DEFAULT 0,
    flush_at_ms INTEGER,
    not_before_ms INTEGER NOT NULL DEFAULT 0,
    retries INTEGER NOT NULL DEFAULT 0,
    fail_kind TEXT,
    fail_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, file_id)
);
CREATE INDEX IF NOT EXISTS transcript_files_due ON transcript_files (flush_at_ms);
CREATE TABLE IF NOT EXISTS transcript_dead_letters (
    session_id TEXT NOT NULL,
    file_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    class TEXT NOT NULL,
    reason TEXT NOT NULL,
    dead_at_ms INTEGER NOT NULL,
    retry_at_ms INTEGER,
    PRIMARY KEY (session_id, file_id)
);
";

/// One file's progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub session_id: String,
    pub file_id: String,
    pub path: PathBuf,
    /// 0: not known yet (the server is asked).
    pub generation: u32,
    pub acked_offset: u64,
    /// The source bytes of the last acknowledged segment (or, after adopting the server's state,
    /// the bytes just before its offset), and their SHA-256.
    pub check_start: u64,
    pub check_end: u64,
    pub check_sha: Option<String>,
    /// The hash of the file's first `head_len` bytes (at most 64 KiB, within the acked prefix).
    pub head_len: u64,
    pub head_sha: Option<String>,
    /// The serialized SHA-256 state of the whole acknowledged prefix (`None`: not known, as after
    /// a state from before it was kept).
    pub prefix_state: Option<Vec<u8>>,
    /// The server's state is known (else asked before the next intent).
    pub known: bool,
    pub retries: u32,
}

impl Progress {
    pub fn file(&self) -> TranscriptFile {
        TranscriptFile {
            session_id: self.session_id.clone(),
            file_id: self.file_id.clone(),
            path: self.path.clone(),
            len: 0,
            stamp: None,
        }
    }
}

/// One file of the dead-letter set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadFile {
    pub session_id: String,
    pub file_id: String,
    pub class: String,
    pub reason: String,
    pub retry_at_ms: Option<i64>,
}

pub struct TranscriptState {
    db: Connection,
    /// The state file (`None`: in memory), beside which the locks live.
    path: Option<PathBuf>,
    /// Opened by a process that joins another lane's state ([`Self::joining`]).
    joined: bool,
}

const COLUMNS: &str = "session_id, file_id, path, generation, acked_offset, check_start,
    check_end, check_sha, head_len, head_sha, known, retries, prefix_state";

/// Columns added after the first release, for a state file created before them.
const ADDED_COLUMNS: [(&str, &str); 2] = [
    (
        "seen_stamp",
        "ALTER TABLE transcript_files ADD COLUMN seen_stamp INTEGER",
    ),
    (
        "prefix_state",
        "ALTER TABLE transcript_files ADD COLUMN prefix_state BLOB",
    ),
];

/// The lane's tables in the state file (the plumbing is the shared core's).
const TABLES: Tables = Tables {
    schema: SCHEMA,
    added: &ADDED_COLUMNS,
    scope: "transcript_scope",
    items: "transcript_files",
    dead: "transcript_dead_letters",
    all: &[
        "transcript_scope",
        "transcript_files",
        "transcript_dead_letters",
    ],
    key: &["session_id", "file_id"],
};

fn progress(r: &rusqlite::Row<'_>) -> rusqlite::Result<Progress> {
    Ok(Progress {
        session_id: r.get(0)?,
        file_id: r.get(1)?,
        path: PathBuf::from(r.get::<_, String>(2)?),
        generation: r.get(3)?,
        acked_offset: r.get::<_, i64>(4)? as u64,
        check_start: r.get::<_, i64>(5)? as u64,
        check_end: r.get::<_, i64>(6)? as u64,
        check_sha: r.get(7)?,
        head_len: r.get::<_, i64>(8)? as u64,
        head_sha: r.get(9)?,
        known: r.get(10)?,
        retries: r.get(11)?,
        prefix_state: r.get(12)?,
    })
}

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl TranscriptState {
    /// Open (creating) the lane's tables in the state file at `path` (the metadata lane's file
    /// is the usual one); another identity or target than the stored one clears them.
    pub fn open(path: &Path, identity: &str, target: &str) -> Result<Self, StateError> {
        Self::with(TABLES.open(Some(path))?, Some(path), identity, target)
    }

    pub fn in_memory(identity: &str, target: &str) -> Result<Self, StateError> {
        Self::with(TABLES.open(None)?, None, identity, target)
    }

    /// This process joins a state file the app's lane keeps (a hook's process): a lane over it is
    /// not a cold start, so what was set aside stays aside ([`crate::TranscriptLane::new`]).
    pub fn joining(mut self) -> Self {
        self.joined = true;
        self
    }

    /// Whether this state was opened [`Self::joining`] another lane's.
    pub fn is_joined(&self) -> bool {
        self.joined
    }

    /// Take `kind`'s lock if no other process holds it (`None` when one does).
    pub fn try_lock(&self, kind: LockKind) -> Result<Option<LockGuard>, StateError> {
        let Some(path) = &self.path else {
            return Ok(Some(LockGuard(None)));
        };
        let suffix = match kind {
            LockKind::Upload => "upload.lock",
            LockKind::Flusher => "flusher.lock",
        };
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{suffix}"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(PathBuf::from(name))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(LockGuard(Some(file)))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
        }
    }

    fn with(
        db: Connection,
        path: Option<&Path>,
        identity: &str,
        target: &str,
    ) -> Result<Self, StateError> {
        let mut s = Self {
            db,
            path: path.map(Path::to_owned),
            joined: false,
        };
        s.bind(identity, target)?;
        Ok(s)
    }

    /// Scope the state to this identity and target, clearing it when either changed.
    pub fn bind(&mut self, identity: &str, target: &str) -> Result<(), StateError> {
        TABLES.bind(&mut self.db, identity, target)?;
        Ok(())
    }

    /// Whether a full-discovery sweep has run (the first one is the backfill).
    pub fn swept(&self) -> Result<bool, StateError> {
        Ok(TABLES.flag(&self.db, "swept")?)
    }

    /// Record a sweep's findings: a file new, of another length than last seen, or with another
    /// stamp (written since, a rewrite that kept the length included) is due at `now_ms`. A stamp
    /// seen for the first time (a state from before stamps were kept) is only recorded. Returns
    /// how many became due.
    pub fn observe(&mut self, files: &[TranscriptFile], now_ms: i64) -> Result<usize, StateError> {
        let tx = self.db.transaction()?;
        let mut due = 0;
        {
            let mut seen = tx.prepare_cached(
                "SELECT seen_len, seen_stamp FROM transcript_files
                  WHERE session_id = ?1 AND file_id = ?2",
            )?;
            let mut record = tx.prepare_cached(
                "INSERT INTO transcript_files
                    (session_id, file_id, path, seen_len, seen_stamp, flush_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (session_id, file_id) DO UPDATE SET path = excluded.path,
                    seen_len = excluded.seen_len, seen_stamp = excluded.seen_stamp,
                    flush_at_ms = CASE WHEN excluded.flush_at_ms IS NULL THEN flush_at_ms
                        ELSE min(coalesce(flush_at_ms, excluded.flush_at_ms), excluded.flush_at_ms) END",
            )?;
            for f in files {
                let before: Option<(i64, Option<i64>)> = seen
                    .query_row(params![f.session_id, f.file_id], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .optional()?;
                let changed = match before {
                    None => true,
                    Some((len, stamp)) => {
                        len != i(f.len)
                            || (stamp.is_some() && f.stamp.is_some() && stamp != f.stamp)
                    }
                };
                if !changed && before.is_some_and(|(_, stamp)| stamp == f.stamp) {
                    continue;
                }
                record.execute(params![
                    f.session_id,
                    f.file_id,
                    f.path.to_string_lossy(),
                    i(f.len),
                    f.stamp,
                    changed.then_some(now_ms)
                ])?;
                due += usize::from(changed);
            }
        }
        tx.execute("UPDATE transcript_scope SET swept = 1 WHERE id = 1", [])?;
        tx.commit()?;
        Ok(due)
    }

    /// Make `file` due at `at_ms`, or earlier if it already is (a hook's enqueue).
    pub fn schedule(&mut self, file: &TranscriptFile, at_ms: i64) -> Result<(), StateError> {
        self.db.execute(
            "INSERT INTO transcript_files (session_id, file_id, path, flush_at_ms)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (session_id, file_id) DO UPDATE SET path = excluded.path,
                flush_at_ms = min(coalesce(flush_at_ms, excluded.flush_at_ms), excluded.flush_at_ms)",
            params![file.session_id, file.file_id, file.path.to_string_lossy(), at_ms],
        )?;
        Ok(())
    }

    /// Files due at `now_ms` (not backing off, not set aside), longest waiting first.
    pub fn due(&self, now_ms: i64, limit: usize) -> Result<Vec<Progress>, StateError> {
        let mut q = self.db.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM transcript_files f
              WHERE flush_at_ms <= ?1 AND not_before_ms <= ?1
                AND NOT EXISTS (SELECT 1 FROM transcript_dead_letters d
                                 WHERE d.session_id = f.session_id AND d.file_id = f.file_id)
              ORDER BY flush_at_ms, session_id, file_id LIMIT ?2"
        ))?;
        let rows = q.query_map(params![now_ms, limit as i64], progress)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Files with work scheduled (now or later) that are not set aside.
    pub fn pending_count(&self) -> Result<i64, StateError> {
        Ok(self.db.query_row(
            "SELECT count(*) FROM transcript_files f WHERE flush_at_ms IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM transcript_dead_letters d
                                 WHERE d.session_id = f.session_id AND d.file_id = f.file_id)",
            [],
            |r| r.get(0),
        )?)
    }

    /// Whether the file has work scheduled and is not set aside.
    pub fn is_pending(&self, session_id: &str, file_id: &str) -> Result<bool, StateError> {
        Ok(self.db.query_row(
            "SELECT count(*) FROM transcript_files f
              WHERE session_id = ?1 AND file_id = ?2 AND flush_at_ms IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM transcript_dead_letters d
                                 WHERE d.session_id = f.session_id AND d.file_id = f.file_id)",
            params![session_id, file_id],
            |r| r.get::<_, i64>(0),
        )? > 0)
    }

    /// The earliest time a pending file may go (`None`: nothing pending).
    pub fn next_due_ms(&self) -> Result<Option<i64>, StateError> {
        Ok(self.db.query_row(
            "SELECT min(max(flush_at_ms, not_before_ms)) FROM transcript_files f
              WHERE flush_at_ms IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM transcript_dead_letters d
                                 WHERE d.session_id = f.session_id AND d.file_id = f.file_id)",
            [],
            |r| r.get(0),
        )?)
    }

    pub fn get(&self, session_id: &str, file_id: &str) -> Result<Option<Progress>, StateError> {
        Ok(self
            .db
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM transcript_files WHERE session_id = ?1 AND file_id = ?2"
                ),
                params![session_id, file_id],
                progress,
            )
            .optional()?)
    }

    /// Write a file's progress (generation, offset, checks, `known`).
    pub fn save(&mut self, p: &Progress) -> Result<(), StateError> {
        self.db.execute(
            "UPDATE transcript_files SET generation = ?3, acked_offset = ?4, check_start = ?5,
                check_end = ?6, check_sha = ?7, head_len = ?8, head_sha = ?9, known = ?10,
                prefix_state = ?11
              WHERE session_id = ?1 AND file_id = ?2",
            params![
                p.session_id,
                p.file_id,
                p.generation,
                i(p.acked_offset),
                i(p.check_start),
                i(p.check_end),
                p.check_sha,
                i(p.head_len),
                p.head_sha,
                p.known,
                p.prefix_state
            ],
        )?;
        Ok(())
    }

    /// A segment went through: the retry count and the failure budget start again.
    pub fn succeeded(&mut self, session_id: &str, file_id: &str) -> Result<(), StateError> {
        self.db.execute(
            "UPDATE transcript_files SET retries = 0, fail_kind = NULL, fail_count = 0,
                not_before_ms = 0 WHERE session_id = ?1 AND file_id = ?2",
            params![session_id, file_id],
        )?;
        Ok(())
    }

    /// Caught up as of `since_ms`: nothing due unless scheduled after it.
    pub fn caught_up(
        &mut self,
        session_id: &str,
        file_id: &str,
        since_ms: i64,
    ) -> Result<(), StateError> {
        self.db.execute(
            "UPDATE transcript_files SET flush_at_ms = NULL
              WHERE session_id = ?1 AND file_id = ?2 AND flush_at_ms <= ?3",
            params![session_id, file_id, since_ms],
        )?;
        Ok(())
    }

    /// One failed attempt: the retry count climbs, the file waits until `not_before_ms`, and a
    /// budgeted kind is counted (consecutive per kind). Returns (retries, whether the budget of
    /// `kind` is spent).
    pub fn failed(
        &mut self,
        session_id: &str,
        file_id: &str,
        kind: Option<Kind>,
        not_before_ms: i64,
    ) -> Result<(u32, bool), StateError> {
        let tx = self.db.transaction()?;
        let retries: u32 = tx.query_row(
            "UPDATE transcript_files SET retries = retries + 1,
                not_before_ms = max(not_before_ms, ?3)
              WHERE session_id = ?1 AND file_id = ?2 RETURNING retries",
            params![session_id, file_id, not_before_ms],
            |r| r.get(0),
        )?;
        let spent = match kind {
            Some(k) => TABLES.count_failure(&tx, &[session_id, file_id], k.name(), k.limit())?,
            None => false,
        };
        tx.commit()?;
        Ok((retries, spent))
    }

    /// The retry count of a file (to place the next attempt on the ladder).
    pub fn retries(&self, session_id: &str, file_id: &str) -> Result<u32, StateError> {
        Ok(self
            .db
            .query_row(
                "SELECT retries FROM transcript_files WHERE session_id = ?1 AND file_id = ?2",
                params![session_id, file_id],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(0))
    }

    /// The failure budget spent so far: (kind, consecutive count).
    pub fn budget_of(
        &self,
        session_id: &str,
        file_id: &str,
    ) -> Result<Option<(Option<String>, i64)>, StateError> {
        Ok(TABLES.budget_of(&self.db, &[session_id, file_id])?)
    }

    /// Set a file aside (`retry_at_ms` `None`: deterministic). Its budget starts again. Evicts
    /// the oldest beyond the bound (no longer pending); returns them.
    pub fn dead_letter(
        &mut self,
        session_id: &str,
        file_id: &str,
        class: Class,
        reason: &str,
        now_ms: i64,
        retry_at_ms: Option<i64>,
    ) -> Result<Vec<(String, String)>, StateError> {
        let tx = self.db.transaction()?;
        let evicted: Vec<(String, String)> = TABLES.dead_letter(
            &tx,
            &[session_id, file_id],
            class,
            reason,
            now_ms,
            retry_at_ms,
        )?;
        for (s, f) in &evicted {
            tx.execute(
                "UPDATE transcript_files SET flush_at_ms = NULL
                  WHERE session_id = ?1 AND file_id = ?2",
                params![s, f],
            )?;
        }
        tx.commit()?;
        Ok(evicted)
    }

    /// The timed pass: transient dead letters whose window opened are due again.
    pub fn recover_due(&mut self, now_ms: i64) -> Result<Vec<(String, String)>, StateError> {
        self.release(Release::Due(now_ms), now_ms)
    }

    /// A cold restart: deterministic dead letters are due again.
    pub fn release_deterministic(&mut self, now_ms: i64) -> Result<usize, StateError> {
        Ok(self.release(Release::Deterministic, now_ms)?.len())
    }

    /// Released dead letters leave the set and their files are due at `now_ms`.
    fn release(
        &mut self,
        which: Release,
        now_ms: i64,
    ) -> Result<Vec<(String, String)>, StateError> {
        let tx = self.db.transaction()?;
        let ids: Vec<(String, String)> = TABLES.release(&tx, which)?;
        for (s, f) in &ids {
            tx.execute(
                "UPDATE transcript_files SET flush_at_ms = ?3, not_before_ms = 0
                  WHERE session_id = ?1 AND file_id = ?2",
                params![s, f, now_ms],
            )?;
        }
        tx.commit()?;
        Ok(ids)
    }

    pub fn dead_letters(&self) -> Result<Vec<DeadFile>, StateError> {
        let rows = TABLES.dead_letters::<(String, String)>(&self.db)?;
        Ok(rows
            .into_iter()
            .map(|d| DeadFile {
                session_id: d.key.0,
                file_id: d.key.1,
                class: d.class,
                reason: d.reason,
                retry_at_ms: d.retry_at_ms,
            })
            .collect())
    }

    /// Forget a file the source no longer has.
    pub fn forget(&mut self, session_id: &str, file_id: &str) -> Result<(), StateError> {
        Ok(TABLES.forget(&self.db, &[session_id, file_id])?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(s: &str, f: &str, len: u64) -> TranscriptFile {
        TranscriptFile {
            session_id: s.into(),
            file_id: f.into(),
            path: PathBuf::from(f),
            len,
            stamp: Some(1),
        }
    }

    #[test]
    fn a_sweep_makes_new_and_changed_files_due_and_leaves_unchanged_ones() {
        let mut s = TranscriptState::in_memory("ada", "t").unwrap();
        assert!(!s.swept().unwrap());
        assert_eq!(
            s.observe(&[file("a", "1", 10), file("b", "1", 5)], 0)
                .unwrap(),
            2
        );
        assert!(s.swept().unwrap());
        for p in s.due(0, 10).unwrap() {
            s.caught_up(&p.session_id, &p.file_id, 0).unwrap();
        }
        assert_eq!(s.pending_count().unwrap(), 0);
        assert_eq!(
            s.observe(&[file("a", "1", 10), file("b", "1", 6)], 5)
                .unwrap(),
            1
        );
        let due = s.due(5, 10).unwrap();
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].session_id, "b");
    }

    #[test]
    fn a_hook_scheduled_during_a_flush_survives_its_catch_up() {
        let mut s = TranscriptState::in_memory("ada", "t").unwrap();
        s.schedule(&file("a", "1", 0), 100).unwrap();
        s.schedule(&file("a", "1", 0), 50).unwrap();
        assert!(s.due(49, 10).unwrap().is_empty());
        assert_eq!(s.due(50, 10).unwrap().len(), 1, "the earlier time wins");
        s.caught_up("a", "1", 40).unwrap();
        assert_eq!(
            s.pending_count().unwrap(),
            1,
            "scheduled after the flush began"
        );
        s.caught_up("a", "1", 50).unwrap();
        assert_eq!(s.pending_count().unwrap(), 0);
    }

    #[test]
    fn failures_count_per_kind_and_the_dead_letter_set_is_bounded() {
        let mut s = TranscriptState::in_memory("ada", "t").unwrap();
        s.schedule(&file("a", "1", 0), 0).unwrap();
        assert_eq!(
            s.failed("a", "1", Some(Kind::Timeout), 10).unwrap(),
            (1, false)
        );
        assert_eq!(
            s.failed("a", "1", None, 10).unwrap(),
            (2, false),
            "not counted"
        );
        assert_eq!(
            s.failed("a", "1", Some(Kind::Timeout), 10).unwrap(),
            (3, false)
        );
        assert_eq!(
            s.failed("a", "1", Some(Kind::Timeout), 10).unwrap(),
            (4, true)
        );
        assert!(s.due(9, 10).unwrap().is_empty(), "backing off");
        let files: Vec<_> = (0..1001)
            .map(|n| file("s", &format!("f{n:04}"), 0))
            .collect();
        let mut evicted = Vec::new();
        for f in &files {
            s.schedule(f, 0).unwrap();
            evicted.extend(
                s.dead_letter(&f.session_id, &f.file_id, Class::Transient, "x", 0, Some(5))
                    .unwrap(),
            );
        }
        assert_eq!(evicted, [("s".to_owned(), "f0000".to_owned())]);
        assert_eq!(s.dead_letters().unwrap().len(), 1000);
        assert_eq!(s.recover_due(5).unwrap().len(), 1000);
        assert_eq!(s.due(5, 2000).unwrap().len(), 1000);
    }

    #[test]
    fn another_identity_clears_the_lanes_state() {
        let mut s = TranscriptState::in_memory("ada", "t").unwrap();
        s.observe(&[file("a", "1", 1)], 0).unwrap();
        s.bind("ada", "t").unwrap();
        assert_eq!(s.pending_count().unwrap(), 1);
        s.bind("grace", "t").unwrap();
        assert_eq!(s.pending_count().unwrap(), 0);
        assert!(!s.swept().unwrap());
    }
}
