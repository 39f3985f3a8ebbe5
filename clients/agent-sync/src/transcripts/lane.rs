//! The transcript lane: discovery, hooks, and each file's segments up to its end, on a schedule of
//! its own.
//!
//! Spec, "Two independent lanes": "The two run on their own tickers with their own queues and
//! backoff": this lane has its own [`TranscriptLane::tick`] and [`TranscriptLane::run`], its own
//! queue (the due files of [`TranscriptState`]), its own ladder and dead letters, its own HTTP
//! client; it shares the device token only, so a transcript upload that fails or is throttled
//! never touches the metadata lane, and the reverse.
//!
//! Spec, "Cursors and eventual consistency": "The transcript lane runs its own periodic
//! full-discovery sweep … on first connect, that sweep is the historical backfill"
//! ([`Settings::sweep_every`]). "Hook-driven enqueue": "terminal events (session end, stop,
//! sub-agent stop) flush immediately, while ordinary activity events flush on a debounce"
//! ([`Trigger`], [`Settings::debounce`]: the first activity of a quiet file schedules it that far
//! ahead and later activity does not push it back, so an active session's archive is at most one
//! debounce behind without an upload per tool call).
//!
//! Spec, "Retries, backoff, and dead-lettering" and the contract's "Client rules": an
//! exponential ladder off each file's retry count, failures per file, dead letters per file
//! ([`crate::transcripts::outcome`]); transient dead letters come back after 5 minutes doubling
//! to 24 hours ([`Ladder`]), deterministic ones (a line over the cap, an unreadable file) only on
//! a cold restart ([`TranscriptLane::new`]). "The acknowledged offset is the truth": after a lost
//! answer the lane asks the server's state before sending again, and a `409 offset_mismatch`
//! makes it adopt the server's state and go on from there. A file that shrank, or whose last
//! acknowledged segment's source bytes (or first 64 KiB) changed, starts a new generation at 0.

use std::io::ErrorKind;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::lane_core::dead_letter::{Class, Ladder};
use crate::lane_core::waits::{Quiet, at, at_least, heeded};
use crate::redact::Redactor;
use crate::transcripts::outcome::{Failure, FileState, LaneEffect, backoff};
use crate::transcripts::schedule::{
    Figures, Hooks, Settings, TickReport, TranscriptObserver, TranscriptStatus, Trigger,
};
use crate::transcripts::segment::{Caps, Segment, SegmentError, stage_after};
use crate::transcripts::source::{TranscriptFile, TranscriptSource};
use crate::transcripts::state::{LockKind, Progress, StateError, TranscriptState};
use crate::transcripts::transport::{Api, FileRef, Hello, IntentRequest, TranscriptTransport};
use crate::transcripts::verify;

#[derive(Debug, thiserror::Error)]
pub enum LaneError {
    #[error(transparent)]
    State(#[from] StateError),
}

/// How flushing one file ended.
enum Flushed {
    /// The file is caught up, set aside, backing off, or out of this tick's budget.
    Done,
    /// The lane stops sending (paused, parked, or waiting out a `Retry-After`).
    StopLane,
}

pub struct TranscriptLane<S: TranscriptSource, A: Api = TranscriptTransport> {
    source: S,
    state: TranscriptState,
    api: A,
    clock: Arc<dyn Clock>,
    settings: Settings,
    target: String,
    redactor: Redactor,
    hello: Option<Hello>,
    status: TranscriptStatus,
    said_idle: bool,
    quiet_until_ms: i64,
    next_sweep_ms: i64,
    segments_left: usize,
    ladder: Ladder,
    hooks: Hooks,
    figures: Figures,
    observer: Option<Box<dyn TranscriptObserver>>,
}

/// How long a terminal hook waits for another process's upload lock on the state file.
const UPLOAD_LOCK_WAIT: Duration = Duration::from_secs(10);
/// How often a held lock (or a due time to come) is looked at again.
const LOCK_POLL: Duration = Duration::from_millis(50);

fn key(session_id: &str, file_id: &str) -> String {
    format!("{session_id}\u{0}{file_id}")
}

impl<S: TranscriptSource, A: Api> TranscriptLane<S, A> {
    /// A lane over `source` for `target`. Over a state opened plainly this is a cold start: files
    /// set aside deterministically are due again. A hook's process joins the app's lane instead
    /// ([`TranscriptState::joining`]): no cold start, so what was set aside stays aside.
    pub fn new(
        source: S,
        state: TranscriptState,
        api: A,
        clock: Arc<dyn Clock>,
        settings: Settings,
        target: &str,
    ) -> Result<Self, LaneError> {
        let cold = !state.is_joined();
        let mut lane = Self {
            source,
            state,
            api,
            clock,
            settings,
            target: target.to_owned(),
            redactor: Redactor::new(),
            hello: None,
            status: TranscriptStatus::Running,
            said_idle: false,
            quiet_until_ms: i64::MIN,
            next_sweep_ms: i64::MIN,
            segments_left: 0,
            ladder: Ladder::default(),
            hooks: Hooks::default(),
            figures: Figures::default(),
            observer: None,
        };
        if cold {
            lane.state.release_deterministic(lane.clock.now_ms())?;
        }
        Ok(lane)
    }

    pub fn with_observer(mut self, observer: Box<dyn TranscriptObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    pub fn status(&self) -> TranscriptStatus {
        self.status
    }

    pub fn state(&self) -> &TranscriptState {
        &self.state
    }

    pub fn source(&self) -> &S {
        &self.source
    }

    pub fn api(&self) -> &A {
        &self.api
    }

    pub fn figures(&self) -> &Figures {
        &self.figures
    }

    /// A handle other tasks enqueue hooks through while [`Self::run`] runs.
    pub fn hooks(&self) -> Hooks {
        self.hooks.clone()
    }

    /// Enqueue `file` (a hook): terminal triggers make it due now, activity after the debounce.
    pub fn enqueue(&mut self, file: &TranscriptFile, trigger: Trigger) -> Result<(), LaneError> {
        let now = self.clock.now_ms();
        let when = match trigger {
            Trigger::Terminal => now,
            Trigger::Activity => at(now, self.settings.debounce),
        };
        self.state.schedule(file, when)?;
        Ok(())
    }

    /// Whether the backfill ran and every file is acknowledged or set aside.
    pub fn drained(&self) -> Result<bool, LaneError> {
        Ok(self.state.swept()? && self.state.pending_count()? == 0)
    }

    /// Tick forever: after each tick, sleep the tick (or until a terminal hook wakes the lane).
    pub async fn run(&mut self) -> Result<(), LaneError> {
        loop {
            let r = self.tick().await?;
            if !r.more_due {
                let wake = self.hooks.waker();
                tokio::select! {
                    _ = tokio::time::sleep(self.settings.tick) => {}
                    _ = wake.notified() => {}
                }
            }
        }
    }

    /// Tick until every file is acknowledged or set aside, or the lane stops (idle, paused,
    /// parked); returns the status it ended in.
    pub async fn run_until_drained(&mut self) -> Result<TranscriptStatus, LaneError> {
        loop {
            let r = self.tick().await?;
            if self.status != TranscriptStatus::Running || self.drained()? {
                return Ok(self.status);
            }
            if !r.more_due {
                tokio::time::sleep(self.settings.tick).await;
            }
        }
    }

    /// One tick: hooks, hello if needed, the sweep when due, the timed recovery pass, and the
    /// due files.
    pub async fn tick(&mut self) -> Result<TickReport, LaneError> {
        for (file, trigger) in self.hooks.take() {
            self.enqueue(&file, trigger)?;
        }
        let now = self.clock.now_ms();
        if now < self.quiet_until_ms || !self.ready(now).await? {
            return Ok(TickReport::default());
        }
        if !self.state.swept()? || now >= self.next_sweep_ms {
            self.next_sweep_ms = at(now, self.settings.sweep_every);
            match self.source.discover() {
                Ok(files) => {
                    let due = self.state.observe(&files, now)?;
                    tracing::debug!(files = files.len(), due, "transcript sweep");
                }
                Err(e) => tracing::warn!(error = %e, "transcript discovery failed; next sweep"),
            }
        }
        self.state.recover_due(now)?;
        self.send_due(now).await
    }

    /// The due files' segments, under the state file's upload lock: while another process (a
    /// hook's flusher, a terminal hook, another lane) sends from it, nothing is sent here and the
    /// next tick tries again.
    async fn send_due(&mut self, now: i64) -> Result<TickReport, LaneError> {
        let Some(_upload) = self.state.try_lock(LockKind::Upload)? else {
            tracing::debug!("another process is sending from this state file: next tick");
            return Ok(TickReport::default());
        };
        let mut report = TickReport::default();
        self.segments_left = self.settings.segments_per_tick;
        for p in self.state.due(now, self.settings.files_per_tick)? {
            report.files += 1;
            let before = self.figures.segments;
            let end = self.flush(p, now).await?;
            report.segments += (self.figures.segments - before) as usize;
            if matches!(end, Flushed::StopLane) {
                return Ok(report);
            }
        }
        report.more_due = !self.state.due(now, 1)?.is_empty();
        Ok(report)
    }

    /// Flush one file now (a terminal hook run as its own process): its segments until it is
    /// caught up, set aside, backing off, or the lane stops; no sweep. Returns whether the file
    /// is still pending (due, or backing off) and the lane's status.
    pub async fn flush_now(
        &mut self,
        file: &TranscriptFile,
    ) -> Result<(bool, TranscriptStatus), LaneError> {
        let now = self.clock.now_ms();
        self.state.schedule(file, now)?;
        if !self.ready(now).await? {
            return Ok((true, self.status));
        }
        // Another process sending from this state file is waited for a while; past that, the
        // file is due now and that process (a lane, or a hook's flusher) sends it.
        let mut waited = Duration::ZERO;
        let _upload = loop {
            match self.state.try_lock(LockKind::Upload)? {
                Some(guard) => break guard,
                None if waited < UPLOAD_LOCK_WAIT => {
                    tokio::time::sleep(LOCK_POLL).await;
                    waited += LOCK_POLL;
                }
                None => return Ok((true, self.status)),
            }
        };
        self.segments_left = usize::MAX;
        if let Some(p) = self.state.get(&file.session_id, &file.file_id)? {
            self.flush(p, now).await?;
        }
        let pending = self.state.is_pending(&file.session_id, &file.file_id)?;
        Ok((pending, self.status))
    }

    /// What a hook's background flusher does: send the files hooks made due, each when its time
    /// comes (an activity hook's debounce), without sweeping, and return when nothing is due within
    /// `idle` (a file backing off longer is left to the next hook, push or lane) or the lane
    /// stops (paused, parked, idle).
    pub async fn flush_scheduled(&mut self, idle: Duration) -> Result<TranscriptStatus, LaneError> {
        loop {
            for (file, trigger) in self.hooks.take() {
                self.enqueue(&file, trigger)?;
            }
            let now = self.clock.now_ms();
            let Some(next) = self.state.next_due_ms()? else {
                return Ok(self.status);
            };
            let next = next.max(self.quiet_until_ms);
            if next > at(now, idle) {
                return Ok(self.status);
            }
            if next > now {
                // Polled, so a hook that asks for an earlier time is seen.
                let wait = Duration::from_millis(u64::try_from(next - now).unwrap_or(0));
                tokio::time::sleep(wait.min(LOCK_POLL * 4)).await;
                continue;
            }
            if !self.ready(now).await? {
                return Ok(self.status);
            }
            self.state.recover_due(now)?;
            let report = self.send_due(now).await?;
            if self.status != TranscriptStatus::Running {
                return Ok(self.status);
            }
            if report.files == 0 {
                tokio::time::sleep(LOCK_POLL).await;
            }
        }
    }

    /// Ask hello when there is none (or the lane is not running); whether the lane may send.
    async fn ready(&mut self, now: i64) -> Result<bool, LaneError> {
        if self.hello.is_some() && self.status == TranscriptStatus::Running {
            return Ok(true);
        }
        match self.api.hello().await {
            Ok(Some(h)) => {
                if self.status != TranscriptStatus::Running {
                    tracing::info!(status = ?self.status, "transcript lane running again");
                }
                self.hello = Some(h);
                self.status = TranscriptStatus::Running;
                Ok(true)
            }
            Ok(None) => {
                if !self.said_idle {
                    tracing::warn!(
                        "the server has no transcript lane (no agentTranscriptUpload in its hello-ack): transcript lane idle"
                    );
                    self.said_idle = true;
                }
                self.status = TranscriptStatus::Idle;
                self.quiet_until_ms = at(now, self.settings.park_probe);
                Ok(false)
            }
            Err(f) => {
                self.count_failure(&f);
                if f == Failure::Unauthenticated {
                    self.status = TranscriptStatus::Paused;
                }
                self.quiet_until_ms = at(now, Quiet::from(&self.settings).retry_hello);
                Ok(false)
            }
        }
    }

    /// Send `p`'s file's segments until it is caught up, fails, or the tick's budget is spent.
    async fn flush(&mut self, mut p: Progress, now: i64) -> Result<Flushed, LaneError> {
        let file = p.file();
        let mut adopted = 0;
        // Where this flush's own last segment left the file: no rewrite check there (the
        // whole-prefix hash would read the file again after every segment).
        let mut sent_to = None;
        while self.segments_left > 0 {
            // The length before every segment: one read earlier would take a file that grew
            // while a segment was read (to its end then) for one that shrank.
            let len = match self.source.len_of(&file) {
                Ok(Some(len)) => len,
                Ok(None) => return self.gone(&file, now),
                Err(e) => return self.unreadable(&file, &e, now),
            };
            if !p.known {
                let named = FileRef {
                    compute_target_id: &self.target,
                    session_id: &p.session_id,
                    file_id: &p.file_id,
                };
                let asked = self.api.state(named).await;
                match asked {
                    Ok(st) => self.adopt(&mut p, st, len)?,
                    Err(f) => return self.failed(&mut p, f, now),
                }
            }
            let check = sent_to != Some((p.generation, p.acked_offset));
            match check.then(|| verify::rewritten(&self.source, &p, len)) {
                Some(Ok(true)) => self.new_generation(&mut p)?,
                Some(Err(e)) => return self.unreadable(&file, &e, now),
                Some(Ok(false)) | None => {}
            }
            if p.prefix_state.is_none() && p.acked_offset > 0 && p.acked_offset <= len {
                // A state file from before the prefix's state was kept: learnt once, here.
                p.prefix_state =
                    verify::prefix_state(&self.source, &file, p.acked_offset).unwrap_or_default();
            }
            if p.acked_offset >= len {
                self.state.caught_up(&p.session_id, &p.file_id, now)?;
                return Ok(Flushed::Done);
            }
            let Some(seg) = self.next_segment(&p, &file, now)? else {
                return Ok(Flushed::Done);
            };
            match self.send(&p, &seg).await {
                Ok(st) => {
                    sent_to = Some((p.generation, seg.end()));
                    self.acknowledged(&mut p, &seg, st, len)?;
                }
                Err(Failure::OffsetMismatch(st)) if adopted < 3 => {
                    adopted += 1;
                    tracing::info!(
                        session_id = p.session_id,
                        file_id = p.file_id,
                        generation = st.generation,
                        acked = st.acked_offset,
                        "offset_mismatch: the server's state adopted"
                    );
                    self.adopt(&mut p, st, len)?;
                }
                Err(f) => return self.failed(&mut p, f, now),
            }
        }
        Ok(Flushed::Done)
    }

    /// The next segment of `p`'s file, staged after its acknowledged offset; `None` when the
    /// flush is done with the file: only a line still being written (caught up), or a line over
    /// the cap or bytes that cannot be read (set aside).
    fn next_segment(
        &mut self,
        p: &Progress,
        file: &TranscriptFile,
        now: i64,
    ) -> Result<Option<Segment>, LaneError> {
        // The prefix's state, known from the first byte on (or learnt when the server's state
        // was adopted); none from a state file older than it.
        let prefix = match (p.acked_offset, p.prefix_state.as_deref()) {
            (0, _) => Some(verify::empty_prefix()),
            (_, known) => known.map(<[u8]>::to_vec),
        };
        let hello = self
            .hello
            .map(|h| (h.max_segment_decoded_bytes, h.max_segment_bytes));
        let caps = Caps::within(self.settings.target_segment_bytes, hello);
        let staged = stage_after(
            &self.source,
            file,
            p.acked_offset,
            &caps,
            &self.redactor,
            prefix.as_deref(),
        );
        match staged {
            Ok(Some(seg)) => return Ok(Some(seg)),
            // Only a line still being written: the next growth brings it.
            Ok(None) => self.state.caught_up(&p.session_id, &p.file_id, now)?,
            Err(SegmentError::LineTooLong { offset }) => {
                tracing::warn!(
                    session_id = p.session_id,
                    file_id = p.file_id,
                    offset,
                    "a line too long for one segment: transcript set aside"
                );
                self.set_aside(file, Class::Deterministic, "line_too_long", now)?;
            }
            Err(SegmentError::Io(e)) => {
                self.unreadable(file, &e, now)?;
            }
        }
        Ok(None)
    }

    /// Intent, upload, complete; a spent intent (expired, refused, nothing stored) is asked
    /// again, twice at most, then counted as a server failure.
    async fn send(&mut self, p: &Progress, seg: &Segment) -> Result<FileState, Failure> {
        let req = IntentRequest {
            compute_target_id: self.target.clone(),
            session_id: p.session_id.clone(),
            file_id: p.file_id.clone(),
            generation: p.generation,
            offset: seg.offset,
            source_bytes: seg.source_bytes,
            decoded_bytes: seg.decoded_bytes,
            compressed_bytes: seg.compressed.len() as u64,
            sha256: seg.sha256.clone(),
        };
        let mut spent = 0;
        loop {
            let attempt = async {
                let intent = self.api.intent(&req).await?;
                self.api.upload(&intent, &seg.compressed).await?;
                self.api.complete(&intent.upload_id).await
            };
            match attempt.await {
                Err(f) if f.effect().reintent => {
                    self.count_failure(&f);
                    spent += 1;
                    if spent > 2 {
                        return Err(Failure::ServerFailure(0));
                    }
                }
                other => return other,
            }
        }
    }

    /// A segment verified by the server: the file's progress moves (or the server's state is
    /// adopted when it says otherwise).
    fn acknowledged(
        &mut self,
        p: &mut Progress,
        seg: &Segment,
        st: FileState,
        len: u64,
    ) -> Result<(), LaneError> {
        self.segments_left = self.segments_left.saturating_sub(1);
        self.state.succeeded(&p.session_id, &p.file_id)?;
        self.ladder.forget(&key(&p.session_id, &p.file_id));
        self.figures.segments += 1;
        self.figures.source_bytes += seg.source_bytes;
        self.figures.decoded_bytes += seg.decoded_bytes;
        self.figures.compressed_bytes += seg.compressed.len() as u64;
        for (rule, n) in &seg.hits {
            *self.figures.redactions.entry(rule).or_insert(0) += *n as u64;
        }
        if let Some(o) = &self.observer {
            let file = p.file();
            o.segment_sent(
                &file,
                seg.source_bytes,
                seg.decoded_bytes,
                seg.compressed.len() as u64,
            );
            for (rule, n) in &seg.hits {
                o.redacted(rule, *n);
            }
        }
        if st.generation != p.generation || st.acked_offset != seg.end() {
            return self.adopt(p, st, len);
        }
        let (bytes, prefix) = (seg.offset..seg.end(), seg.prefix_state.clone());
        verify::advance(&self.source, p, bytes, &seg.source_sha256, prefix);
        self.state.save(p)?;
        Ok(())
    }

    /// Take the server's state (contract: the acknowledged offset is the truth).
    fn adopt(&mut self, p: &mut Progress, st: FileState, len: u64) -> Result<(), LaneError> {
        verify::adopt(&self.source, p, st, len);
        self.state.save(p)?;
        Ok(())
    }

    fn new_generation(&mut self, p: &mut Progress) -> Result<(), LaneError> {
        tracing::info!(
            session_id = p.session_id,
            file_id = p.file_id,
            generation = p.generation + 1,
            "transcript shrank or was rewritten: new generation"
        );
        p.generation = p.generation.max(1) + 1;
        verify::reset(p);
        self.figures.generations_started += 1;
        self.state.save(p)?;
        Ok(())
    }

    fn count_failure(&mut self, f: &Failure) {
        *self.figures.failures.entry(f.name()).or_insert(0) += 1;
        if let Some(o) = &self.observer {
            o.failure(f.name());
        }
    }

    /// Apply a failure: the lane's effect, the file's ladder and budget.
    fn failed(&mut self, p: &mut Progress, f: Failure, now: i64) -> Result<Flushed, LaneError> {
        self.count_failure(&f);
        let effect = f.effect();
        let retry_after = heeded(effect.lane, f.retry_after(), now);
        if let Some(quiet) = Quiet::from(&self.settings).after(effect.lane, retry_after) {
            self.quiet_until_ms = at(now, quiet);
        }
        match effect.lane {
            LaneEffect::Pause => {
                tracing::warn!("the device token was refused: transcript lane paused");
                self.status = TranscriptStatus::Paused;
                return Ok(Flushed::StopLane);
            }
            LaneEffect::Park => {
                tracing::warn!(
                    code = f.name(),
                    "transcripts are off for this org: lane parked"
                );
                self.status = TranscriptStatus::Parked;
                return Ok(Flushed::StopLane);
            }
            LaneEffect::Wait | LaneEffect::None => {}
        }
        if effect.set_aside {
            // Deterministic: the same segment of the same file would be refused again.
            self.set_aside(&p.file(), Class::Deterministic, f.name(), now)?;
            return Ok(Flushed::Done);
        }
        if effect.recut {
            // Over the server's caps: its hello-ack is asked again before the next staging.
            self.hello = None;
        }
        if effect.reask && p.known {
            p.known = false;
            self.state.save(p)?;
        }
        let retries = self.state.retries(&p.session_id, &p.file_id)?;
        let wait = at_least(backoff(retries.saturating_add(1)), retry_after);
        let (_, spent) =
            self.state
                .failed(&p.session_id, &p.file_id, effect.budget, at(now, wait))?;
        tracing::info!(
            session_id = p.session_id,
            file_id = p.file_id,
            failure = f.name(),
            wait_ms = wait.as_millis() as u64,
            "transcript segment not acknowledged"
        );
        if spent {
            self.set_aside(&p.file(), Class::Transient, f.name(), now)?;
        }
        Ok(if effect.lane == LaneEffect::Wait {
            Flushed::StopLane
        } else {
            Flushed::Done
        })
    }

    /// A read that failed: the file set aside, unless it is [`Self::gone`].
    fn unreadable(
        &mut self,
        file: &TranscriptFile,
        e: &std::io::Error,
        now: i64,
    ) -> Result<Flushed, LaneError> {
        if e.kind() == ErrorKind::NotFound {
            return self.gone(file, now);
        }
        tracing::warn!(session_id = file.session_id, file_id = file.file_id, error = %e,
            "transcript unreadable: set aside");
        self.set_aside(file, Class::Deterministic, "unreadable", now)?;
        Ok(Flushed::Done)
    }

    /// A file deleted (before or while it is read) is only unscheduled: its progress and
    /// witnesses stay, so a file written again under its name is checked against them (carried
    /// on, or a new generation from offset 0), never taken for the old file by adopting the
    /// server's position.
    fn gone(&mut self, file: &TranscriptFile, now: i64) -> Result<Flushed, LaneError> {
        tracing::info!(session_id = %file.session_id, file_id = %file.file_id,
            "transcript gone: unscheduled until it is written again");
        self.state.caught_up(&file.session_id, &file.file_id, now)?;
        Ok(Flushed::Done)
    }

    fn set_aside(
        &mut self,
        file: &TranscriptFile,
        class: Class,
        reason: &str,
        now: i64,
    ) -> Result<(), LaneError> {
        let k = key(&file.session_id, &file.file_id);
        let retry_at = self.ladder.retry_at(&k, class, now);
        let evicted = self.state.dead_letter(
            &file.session_id,
            &file.file_id,
            class,
            reason,
            now,
            retry_at,
        )?;
        for (s, f) in evicted {
            self.ladder.forget(&key(&s, &f));
        }
        self.figures.set_aside += 1;
        tracing::warn!(
            session_id = file.session_id,
            file_id = file.file_id,
            class = class.as_str(),
            reason,
            "transcript dead-lettered"
        );
        if let Some(o) = &self.observer {
            o.set_aside(file, class, reason);
        }
        Ok(())
    }
}
