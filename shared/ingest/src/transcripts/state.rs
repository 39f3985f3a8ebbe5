//! `GET /api/agent-sessions/transcripts/state`: a file's generation and acknowledged offset
//! (contract: "The acknowledged offset is the truth: after any timeout, 5xx or lost answer the
//! client asks for it before sending again"). Checks: token (`401`), the query (`400`),
//! ownership of the target (`403 target_not_owned`).

use lambda_http::Request;
use serde_json::Value;
use syncplane_contract::chars;
use syncplane_contract::transcripts::{Refusal, valid_file_id};

use super::Lane;
use crate::error::{IngestError, db_failure};
use syncplane_accounts::tokens;
use syncplane_archive::files::{self, FileName};
use syncplane_core::params;

/// The file a request names: `computeTargetId`, `sessionId` and `fileId`, checked.
pub(crate) struct Named {
    pub compute_target_id: String,
    pub session_id: String,
    pub file_id: String,
}

/// 400 (`refusal`) unless `value` is 1 to `max` characters without NUL.
fn checked_id(
    refusal: Refusal,
    field: &str,
    value: Option<String>,
    max: usize,
) -> Result<String, IngestError> {
    match value {
        Some(v) if !v.is_empty() && v.chars().count() <= max && !v.contains('\0') => Ok(v),
        _ => Err(IngestError::refused(
            refusal,
            format!("{field}: required, 1 to {max} characters without NUL"),
        )),
    }
}

/// 400 `invalid_file_id` unless `value` is a valid `fileId`.
fn checked_file_id(value: Option<String>) -> Result<String, IngestError> {
    match value {
        Some(v) if valid_file_id(&v) => Ok(v),
        _ => Err(IngestError::refused(
            Refusal::InvalidFileId,
            "fileId: required, 1 to 256 bytes of A-Z a-z 0-9 . _ -, not starting with '.'",
        )),
    }
}

pub async fn get(lane: Lane<'_>, req: &Request) -> Result<Value, IngestError> {
    let device = tokens::authenticate(lane.pool, req.headers()).await?;
    let named = Named {
        compute_target_id: checked_id(
            Refusal::InvalidComputeTargetId,
            "computeTargetId",
            params::first(req.uri().query(), "computeTargetId"),
            chars::COMPUTE_TARGET_ID,
        )?,
        session_id: checked_id(
            Refusal::InvalidSessionId,
            "sessionId",
            params::first(req.uri().query(), "sessionId"),
            chars::SESSION_ID,
        )?,
        file_id: checked_file_id(params::first(req.uri().query(), "fileId"))?,
    };
    if !tokens::owns_target(lane.pool, &device, &named.compute_target_id).await? {
        return Err(IngestError::TargetNotOwned);
    }
    let state = files::state(
        lane.pool,
        &FileName {
            org_id: device.org_id,
            compute_target_id: &named.compute_target_id,
            session_id: &named.session_id,
            file_id: &named.file_id,
        },
    )
    .await
    .map_err(db_failure("transcript state"))?;
    Ok(super::state_json(&state))
}
