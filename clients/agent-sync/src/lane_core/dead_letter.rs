//! The dead-letter ladder: when a set-aside session comes back. Part of the core both lanes share
//! (`lane_core`): the metadata lane sets sessions aside through it, the transcript lane files.
//!
//! Spec, "Retries, backoff, and dead-lettering": a dead letter is not a grave. A transient one
//! (ack timeouts, rate limits, ingestion failures) gets a timed window that starts at 5 minutes
//! and doubles each time the same id is dead-lettered again, up to 24 hours. A deterministic one
//! (a local serialization failure, a payload still oversize after chunking) gets no window: the
//! timed pass never retries it, only a cold restart's re-backfill does. The set holds at most
//! 1,000 ids, oldest evicted first; an evicted id is forgotten, not re-uploaded. The escalation
//! counter lives in memory and starts again from the base window after a cold restart (the
//! durable outbox is what guarantees the eventual path).
//!
//! Validation rejections and thrown transport errors are budgeted too (3 and 5 consecutive) but
//! the spec puts them in neither class. This client makes them transient. A transport error is
//! the network's failure, not the payload's. A validation verdict is the server's, and it can
//! change without the payload changing (a deploy skew, a rule relaxed or fixed server-side),
//! which the device cannot tell from a defect of its own; the spec's deterministic class is
//! reserved for failures the device proves locally, where "retrying the identical payload would
//! fail identically". The doubling window bounds what a payload that is truly bad costs (one
//! attempt a day at most), while a deterministic class would hold a good session until the app
//! restarts, which on a desktop can be weeks.

use std::collections::HashMap;
use std::time::Duration;

use crate::lane_core::waits::{at, doubling};

pub const FIRST_WINDOW: Duration = Duration::from_secs(5 * 60);
pub const LONGEST_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);
/// At most this many ids are set aside at once.
pub const MAX_DEAD_LETTERS: usize = 1000;

/// Transient (timed retry) or deterministic (never by the timed pass).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Transient,
    Deterministic,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Transient => "transient",
            Self::Deterministic => "deterministic",
        }
    }
}

/// How many times each id has been dead-lettered in this process.
#[derive(Debug, Default)]
pub struct Ladder {
    strikes: HashMap<String, u32>,
}

impl Ladder {
    /// The window for dead-lettering `id` now: 5 min, 10, 20, ... capped at 24 h.
    pub fn next_window(&mut self, id: &str) -> Duration {
        let n = self.strikes.entry(id.to_owned()).or_insert(0);
        let window = doubling(FIRST_WINDOW, LONGEST_WINDOW, *n);
        *n = n.saturating_add(1);
        window
    }

    /// When `id`, dead-lettered now as `class`, comes back: `None` (deterministic: never by the
    /// timed pass), or when its next window from `now_ms` opens (transient). Both lanes set
    /// their items aside through this.
    pub(crate) fn retry_at(&mut self, id: &str, class: Class, now_ms: i64) -> Option<i64> {
        match class {
            Class::Transient => Some(at(now_ms, self.next_window(id))),
            Class::Deterministic => None,
        }
    }

    /// An acknowledged id starts from the base window again.
    pub fn forget(&mut self, id: &str) {
        self.strikes.remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_starts_at_5_minutes_doubles_per_id_and_caps_at_24_hours() {
        let mut l = Ladder::default();
        let mins: Vec<u64> = (0..12).map(|_| l.next_window("a").as_secs() / 60).collect();
        assert_eq!(
            mins,
            [5, 10, 20, 40, 80, 160, 320, 640, 1280, 1440, 1440, 1440]
        );
        assert_eq!(l.next_window("b"), FIRST_WINDOW, "per id");
        for _ in 0..100 {
            assert!(l.next_window("a") <= LONGEST_WINDOW);
        }
        l.forget("a");
        assert_eq!(l.next_window("a"), FIRST_WINDOW);
        assert_eq!(l.retry_at("c", Class::Deterministic, 7), None);
        assert_eq!(l.retry_at("c", Class::Transient, 7), Some(7 + 300_000));
        assert_eq!(l.retry_at("c", Class::Transient, 7), Some(7 + 600_000));
    }
}
