//! GitHub rate limits: the snapshot every answer carries, recognising an exhausted limit, and the
//! decision to wait it out or fail at once.
//!
//! Spec "Failure handling": the client waits out a rate limit when GitHub's wait fits its budget;
//! otherwise it fails at once with the retry time.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use http::HeaderMap;

use super::message::message_mentions;

/// A secondary limit without `retry-after`: GitHub asks for "at least one minute".
pub(crate) const SECONDARY_DEFAULT_WAIT: Duration = Duration::from_secs(60);
/// Shortest wait: GitHub's clock may be ahead of ours, so "reset already passed" still waits.
const MIN_WAIT: Duration = Duration::from_millis(250);
/// Rate-limit waits one call may take before it gives up, whatever the budget.
pub(crate) const MAX_WAITS_PER_CALL: u32 = 3;

/// The last `x-ratelimit-*` headers seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    pub limit: Option<u32>,
    pub remaining: u32,
    pub used: Option<u32>,
    pub reset_at: DateTime<Utc>,
    pub resource: Option<String>,
}

impl RateLimit {
    /// Read the snapshot; `None` unless both `remaining` and `reset` are present and numeric.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Option<Self> {
        let remaining = header_u64(headers, "x-ratelimit-remaining")?;
        let reset = header_u64(headers, "x-ratelimit-reset")?;
        Some(Self {
            limit: header_u64(headers, "x-ratelimit-limit").and_then(|v| u32::try_from(v).ok()),
            remaining: u32::try_from(remaining).unwrap_or(u32::MAX),
            used: header_u64(headers, "x-ratelimit-used").and_then(|v| u32::try_from(v).ok()),
            reset_at: unix_time(reset)?,
            resource: headers
                .get("x-ratelimit-resource")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        })
    }
}

/// An exhausted limit: when GitHub allows the next request, and how long that is from now.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RateLimitHit {
    pub retry_at: DateTime<Utc>,
    pub wait: Duration,
    pub secondary: bool,
}

/// Recognise a rate-limit answer (the caller has checked the status is 403 or 429).
///
/// Secondary: a `retry-after` header or a message naming the secondary limit; wait `retry-after`
/// seconds, else until the reset when `remaining` is 0, else one minute. Primary: `remaining` is
/// 0; wait until `x-ratelimit-reset`. Anything else is an ordinary 403/429.
pub(crate) fn hit(headers: &HeaderMap, body: &[u8], now: DateTime<Utc>) -> Option<RateLimitHit> {
    let retry_after = header_u64(headers, "retry-after").map(Duration::from_secs);
    let exhausted = header_u64(headers, "x-ratelimit-remaining") == Some(0);
    let reset = header_u64(headers, "x-ratelimit-reset").and_then(unix_time);
    let secondary = retry_after.is_some() || message_mentions(body, "secondary rate limit");

    let retry_at = if let Some(after) = retry_after {
        now + TimeDelta::from_std(after).unwrap_or(TimeDelta::MAX)
    } else if exhausted {
        reset.unwrap_or_else(|| now + TimeDelta::seconds(SECONDARY_DEFAULT_WAIT.as_secs() as i64))
    } else if secondary {
        now + TimeDelta::seconds(SECONDARY_DEFAULT_WAIT.as_secs() as i64)
    } else {
        return None;
    };
    let wait = (retry_at - now)
        .to_std()
        .unwrap_or(Duration::ZERO)
        .max(MIN_WAIT);
    Some(RateLimitHit {
        retry_at,
        wait,
        secondary,
    })
}

/// Wait it out, or fail at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Wait(Duration),
    Fail,
}

/// Wait only when the whole wait (with what this call already waited) fits the budget, and the
/// call has not already waited `MAX_WAITS_PER_CALL` times.
pub(crate) fn decide(
    hit: &RateLimitHit,
    waited: Duration,
    waits: u32,
    budget: Duration,
) -> Decision {
    if waits >= MAX_WAITS_PER_CALL {
        return Decision::Fail;
    }
    match waited.checked_add(hit.wait) {
        Some(total) if total <= budget => Decision::Wait(hit.wait),
        _ => Decision::Fail,
    }
}

fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

fn unix_time(secs: u64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(i64::try_from(secs).ok()?, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    const NOW: i64 = 1_800_000_000;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(NOW, 0).unwrap()
    }

    #[test]
    fn the_snapshot_reads_every_rate_limit_header() {
        let snap = RateLimit::from_headers(&headers(&[
            ("x-ratelimit-limit", "5000"),
            ("x-ratelimit-remaining", "4990"),
            ("x-ratelimit-used", "10"),
            ("x-ratelimit-reset", "1800000100"),
            ("x-ratelimit-resource", "core"),
        ]))
        .unwrap();
        assert_eq!(snap.limit, Some(5000));
        assert_eq!(snap.remaining, 4990);
        assert_eq!(snap.used, Some(10));
        assert_eq!(snap.reset_at.timestamp(), 1_800_000_100);
        assert_eq!(snap.resource.as_deref(), Some("core"));
        assert_eq!(
            RateLimit::from_headers(&headers(&[("x-ratelimit-remaining", "1")])),
            None,
            "no reset, no snapshot"
        );
    }

    #[test]
    fn primary_exhaustion_waits_until_the_reset() {
        let h = hit(
            &headers(&[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", &(NOW + 42).to_string()),
            ]),
            br#"{"message":"API rate limit exceeded for installation ID 7"}"#,
            now(),
        )
        .unwrap();
        assert!(!h.secondary);
        assert_eq!(h.wait, Duration::from_secs(42));
        assert_eq!(h.retry_at.timestamp(), NOW + 42);
    }

    #[test]
    fn secondary_limit_waits_retry_after_else_one_minute() {
        let body = br#"{"message":"You have exceeded a secondary rate limit and have been temporarily blocked"}"#;
        let with = hit(
            &headers(&[("retry-after", "7"), ("x-ratelimit-remaining", "100")]),
            body,
            now(),
        )
        .unwrap();
        assert!(with.secondary);
        assert_eq!(with.wait, Duration::from_secs(7));
        let without = hit(&headers(&[("x-ratelimit-remaining", "100")]), body, now()).unwrap();
        assert!(without.secondary);
        assert_eq!(without.wait, Duration::from_secs(60));
        assert_eq!(without.retry_at.timestamp(), NOW + 60);
    }

    #[test]
    fn an_ordinary_forbidden_is_not_a_rate_limit() {
        assert_eq!(
            hit(
                &headers(&[("x-ratelimit-remaining", "12")]),
                br#"{"message":"Resource not accessible by integration"}"#,
                now()
            ),
            None
        );
    }

    #[test]
    fn a_reset_already_past_still_waits_a_little() {
        let h = hit(
            &headers(&[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", &(NOW - 5).to_string()),
            ]),
            b"{}",
            now(),
        )
        .unwrap();
        assert_eq!(h.wait, MIN_WAIT);
    }

    fn hit_in(secs: u64, secondary: bool) -> RateLimitHit {
        RateLimitHit {
            retry_at: now() + TimeDelta::seconds(secs as i64),
            wait: Duration::from_secs(secs),
            secondary,
        }
    }

    #[test]
    fn a_wait_that_fits_the_budget_is_taken() {
        assert_eq!(
            decide(&hit_in(1, false), Duration::ZERO, 0, Duration::from_secs(2)),
            Decision::Wait(Duration::from_secs(1))
        );
        assert_eq!(
            decide(
                &hit_in(60, true),
                Duration::ZERO,
                0,
                Duration::from_secs(60)
            ),
            Decision::Wait(Duration::from_secs(60)),
            "exactly the budget fits"
        );
    }

    #[test]
    fn a_wait_over_the_budget_fails_at_once() {
        assert_eq!(
            decide(&hit_in(3, false), Duration::ZERO, 0, Duration::from_secs(2)),
            Decision::Fail
        );
        assert_eq!(
            decide(&hit_in(60, true), Duration::ZERO, 0, Duration::from_secs(2)),
            Decision::Fail
        );
    }

    #[test]
    fn waits_already_taken_count_against_the_budget_and_are_bounded() {
        assert_eq!(
            decide(
                &hit_in(1, false),
                Duration::from_millis(1500),
                1,
                Duration::from_secs(2)
            ),
            Decision::Fail
        );
        assert_eq!(
            decide(
                &hit_in(1, false),
                Duration::ZERO,
                MAX_WAITS_PER_CALL,
                Duration::from_secs(600)
            ),
            Decision::Fail
        );
    }
}
