//! What one transcript request came to, and what the lane does about it.
//!
//! Contract, "Client rules" (spec, "Retries, backoff, and dead-lettering", the metadata lane's
//! thresholds as the model): the lane climbs an exponential ladder off each file's retry count
//! (1 s doubling to 5 minutes, [`backoff`]); it tracks failures per file; after 3 consecutive
//! timeouts or validation refusals, or 5 consecutive rate limits, server failures or transport
//! errors, the file is dead-lettered. `401` and `target_not_owned` are never counted. Contract,
//! "The acknowledged offset is the truth": after a timeout, a 5xx or a lost answer the client asks
//! for the file's state before sending again ([`Effect::reask`]); `409 offset_mismatch` carries
//! the server's state, which the lane adopts ([`Failure::OffsetMismatch`]). Contract,
//! "Refusals": every `400` and `413` of the lane carries a code ([`Refusal`]), and its remedy
//! decides: bytes damaged on the way are sent again at once, a segment over the caps is cut again
//! under a fresh hello-ack's caps, anything else is set aside at once (deterministic: the same
//! request would be refused again). A `400` or `413` without a code we know (an older server)
//! is counted against the validation budget, as before.
//!
//! What the two lanes read alike (the status and a 403's code, the lane-wide [`LaneEffect`], the
//! budgets' numbers, the doubling window) is the shared core's (`lane_core`).
//!
//! [`Failure::effect`] is pure, so the whole table is tested at once.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use syncplane_contract::code;
use syncplane_contract::transcripts::code as tcode;
use syncplane_contract::transcripts::{Refusal, Remedy};

use crate::answer::RetryAfter;
pub use crate::lane_core::verdict::LaneEffect;
use crate::lane_core::verdict::{
    RATE_LIMIT_BUDGET, SERVER_FAILURE_BUDGET, TIMEOUT_BUDGET, TRANSPORT_ERROR_BUDGET,
    VALIDATION_BUDGET, Verdict, verdict,
};
use crate::lane_core::waits::doubling;

/// A file's state as the server keeps it (`GET .../state`, `complete`, a 409's `data`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileState {
    pub generation: u32,
    pub acked_offset: u64,
}

/// A request that did not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// `401`, or no token to send.
    Unauthenticated,
    /// `403 target_not_owned` (or a 403 without a code on a lane route).
    TargetNotOwned,
    /// `403 feature_disabled`: the org's sync policy is off.
    FeatureDisabled,
    /// `403 transcripts_disabled`: the transcript gate is off.
    TranscriptsDisabled,
    /// `429`, with its `Retry-After`.
    RateLimited(Option<RetryAfter>),
    /// `400` or `413`: the server refused what was sent, and why when it said so in a code this
    /// client knows.
    Refused {
        status: u16,
        refusal: Option<Refusal>,
    },
    /// `409 offset_mismatch`: the server's state.
    OffsetMismatch(FileState),
    /// `409 upload_missing`: nothing stored under the intent's key yet.
    UploadMissing,
    /// `410 upload_expired`.
    UploadExpired,
    /// The upload URL was refused (a presigned `403`, expired or altered; a direct `404`).
    UploadRefused,
    /// Any other answer: a 5xx (`store_unavailable` included), an unexpected status, a 2xx that
    /// cannot be read.
    ServerFailure(u16),
    /// The device's own deadline.
    Timeout,
    /// Refused, reset, dropped: no answer.
    TransportError,
}

/// The budgeted kinds (consecutive failures of one kind per file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Timeout,
    Validation,
    RateLimited,
    ServerFailure,
    TransportError,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::Validation => "validation",
            Self::RateLimited => "rate_limited",
            Self::ServerFailure => "server_failure",
            Self::TransportError => "transport_error",
        }
    }

    /// Consecutive failures before the file is dead-lettered.
    pub fn limit(self) -> u32 {
        match self {
            Self::Timeout => TIMEOUT_BUDGET,
            Self::Validation => VALIDATION_BUDGET,
            Self::RateLimited => RATE_LIMIT_BUDGET,
            Self::ServerFailure => SERVER_FAILURE_BUDGET,
            Self::TransportError => TRANSPORT_ERROR_BUDGET,
        }
    }
}

/// What one failure does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    pub budget: Option<Kind>,
    /// Ask the server's state before sending again (the request may have committed).
    pub reask: bool,
    /// Ask a new intent at once (the upload URL or intent is spent, or the bytes were damaged
    /// on the way), not counted.
    pub reintent: bool,
    /// Ask the hello-ack again before staging: the segment was over the server's caps.
    pub recut: bool,
    /// Set the file aside at once (deterministic: the same request would be refused again).
    pub set_aside: bool,
    pub lane: LaneEffect,
}

const NOTHING: Effect = Effect {
    budget: None,
    reask: false,
    reintent: false,
    recut: false,
    set_aside: false,
    lane: LaneEffect::None,
};

impl Failure {
    pub fn effect(&self) -> Effect {
        let counted = |kind, reask| Effect {
            budget: Some(kind),
            reask,
            ..NOTHING
        };
        match self {
            Self::Unauthenticated => Effect {
                lane: LaneEffect::Pause,
                ..NOTHING
            },
            Self::FeatureDisabled | Self::TranscriptsDisabled => Effect {
                lane: LaneEffect::Park,
                ..NOTHING
            },
            // Not counted; the file still climbs the ladder (as every failed attempt does).
            Self::TargetNotOwned | Self::OffsetMismatch(_) => NOTHING,
            Self::UploadMissing | Self::UploadExpired | Self::UploadRefused => Effect {
                reintent: true,
                ..NOTHING
            },
            Self::RateLimited(_) => Effect {
                lane: LaneEffect::Wait,
                ..counted(Kind::RateLimited, false)
            },
            Self::Refused { refusal, .. } => match refusal.map(|r| r.remedy()) {
                Some(Remedy::SendAgain) => Effect {
                    reintent: true,
                    ..NOTHING
                },
                Some(Remedy::Recut) => Effect {
                    recut: true,
                    ..counted(Kind::Validation, false)
                },
                Some(Remedy::SetAside) => Effect {
                    set_aside: true,
                    ..NOTHING
                },
                None => counted(Kind::Validation, false),
            },
            Self::ServerFailure(_) => counted(Kind::ServerFailure, true),
            Self::Timeout => counted(Kind::Timeout, true),
            Self::TransportError => counted(Kind::TransportError, true),
        }
    }

    /// The `Retry-After` a rate limit carried.
    pub(crate) fn retry_after(&self) -> Option<RetryAfter> {
        match self {
            Self::RateLimited(retry_after) => *retry_after,
            _ => None,
        }
    }

    /// A short name for counts and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Unauthenticated => code::UNAUTHENTICATED,
            Self::TargetNotOwned => code::TARGET_NOT_OWNED,
            Self::FeatureDisabled => code::FEATURE_DISABLED,
            Self::TranscriptsDisabled => tcode::TRANSCRIPTS_DISABLED,
            Self::RateLimited(_) => code::RATE_LIMITED,
            Self::Refused {
                refusal: Some(r), ..
            } => r.code(),
            Self::Refused { refusal: None, .. } => "validation",
            Self::OffsetMismatch(_) => tcode::OFFSET_MISMATCH,
            Self::UploadMissing => tcode::UPLOAD_MISSING,
            Self::UploadExpired => tcode::UPLOAD_EXPIRED,
            Self::UploadRefused => "upload_refused",
            Self::ServerFailure(_) => "server_failure",
            Self::Timeout => "timeout",
            Self::TransportError => "transport_error",
        }
    }
}

/// Read a non-2xx answer of a lane route (not the presigned PUT) into a [`Failure`].
pub fn classify(
    status: u16,
    code: Option<&str>,
    data: Option<FileState>,
    retry_after: Option<RetryAfter>,
) -> Failure {
    match verdict(status, code) {
        Verdict::Unauthenticated => Failure::Unauthenticated,
        Verdict::FeatureDisabled => Failure::FeatureDisabled,
        Verdict::Forbidden(Some(tcode::TRANSCRIPTS_DISABLED)) => Failure::TranscriptsDisabled,
        Verdict::Forbidden(_) => Failure::TargetNotOwned,
        Verdict::RateLimited => Failure::RateLimited(retry_after),
        Verdict::Refused => Failure::Refused {
            status,
            refusal: code.and_then(Refusal::from_code),
        },
        Verdict::Success | Verdict::Other => match (status, code) {
            (409, Some(tcode::OFFSET_MISMATCH)) => match data {
                Some(state) => Failure::OffsetMismatch(state),
                None => Failure::ServerFailure(status),
            },
            (409, Some(tcode::UPLOAD_MISSING)) => Failure::UploadMissing,
            (410, _) => Failure::UploadExpired,
            _ => Failure::ServerFailure(status),
        },
    }
}

/// The first step of the ladder.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The ladder's top.
pub const LONGEST_BACKOFF: Duration = Duration::from_secs(5 * 60);

/// The wait after a file's `retries`-th consecutive failure (1 s, 2 s, 4 s, ... 5 minutes).
pub fn backoff(retries: u32) -> Duration {
    doubling(FIRST_BACKOFF, LONGEST_BACKOFF, retries.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_starts_at_1_second_doubles_and_stops_at_5_minutes() {
        let secs: Vec<u64> = (1..=12).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(backoff(0), FIRST_BACKOFF);
        assert_eq!(backoff(u32::MAX), LONGEST_BACKOFF);
    }

    #[test]
    fn every_answer_classifies_as_the_contract_says() {
        let st = FileState {
            generation: 3,
            acked_offset: 1_048_576,
        };
        let table = [
            (401, Some("unauthenticated"), Failure::Unauthenticated),
            (403, Some("feature_disabled"), Failure::FeatureDisabled),
            (
                403,
                Some("transcripts_disabled"),
                Failure::TranscriptsDisabled,
            ),
            (403, Some("target_not_owned"), Failure::TargetNotOwned),
            (403, None, Failure::TargetNotOwned),
            (429, Some("rate_limited"), Failure::RateLimited(None)),
            (400, None, validation(400)),
            (413, None, validation(413)),
            (400, Some("not_a_code_we_know"), validation(400)),
            (
                400,
                Some("checksum_mismatch"),
                Failure::Refused {
                    status: 400,
                    refusal: Some(Refusal::ChecksumMismatch),
                },
            ),
            (409, Some("offset_mismatch"), Failure::OffsetMismatch(st)),
            (409, Some("upload_missing"), Failure::UploadMissing),
            (410, Some("upload_expired"), Failure::UploadExpired),
            (503, Some("store_unavailable"), Failure::ServerFailure(503)),
            (500, None, Failure::ServerFailure(500)),
            (404, Some("not_found"), Failure::ServerFailure(404)),
        ];
        for (status, c, want) in table {
            assert_eq!(classify(status, c, Some(st), None), want, "{status} {c:?}");
        }
        assert_eq!(
            classify(409, Some("offset_mismatch"), None, None),
            Failure::ServerFailure(409),
            "a 409 without the state cannot be adopted"
        );
    }

    #[test]
    fn budgets_are_3_for_timeouts_and_validation_and_5_for_the_rest_and_401_is_never_counted() {
        let budget = |f: Failure| f.effect().budget.map(|k| (k, k.limit()));
        assert_eq!(budget(Failure::Timeout), Some((Kind::Timeout, 3)));
        assert_eq!(budget(validation(400)), Some((Kind::Validation, 3)));
        assert_eq!(
            budget(Failure::RateLimited(None)),
            Some((Kind::RateLimited, 5))
        );
        assert_eq!(
            budget(Failure::ServerFailure(503)),
            Some((Kind::ServerFailure, 5))
        );
        assert_eq!(
            budget(Failure::TransportError),
            Some((Kind::TransportError, 5))
        );
        for never in [
            Failure::Unauthenticated,
            Failure::TargetNotOwned,
            Failure::FeatureDisabled,
            Failure::TranscriptsDisabled,
            Failure::OffsetMismatch(FileState::default()),
            Failure::UploadExpired,
            Failure::UploadMissing,
            Failure::UploadRefused,
        ] {
            assert_eq!(never.effect().budget, None, "{never:?}");
        }
        assert_eq!(Failure::Unauthenticated.effect().lane, LaneEffect::Pause);
        assert_eq!(Failure::TranscriptsDisabled.effect().lane, LaneEffect::Park);
        assert_eq!(Failure::RateLimited(None).effect().lane, LaneEffect::Wait);
        // A timed-out request may have committed: the state is asked before sending again.
        for reask in [
            Failure::Timeout,
            Failure::TransportError,
            Failure::ServerFailure(500),
        ] {
            assert!(reask.effect().reask, "{reask:?}");
        }
        assert!(!validation(400).effect().reask);
        assert!(Failure::UploadRefused.effect().reintent);
    }

    fn validation(status: u16) -> Failure {
        Failure::Refused {
            status,
            refusal: None,
        }
    }

    /// Contract "Refusals": damaged bytes are sent again (not counted), a segment over the caps
    /// is cut again under a fresh hello-ack (counted: a server whose caps stay smaller than the
    /// segment sets the file aside after 3), anything else is set aside at once.
    #[test]
    fn every_refusal_code_has_its_remedy() {
        for r in Refusal::ALL {
            let e = Failure::Refused {
                status: r.status(),
                refusal: Some(r),
            }
            .effect();
            assert_eq!(
                Failure::Refused {
                    status: r.status(),
                    refusal: Some(r)
                }
                .name(),
                r.code()
            );
            match r {
                Refusal::ChecksumMismatch | Refusal::LengthMismatch => {
                    assert!(e.reintent && e.budget.is_none() && !e.set_aside, "{r:?}")
                }
                Refusal::SegmentTooLarge => {
                    assert!(e.recut && e.budget == Some(Kind::Validation) && !e.set_aside)
                }
                _ => assert!(e.set_aside && e.budget.is_none() && !e.reintent, "{r:?}"),
            }
        }
    }
}
