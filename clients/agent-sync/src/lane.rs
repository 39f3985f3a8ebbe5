//! The metadata lane: discovery, passes, and what each outcome does, on a schedule.
//!
//! Spec, "Cursors and eventual consistency": the lane ticks every 5 seconds. The first run seeds
//! the whole outbox (the backfill) and persists the cursor with it; a backfill pass then carries
//! 3 sessions, because backfill payloads are the fat ones. In steady state an incremental pass
//! lists the sessions updated after the cursor and sends up to 10, at most every 30 seconds.
//! "A session whose derived data changes — a new artifact ref, a re-parse under a new data
//! revision — is re-selected on the next pass": every incremental pass (the first after a start
//! is the startup discovery sweep) also compares each acknowledged session's data revision and
//! artifact refs with the store's, so such a change goes out on the next pass even though its
//! update time did not move. [`Settings::sweep_every`] can space that re-check out for an app
//! whose store is too large to list whole every 30 seconds; that is a deviation from the spec
//! (re-selection on the first pass after the interval, not the next).
//!
//! A session whose `updatedAt` cannot be read can be placed neither against the cursor nor in a
//! valid envelope: it is logged with its id, counted as `serialization_failed` and set aside as a
//! deterministic dead letter (a cold restart looks again), never dropped silently.
//!
//! Spec, "Compression and byte ceilings": the hello-ack is kept for the lane's life, but an
//! answer that contradicts it (415, 413: [`crate::transport::contradicts_hello`]) makes the lane
//! ask once more before the failure counts; when the new hello differs, the old one was at fault
//! and the sessions retry on the next tick with their budgets untouched.
//!
//! Spec, "Retries, backoff, and dead-lettering": no exponential send backoff. Ack timeouts and
//! thrown transport errors retry on the next tick; the deferring rejections hold a session 30
//! seconds; budgets dead-letter a session after its consecutive failures of one kind; the timed
//! recovery pass returns transient dead letters when their window opens; a cold start re-admits
//! the deterministic ones (the re-backfill). An `unauthenticated` answer pauses the lane with
//! every budget intact until the token recovers; `feature_disabled` parks it as capability-off
//! and it probes again later; a 429 stops sending until its `Retry-After` has passed.
//!
//! Issue 21: every failed attempt the lane will repeat is a [`Waiting`] for the observer and
//! [`Lane::waiting`] (point 8); a cold start lifts the outbox's deferral holds, so a token or
//! policy fixed between two runs is found at once, the durable budgets still bounding restarts
//! (point 10).
//!
//! The schedule's numbers are the spec's defaults ([`Settings::default`]). One setting, off by
//! default, raises the pass sizes to the server's per-batch cap and lets a pass follow the last
//! at once while work is due (bulk imports, benchmarks).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crate::answer::Answer;
use crate::chunker::{self, Envelope, Mode, Unsendable};
use crate::clock::Clock;
use crate::lane_core::dead_letter::{Class, Ladder};
use crate::lane_core::waits::{Quiet, at, at_least, heeded};
pub use crate::network::Network;
pub use crate::observe::Observer;
use crate::observe::{Failed, Request, Waiting};
use crate::outcome::{Effect, LaneEffect, Outcome, classify};
use crate::session::{LocalSession, SessionMeta};
pub use crate::settings::Settings;
use crate::state::{Pending, State, StateError};
use crate::store::{SessionStore, StoreError};
use crate::transport::{HELLO_PATH, HelloAck, SYNC_PATH, Transport, contradicts_hello};

/// How often a refusal may be put down to a hello that changed (not counted against budgets).
const HELLO_FORGIVE_EVERY_MS: i64 = 5 * 60 * 1000;

/// Running, paused (credential lost) or parked (capability off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneStatus {
    Running,
    /// `unauthenticated`: waits for a working token, budgets intact.
    Paused,
    /// `feature_disabled`: the org or the service switched the capability off.
    Parked,
}

#[derive(Debug, thiserror::Error)]
pub enum LaneError {
    #[error(transparent)]
    State(#[from] StateError),
}

/// What one tick did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TickReport {
    pub envelopes: usize,
    pub acked: usize,
    /// A pass was full and more work is due now.
    pub more_due: bool,
}

/// What sending one envelope came to, for the rest of the pass.
enum Sent {
    /// Acknowledged: this many sessions are done; the pass goes on.
    Acked(usize),
    /// Not acknowledged: the pass ends here.
    Stopped,
}

/// The outbox row a sent session came from.
fn row_of<'r>(rows: &'r [Pending], session_id: &str) -> Option<&'r Pending> {
    rows.iter().find(|r| r.session_id == session_id)
}

pub struct Lane<S: SessionStore> {
    store: S,
    state: State,
    transport: Transport,
    clock: Arc<dyn Clock>,
    settings: Settings,
    target: String,
    network: Network,
    was_online: bool,
    ladder: Ladder,
    hello: Option<HelloAck>,
    status: LaneStatus,
    /// Nothing is sent before this (pause, park, Retry-After, a failed hello).
    quiet_until_ms: i64,
    next_incremental_ms: i64,
    next_sweep_ms: i64,
    /// When a refusal was last put down to a changed hello rather than to the sessions.
    hello_forgiven_ms: i64,
    counts: BTreeMap<Outcome, u64>,
    observer: Option<Box<dyn Observer>>,
    /// The attempt that last failed, until its request succeeds.
    waiting: Option<Waiting>,
}

impl<S: SessionStore> Lane<S> {
    /// A lane over `store` for `target`. This is a cold start: deterministic dead letters are
    /// re-admitted (the spec's cold-restart re-backfill).
    pub fn new(
        store: S,
        mut state: State,
        transport: Transport,
        clock: Arc<dyn Clock>,
        settings: Settings,
        target: &str,
    ) -> Result<Self, LaneError> {
        state.release_deterministic()?;
        state.lift_holds()?;
        Ok(Self {
            store,
            state,
            transport,
            clock,
            settings,
            target: target.to_owned(),
            network: Network::default(),
            was_online: true,
            ladder: Ladder::default(),
            hello: None,
            status: LaneStatus::Running,
            quiet_until_ms: i64::MIN,
            next_incremental_ms: i64::MIN,
            next_sweep_ms: i64::MIN,
            hello_forgiven_ms: i64::MIN,
            counts: BTreeMap::new(),
            observer: None,
            waiting: None,
        })
    }

    pub fn with_observer(mut self, observer: Box<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The handle the app's network monitor sets.
    pub fn network(&self) -> Network {
        self.network.clone()
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    pub fn status(&self) -> LaneStatus {
        self.status
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// Sessions per outcome since the lane started (outcomes that concerned no session, such as
    /// a refused hello, are left out: [`Lane::waiting`] says those).
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        self.counts
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(o, n)| (o.name(), *n))
            .collect()
    }

    /// What the lane is waiting for: the attempt that last failed, until its request succeeds.
    pub fn waiting(&self) -> Option<&Waiting> {
        self.waiting.as_ref()
    }

    /// The hello-ack in use, once the server answered one (or `404`).
    pub fn hello(&self) -> Option<HelloAck> {
        self.hello
    }

    /// The lane's clock, now.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Whether everything discovered so far has been delivered or set aside.
    pub fn drained(&self) -> Result<bool, LaneError> {
        Ok(self.state.backfilled()? && self.state.pending_count()? == 0)
    }

    /// Tick forever on the schedule.
    pub async fn run(&mut self) -> Result<(), LaneError> {
        loop {
            self.tick_and_wait().await?;
        }
    }

    /// Tick until everything discovered has been delivered or set aside, or the lane stops
    /// (paused or parked); returns the status it ended in.
    pub async fn run_until_drained(&mut self) -> Result<LaneStatus, LaneError> {
        loop {
            self.tick_and_wait().await?;
            if self.status != LaneStatus::Running || self.drained()? {
                return Ok(self.status);
            }
        }
    }

    async fn tick_and_wait(&mut self) -> Result<(), LaneError> {
        let r = self.tick().await?;
        if let Some(pause) = self.pause_after(r) {
            tokio::time::sleep(pause).await;
        }
        Ok(())
    }

    /// The pause the schedule asks for after a tick that reported `r` (`None`: on at once).
    pub fn pause_after(&self, r: TickReport) -> Option<Duration> {
        (!(self.settings.raise_pass_sizes && r.more_due)).then_some(self.settings.tick)
    }

    fn pass_size(&self, mode: Mode) -> usize {
        match (self.settings.raise_pass_sizes, mode) {
            (true, _) => {
                self.hello
                    .map_or(chunker::Limits::default(), |h| h.limits)
                    .max_sessions_per_batch
            }
            (false, Mode::Backfill) => self.settings.backfill_pass,
            (false, Mode::Incremental) => self.settings.incremental_pass,
        }
    }

    /// One tick: hello if needed, discovery, the timed recovery pass, and at most one pass.
    pub async fn tick(&mut self) -> Result<TickReport, LaneError> {
        let now = self.clock.now_ms();
        let online = self.network.is_online();
        if !online {
            if self.was_online {
                // The device now knows: budget spent on timeouts before it noticed goes back.
                let n = self.state.hand_back(Outcome::TransportTimeout)?;
                tracing::info!(sessions = n, "offline: timeout budgets handed back");
            }
            self.was_online = false;
            return Ok(TickReport::default());
        }
        self.was_online = true;
        if now < self.quiet_until_ms {
            return Ok(TickReport::default());
        }
        if self.hello.is_none() || self.status == LaneStatus::Paused {
            match self.transport.hello().await {
                Ok(ack) => {
                    self.hello = Some(ack);
                    self.succeeded(Request::Hello);
                    if self.status == LaneStatus::Paused {
                        tracing::info!("token accepted again: lane resumed");
                        self.status = LaneStatus::Running;
                    }
                }
                Err(answer) => {
                    let outcome = classify(&answer);
                    self.record(outcome, 0);
                    if outcome == Outcome::Unauthenticated {
                        self.status = LaneStatus::Paused;
                    }
                    self.quiet_until_ms = at(now, Quiet::from(&self.settings).retry_hello);
                    self.failed(Request::Hello, &answer, outcome, now, self.quiet_until_ms);
                    return Ok(TickReport::default());
                }
            }
        }
        self.state.recover_due(now)?;
        let mode = if !self.state.backfilled()? {
            self.discover(now, None)?;
            Mode::Backfill
        } else if !self.state.due(now, 1, true)?.is_empty() {
            Mode::Backfill
        } else if now >= self.next_incremental_ms {
            self.next_incremental_ms = at(now, self.settings.incremental_every);
            let cursor = self.state.cursor_us()?;
            self.discover(now, cursor)?;
            Mode::Incremental
        } else {
            return Ok(TickReport::default());
        };
        self.pass(now, mode).await
    }

    /// Seed the outbox: everything (backfill) or what changed after the cursor, plus the
    /// re-check's re-selections when it is due (every incremental pass by default).
    fn discover(&mut self, now: i64, cursor_us: Option<i64>) -> Result<(), LaneError> {
        let backfill = !self.state.backfilled()?;
        // One millisecond back: ties at the cursor are caught; unchanged acked ones are skipped.
        let after = cursor_us.and_then(|us| chrono::DateTime::from_timestamp_micros(us - 1000));
        let recheck = !backfill && now >= self.next_sweep_ms;
        // The re-check compares every session, so one whole listing serves both.
        let whole = backfill || recheck;
        let listed = match self.store.listing(if whole { None } else { after }) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "session store listing failed; retried next pass");
                return Ok(());
            }
        };
        let after_cursor: Vec<SessionMeta>;
        let fresh = if recheck {
            after_cursor = listed
                .sessions
                .iter()
                .filter(|m| after.is_none_or(|a| m.updated_at > a))
                .cloned()
                .collect();
            &after_cursor
        } else {
            &listed.sessions
        };
        let seeded = self.state.seed(fresh, backfill)?;
        if seeded > 0 {
            tracing::debug!(seeded, backfill, "outbox seeded");
        }
        // Listed whatever the cursor; seeded once, then reported and set aside by the pass.
        if self.state.seed_unreadable(&listed.unreadable)? > 0 {
            tracing::debug!(
                sessions = listed.unreadable.len(),
                "sessions with an unreadable updatedAt"
            );
        }
        if recheck {
            self.next_sweep_ms = at(now, self.settings.sweep_every);
            let changed = self.state.changed_since_ack(&listed.sessions)?;
            if !changed.is_empty() {
                tracing::info!(
                    sessions = changed.len(),
                    "re-selected: revision or refs changed"
                );
                self.state.seed(&changed, false)?;
            }
        }
        Ok(())
    }

    /// Hydrate, plan and send one pass.
    async fn pass(&mut self, now: i64, mode: Mode) -> Result<TickReport, LaneError> {
        let size = self.pass_size(mode);
        let rows = self.state.due(now, size, mode == Mode::Backfill)?;
        if rows.is_empty() {
            return Ok(TickReport::default());
        }
        let full = rows.len() == size;
        let (sessions, sent_rows) = self.hydrate(rows, now)?;
        let hello = self.hello.unwrap_or(HelloAck::LEGACY);
        let plan = chunker::plan(
            &sessions,
            mode,
            &self.target,
            &hello.limits,
            hello.compression,
        );
        drop(sessions);
        for (id, why) in &plan.unsendable {
            let outcome = match why {
                Unsendable::Oversize => Outcome::Oversize,
                Unsendable::Serialization(_) => Outcome::SerializationFailed,
            };
            if let Some(row) = row_of(&sent_rows, id) {
                self.record(outcome, 1);
                self.set_aside(row, outcome, now)?;
            }
        }
        let mut report = TickReport {
            more_due: full,
            ..TickReport::default()
        };
        for envelope in &plan.envelopes {
            report.envelopes += 1;
            match self.send(envelope, &sent_rows, now).await? {
                Sent::Acked(n) => report.acked += n,
                Sent::Stopped => {
                    // The rest of the pass waits for the next tick.
                    report.more_due = false;
                    break;
                }
            }
        }
        Ok(report)
    }

    /// Load the due rows' sessions from the store: those that can be sent, with their rows. A
    /// session that is gone is forgotten; one that cannot be read is set aside; a failed load
    /// defers its row.
    fn hydrate(
        &mut self,
        rows: Vec<Pending>,
        now: i64,
    ) -> Result<(Vec<LocalSession>, Vec<Pending>), LaneError> {
        let mut sessions = Vec::with_capacity(rows.len());
        let mut sent_rows = Vec::with_capacity(rows.len());
        for row in rows {
            match self.store.load(&row.session_id) {
                Ok(Some(s)) if s.updated_instant().is_none() => {
                    // The cursor cannot place it and the server would refuse it: reported and
                    // set aside (deterministic) until it is repaired or the lane restarts.
                    tracing::warn!(
                        session_id = row.session_id,
                        updated_at = s.updated_at,
                        "updatedAt is not RFC 3339: session set aside"
                    );
                    self.record(Outcome::SerializationFailed, 1);
                    self.set_aside(&row, Outcome::SerializationFailed, now)?;
                }
                Ok(Some(s)) => {
                    sessions.push(s);
                    sent_rows.push(row);
                }
                Ok(None) => self.state.forget(&row.session_id)?,
                Err(StoreError::Unreadable { cause, .. }) => {
                    tracing::warn!(session_id = row.session_id, cause, "unreadable session");
                    self.record(Outcome::SerializationFailed, 1);
                    self.set_aside(&row, Outcome::SerializationFailed, now)?;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "session store load failed; deferred");
                    self.state
                        .defer(&[&row.session_id], at(now, self.settings.defer))?;
                }
            }
        }
        Ok((sessions, sent_rows))
    }

    /// Send one envelope and apply its outcome: an ack retires the sessions it completed; any
    /// other answer ends the pass.
    async fn send(
        &mut self,
        envelope: &Envelope,
        sent_rows: &[Pending],
        now: i64,
    ) -> Result<Sent, LaneError> {
        let answer = if self.network.is_online() {
            self.transport.post(envelope).await
        } else {
            Answer::NotReady
        };
        let outcome = classify(&answer);
        let effect = outcome.effect(self.network.is_online());
        if effect.ack {
            return self.acknowledge(envelope, sent_rows).map(Sent::Acked);
        }
        let mut seen = HashSet::new();
        let rows: Vec<&Pending> = envelope
            .items
            .iter()
            .filter(|i| seen.insert(i.session_id.as_str()))
            .filter_map(|i| row_of(sent_rows, &i.session_id))
            .collect();
        if contradicts_hello(&answer)
            && self.hello_changed().await
            && now.saturating_sub(self.hello_forgiven_ms) >= HELLO_FORGIVE_EVERY_MS
        {
            // The stale hello failed, not the sessions: re-planned next tick, budgets intact.
            // At most once per window: servers of two builds answering in turn (a rollout)
            // would otherwise change the hello at every answer and no budget would ever run.
            self.hello_forgiven_ms = now;
            self.record(outcome, rows.len());
            return Ok(Sent::Stopped);
        }
        let retry_after = heeded(effect.lane, answer.retry_after(), now);
        let next_try = self.fail(&rows, outcome, effect, retry_after, now)?;
        self.failed(Request::Sync, &answer, outcome, now, next_try);
        Ok(Sent::Stopped)
    }

    /// An acknowledged envelope: the sessions whose last chunk it carried are done. Returns how
    /// many.
    fn acknowledge(
        &mut self,
        envelope: &Envelope,
        sent_rows: &[Pending],
    ) -> Result<usize, LaneError> {
        let done: Vec<Pending> = envelope
            .items
            .iter()
            .filter(|i| i.chunk.index + 1 == i.chunk.total)
            .filter_map(|i| row_of(sent_rows, &i.session_id).cloned())
            .collect();
        self.state.ack(&done)?;
        for p in &done {
            self.ladder.forget(&p.session_id);
        }
        self.record(Outcome::Synced, done.len());
        self.succeeded(Request::Sync);
        if self.status == LaneStatus::Parked {
            tracing::info!("agent session sync is on again: lane unparked");
            self.status = LaneStatus::Running;
        }
        Ok(done.len())
    }

    /// Ask hello again after an answer that contradicted the cached one; whether it changed.
    /// Asked once per such answer (the pass ends either way), so a server that keeps refusing
    /// under an unchanged hello spends the budgets as usual instead of looping here.
    async fn hello_changed(&mut self) -> bool {
        let before = self.hello.take();
        match self.transport.hello().await {
            Ok(ack) => {
                self.hello = Some(ack);
                let changed = before != Some(ack);
                if changed {
                    tracing::info!(
                        compression = ack.compression,
                        "the server changed since its hello-ack: asked again"
                    );
                }
                changed
            }
            Err(answer) => {
                // No hello kept: the next tick asks again, as at start.
                tracing::debug!(?answer, "hello asked again and not answered");
                false
            }
        }
    }

    /// Apply a failed batch's outcome; returns when the lane tries again.
    fn fail(
        &mut self,
        rows: &[&Pending],
        outcome: Outcome,
        effect: Effect,
        retry_after: Option<Duration>,
        now: i64,
    ) -> Result<i64, LaneError> {
        self.record(outcome, rows.len());
        let ids: Vec<&str> = rows.iter().map(|r| r.session_id.as_str()).collect();
        if effect.dead_letter_now {
            for r in rows {
                self.set_aside(r, outcome, now)?;
            }
            return Ok(at(now, self.settings.tick));
        }
        let mut spent = Vec::new();
        if let Some(b) = effect.budget {
            spent = self.state.count_failure(&ids, b.kind, b.limit)?;
            for id in &spent {
                if let Some(r) = rows.iter().find(|r| &r.session_id == id) {
                    self.set_aside(r, outcome, now)?;
                }
            }
        }
        let wait = at_least(self.settings.defer, retry_after);
        if effect.defer {
            let held: Vec<&str> = ids
                .iter()
                .copied()
                .filter(|id| !spent.iter().any(|s| s == id))
                .collect();
            self.state.defer(&held, at(now, wait))?;
        }
        if let Some(quiet) = Quiet::from(&self.settings).after(effect.lane, retry_after) {
            self.quiet_until_ms = at(now, quiet);
        }
        match effect.lane {
            LaneEffect::None if effect.defer => return Ok(at(now, wait)),
            LaneEffect::None => return Ok(at(now, self.settings.tick)),
            LaneEffect::Pause => {
                tracing::warn!("the device token was refused: lane paused until it works again");
                self.status = LaneStatus::Paused;
            }
            LaneEffect::Park => {
                tracing::warn!("agent session sync is off for this org: lane parked");
                self.status = LaneStatus::Parked;
            }
            LaneEffect::Wait => {}
        }
        Ok(self.quiet_until_ms)
    }

    /// A failed attempt the lane will repeat: said to the observer and kept as [`Lane::waiting`].
    fn failed(&mut self, request: Request, answer: &Answer, outcome: Outcome, now: i64, next: i64) {
        let url = self.transport.url(match request {
            Request::Hello => HELLO_PATH,
            Request::Sync => SYNC_PATH,
        });
        let status = match answer {
            Answer::Http { status, .. } => Some(*status),
            _ => None,
        };
        let failed = Failed {
            request,
            url: &url,
            outcome,
            status,
            now_ms: now,
            next_try_ms: next,
        };
        let w = Waiting::after(self.waiting.as_ref(), failed);
        tracing::info!(waiting = %w, "attempt failed; the lane tries again");
        if let Some(o) = &self.observer {
            o.waiting(&w);
        }
        self.waiting = Some(w);
    }

    fn succeeded(&mut self, request: Request) {
        if self.waiting.as_ref().is_some_and(|w| w.request == request) {
            self.waiting = None;
        }
    }

    /// Dead-letter one session: deterministic (no window) or transient (the ladder's window).
    fn set_aside(&mut self, row: &Pending, outcome: Outcome, now: i64) -> Result<(), LaneError> {
        let class = if outcome.is_deterministic() {
            Class::Deterministic
        } else {
            Class::Transient
        };
        let retry_at = self.ladder.retry_at(&row.session_id, class, now);
        let evicted = self
            .state
            .dead_letter(row, class, outcome.name(), now, retry_at)?;
        for id in evicted {
            self.ladder.forget(&id);
        }
        tracing::warn!(
            session_id = row.session_id,
            class = class.as_str(),
            reason = outcome.name(),
            "dead-lettered"
        );
        if let Some(o) = &self.observer {
            o.dead_lettered(&row.session_id, class);
        }
        Ok(())
    }

    fn record(&mut self, outcome: Outcome, sessions: usize) {
        *self.counts.entry(outcome).or_default() += sessions as u64;
        if let Some(o) = &self.observer {
            o.outcome(outcome, sessions);
        }
    }

    /// A change of signed-in identity: everything derived from the old one is cleared.
    pub fn sign_in(&mut self, identity: &str, token: Option<String>) -> Result<(), LaneError> {
        self.state.bind(identity, &self.target)?;
        self.transport.token().set(token);
        self.ladder = Ladder::default();
        self.hello = None;
        self.waiting = None;
        self.status = LaneStatus::Running;
        self.quiet_until_ms = i64::MIN;
        self.next_incremental_ms = i64::MIN;
        self.next_sweep_ms = i64::MIN;
        Ok(())
    }
}
