//! The error taxonomy: what one attempt came to, and what the lane does about it.
//!
//! Spec, "Sync error codes": the status decides, except for 403, which is ambiguous and read by
//! its code: `feature_disabled` parks the lane as capability-off, `target_not_owned` (and a 403
//! with no code at all, from a server older than the coded envelope) does not. 400 and 413 are
//! validation, 429 is rate-limited (the lane waits out `Retry-After`), 408 is `ack_timeout`, and
//! every other non-2xx, or anything the client cannot read (including a 2xx whose body is not
//! exactly the success body), goes the bounded ingestion-failure path. Four outcomes exist only
//! on the client: `transport_timeout` (the device's own deadline), `unauthenticated` (a missing or
//! rejected token: the lane pauses with every budget intact), `transport_unavailable` (never
//! sent, so never counted). A dropped connection is a thrown transport error with a budget of 5
//! consecutive; a local serialization failure dead-letters at once.
//!
//! Spec, "Retries, backoff, and dead-lettering": budgets count consecutive failures of one kind
//! per session id (3 for ack timeouts and validation, 5 for rate limits, ingestion failures and
//! transport errors); the deferring rejections hold a session 30 s, ack timeouts and thrown
//! transport errors retry on the next tick; authentication and ownership failures and an unready
//! transport are never budgeted. A timeout while the device knows it is offline is not counted
//! (spec: "an abort taken while the device already knows it has lost the connection defers with
//! its budget untouched"); a timeout on a connection believed healthy counts, bounded like the
//! other transport errors.
//!
//! What the two lanes read alike (the status and a 403's code, the lane-wide [`LaneEffect`], the
//! budgets' numbers) is the shared core's (`lane_core::verdict`).
//!
//! [`classify`] and [`Outcome::effect`] are pure, so the whole table is tested at once.

use crate::answer::Answer;
pub use crate::lane_core::verdict::LaneEffect;
use crate::lane_core::verdict::{
    RATE_LIMIT_BUDGET, SERVER_FAILURE_BUDGET, TIMEOUT_BUDGET, TRANSPORT_ERROR_BUDGET,
    VALIDATION_BUDGET, Verdict, verdict,
};

/// The taxonomy's outcomes (names as the spec writes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    Synced,
    FeatureDisabled,
    TargetNotOwned,
    Validation,
    RateLimited,
    IngestionFailed,
    AckTimeout,
    TransportTimeout,
    TransportError,
    Unauthenticated,
    TransportUnavailable,
    SerializationFailed,
    /// A session still over a cap after chunking (decided before sending).
    Oversize,
}

impl Outcome {
    pub const ALL: [Outcome; 13] = [
        Self::Synced,
        Self::FeatureDisabled,
        Self::TargetNotOwned,
        Self::Validation,
        Self::RateLimited,
        Self::IngestionFailed,
        Self::AckTimeout,
        Self::TransportTimeout,
        Self::TransportError,
        Self::Unauthenticated,
        Self::TransportUnavailable,
        Self::SerializationFailed,
        Self::Oversize,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Synced => "synced",
            Self::FeatureDisabled => "feature_disabled",
            Self::TargetNotOwned => "target_not_owned",
            Self::Validation => "validation",
            Self::RateLimited => "rate_limited",
            Self::IngestionFailed => "ingestion_failed",
            Self::AckTimeout => "ack_timeout",
            Self::TransportTimeout => "transport_timeout",
            Self::TransportError => "transport_error",
            Self::Unauthenticated => "unauthenticated",
            Self::TransportUnavailable => "transport_unavailable",
            Self::SerializationFailed => "serialization_failed",
            Self::Oversize => "oversize",
        }
    }
}

/// Read an answer into the taxonomy.
pub fn classify(answer: &Answer) -> Outcome {
    match answer {
        Answer::Http {
            status,
            code,
            exact_success,
            ..
        } => classify_http(*status, code.as_deref(), *exact_success),
        Answer::DeadlineExceeded => Outcome::TransportTimeout,
        Answer::ConnectionDropped => Outcome::TransportError,
        Answer::NotReady => Outcome::TransportUnavailable,
        Answer::NoToken => Outcome::Unauthenticated,
        Answer::Unserializable => Outcome::SerializationFailed,
    }
}

fn classify_http(status: u16, code: Option<&str>, exact_success: bool) -> Outcome {
    match verdict(status, code) {
        Verdict::Success if exact_success => Outcome::Synced,
        // A 2xx we cannot read is not an ack.
        Verdict::Success => Outcome::IngestionFailed,
        Verdict::Unauthenticated => Outcome::Unauthenticated,
        Verdict::FeatureDisabled => Outcome::FeatureDisabled,
        // `target_not_owned`, no code, or a code this client does not know: never parks.
        Verdict::Forbidden(_) => Outcome::TargetNotOwned,
        Verdict::Refused => Outcome::Validation,
        Verdict::RateLimited => Outcome::RateLimited,
        Verdict::Other if status == 408 => Outcome::AckTimeout,
        Verdict::Other => Outcome::IngestionFailed,
    }
}

/// A per-session failure budget: consecutive failures of one kind before a dead letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub kind: Outcome,
    pub limit: u32,
}

/// What one outcome does to the sessions it carried and to the lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    /// Acknowledged: the outbox rows go.
    pub ack: bool,
    /// Counted against this budget; `None` leaves every budget as it is.
    pub budget: Option<Budget>,
    /// Hold the sessions for the deferral window (else they retry on the next tick).
    pub defer: bool,
    /// Dead-letter at once, deterministically (never retried by the timed pass).
    pub dead_letter_now: bool,
    pub lane: LaneEffect,
}

const NOTHING: Effect = Effect {
    ack: false,
    budget: None,
    defer: false,
    dead_letter_now: false,
    lane: LaneEffect::None,
};

impl Outcome {
    /// The effect of this outcome; `online` is whether the device still believed its connection
    /// healthy when the attempt ended.
    pub fn effect(self, online: bool) -> Effect {
        let counted = |limit| Effect {
            budget: Some(Budget { kind: self, limit }),
            ..NOTHING
        };
        let deferred = |effect: Effect| Effect {
            defer: true,
            ..effect
        };
        let lane = |lane| Effect { lane, ..NOTHING };
        match self {
            Self::Synced => Effect {
                ack: true,
                ..NOTHING
            },
            Self::FeatureDisabled => deferred(lane(LaneEffect::Park)),
            Self::TargetNotOwned | Self::TransportUnavailable => deferred(NOTHING),
            Self::Unauthenticated => deferred(lane(LaneEffect::Pause)),
            Self::Validation => deferred(counted(VALIDATION_BUDGET)),
            Self::RateLimited => Effect {
                lane: LaneEffect::Wait,
                ..deferred(counted(RATE_LIMIT_BUDGET))
            },
            Self::IngestionFailed => deferred(counted(SERVER_FAILURE_BUDGET)),
            Self::AckTimeout => counted(TIMEOUT_BUDGET),
            Self::TransportError => counted(TRANSPORT_ERROR_BUDGET),
            Self::TransportTimeout if online => counted(TRANSPORT_ERROR_BUDGET),
            // The machine's connection failed, not the batch: defer, budget untouched.
            Self::TransportTimeout => deferred(NOTHING),
            Self::SerializationFailed | Self::Oversize => Effect {
                dead_letter_now: true,
                ..NOTHING
            },
        }
    }

    /// Dead letters of this kind are retried by the timed pass (transient) or never (deterministic).
    pub fn is_deterministic(self) -> bool {
        matches!(self, Self::SerializationFailed | Self::Oversize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, code: Option<&str>) -> Answer {
        Answer::Http {
            status,
            code: code.map(str::to_owned),
            retry_after: None,
            exact_success: false,
        }
    }

    #[test]
    fn every_answer_classifies_as_the_spec_says() {
        let ok = Answer::Http {
            status: 200,
            code: None,
            retry_after: None,
            exact_success: true,
        };
        let table = [
            (ok, Outcome::Synced),
            // A 200 whose body is not exactly the success body is not an ack.
            (http(200, None), Outcome::IngestionFailed),
            (
                http(403, Some("feature_disabled")),
                Outcome::FeatureDisabled,
            ),
            (http(403, Some("target_not_owned")), Outcome::TargetNotOwned),
            (http(403, None), Outcome::TargetNotOwned),
            (http(403, Some("something_new")), Outcome::TargetNotOwned),
            (http(400, None), Outcome::Validation),
            (http(413, None), Outcome::Validation),
            (http(429, Some("rate_limited")), Outcome::RateLimited),
            (http(408, None), Outcome::AckTimeout),
            (http(401, Some("unauthenticated")), Outcome::Unauthenticated),
            (
                http(500, Some("ingestion_failed")),
                Outcome::IngestionFailed,
            ),
            (http(502, None), Outcome::IngestionFailed),
            (http(404, Some("not_found")), Outcome::IngestionFailed),
            (
                http(409, Some("chunk_out_of_sequence")),
                Outcome::IngestionFailed,
            ),
            (
                http(415, Some("unsupported_encoding")),
                Outcome::IngestionFailed,
            ),
            (http(301, None), Outcome::IngestionFailed),
            (Answer::DeadlineExceeded, Outcome::TransportTimeout),
            (Answer::ConnectionDropped, Outcome::TransportError),
            (Answer::NotReady, Outcome::TransportUnavailable),
            (Answer::NoToken, Outcome::Unauthenticated),
            (Answer::Unserializable, Outcome::SerializationFailed),
        ];
        for (answer, want) in table {
            assert_eq!(classify(&answer), want, "{answer:?}");
        }
    }

    #[test]
    fn every_outcome_has_the_spec_effect() {
        use LaneEffect as L;
        // (outcome, online, ack, budget limit, defer, dead-letter now, lane)
        let table = [
            (Outcome::Synced, true, true, None, false, false, L::None),
            (
                Outcome::FeatureDisabled,
                true,
                false,
                None,
                true,
                false,
                L::Park,
            ),
            (
                Outcome::TargetNotOwned,
                true,
                false,
                None,
                true,
                false,
                L::None,
            ),
            (
                Outcome::Unauthenticated,
                true,
                false,
                None,
                true,
                false,
                L::Pause,
            ),
            (
                Outcome::TransportUnavailable,
                true,
                false,
                None,
                true,
                false,
                L::None,
            ),
            (
                Outcome::Validation,
                true,
                false,
                Some(3),
                true,
                false,
                L::None,
            ),
            (
                Outcome::RateLimited,
                true,
                false,
                Some(5),
                true,
                false,
                L::Wait,
            ),
            (
                Outcome::IngestionFailed,
                true,
                false,
                Some(5),
                true,
                false,
                L::None,
            ),
            (
                Outcome::AckTimeout,
                true,
                false,
                Some(3),
                false,
                false,
                L::None,
            ),
            (
                Outcome::TransportError,
                true,
                false,
                Some(5),
                false,
                false,
                L::None,
            ),
            (
                Outcome::TransportTimeout,
                true,
                false,
                Some(5),
                false,
                false,
                L::None,
            ),
            (
                Outcome::TransportTimeout,
                false,
                false,
                None,
                true,
                false,
                L::None,
            ),
            (
                Outcome::SerializationFailed,
                true,
                false,
                None,
                false,
                true,
                L::None,
            ),
            (Outcome::Oversize, true, false, None, false, true, L::None),
        ];
        for (o, online, ack, limit, defer, dead, lane) in table {
            let e = o.effect(online);
            assert_eq!(e.ack, ack, "{o:?}");
            assert_eq!(e.budget.map(|b| b.limit), limit, "{o:?} online={online}");
            if let Some(b) = e.budget {
                assert_eq!(b.kind, o, "budgets are per kind");
            }
            assert_eq!(e.defer, defer, "{o:?} online={online}");
            assert_eq!(e.dead_letter_now, dead, "{o:?}");
            assert_eq!(e.lane, lane, "{o:?}");
        }
        let deterministic: Vec<_> = Outcome::ALL
            .into_iter()
            .filter(|o| o.is_deterministic())
            .collect();
        assert_eq!(
            deterministic,
            [Outcome::SerializationFailed, Outcome::Oversize]
        );
    }
}
