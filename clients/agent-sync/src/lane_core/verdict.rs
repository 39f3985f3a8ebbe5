//! What a lane route's answer says, and what a failure does to the lane, in the terms both lanes
//! share; used by the metadata lane's taxonomy ([`crate::outcome`]) and the transcript lane's
//! ([`crate::transcripts::outcome`]), which each read the rest of an answer their own way.
//!
//! Spec, "Sync error codes": the status decides, except for 403, which is ambiguous and read by
//! its code: `feature_disabled` parks the lane, any other 403 (`target_not_owned`, none at all
//! from an older server, a code this client does not know) never does. 401 pauses the lane until
//! the token works again, 429 stops it until `Retry-After` has passed, 400 and 413 are the
//! server refusing what was sent.
//!
//! Spec, "Retries, backoff, and dead-lettering": budgets count consecutive failures of one kind
//! per item (a session, a transcript file): 3 for timeouts and validation refusals, 5 for rate
//! limits, server failures and transport errors. Each lane names its kinds; the numbers are here.

use syncplane_contract::code;

/// Consecutive timeouts an item may come to before it is dead-lettered (the metadata lane's
/// `ack_timeout`, the transcript lane's request timeouts).
pub(crate) const TIMEOUT_BUDGET: u32 = 3;
/// Consecutive validation refusals (400, 413) before a dead letter.
pub(crate) const VALIDATION_BUDGET: u32 = 3;
/// Consecutive rate limits (429) before a dead letter.
pub(crate) const RATE_LIMIT_BUDGET: u32 = 5;
/// Consecutive server failures (5xx, an answer the client cannot read) before a dead letter.
pub(crate) const SERVER_FAILURE_BUDGET: u32 = 5;
/// Consecutive transport errors (no answer; the metadata lane's deadline on a connection
/// believed healthy too) before a dead letter.
pub(crate) const TRANSPORT_ERROR_BUDGET: u32 = 5;

/// What an HTTP status (and a 403's code) says, before a lane reads the rest of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict<'a> {
    /// 2xx: whether it acknowledges anything is the lane's reading of the body.
    Success,
    /// 401.
    Unauthenticated,
    /// 403 `feature_disabled`: the org's sync policy is off.
    FeatureDisabled,
    /// Any other 403, with its code: never parks the lane on its own.
    Forbidden(Option<&'a str>),
    /// 429.
    RateLimited,
    /// 400 or 413: the server refused what was sent.
    Refused,
    /// Any other status, for the lane to read.
    Other,
}

/// Read `status` (and `code`, for a 403).
pub(crate) fn verdict(status: u16, code: Option<&str>) -> Verdict<'_> {
    match status {
        200..=299 => Verdict::Success,
        401 => Verdict::Unauthenticated,
        403 if code == Some(code::FEATURE_DISABLED) => Verdict::FeatureDisabled,
        403 => Verdict::Forbidden(code),
        429 => Verdict::RateLimited,
        400 | 413 => Verdict::Refused,
        _ => Verdict::Other,
    }
}

/// What a failure does to the lane itself (both lanes').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneEffect {
    None,
    /// Paused until the token works again (the credential recovers).
    Pause,
    /// Parked as capability-off (the org's policy, or the transcript gate): probed again later.
    Park,
    /// Nothing sent before `Retry-After` (per compute target on the server).
    Wait,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_decides_but_a_403_is_read_by_its_code() {
        assert_eq!(verdict(200, None), Verdict::Success);
        assert_eq!(verdict(299, Some("x")), Verdict::Success);
        assert_eq!(verdict(401, None), Verdict::Unauthenticated);
        assert_eq!(
            verdict(403, Some("feature_disabled")),
            Verdict::FeatureDisabled
        );
        for code in [Some("target_not_owned"), None, Some("transcripts_disabled")] {
            assert_eq!(verdict(403, code), Verdict::Forbidden(code), "{code:?}");
        }
        assert_eq!(verdict(429, None), Verdict::RateLimited);
        assert_eq!(verdict(400, Some("feature_disabled")), Verdict::Refused);
        assert_eq!(verdict(413, None), Verdict::Refused);
        for status in [301, 404, 408, 409, 410, 415, 500, 503] {
            assert_eq!(verdict(status, None), Verdict::Other, "{status}");
        }
    }

    #[test]
    fn budgets_are_3_for_timeouts_and_validation_and_5_for_the_rest() {
        assert_eq!((TIMEOUT_BUDGET, VALIDATION_BUDGET), (3, 3));
        assert_eq!(
            (
                RATE_LIMIT_BUDGET,
                SERVER_FAILURE_BUDGET,
                TRANSPORT_ERROR_BUDGET
            ),
            (5, 5, 5)
        );
    }
}
