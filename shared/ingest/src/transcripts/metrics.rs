//! The lane's EMF metrics (issue 20, "EMF metrics (segments, bytes, refusals by code)"), in the
//! metadata lane's style (`handler::batch_metrics`): one `TranscriptRequests` by route and
//! outcome with its duration; a segment recorded by `complete` as `TranscriptSegments` with its
//! compressed and decoded bytes; a direct upload's stored bytes; a refusal counted under its code.

use std::time::Duration;

use super::Facts;
use crate::error::IngestError;
use syncplane_core::metrics::{Record, Unit, default_tenant};

pub(super) fn record(
    route: &'static str,
    facts: &Facts,
    refused: Option<&IngestError>,
    elapsed: Duration,
) -> Record {
    let outcome = if refused.is_some() {
        "refused"
    } else {
        "accepted"
    };
    let mut r = Record::new(default_tenant())
        .metric_by(
            &[("Route", route), ("Outcome", outcome)],
            "TranscriptRequests",
            Unit::Count,
            1,
        )
        .metric_by(
            &[("Route", route)],
            "TranscriptDuration",
            Unit::Milliseconds,
            elapsed.as_millis() as f64,
        );
    if let Some((compressed, decoded)) = facts.recorded {
        r = r
            .metric("TranscriptSegments", Unit::Count, 1)
            .metric("TranscriptSegmentBytes", Unit::Bytes, compressed as f64)
            .metric("TranscriptDecodedBytes", Unit::Bytes, decoded as f64);
    }
    if let Some(stored) = facts.stored {
        r = r.metric("TranscriptStoredBytes", Unit::Bytes, stored as f64);
    }
    if let Some(e) = refused {
        r = r.metric_by(
            &[("Code", refusal_code(e))],
            "TranscriptRefusals",
            Unit::Count,
            1,
        );
    }
    r
}

/// A refusal's code (every refusal of the lane has one; a codeless error, which the lane never
/// answers, is counted by its status's name).
fn refusal_code(e: &IngestError) -> &'static str {
    e.code().unwrap_or(match e {
        IngestError::PayloadTooLarge => "payload_too_large",
        _ => "bad_request",
    })
}
