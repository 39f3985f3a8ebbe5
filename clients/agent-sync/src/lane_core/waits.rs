//! How long the lanes wait, on the lane's clock ([`crate::clock`]); used by the metadata lane
//! ([`crate::lane`]), the transcript lane ([`crate::transcripts::lane`]) and the dead-letter
//! ladder both share ([`crate::dead_letter`]).
//!
//! - [`at`]: a time that many milliseconds on, saturating (a server's `Retry-After` can be any
//!   number, and a wrapped sum would mean no wait at all);
//! - [`doubling`]: a window that starts at one length and doubles at each step up to a cap (the
//!   dead-letter ladder's 5 minutes to 24 hours, the transcript lane's 1 s to 5 minutes);
//! - [`heeded`] and [`at_least`]: spec, "Retries, backoff, and dead-lettering": a rate-limited
//!   lane sends nothing before `Retry-After` has passed, and what it held waits that long at least;
//! - [`Quiet`]: how long each lane-wide stop ([`LaneEffect`]) keeps a lane quiet, with each lane's
//!   own numbers.

use std::time::Duration;

use crate::answer::RetryAfter;
use crate::lane_core::verdict::LaneEffect;

/// `d` after `now_ms`, saturating.
pub(crate) fn at(now_ms: i64, d: Duration) -> i64 {
    now_ms.saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `first` doubled `step` times, capped at `longest`.
pub(crate) fn doubling(first: Duration, longest: Duration, step: u32) -> Duration {
    first
        .checked_mul(1u32.checked_shl(step).unwrap_or(u32::MAX))
        .unwrap_or(longest)
        .min(longest)
}

/// The `Retry-After` a failure makes the lane heed, as a delay from `now_ms`: a rate limit's
/// ([`LaneEffect::Wait`]); any other answer's is not waited for.
pub(crate) fn heeded(
    effect: LaneEffect,
    retry_after: Option<RetryAfter>,
    now_ms: i64,
) -> Option<Duration> {
    (effect == LaneEffect::Wait)
        .then_some(retry_after)
        .flatten()
        .map(|r| r.delay_from(now_ms))
}

/// An item's wait: `wait`, or longer when the server asked for longer.
pub(crate) fn at_least(wait: Duration, retry_after: Option<Duration>) -> Duration {
    retry_after.map_or(wait, |r| r.max(wait))
}

/// How long a lane-wide stop keeps a lane quiet (each lane's own numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quiet {
    /// After a refused hello, and after a refused token ([`LaneEffect::Pause`]).
    pub(crate) retry_hello: Duration,
    /// Parked ([`LaneEffect::Park`]): until the capability is probed again.
    pub(crate) park_probe: Duration,
    /// Rate-limited ([`LaneEffect::Wait`]) without a `Retry-After`.
    pub(crate) rate_limit: Duration,
}

impl Quiet {
    /// How long `effect` keeps the lane quiet; `None` when it does not stop the lane.
    pub(crate) fn after(
        &self,
        effect: LaneEffect,
        retry_after: Option<Duration>,
    ) -> Option<Duration> {
        match effect {
            LaneEffect::None => None,
            LaneEffect::Pause => Some(self.retry_hello),
            LaneEffect::Park => Some(self.park_probe),
            LaneEffect::Wait => Some(retry_after.unwrap_or(self.rate_limit)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_saturate_and_windows_double_up_to_their_cap() {
        assert_eq!(at(1_000, Duration::from_secs(2)), 3_000);
        assert_eq!(at(i64::MAX - 1, Duration::from_secs(1)), i64::MAX);
        assert_eq!(at(0, Duration::MAX), i64::MAX);
        let (first, cap) = (Duration::from_secs(1), Duration::from_secs(300));
        let secs: Vec<u64> = (0..11).map(|n| doubling(first, cap, n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        for step in [31, 32, 33, u32::MAX] {
            assert_eq!(doubling(first, cap, step), cap, "{step}");
        }
    }

    #[test]
    fn only_a_rate_limit_heeds_retry_after_and_each_stop_waits_the_lanes_own_time() {
        let ra = Some(RetryAfter::Delay(Duration::from_secs(90)));
        assert_eq!(
            heeded(LaneEffect::Wait, ra, 0),
            Some(Duration::from_secs(90))
        );
        for other in [LaneEffect::None, LaneEffect::Pause, LaneEffect::Park] {
            assert_eq!(heeded(other, ra, 0), None, "{other:?}");
        }
        let s = Duration::from_secs;
        assert_eq!(at_least(s(30), Some(s(90))), s(90));
        assert_eq!(at_least(s(30), Some(s(5))), s(30));
        assert_eq!(at_least(s(30), None), s(30));
        let q = Quiet {
            retry_hello: s(1),
            park_probe: s(2),
            rate_limit: s(3),
        };
        assert_eq!(q.after(LaneEffect::None, Some(s(9))), None);
        assert_eq!(q.after(LaneEffect::Pause, Some(s(9))), Some(s(1)));
        assert_eq!(q.after(LaneEffect::Park, None), Some(s(2)));
        assert_eq!(q.after(LaneEffect::Wait, None), Some(s(3)));
        assert_eq!(q.after(LaneEffect::Wait, Some(s(9))), Some(s(9)));
    }
}
