//! `PUT /api/agent-sessions/transcripts/uploads/{uploadId}`: the direct transport's upload
//! (contract "Routes", direct). The device token's org must be the upload's (else `404
//! not_found`: another org's upload is not there for this token), the intent must not have
//! expired (`410 upload_expired`), the body must be the intent's bytes (`413` over the cap,
//! `400` when its length or SHA-256 is not the intent's), and the write is create-only: `200
//! {"stored": true}` when stored or already there, so a retried PUT, or one after complete, is
//! harmless. With the presigned transport the route is not there (`404`).

use lambda_http::Request;
use serde_json::{Value, json};
use syncplane_contract::transcripts::{MAX_SEGMENT_BYTES, Refusal};

use super::Lane;
use super::{Facts, store_failure};
use crate::error::{IngestError, db_failure};
use syncplane_accounts::tokens;
use syncplane_archive::files;
use syncplane_archive::segment::check_digest;
use syncplane_archive::store::Store;
use syncplane_core::http::body_bytes;

pub(super) async fn put(
    lane: Lane<'_>,
    req: &Request,
    id: &str,
    facts: &mut Facts,
) -> Result<Value, IngestError> {
    let device = tokens::authenticate(lane.pool, req.headers()).await?;
    if !matches!(lane.transcripts.store, Store::Direct(_)) {
        // The presigned transport: bytes go straight to S3, never through this function.
        return Err(IngestError::NotFound);
    }
    let Ok(id) = uuid::Uuid::parse_str(id) else {
        return Err(IngestError::NotFound);
    };
    let up = files::upload(lane.pool, id)
        .await
        .map_err(db_failure("transcript upload"))?
        .filter(|u| u.org_id == device.org_id)
        .ok_or(IngestError::NotFound)?;
    let body = body_bytes(req.body());
    if up.completed {
        // Already recorded: the object is there (create-only), nothing to write.
        return Ok(json!({ "stored": true }));
    }
    if up.expired {
        return Err(IngestError::UploadExpired);
    }
    if body.len() as u64 > MAX_SEGMENT_BYTES {
        return Err(IngestError::refused(
            Refusal::SegmentTooLarge,
            format!("the body is over {MAX_SEGMENT_BYTES} bytes"),
        ));
    }
    check_digest(body, up.claim.compressed_bytes, &up.claim.sha256)
        .map_err(|m| IngestError::refused(m.refusal(), format!("body: {m}")))?;
    lane.transcripts
        .store
        .put(&up.object_key, body)
        .await
        .map_err(store_failure)?;
    facts.stored = Some(body.len() as u64);
    Ok(json!({ "stored": true }))
}
