//! The lane's durable state in SQLite: the cursor, the per-session outbox, the dead-letter set,
//! and what was last acknowledged of each session.
//!
//! Spec, "Cursors and eventual consistency": the cursor is the highest contiguously accepted
//! update timestamp of the session store. It may sit ahead of what has been sent, because every
//! session it passed is either acknowledged or still a row of the durable outbox: seeding the
//! outbox and advancing the cursor commit together, so the initial backfill persists its cursor
//! before the first batch is acknowledged and a cold restart resumes from the outbox instead of
//! re-walking the corpus. The cursor is scoped to the compute target, and a change of signed-in
//! identity (or of target) clears it and everything derived from it.
//!
//! Spec, "Retries, backoff, and dead-lettering": an outbox row is removed only once its batch is
//! acknowledged, so a crash mid-batch re-sends the un-acked work; failures are counted per
//! session id and per kind (consecutive); a dead-lettered id keeps its outbox row (its eventual
//! path to the cloud) and is skipped until its window opens. The set is bounded at 1,000 ids,
//! oldest evicted with its row.
//!
//! What this state does as the transcript lane's does (opening the file, the identity scope, the
//! per-kind failure budget, the dead-letter set) is the shared core's (`lane_core::db`);
//! the tables are this lane's own.

use std::path::Path;

use rusqlite::{Connection, params};

use crate::lane_core::db::{Release, Tables};
use crate::lane_core::dead_letter::Class;
use crate::outcome::Outcome;
use crate::session::SessionMeta;

#[derive(Debug, thiserror::Error)]
#[error("agent state database: {0}")]
pub struct StateError(#[from] rusqlite::Error);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS scope (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    identity TEXT NOT NULL,
    compute_target TEXT NOT NULL,
    cursor_us INTEGER,
    backfilled INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS outbox (
    session_id TEXT PRIMARY KEY,
    updated_us INTEGER NOT NULL,
    data_revision TEXT NOT NULL,
    refs_fp TEXT NOT NULL,
    mode TEXT NOT NULL,
    not_before_ms INTEGER NOT NULL DEFAULT 0,
    fail_kind TEXT,
    fail_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (updated_us, session_id);
CREATE TABLE IF NOT EXISTS acked (
    session_id TEXT PRIMARY KEY,
    updated_us INTEGER NOT NULL,
    data_revision TEXT NOT NULL,
    refs_fp TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS dead_letters (
    session_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    class TEXT NOT NULL,
    reason TEXT NOT NULL,
    dead_at_ms INTEGER NOT NULL,
    retry_at_ms INTEGER
);
";

/// The lane's tables in the state file (the plumbing is the shared core's).
const TABLES: Tables = Tables {
    schema: SCHEMA,
    added: &[],
    scope: "scope",
    items: "outbox",
    dead: "dead_letters",
    all: &["scope", "outbox", "acked", "dead_letters"],
    key: &["session_id"],
};

/// One outbox row due for sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub session_id: String,
    pub updated_us: i64,
    pub data_revision: String,
    pub refs_fp: String,
    pub backfill: bool,
}

/// One id of the dead-letter set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub session_id: String,
    pub class: String,
    pub reason: String,
    /// `None`: never by the timed pass.
    pub retry_at_ms: Option<i64>,
}

pub struct State {
    db: Connection,
}

fn micros(m: &SessionMeta) -> i64 {
    m.updated_at.timestamp_micros()
}

impl State {
    /// Open (creating) the state for `identity` on `compute_target`; a different identity or
    /// target than the stored one clears everything.
    pub fn open(path: &Path, identity: &str, compute_target: &str) -> Result<Self, StateError> {
        Self::with(TABLES.open(Some(path))?, identity, compute_target)
    }

    pub fn in_memory(identity: &str, compute_target: &str) -> Result<Self, StateError> {
        Self::with(TABLES.open(None)?, identity, compute_target)
    }

    fn with(db: Connection, identity: &str, target: &str) -> Result<Self, StateError> {
        let mut s = Self { db };
        s.bind(identity, target)?;
        Ok(s)
    }

    /// Scope the state to this identity and target, clearing it when either changed.
    pub fn bind(&mut self, identity: &str, target: &str) -> Result<(), StateError> {
        if TABLES.bind(&mut self.db, identity, target)? {
            tracing::info!("signed-in identity or compute target changed: lane state cleared");
        }
        Ok(())
    }

    /// The cursor in microseconds since the epoch; `None` before the backfill seeded anything.
    pub fn cursor_us(&self) -> Result<Option<i64>, StateError> {
        Ok(self
            .db
            .query_row("SELECT cursor_us FROM scope WHERE id = 1", [], |r| r.get(0))?)
    }

    pub fn backfilled(&self) -> Result<bool, StateError> {
        Ok(TABLES.flag(&self.db, "backfilled")?)
    }

    /// Seed the outbox with `metas` and advance the cursor past them, in one transaction (the
    /// backfill also marks itself done). Sessions already acknowledged with the same update time,
    /// revision and refs are skipped. Returns how many rows were seeded.
    pub fn seed(&mut self, metas: &[SessionMeta], backfill: bool) -> Result<usize, StateError> {
        let tx = self.db.transaction()?;
        let mut seeded = 0;
        {
            let mut acked = tx.prepare_cached(
                "SELECT 1 FROM acked WHERE session_id = ?1 AND updated_us = ?2
                    AND data_revision = ?3 AND refs_fp = ?4",
            )?;
            // A changed payload starts with fresh budgets and leaves the dead-letter set.
            let mut upsert = tx.prepare_cached(
                "INSERT INTO outbox (session_id, updated_us, data_revision, refs_fp, mode)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (session_id) DO UPDATE SET
                    updated_us = excluded.updated_us, data_revision = excluded.data_revision,
                    refs_fp = excluded.refs_fp, fail_kind = NULL, fail_count = 0
                 WHERE outbox.updated_us != excluded.updated_us
                    OR outbox.data_revision != excluded.data_revision
                    OR outbox.refs_fp != excluded.refs_fp",
            )?;
            let mut undead = tx.prepare_cached("DELETE FROM dead_letters WHERE session_id = ?1")?;
            let mode = if backfill { "backfill" } else { "incremental" };
            for m in metas {
                let us = micros(m);
                let same = params![m.session_id, us, m.data_revision, m.refs_fingerprint];
                if acked.exists(same)? {
                    continue;
                }
                if upsert.execute(params![
                    m.session_id,
                    us,
                    m.data_revision,
                    m.refs_fingerprint,
                    mode
                ])? > 0
                {
                    undead.execute(params![m.session_id])?;
                    seeded += 1;
                }
            }
        }
        let newest = metas.iter().map(micros).max();
        tx.execute(
            "UPDATE scope SET cursor_us = max(coalesce(cursor_us, ?1), coalesce(?1, cursor_us)),
                              backfilled = backfilled OR ?2
              WHERE id = 1",
            params![newest, backfill],
        )?;
        tx.commit()?;
        Ok(seeded)
    }

    /// Sessions whose `updatedAt` cannot be read get an outbox row (update time 0, no revision)
    /// without moving the cursor, so the pass loads each and sets it aside with its reason; an
    /// existing row is left as it is, so a session already set aside is not reported again. The
    /// row is incremental even in the backfill, so once repaired the session goes out with the
    /// incremental pass that finds it. Returns how many rows are new.
    pub fn seed_unreadable(&mut self, ids: &[String]) -> Result<usize, StateError> {
        let tx = self.db.transaction()?;
        let mut seeded = 0;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO outbox (session_id, updated_us, data_revision, refs_fp, mode)
                 VALUES (?1, 0, '', '', 'incremental') ON CONFLICT (session_id) DO NOTHING",
            )?;
            for id in ids {
                seeded += insert.execute(params![id])?;
            }
        }
        tx.commit()?;
        Ok(seeded)
    }

    /// Sessions whose revision or artifact refs differ from what was acknowledged, and that are
    /// not already pending: re-selected (spec: derived data changed).
    pub fn changed_since_ack(&self, metas: &[SessionMeta]) -> Result<Vec<SessionMeta>, StateError> {
        let mut q = self.db.prepare_cached(
            "SELECT 1 FROM acked a WHERE a.session_id = ?1
                AND (a.data_revision != ?2 OR a.refs_fp != ?3)
                AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.session_id = ?1)",
        )?;
        let mut out = Vec::new();
        for m in metas {
            if q.exists(params![m.session_id, m.data_revision, m.refs_fingerprint])? {
                out.push(m.clone());
            }
        }
        Ok(out)
    }

    /// Up to `limit` rows due at `now_ms` (not held, not dead-lettered), oldest update first;
    /// backfill rows first when `backfill`, else incremental ones.
    pub fn due(
        &self,
        now_ms: i64,
        limit: usize,
        backfill: bool,
    ) -> Result<Vec<Pending>, StateError> {
        let mut q = self.db.prepare_cached(
            "SELECT session_id, updated_us, data_revision, refs_fp, mode FROM outbox o
              WHERE not_before_ms <= ?1 AND (mode = 'backfill') = ?2
                AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.session_id = o.session_id)
              ORDER BY updated_us, session_id LIMIT ?3",
        )?;
        let rows = q.query_map(params![now_ms, backfill, limit as i64], |r| {
            Ok(Pending {
                session_id: r.get(0)?,
                updated_us: r.get(1)?,
                data_revision: r.get(2)?,
                refs_fp: r.get(3)?,
                backfill: r.get::<_, String>(4)? == "backfill",
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Rows still to send (dead letters excluded).
    pub fn pending_count(&self) -> Result<i64, StateError> {
        Ok(self.db.query_row(
            "SELECT count(*) FROM outbox o
              WHERE NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.session_id = o.session_id)",
            [],
            |r| r.get(0),
        )?)
    }

    pub fn outbox_count(&self) -> Result<i64, StateError> {
        Ok(self
            .db
            .query_row("SELECT count(*) FROM outbox", [], |r| r.get(0))?)
    }

    /// Acknowledged: the rows go, unless the session changed while its batch was in flight.
    pub fn ack(&mut self, sent: &[Pending]) -> Result<(), StateError> {
        let tx = self.db.transaction()?;
        {
            let mut del = tx.prepare_cached(
                "DELETE FROM outbox WHERE session_id = ?1 AND updated_us = ?2
                    AND data_revision = ?3 AND refs_fp = ?4",
            )?;
            let mut rec = tx.prepare_cached(
                "INSERT INTO acked (session_id, updated_us, data_revision, refs_fp)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (session_id) DO UPDATE SET updated_us = excluded.updated_us,
                    data_revision = excluded.data_revision, refs_fp = excluded.refs_fp",
            )?;
            for p in sent {
                let row = params![p.session_id, p.updated_us, p.data_revision, p.refs_fp];
                del.execute(row)?;
                rec.execute(row)?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Hold `ids` until `until_ms`.
    pub fn defer(&mut self, ids: &[&str], until_ms: i64) -> Result<(), StateError> {
        let tx = self.db.transaction()?;
        {
            let mut q = tx.prepare_cached(
                "UPDATE outbox SET not_before_ms = max(not_before_ms, ?2) WHERE session_id = ?1",
            )?;
            for id in ids {
                q.execute(params![id, until_ms])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Count one failure of `kind` against each id (consecutive per kind); returns the ids that
    /// reached `limit`.
    pub fn count_failure(
        &mut self,
        ids: &[&str],
        kind: Outcome,
        limit: u32,
    ) -> Result<Vec<String>, StateError> {
        let tx = self.db.transaction()?;
        let mut spent = Vec::new();
        for id in ids {
            if TABLES.count_failure(&tx, &[id], kind.name(), limit)? {
                spent.push((*id).to_owned());
            }
        }
        tx.commit()?;
        Ok(spent)
    }

    /// The budget of `kind` (a timeout the device now knows was its own connection) handed back.
    pub fn hand_back(&mut self, kind: Outcome) -> Result<usize, StateError> {
        Ok(self.db.execute(
            "UPDATE outbox SET fail_kind = NULL, fail_count = 0 WHERE fail_kind = ?1",
            params![kind.name()],
        )?)
    }

    /// The budget spent by `id` so far: (kind, count).
    pub fn budget_of(&self, id: &str) -> Result<Option<(Option<String>, i64)>, StateError> {
        Ok(TABLES.budget_of(&self.db, &[id])?)
    }

    /// Set `id` aside (`retry_at_ms` `None` for a deterministic dead letter). A session with no
    /// outbox row gets one, so its eventual path survives restarts. Evicts the oldest ids beyond
    /// the bound; returns the evicted ids.
    pub fn dead_letter(
        &mut self,
        pending: &Pending,
        class: Class,
        reason: &str,
        now_ms: i64,
        retry_at_ms: Option<i64>,
    ) -> Result<Vec<String>, StateError> {
        let tx = self.db.transaction()?;
        tx.execute(
            "INSERT INTO outbox (session_id, updated_us, data_revision, refs_fp, mode)
             VALUES (?1, ?2, ?3, ?4, 'incremental') ON CONFLICT (session_id) DO NOTHING",
            params![
                pending.session_id,
                pending.updated_us,
                pending.data_revision,
                pending.refs_fp
            ],
        )?;
        let evicted: Vec<String> = TABLES.dead_letter(
            &tx,
            &[&pending.session_id],
            class,
            reason,
            now_ms,
            retry_at_ms,
        )?;
        for id in &evicted {
            // Forgotten: neither set aside nor pending.
            tx.execute("DELETE FROM outbox WHERE session_id = ?1", params![id])?;
        }
        tx.commit()?;
        Ok(evicted)
    }

    /// The timed recovery pass: transient dead letters whose window has opened go back to the
    /// outbox. Deterministic ones (no deadline) are never returned here.
    pub fn recover_due(&mut self, now_ms: i64) -> Result<Vec<String>, StateError> {
        Ok(TABLES.release(&self.db, Release::Due(now_ms))?)
    }

    /// A cold restart re-backfills what was set aside deterministically.
    pub fn release_deterministic(&mut self) -> Result<usize, StateError> {
        let released: Vec<String> = TABLES.release(&self.db, Release::Deterministic)?;
        Ok(released.len())
    }

    /// Every dead letter back to the outbox now, whatever its window (`push --retry-set-aside`,
    /// issue 21 point 10); returns how many.
    pub fn release_set_aside(&mut self) -> Result<usize, StateError> {
        let released: Vec<String> = TABLES.release(&self.db, Release::Every)?;
        Ok(released.len())
    }

    /// A cold start tries at once: the deferral holds the last run left are lifted (issue 21,
    /// point 10). Budgets are kept. Returns how many rows were held.
    pub fn lift_holds(&mut self) -> Result<usize, StateError> {
        Ok(self.db.execute(
            "UPDATE outbox SET not_before_ms = 0 WHERE not_before_ms > 0",
            [],
        )?)
    }

    pub fn dead_letters(&self) -> Result<Vec<DeadLetter>, StateError> {
        let rows = TABLES.dead_letters::<String>(&self.db)?;
        Ok(rows
            .into_iter()
            .map(|d| DeadLetter {
                session_id: d.key,
                class: d.class,
                reason: d.reason,
                retry_at_ms: d.retry_at_ms,
            })
            .collect())
    }

    /// Forget a session the store no longer has.
    pub fn forget(&mut self, id: &str) -> Result<(), StateError> {
        Ok(TABLES.forget(&self.db, &[id])?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn meta(id: &str, secs: i64, rev: &str) -> SessionMeta {
        SessionMeta {
            session_id: id.into(),
            updated_at: Utc.timestamp_opt(1_700_000_000 + secs, 0).unwrap(),
            data_revision: rev.into(),
            refs_fingerprint: "fp".into(),
        }
    }

    fn ids(p: &[Pending]) -> Vec<&str> {
        p.iter().map(|p| p.session_id.as_str()).collect()
    }

    #[test]
    fn backfill_persists_the_cursor_with_the_seed_before_any_ack() {
        let dir = std::env::temp_dir().join(format!("agent-state-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.db");
        {
            let mut s = State::open(&path, "ada", "laptop-1").unwrap();
            assert_eq!(s.cursor_us().unwrap(), None);
            s.seed(
                &[meta("a", 1, "r"), meta("b", 3, "r"), meta("c", 2, "r")],
                true,
            )
            .unwrap();
        }
        // Cold restart: the cursor and the whole outbox are there, nothing acknowledged.
        let s = State::open(&path, "ada", "laptop-1").unwrap();
        assert_eq!(
            s.cursor_us().unwrap(),
            Some(meta("b", 3, "r").updated_at.timestamp_micros())
        );
        assert!(s.backfilled().unwrap());
        assert_eq!(ids(&s.due(0, 10, true).unwrap()), ["a", "c", "b"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_cursor_never_moves_back() {
        let mut s = State::in_memory("ada", "t").unwrap();
        s.seed(&[meta("a", 10, "r")], true).unwrap();
        s.seed(&[meta("b", 5, "r")], false).unwrap();
        s.seed(&[], false).unwrap();
        assert_eq!(
            s.cursor_us().unwrap(),
            Some(meta("a", 10, "r").updated_at.timestamp_micros())
        );
    }

    #[test]
    fn a_change_of_identity_or_target_clears_the_cursor_and_everything_derived() {
        let mut s = State::in_memory("ada", "t").unwrap();
        s.seed(&[meta("a", 1, "r"), meta("b", 2, "r")], true)
            .unwrap();
        let due = s.due(0, 10, true).unwrap();
        s.ack(&due[..1]).unwrap();
        s.dead_letter(&due[1], Class::Transient, "x", 0, Some(1))
            .unwrap();
        s.bind("ada", "t").unwrap();
        assert!(s.cursor_us().unwrap().is_some(), "same scope: kept");
        s.bind("grace", "t").unwrap();
        assert_eq!(s.cursor_us().unwrap(), None);
        assert!(!s.backfilled().unwrap());
        assert_eq!(s.outbox_count().unwrap(), 0);
        assert!(s.dead_letters().unwrap().is_empty());
        assert!(
            s.changed_since_ack(&[meta("a", 1, "r2")])
                .unwrap()
                .is_empty(),
            "no acked record survives"
        );
        s.seed(&[meta("a", 1, "r")], true).unwrap();
        s.bind("grace", "other-target").unwrap();
        assert_eq!(s.cursor_us().unwrap(), None, "scoped to the compute target");
    }

    #[test]
    fn an_acked_session_is_not_reseeded_unless_it_changed() {
        let mut s = State::in_memory("ada", "t").unwrap();
        s.seed(&[meta("a", 1, "r")], true).unwrap();
        let due = s.due(0, 10, true).unwrap();
        s.ack(&due).unwrap();
        assert_eq!(s.seed(&[meta("a", 1, "r")], false).unwrap(), 0);
        assert!(
            s.changed_since_ack(&[meta("a", 1, "r")])
                .unwrap()
                .is_empty()
        );
        // Re-parsed under a new data revision without a new update time: re-selected.
        assert_eq!(s.changed_since_ack(&[meta("a", 1, "r2")]).unwrap().len(), 1);
        assert_eq!(s.seed(&[meta("a", 1, "r2")], false).unwrap(), 1);
        assert_eq!(ids(&s.due(0, 10, false).unwrap()), ["a"]);
    }

    #[test]
    fn an_unreadable_update_time_gets_one_row_that_leaves_the_cursor_alone() {
        let mut s = State::in_memory("ada", "t").unwrap();
        s.seed(&[meta("a", 5, "r")], true).unwrap();
        let cursor = s.cursor_us().unwrap();
        let bad = vec!["bad".to_owned()];
        assert_eq!(s.seed_unreadable(&bad).unwrap(), 1);
        assert_eq!(s.seed_unreadable(&bad).unwrap(), 0, "once");
        assert_eq!(s.cursor_us().unwrap(), cursor);
        let due = s.due(0, 10, false).unwrap();
        assert_eq!(ids(&due), ["bad"]);
        s.dead_letter(
            &due[0],
            Class::Deterministic,
            "serialization_failed",
            0,
            None,
        )
        .unwrap();
        assert_eq!(s.seed_unreadable(&bad).unwrap(), 0);
        assert_eq!(s.dead_letters().unwrap().len(), 1, "still set aside");
        // Repaired: a readable update time replaces the row and leaves the dead-letter set.
        assert_eq!(s.seed(&[meta("bad", 9, "r")], false).unwrap(), 1);
        assert!(s.dead_letters().unwrap().is_empty());
    }

    #[test]
    fn a_row_changed_in_flight_survives_the_ack_of_the_old_payload() {
        let mut s = State::in_memory("ada", "t").unwrap();
        s.seed(&[meta("a", 1, "r")], true).unwrap();
        let sent = s.due(0, 10, true).unwrap();
        s.seed(&[meta("a", 2, "r2")], false).unwrap();
        s.ack(&sent).unwrap();
        assert_eq!(s.outbox_count().unwrap(), 1);
    }

    #[test]
    fn failures_count_consecutively_per_kind_and_deferral_holds() {
        let mut s = State::in_memory("ada", "t").unwrap();
        s.seed(&[meta("a", 1, "r")], true).unwrap();
        assert!(
            s.count_failure(&["a"], Outcome::AckTimeout, 3)
                .unwrap()
                .is_empty()
        );
        assert!(
            s.count_failure(&["a"], Outcome::AckTimeout, 3)
                .unwrap()
                .is_empty()
        );
        // Another kind restarts the count.
        assert!(
            s.count_failure(&["a"], Outcome::Validation, 3)
                .unwrap()
                .is_empty()
        );
        assert!(
            s.count_failure(&["a"], Outcome::AckTimeout, 3)
                .unwrap()
                .is_empty()
        );
        assert!(
            s.count_failure(&["a"], Outcome::AckTimeout, 3)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            s.count_failure(&["a"], Outcome::AckTimeout, 3).unwrap(),
            ["a"]
        );
        s.defer(&["a"], 30_000).unwrap();
        assert!(s.due(29_999, 10, true).unwrap().is_empty());
        assert_eq!(s.due(30_000, 10, true).unwrap().len(), 1);
        s.count_failure(&["a"], Outcome::TransportTimeout, 5)
            .unwrap();
        assert_eq!(s.hand_back(Outcome::TransportTimeout).unwrap(), 1);
        assert_eq!(s.budget_of("a").unwrap(), Some((None, 0)));
    }

    #[test]
    fn transient_dead_letters_come_back_when_their_window_opens_and_deterministic_never() {
        let mut s = State::in_memory("ada", "t").unwrap();
        s.seed(&[meta("a", 1, "r"), meta("b", 2, "r")], true)
            .unwrap();
        let due = s.due(0, 10, true).unwrap();
        s.dead_letter(&due[0], Class::Transient, "ack_timeout", 0, Some(300_000))
            .unwrap();
        s.dead_letter(&due[1], Class::Deterministic, "oversize", 0, None)
            .unwrap();
        assert!(s.due(0, 10, true).unwrap().is_empty(), "set aside");
        assert!(s.recover_due(299_999).unwrap().is_empty());
        assert_eq!(s.recover_due(300_000).unwrap(), ["a"]);
        assert_eq!(ids(&s.due(300_000, 10, true).unwrap()), ["a"]);
        assert!(
            s.recover_due(i64::MAX).unwrap().is_empty(),
            "never by the timed pass"
        );
        assert_eq!(s.dead_letters().unwrap()[0].session_id, "b");
        assert_eq!(s.release_deterministic().unwrap(), 1, "only a cold restart");
        assert_eq!(s.due(0, 10, true).unwrap().len(), 2);
    }

    #[test]
    fn the_dead_letter_set_is_bounded_at_1000_oldest_evicted_and_forgotten() {
        let mut s = State::in_memory("ada", "t").unwrap();
        let metas: Vec<_> = (0..1002)
            .map(|i| meta(&format!("s{i:04}"), i, "r"))
            .collect();
        s.seed(&metas, true).unwrap();
        let due = s.due(0, 2000, true).unwrap();
        let mut evicted = Vec::new();
        for (i, p) in due.iter().enumerate() {
            evicted.extend(
                s.dead_letter(p, Class::Transient, "x", i as i64, Some(1_000_000))
                    .unwrap(),
            );
        }
        assert_eq!(evicted, ["s0000", "s0001"]);
        let set = s.dead_letters().unwrap();
        assert_eq!(set.len(), 1000);
        assert_eq!(set[0].session_id, "s0002");
        assert_eq!(s.outbox_count().unwrap(), 1000, "evicted ids are forgotten");
        // Re-dead-lettering an id makes it the newest.
        s.dead_letter(&due[2], Class::Transient, "x", 5000, Some(1))
            .unwrap();
        assert_eq!(
            s.dead_letters().unwrap().last().unwrap().session_id,
            "s0002"
        );
    }

    #[test]
    fn a_cold_start_lifts_the_holds_and_retry_set_aside_releases_every_dead_letter() {
        let mut s = State::in_memory("ada", "t").unwrap();
        s.seed(
            &[meta("a", 1, "r"), meta("b", 2, "r"), meta("c", 3, "r")],
            true,
        )
        .unwrap();
        s.defer(&["a"], 30_000).unwrap();
        s.count_failure(&["a"], Outcome::Validation, 3).unwrap();
        let due = s.due(0, 10, true).unwrap();
        assert_eq!(ids(&due), ["b", "c"]);
        s.dead_letter(&due[0], Class::Transient, "validation", 0, Some(300_000))
            .unwrap();
        s.dead_letter(&due[1], Class::Deterministic, "oversize", 0, None)
            .unwrap();
        assert_eq!(s.lift_holds().unwrap(), 1);
        assert_eq!(ids(&s.due(0, 10, true).unwrap()), ["a"], "held no more");
        assert_eq!(
            s.budget_of("a").unwrap(),
            Some((Some("validation".to_owned()), 1)),
            "budgets kept"
        );
        assert_eq!(s.release_set_aside().unwrap(), 2, "both classes, now");
        assert_eq!(ids(&s.due(0, 10, true).unwrap()), ["a", "b", "c"]);
    }
}
