//! The metadata lane's routes (and the hello): the contract's order of work, its metrics and the
//! response envelope.

use std::time::Duration;

use http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};
use serde_json::json;

use super::error::IngestError;
use super::strict_json::Checked;
use super::{batch, decode, rate_limit, strict_json, upsert, web};
use crate::IngestState;
use syncplane_accounts::tokens::{self, Device};
use syncplane_contract::{
    MAX_DECODED_BYTES, MAX_SESSIONS_PER_BATCH, MAX_WIRE_BYTES, SCHEMA_VERSION,
};
use syncplane_core::http::{body_bytes, result_response, route_path};

pub const HELLO_PATH: &str = syncplane_contract::path::HELLO;
pub const SYNC_PATH: &str = syncplane_contract::path::SYNC;

/// What a batch was found to be, as far as its handling got (its metrics).
#[derive(Debug, Default)]
struct BatchFacts {
    /// Bytes as sent (gzip or plain).
    wire_bytes: usize,
    /// Bytes after inflating, once decoded.
    inflated_bytes: Option<usize>,
    /// Sessions stored, once the batch is accepted.
    sessions: Option<usize>,
}

/// Answer one request of the metadata lane (and the hello both lanes start with); never fails
/// (every error is an enveloped response).
pub(crate) async fn handle(state: &IngestState, req: Request) -> Response<Body> {
    let started = std::time::Instant::now();
    let mut facts = None;
    let result = route(state, &req, &mut facts)
        .await
        .map(|data| (StatusCode::OK, data));
    let elapsed: Duration = started.elapsed();
    if let Some(facts) = &facts {
        batch_metrics(facts, result.as_ref().err(), elapsed).emit();
    }
    match &result {
        Ok(_) => tracing::info!(
            path = req.uri().path(),
            elapsed_ms = elapsed.as_millis() as u64,
            "ingest ok"
        ),
        Err(e) => tracing::info!(
            path = req.uri().path(),
            status = e.status().as_u16(),
            code = e.code(),
            elapsed_ms = elapsed.as_millis() as u64,
            "ingest refused"
        ),
    }
    result_response(&result)
}

/// A batch's metrics (issue 13 §5): one `IngestBatches` by outcome, its bytes on the wire and
/// inflated, the sessions accepted, and a refusal counted under its code.
fn batch_metrics(
    facts: &BatchFacts,
    refused: Option<&IngestError>,
    elapsed: Duration,
) -> syncplane_core::metrics::Record {
    use syncplane_core::metrics::{Record, Unit};
    let outcome = if refused.is_some() {
        "refused"
    } else {
        "accepted"
    };
    let mut r = Record::new(syncplane_core::metrics::default_tenant())
        .metric_by(&[("Outcome", outcome)], "IngestBatches", Unit::Count, 1)
        .metric("IngestWireBytes", Unit::Bytes, facts.wire_bytes as f64)
        .metric(
            "IngestDuration",
            Unit::Milliseconds,
            elapsed.as_millis() as f64,
        );
    if let Some(inflated) = facts.inflated_bytes {
        r = r.metric("IngestInflatedBytes", Unit::Bytes, inflated as f64);
    }
    if let Some(sessions) = facts.sessions {
        r = r.metric("IngestSessions", Unit::Count, sessions as f64);
    }
    if let Some(e) = refused {
        r = r.metric_by(
            &[("Code", refusal_code(e))],
            "IngestRefusals",
            Unit::Count,
            1,
        );
    }
    r
}

/// A refusal's code for metrics: its stable code, or for the statuses that carry none (400,
/// 413) a name of the status.
fn refusal_code(e: &IngestError) -> &'static str {
    e.code().unwrap_or(match e {
        IngestError::PayloadTooLarge => "payload_too_large",
        _ => "bad_request",
    })
}

async fn route(
    state: &IngestState,
    req: &Request,
    facts: &mut Option<BatchFacts>,
) -> Result<serde_json::Value, IngestError> {
    match (route_path(req), req.method()) {
        (HELLO_PATH, &Method::GET) => {
            tokens::authenticate(&state.pool, req.headers()).await?;
            Ok(hello_ack(state.transcripts.store.transport()))
        }
        (SYNC_PATH, &Method::POST) => {
            let facts = facts.insert(BatchFacts::default());
            sync(state, req, facts).await?;
            Ok(json!({ "synced": true }))
        }
        (web::SESSIONS_PATH, &Method::GET) => web::sessions(&state.pool, req).await,
        (web::INSIGHTS_PATH, &Method::GET) => web::insights(&state.pool, req).await,
        (HELLO_PATH | web::SESSIONS_PATH | web::INSIGHTS_PATH, _) => {
            Err(IngestError::MethodNotAllowed { allow: "GET" })
        }
        (SYNC_PATH, _) => Err(IngestError::MethodNotAllowed { allow: "POST" }),
        _ => Err(IngestError::NotFound),
    }
}

/// The hello-ack's `data`: a client gzips only after it has seen the capability, and runs its
/// transcript lane only with `agentTranscriptUpload` (`transport`: the store's, `presigned` or
/// `direct`) and the segment caps.
pub fn hello_ack(transport: &str) -> serde_json::Value {
    use syncplane_contract::transcripts as t;
    json!({
        "schemaVersion": SCHEMA_VERSION,
        "capabilities": {
            syncplane_contract::COMPRESSION_CAPABILITY: true,
            t::UPLOAD_CAPABILITY: transport,
        },
        "limits": {
            "maxSessionsPerBatch": MAX_SESSIONS_PER_BATCH,
            "maxWireBytes": MAX_WIRE_BYTES,
            "maxDecodedBytes": MAX_DECODED_BYTES,
            t::MAX_SEGMENT_BYTES_KEY: t::MAX_SEGMENT_BYTES,
            t::MAX_SEGMENT_DECODED_BYTES_KEY: t::MAX_SEGMENT_DECODED_BYTES,
        }
    })
}

/// POST: the contract's steps 1 to 8, in order.
async fn sync(
    state: &IngestState,
    req: &Request,
    facts: &mut BatchFacts,
) -> Result<(), IngestError> {
    facts.wire_bytes = body_bytes(req.body()).len();
    // Held until the batch is answered; a refusal here has done no work.
    let _slot = state.admission.enter().await?;
    // 1. Authenticate.
    let device: Device = tokens::authenticate(&state.pool, req.headers()).await?;
    // 2. Bound and decode, then check the JSON (duplicate keys refused).
    let decoded = decode::bound_and_decode(req.headers(), body_bytes(req.body()))?;
    facts.inflated_bytes = Some(decoded.len());
    let checked = strict_json::check(&decoded).map_err(|e| {
        tracing::debug!(error = %e, "invalid JSON");
        IngestError::bad_request("invalid JSON")
    })?;
    // 3. Resolve compute-target ownership (a missing or non-string id is 400: nothing to resolve).
    let target = match checked {
        Checked::Object {
            compute_target_id: Some(target),
        } => target,
        Checked::Object { .. } => {
            return Err(IngestError::bad_request("computeTargetId: required string"));
        }
        Checked::NotObject => {
            return Err(IngestError::bad_request("the body must be a JSON object"));
        }
    };
    if !tokens::owns_target(&state.pool, &device, &target).await? {
        return Err(IngestError::TargetNotOwned);
    }
    // 4. Rate limit (everything reaching this step counts).
    rate_limit::check(&state.pool, &target, state.rate_limit_per_minute).await?;
    // 5. Schema parse, reading the checked bytes again.
    let batch = batch::parse(&decoded)?;
    drop(decoded);
    // 6. Org sync policy, fail-closed.
    if !device.sync_policy_allows() {
        return Err(IngestError::FeatureDisabled);
    }
    // 7. Feature gate, org-level and global.
    if !device.feature_gate_allows() {
        return Err(IngestError::FeatureDisabled);
    }
    // 8. Sanitize and upsert, the whole batch in one transaction.
    upsert::upsert(
        &state.pool,
        device.org_id,
        &batch.compute_target_id,
        &batch.sessions,
        device.frustration_opt_in,
    )
    .await?;
    facts.sessions = Some(batch.sessions.len());
    Ok(())
}
