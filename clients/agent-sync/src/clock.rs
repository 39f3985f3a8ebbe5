//! Time as the lane sees it: milliseconds since the Unix epoch, from a clock the app (or a test)
//! supplies, so the schedule, the deferral window and the dead-letter ladder can be tested
//! without waiting.
//!
//! Spec, "Cursors and eventual consistency" (the 5 s tick, a 30 s floor between incremental
//! passes) and "Retries, backoff, and dead-lettering" (the 30 s deferral, the dead-letter window
//! from 5 minutes to 24 hours): every one of those is measured on this clock, and so is a
//! `Retry-After` date. The network's own deadline is not: a request's timeout is real time.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }
}

/// A clock that moves only when told to (tests, simulations).
#[derive(Debug, Clone)]
pub struct FakeClock(Arc<AtomicI64>);

impl FakeClock {
    pub fn at(ms: i64) -> Self {
        Self(Arc::new(AtomicI64::new(ms)))
    }
    pub fn advance(&self, by: std::time::Duration) {
        self.0.fetch_add(by.as_millis() as i64, Ordering::SeqCst);
    }
}

/// A time on the lane's clock as people read it: RFC 3339 in UTC, to the second.
pub fn utc_text(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || format!("{ms} ms after the epoch"),
        |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    )
}

impl Clock for FakeClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}
