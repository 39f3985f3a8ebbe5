//! The transcript lane's schedule and what it reports: [`Settings`], the hooks' [`Trigger`]s and
//! their queue ([`Hooks`]), the lane's [`TranscriptStatus`], the [`TranscriptObserver`] and the
//! [`Figures`] it keeps.
//!
//! Spec, "Hook-driven enqueue": "terminal events (session end, stop, sub-agent stop) flush
//! immediately, while ordinary activity events flush on a debounce so an in-progress session's
//! archived object stays recent without uploading on every single tool call."

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use crate::lane_core::dead_letter::Class;
use crate::lane_core::waits::Quiet;
use crate::transcripts::segment::DEFAULT_TARGET_SOURCE;
use crate::transcripts::source::TranscriptFile;

/// Why a file is flushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Session end, stop, sub-agent stop: flush now.
    Terminal,
    /// Any other activity: flush after the debounce.
    Activity,
}

/// The lane's schedule.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How often [`TranscriptLane::run`] ticks when nothing is due sooner.
    pub tick: Duration,
    /// The full-discovery sweep's period (the first sweep is the backfill).
    pub sweep_every: Duration,
    /// How long an activity hook's file waits before it is flushed.
    pub debounce: Duration,
    /// The source bytes a segment aims at (the contract's caps bound it anyway).
    pub target_segment_bytes: usize,
    /// How long after a refused hello (or a paused lane) the lane asks again.
    pub retry_hello: Duration,
    /// How long a parked lane (policy or gate off) or an idle one (no lane on the server) waits
    /// before it asks again.
    pub park_probe: Duration,
    /// Files flushed per tick at most, and segments sent per tick at most.
    pub files_per_tick: usize,
    pub segments_per_tick: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            tick: Duration::from_secs(1),
            sweep_every: Duration::from_secs(60),
            debounce: Duration::from_secs(10),
            target_segment_bytes: DEFAULT_TARGET_SOURCE,
            retry_hello: Duration::from_secs(30),
            park_probe: Duration::from_secs(5 * 60),
            files_per_tick: 16,
            segments_per_tick: 64,
        }
    }
}

/// The lane's waits after a lane-wide stop: a refused hello or token waits `retry_hello`, a
/// parked lane its probe, a rate limit without `Retry-After` one second.
impl From<&Settings> for Quiet {
    fn from(s: &Settings) -> Self {
        Quiet {
            retry_hello: s.retry_hello,
            park_probe: s.park_probe,
            rate_limit: Duration::from_secs(1),
        }
    }
}

/// Running; idle (the server has no transcript lane); paused (token refused); parked (the org's
/// policy or the transcript gate is off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TranscriptStatus {
    Running,
    Idle,
    Paused,
    Parked,
}

/// Observability hooks.
pub trait TranscriptObserver: Send + Sync {
    /// A segment acknowledged: its source, redacted and compressed sizes.
    fn segment_sent(&self, _file: &TranscriptFile, _source: u64, _decoded: u64, _compressed: u64) {}
    /// Secrets redacted by `rule` in an acknowledged segment.
    fn redacted(&self, _rule: &'static str, _count: usize) {}
    /// A file set aside.
    fn set_aside(&self, _file: &TranscriptFile, _class: Class, _reason: &str) {}
    /// A request that failed, by name.
    fn failure(&self, _name: &'static str) {}
}

/// What the lane did since it started.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub segments: u64,
    pub source_bytes: u64,
    pub decoded_bytes: u64,
    pub compressed_bytes: u64,
    pub generations_started: u64,
    pub set_aside: u64,
    pub redactions: BTreeMap<&'static str, u64>,
    pub failures: BTreeMap<&'static str, u64>,
}

/// What one tick did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TickReport {
    pub files: usize,
    pub segments: usize,
    /// More work is due now (the tick's budget ran out).
    pub more_due: bool,
}

/// Hooks enqueued from other tasks, taken by [`TranscriptLane::run`] (clones share them).
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    queue: Arc<Mutex<Vec<(TranscriptFile, Trigger)>>>,
    wake: Arc<tokio::sync::Notify>,
}

impl Hooks {
    /// Enqueue `file`: a terminal trigger wakes the lane at once.
    pub fn enqueue(&self, file: TranscriptFile, trigger: Trigger) {
        match self.queue.lock() {
            Ok(mut q) => q.push((file, trigger)),
            Err(p) => p.into_inner().push((file, trigger)),
        }
        if trigger == Trigger::Terminal {
            self.wake.notify_one();
        }
    }

    pub(crate) fn waker(&self) -> Arc<tokio::sync::Notify> {
        self.wake.clone()
    }

    pub(crate) fn take(&self) -> Vec<(TranscriptFile, Trigger)> {
        match self.queue.lock() {
            Ok(mut q) => std::mem::take(&mut *q),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        }
    }
}
