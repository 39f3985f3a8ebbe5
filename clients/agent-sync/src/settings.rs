//! The lane's schedule: the spec's numbers, and the one setting that departs from them on purpose.
//!
//! Spec, "Cursors and eventual consistency": a tick every 5 s, an incremental pass of up to 10
//! sessions at most every 30 s, a backfill pass of 3; "Retries, backoff, and dead-lettering": a
//! deferring refusal holds a session 30 s. [`Settings::raise_pass_sizes`] (off by default) is for
//! bulk imports and benchmarks; [`Settings::sweep_every`] is a documented deviation.

use std::time::Duration;

use crate::lane_core::waits::Quiet;

/// The schedule (spec defaults).
#[derive(Debug, Clone)]
pub struct Settings {
    pub tick: Duration,
    pub incremental_every: Duration,
    pub incremental_pass: usize,
    pub backfill_pass: usize,
    /// How long a deferring rejection holds a session.
    pub defer: Duration,
    /// How often an incremental pass re-checks every acknowledged session's revision and
    /// artifact refs. The spec's default is every pass (`incremental_every`, 30 s); lengthening
    /// it, for a store too large to list whole that often, is a deviation: a changed session is
    /// then re-selected on the first pass after the interval rather than on the next one.
    pub sweep_every: Duration,
    /// How long a lane parked as capability-off waits before it tries again.
    pub park_probe: Duration,
    /// Off by default: pass sizes raised to the server's cap, passes back to back while work is due.
    pub raise_pass_sizes: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            tick: Duration::from_secs(5),
            incremental_every: Duration::from_secs(30),
            incremental_pass: 10,
            backfill_pass: 3,
            defer: Duration::from_secs(30),
            sweep_every: Duration::from_secs(30),
            park_probe: Duration::from_secs(5 * 60),
            raise_pass_sizes: false,
        }
    }
}

/// The lane's waits after a lane-wide stop: a refused hello or token and a rate limit without
/// `Retry-After` wait the deferral, a parked lane its probe.
impl From<&Settings> for Quiet {
    fn from(s: &Settings) -> Self {
        Quiet {
            retry_hello: s.defer,
            park_probe: s.park_probe,
            rate_limit: s.defer,
        }
    }
}
