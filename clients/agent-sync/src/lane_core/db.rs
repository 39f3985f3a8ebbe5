//! The SQLite plumbing of both lanes' state: the metadata lane's ([`crate::state::State`]) and the
//! transcript lane's ([`crate::transcripts::state::TranscriptState`]). The two keep tables of
//! their own in one state file, each through a connection of its own; each describes its tables
//! once ([`Tables`]) and this module does what the two do alike:
//!
//! - opening: WAL, `synchronous = NORMAL`, and a 5 s wait for the other lane's lock (it may write
//!   the same file from another process) instead of failing a write at once; then the lane's
//!   `CREATE ... IF NOT EXISTS` statements and the columns added since a release, so a state file
//!   on a user's disk keeps working ([`Tables::open`]);
//! - the scope row: the state is bound to the signed-in identity and compute target, and another
//!   one clears every table of the lane ([`Tables::bind`]);
//! - the failure budget of an item: `fail_kind` and `fail_count`, consecutive failures of one kind
//!   (another kind starts again at 1), spent at the lane's limit ([`Tables::count_failure`]);
//! - the dead-letter set: an item set aside is the newest (`seq`), its budget starts again, the set
//!   holds at most [`MAX_DEAD_LETTERS`] (the oldest evicted), and a release takes back the transient
//!   ones whose window opened, the deterministic ones, or all ([`Release`]).
//!
//! An item is a session (metadata lane: key `session_id`) or a transcript file (`session_id`,
//! `file_id`); its key is bound first, in [`Tables::key`]'s order. Every statement runs on the
//! connection or the transaction it is given, so a lane adds its own steps to the same
//! transaction. The tables' layouts stay each lane's own (its schema), unchanged.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, ToSql, params, params_from_iter};

use crate::lane_core::dead_letter::{Class, MAX_DEAD_LETTERS};

/// How long a write waits for another connection's lock (the other lane's, another process's).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const PRAGMAS: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
";

/// One lane's tables.
#[derive(Debug)]
pub(crate) struct Tables {
    /// `CREATE TABLE IF NOT EXISTS` (and index) statements of every table of the lane.
    pub(crate) schema: &'static str,
    /// Columns of `items` added after the first release: (column, the statement adding it).
    pub(crate) added: &'static [(&'static str, &'static str)],
    /// The one row (`id = 1`) naming the identity and compute target the state is bound to.
    pub(crate) scope: &'static str,
    /// One row an item, with its budget (`fail_kind`, `fail_count`).
    pub(crate) items: &'static str,
    /// The dead-letter set: the item's key, `seq`, `class`, `reason`, `dead_at_ms`,
    /// `retry_at_ms` (`NULL`: deterministic).
    pub(crate) dead: &'static str,
    /// Every table of the lane (cleared when the scope changes).
    pub(crate) all: &'static [&'static str],
    /// The key columns of an item, in `items` and in `dead`.
    pub(crate) key: &'static [&'static str],
}

/// An item's key as read back from a row (its first columns).
pub(crate) trait ItemKey: Sized {
    fn read(r: &Row<'_>) -> rusqlite::Result<Self>;
}

/// A session's id.
impl ItemKey for String {
    fn read(r: &Row<'_>) -> rusqlite::Result<Self> {
        r.get(0)
    }
}

/// A transcript file's session and file ids.
impl ItemKey for (String, String) {
    fn read(r: &Row<'_>) -> rusqlite::Result<Self> {
        Ok((r.get(0)?, r.get(1)?))
    }
}

/// One row of a dead-letter set, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeadRow<K> {
    pub(crate) key: K,
    pub(crate) class: String,
    pub(crate) reason: String,
    /// `None`: never by the timed pass.
    pub(crate) retry_at_ms: Option<i64>,
}

/// Which dead letters a release takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Release {
    /// The timed pass: transient ones whose window has opened at this time.
    Due(i64),
    /// A cold restart: the deterministic ones.
    Deterministic,
    /// Every one, whatever its window.
    Every,
}

impl Tables {
    /// Open (creating) the state file at `path` (`None`: in memory) with the lane's tables.
    pub(crate) fn open(&self, path: Option<&Path>) -> rusqlite::Result<Connection> {
        let db = match path {
            Some(path) => Connection::open(path)?,
            None => Connection::open_in_memory()?,
        };
        db.busy_timeout(BUSY_TIMEOUT)?;
        db.execute_batch(PRAGMAS)?;
        db.execute_batch(self.schema)?;
        for (column, add) in self.added {
            let present: i64 = db.query_row(
                &format!(
                    "SELECT count(*) FROM pragma_table_info('{}') WHERE name = ?1",
                    self.items
                ),
                [column],
                |r| r.get(0),
            )?;
            if present == 0 {
                db.execute_batch(add)?;
            }
        }
        Ok(db)
    }

    /// Scope the state to `identity` on `target`, clearing every table of the lane when either
    /// differs from the stored one. Returns whether a stored scope was replaced.
    pub(crate) fn bind(
        &self,
        db: &mut Connection,
        identity: &str,
        target: &str,
    ) -> rusqlite::Result<bool> {
        let tx = db.transaction()?;
        let stored: Option<(String, String)> = tx
            .query_row(
                &format!(
                    "SELECT identity, compute_target FROM {} WHERE id = 1",
                    self.scope
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let same =
            stored.as_ref().map(|(i, t)| (i.as_str(), t.as_str())) == Some((identity, target));
        if !same {
            for table in self.all {
                tx.execute(&format!("DELETE FROM {table}"), [])?;
            }
            tx.execute(
                &format!(
                    "INSERT INTO {} (id, identity, compute_target) VALUES (1, ?1, ?2)",
                    self.scope
                ),
                params![identity, target],
            )?;
        }
        tx.commit()?;
        Ok(!same && stored.is_some())
    }

    /// A flag of the scope row (`backfilled`, `swept`).
    pub(crate) fn flag(&self, db: &Connection, column: &str) -> rusqlite::Result<bool> {
        let sql = format!("SELECT {column} FROM {} WHERE id = 1", self.scope);
        Ok(db.query_row(&sql, [], |r| r.get::<_, i64>(0))? != 0)
    }

    /// `session_id = ?1 AND file_id = ?2`: the key, bound first.
    fn key_is(&self) -> String {
        let each: Vec<String> = self
            .key
            .iter()
            .enumerate()
            .map(|(i, column)| format!("{column} = ?{}", i + 1))
            .collect();
        each.join(" AND ")
    }

    /// Count one failure of `kind` against an item, consecutive per kind (another kind starts
    /// again at 1). Returns whether that spent its budget of `limit` (`false`: no such item).
    pub(crate) fn count_failure(
        &self,
        db: &Connection,
        key: &[&str],
        kind: &str,
        limit: u32,
    ) -> rusqlite::Result<bool> {
        let k = key.len() + 1;
        let sql = format!(
            "UPDATE {} SET fail_count = CASE WHEN fail_kind = ?{k} THEN fail_count + 1 ELSE 1 END,
                fail_kind = ?{k}
              WHERE {} RETURNING fail_count",
            self.items,
            self.key_is()
        );
        let count: Option<i64> = db
            .prepare_cached(&sql)?
            .query_row(params_from_iter(key.iter().chain([&kind])), |r| r.get(0))
            .optional()?;
        Ok(count.is_some_and(|n| n >= i64::from(limit)))
    }

    /// The budget an item has spent so far: (kind, consecutive count).
    pub(crate) fn budget_of(
        &self,
        db: &Connection,
        key: &[&str],
    ) -> rusqlite::Result<Option<(Option<String>, i64)>> {
        let sql = format!(
            "SELECT fail_kind, fail_count FROM {} WHERE {}",
            self.items,
            self.key_is()
        );
        db.query_row(&sql, params_from_iter(key), |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
    }

    /// Set an item aside (`retry_at_ms` `None`: deterministic) as the newest dead letter; its
    /// budget starts again. Evicts the oldest beyond [`MAX_DEAD_LETTERS`] and returns their keys
    /// (what else goes with an evicted item is the lane's, in the same transaction).
    pub(crate) fn dead_letter<K: ItemKey>(
        &self,
        db: &Connection,
        key: &[&str],
        class: Class,
        reason: &str,
        now_ms: i64,
        retry_at_ms: Option<i64>,
    ) -> rusqlite::Result<Vec<K>> {
        let (dead, columns, n) = (self.dead, self.key.join(", "), key.len());
        db.execute(
            &format!(
                "UPDATE {} SET fail_kind = NULL, fail_count = 0 WHERE {}",
                self.items,
                self.key_is()
            ),
            params_from_iter(key),
        )?;
        let keys: Vec<String> = (1..=n).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "INSERT INTO {dead} ({columns}, seq, class, reason, dead_at_ms, retry_at_ms)
             VALUES ({}, (SELECT coalesce(max(seq), 0) + 1 FROM {dead}), ?{}, ?{}, ?{}, ?{})
             ON CONFLICT ({columns}) DO UPDATE SET seq = excluded.seq, class = excluded.class,
                reason = excluded.reason, dead_at_ms = excluded.dead_at_ms,
                retry_at_ms = excluded.retry_at_ms",
            keys.join(", "),
            n + 1,
            n + 2,
            n + 3,
            n + 4
        );
        let rest: [&dyn ToSql; 4] = [&class.as_str(), &reason, &now_ms, &retry_at_ms];
        let bound = key.iter().map(|k| k as &dyn ToSql).chain(rest);
        db.execute(&sql, params_from_iter(bound))?;
        let mut evict = db.prepare_cached(&format!(
            "DELETE FROM {dead} WHERE seq IN (
                SELECT seq FROM {dead} ORDER BY seq
                 LIMIT max((SELECT count(*) FROM {dead}) - ?1, 0))
             RETURNING {columns}"
        ))?;
        let evicted = evict.query_map([MAX_DEAD_LETTERS as i64], K::read)?;
        evicted.collect()
    }

    /// Take dead letters back (they leave the set); returns their keys.
    pub(crate) fn release<K: ItemKey>(
        &self,
        db: &Connection,
        which: Release,
    ) -> rusqlite::Result<Vec<K>> {
        let (filter, now) = match which {
            Release::Due(now) => (
                " WHERE retry_at_ms IS NOT NULL AND retry_at_ms <= ?1",
                Some(now),
            ),
            Release::Deterministic => (" WHERE retry_at_ms IS NULL", None),
            Release::Every => ("", None),
        };
        let sql = format!(
            "DELETE FROM {}{filter} RETURNING {}",
            self.dead,
            self.key.join(", ")
        );
        let mut q = db.prepare_cached(&sql)?;
        let keys = q.query_map(params_from_iter(now), K::read)?;
        keys.collect()
    }

    /// The dead-letter set, oldest first.
    pub(crate) fn dead_letters<K: ItemKey>(
        &self,
        db: &Connection,
    ) -> rusqlite::Result<Vec<DeadRow<K>>> {
        let n = self.key.len();
        let sql = format!(
            "SELECT {}, class, reason, retry_at_ms FROM {} ORDER BY seq",
            self.key.join(", "),
            self.dead
        );
        let mut q = db.prepare_cached(&sql)?;
        let rows = q.query_map([], |r| {
            Ok(DeadRow {
                key: K::read(r)?,
                class: r.get(n)?,
                reason: r.get(n + 1)?,
                retry_at_ms: r.get(n + 2)?,
            })
        })?;
        rows.collect()
    }

    /// Forget an item: its row and its dead letter.
    pub(crate) fn forget(&self, db: &Connection, key: &[&str]) -> rusqlite::Result<()> {
        for table in [self.items, self.dead] {
            db.execute(
                &format!("DELETE FROM {table} WHERE {}", self.key_is()),
                params_from_iter(key),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::State;
    use crate::transcripts::TranscriptState;

    const TOY: Tables = Tables {
        schema: "
CREATE TABLE IF NOT EXISTS toy_scope (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    identity TEXT NOT NULL,
    compute_target TEXT NOT NULL,
    flagged INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS toy_items (
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    fail_kind TEXT,
    fail_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (a, b)
);
CREATE TABLE IF NOT EXISTS toy_dead (
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    seq INTEGER NOT NULL,
    class TEXT NOT NULL,
    reason TEXT NOT NULL,
    dead_at_ms INTEGER NOT NULL,
    retry_at_ms INTEGER,
    PRIMARY KEY (a, b)
);",
        added: &[("extra", "ALTER TABLE toy_items ADD COLUMN extra TEXT")],
        scope: "toy_scope",
        items: "toy_items",
        dead: "toy_dead",
        all: &["toy_scope", "toy_items", "toy_dead"],
        key: &["a", "b"],
    };

    type Key = (String, String);

    fn k(a: &str, b: &str) -> Key {
        (a.into(), b.into())
    }

    fn columns(db: &Connection, table: &str) -> Vec<String> {
        let mut q = db
            .prepare(&format!(
                "SELECT name FROM pragma_table_info('{table}') ORDER BY cid"
            ))
            .unwrap();
        q.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn temp_file() -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("lane-core-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        (dir.join("state.db"), dir)
    }

    /// A state file on a user's disk keeps working: both lanes' tables, in one file, have the
    /// layouts they always had.
    #[test]
    fn both_lanes_keep_their_tables_in_one_file_with_their_layouts() {
        let (path, dir) = temp_file();
        drop(State::open(&path, "ada", "t").unwrap());
        drop(TranscriptState::open(&path, "ada", "t").unwrap());
        let db = Connection::open(&path).unwrap();
        let mode: String = db
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let want: [(&str, &[&str]); 7] = [
            (
                "scope",
                &[
                    "id",
                    "identity",
                    "compute_target",
                    "cursor_us",
                    "backfilled",
                ],
            ),
            (
                "outbox",
                &[
                    "session_id",
                    "updated_us",
                    "data_revision",
                    "refs_fp",
                    "mode",
                    "not_before_ms",
                    "fail_kind",
                    "fail_count",
                ],
            ),
            (
                "acked",
                &["session_id", "updated_us", "data_revision", "refs_fp"],
            ),
            (
                "dead_letters",
                &[
                    "session_id",
                    "seq",
                    "class",
                    "reason",
                    "dead_at_ms",
                    "retry_at_ms",
                ],
            ),
            (
                "transcript_scope",
                &["id", "identity", "compute_target", "swept"],
            ),
            (
                "transcript_files",
                &[
                    "session_id",
                    "file_id",
                    "path",
                    "seen_len",
                    "seen_stamp",
                    "generation",
                    "acked_offset",
                    "check_start",
                    "check_end",
                    "check_sha",
                    "head_len",
                    "head_sha",
                    "prefix_state",
                    "known",
                    "flush_at_ms",
                    "not_before_ms",
                    "retries",
                    "fail_kind",
                    "fail_count",
                ],
            ),
            (
                "transcript_dead_letters",
                &[
                    "session_id",
                    "file_id",
                    "seq",
                    "class",
                    "reason",
                    "dead_at_ms",
                    "retry_at_ms",
                ],
            ),
        ];
        for (table, cols) in want {
            assert_eq!(columns(&db, table), cols, "{table}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_from_before_a_column_was_added_gets_it_and_keeps_its_rows() {
        let (path, dir) = temp_file();
        {
            let db = Connection::open(&path).unwrap();
            db.execute_batch(
                "CREATE TABLE toy_items (a TEXT NOT NULL, b TEXT NOT NULL, fail_kind TEXT,
                    fail_count INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (a, b));
                 INSERT INTO toy_items (a, b, fail_count) VALUES ('s', 'f', 2);",
            )
            .unwrap();
        }
        let db = TOY.open(Some(&path)).unwrap();
        assert_eq!(
            columns(&db, "toy_items"),
            ["a", "b", "fail_kind", "fail_count", "extra"]
        );
        assert_eq!(TOY.budget_of(&db, &["s", "f"]).unwrap(), Some((None, 2)));
        drop(db);
        // Opened again: the column is there, nothing is added twice.
        let db = TOY.open(Some(&path)).unwrap();
        assert_eq!(columns(&db, "toy_items").len(), 5);
        drop(db);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn another_scope_clears_every_table_and_says_it_replaced_one() {
        let mut db = TOY.open(None).unwrap();
        assert!(
            !TOY.bind(&mut db, "ada", "t").unwrap(),
            "nothing stored yet"
        );
        assert!(!TOY.flag(&db, "flagged").unwrap());
        db.execute("INSERT INTO toy_items (a, b) VALUES ('s', 'f')", [])
            .unwrap();
        db.execute("UPDATE toy_scope SET flagged = 1", []).unwrap();
        assert!(!TOY.bind(&mut db, "ada", "t").unwrap(), "the same scope");
        assert!(TOY.flag(&db, "flagged").unwrap());
        assert!(TOY.bind(&mut db, "grace", "t").unwrap());
        assert!(!TOY.flag(&db, "flagged").unwrap());
        assert_eq!(TOY.budget_of(&db, &["s", "f"]).unwrap(), None);
        assert!(
            TOY.bind(&mut db, "grace", "other").unwrap(),
            "scoped to the target"
        );
    }

    #[test]
    fn budgets_count_consecutive_failures_of_one_kind_per_item() {
        let mut db = TOY.open(None).unwrap();
        TOY.bind(&mut db, "ada", "t").unwrap();
        assert!(
            !TOY.count_failure(&db, &["s", "f"], "x", 1).unwrap(),
            "no item"
        );
        db.execute(
            "INSERT INTO toy_items (a, b) VALUES ('s', 'f'), ('s', 'g')",
            [],
        )
        .unwrap();
        assert!(!TOY.count_failure(&db, &["s", "f"], "x", 2).unwrap());
        assert!(
            !TOY.count_failure(&db, &["s", "f"], "y", 2).unwrap(),
            "restarts"
        );
        assert!(TOY.count_failure(&db, &["s", "f"], "y", 2).unwrap());
        assert_eq!(
            TOY.budget_of(&db, &["s", "f"]).unwrap(),
            Some((Some("y".into()), 2))
        );
        assert_eq!(
            TOY.budget_of(&db, &["s", "g"]).unwrap(),
            Some((None, 0)),
            "per item"
        );
        let evicted: Vec<Key> = TOY
            .dead_letter(&db, &["s", "f"], Class::Transient, "y", 0, Some(10))
            .unwrap();
        assert!(evicted.is_empty());
        assert_eq!(
            TOY.budget_of(&db, &["s", "f"]).unwrap(),
            Some((None, 0)),
            "a dead letter's budget starts again"
        );
    }

    #[test]
    fn the_dead_letter_set_is_ordered_bounded_and_released_by_class() {
        let db = TOY.open(None).unwrap();
        let mut evicted: Vec<Key> = Vec::new();
        for n in 0..=MAX_DEAD_LETTERS {
            let b = format!("f{n:04}");
            let (class, at) = match n % 2 {
                0 => (Class::Transient, Some(n as i64)),
                _ => (Class::Deterministic, None),
            };
            evicted.extend(TOY.dead_letter(&db, &["s", &b], class, "r", 0, at).unwrap());
        }
        assert_eq!(evicted, [k("s", "f0000")], "the oldest goes");
        // Dead-lettered again: the newest.
        let again: Vec<Key> = TOY
            .dead_letter(&db, &["s", "f0001"], Class::Transient, "q", 1, Some(3))
            .unwrap();
        assert!(again.is_empty());
        let set: Vec<DeadRow<Key>> = TOY.dead_letters(&db).unwrap();
        assert_eq!(set.len(), MAX_DEAD_LETTERS);
        assert_eq!(set[0].key, k("s", "f0002"));
        let last = set.last().unwrap();
        assert_eq!(
            (&last.key, last.class.as_str(), last.reason.as_str()),
            (&k("s", "f0001"), "transient", "q")
        );
        let mut due: Vec<Key> = TOY.release(&db, Release::Due(4)).unwrap();
        due.sort();
        assert_eq!(due, [k("s", "f0001"), k("s", "f0002"), k("s", "f0004")]);
        let det: Vec<Key> = TOY.release(&db, Release::Deterministic).unwrap();
        assert_eq!(det.len(), MAX_DEAD_LETTERS / 2 - 1);
        TOY.forget(&db, &["s", "f0006"]).unwrap();
        let every: Vec<Key> = TOY.release(&db, Release::Every).unwrap();
        assert_eq!(every.len(), MAX_DEAD_LETTERS / 2 - 3);
        assert!(TOY.dead_letters::<Key>(&db).unwrap().is_empty());
    }
}
