//! `POST /api/agent-sessions/transcripts/complete`: verify what was stored for an upload and
//! move the file's acknowledged offset (contract "Routes"). The upload must be the token's org's
//! (`404` otherwise); the org's sync policy and the transcript gate are checked again (switched
//! off mid-upload: `403`, nothing recorded); then the archive reads the object back, verifies it
//! and records it in one transaction (`syncplane_archive::files::complete`): `200` with the file's
//! state, also for an upload completed before.

use lambda_http::Request;
use serde::Deserialize;
use serde_json::Value;
use syncplane_contract::transcripts::{MAX_INTENT_BODY_BYTES, Refusal};

use super::Lane;
use super::{Facts, archive_failure, body_too_large, check_policy_and_gate, state_json};
use crate::error::{IngestError, db_failure};
use crate::strict_json;
use syncplane_accounts::tokens;
use syncplane_archive::files;
use syncplane_core::http::body_bytes;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawComplete {
    upload_id: String,
}

pub(super) async fn post(
    lane: Lane<'_>,
    req: &Request,
    facts: &mut Facts,
) -> Result<Value, IngestError> {
    let device = tokens::authenticate(lane.pool, req.headers()).await?;
    let body = body_bytes(req.body());
    if body.len() > MAX_INTENT_BODY_BYTES {
        return Err(body_too_large());
    }
    strict_json::check(body)
        .map_err(|_| IngestError::refused(Refusal::InvalidJson, "invalid JSON"))?;
    let raw: RawComplete = serde_json::from_slice(body).map_err(|e| {
        IngestError::refused(Refusal::InvalidRequest, format!("invalid complete: {e}"))
    })?;
    let id = uuid::Uuid::parse_str(&raw.upload_id)
        .map_err(|_| IngestError::refused(Refusal::InvalidUploadId, "uploadId: must be a UUID"))?;
    let up = files::upload(lane.pool, id)
        .await
        .map_err(db_failure("transcript upload"))?
        .filter(|u| u.org_id == device.org_id)
        .ok_or(IngestError::NotFound)?;
    check_policy_and_gate(lane, &device).await?;
    if !tokens::owns_target(lane.pool, &device, &up.compute_target_id).await? {
        return Err(IngestError::TargetNotOwned);
    }
    let done = files::complete(lane.pool, &lane.transcripts.store, id)
        .await
        .map_err(archive_failure)?;
    if let Some(claim) = done.recorded {
        facts.recorded = Some((claim.compressed_bytes, claim.decoded_bytes));
    }
    Ok(state_json(&done.state))
}
