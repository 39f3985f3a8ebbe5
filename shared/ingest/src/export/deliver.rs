//! How the ingest function answers an export behind API Gateway, whose HTTP APIs buffer a
//! Lambda's answer (6 MB at most) and cannot stream one: with the transcript bucket, the export
//! goes to `exports/<org>/<id>.<ext>` in it by multipart upload, one part at a time
//! ([`S3Store::put_parts`](syncplane_archive::store::s3::S3Store::put_parts)), and the answer is
//! `303 See Other` to a presigned GET of it, valid for `TRANSCRIPT_UPLOAD_TTL_SECONDS` (the
//! bucket's lifecycle rule deletes exports after a day), or `200` with the link when the request
//! asks for JSON ([`asks_for_json`]). Without a bucket (the direct
//! transport) the export is answered whole if it stays under [`MAX_BUFFERED_BYTES`] (4 MiB), else `413
//! export_too_large`: `syncplane serve` and `syncplane export` stream any size.

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde_json::json;
use syncplane_archive::store::Store;
use syncplane_contract::transcripts::Refusal;
use syncplane_core::http::{error_response, result_response};

use super::{Plan, start};
use crate::error::IngestError;
use crate::transcripts::Lane;

/// The most an export answered whole holds: API Gateway gets a binary body base64-encoded, a
/// third larger, and Lambda's response limit is 6 MB (6,291,556 bytes); 4 MiB is 5.6 MB so.
pub const MAX_BUFFERED_BYTES: usize = 4 * 1024 * 1024;

/// Answer an export request (its path one of [`super::owns`]).
pub async fn respond(lane: Lane<'_>, req: &Request) -> Response<Body> {
    let per_minute = lane.transcripts.export_rate_limit_per_minute;
    let plan = match Plan::from_request(lane.pool, req, per_minute).await {
        Ok(plan) => plan,
        Err(e) => return error_response(&e),
    };
    match &lane.transcripts.store {
        Store::S3(_) => to_bucket(lane, plan, asks_for_json(req)).await,
        Store::Direct(_) => whole(lane, plan).await,
    }
    .unwrap_or_else(|e| error_response(&e))
}

async fn to_bucket(
    lane: Lane<'_>,
    plan: Plan,
    wants_json: bool,
) -> Result<Response<Body>, IngestError> {
    let Store::S3(s3) = &lane.transcripts.store else {
        return Err(IngestError::StoreUnavailable);
    };
    let key = format!(
        "exports/{}/{}.{}",
        plan.org_id(),
        uuid::Uuid::new_v4(),
        plan.extension()
    );
    let (content_type, filename) = (plan.content_type(), plan.filename());
    let mut rx = start(plan, lane.pool.clone(), lane.transcripts.store.clone());
    let bytes = s3
        .put_parts(&key, content_type, &filename, &mut rx)
        .await
        .map_err(crate::transcripts::store_failure)?;
    let expires_at = chrono::Utc::now()
        + chrono::Duration::from_std(lane.transcripts.upload_ttl).unwrap_or_default();
    let url = s3
        .read_url(&key, expires_at)
        .await
        .map_err(crate::transcripts::store_failure)?;
    let data = json!({"url": url, "bytes": bytes, "expiresAt": expires_at.to_rfc3339()});
    if wants_json {
        return Ok(result_response::<_, IngestError>(&Ok((
            StatusCode::OK,
            data,
        ))));
    }
    let mut resp = result_response::<_, IngestError>(&Ok((StatusCode::SEE_OTHER, data)));
    if let Ok(value) = http::HeaderValue::from_str(&url) {
        resp.headers_mut().insert(http::header::LOCATION, value);
    }
    Ok(resp)
}

/// Whether the request asks for JSON (`Accept: application/json`): then the bucket's link comes
/// as `200` in the envelope, not as a redirect. The console asks so: its CSP lets it fetch from
/// its own origin only, so it opens the link itself rather than follow a redirect to S3.
fn asks_for_json(req: &Request) -> bool {
    req.headers()
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
}

async fn whole(lane: Lane<'_>, plan: Plan) -> Result<Response<Body>, IngestError> {
    let (content_type, filename) = (plan.content_type(), plan.filename());
    let mut rx = start(plan, lane.pool.clone(), lane.transcripts.store.clone());
    let mut body = Vec::new();
    while let Some(chunk) = rx.recv().await {
        let chunk = chunk.map_err(|_| IngestError::IngestionFailed)?;
        if body.len() + chunk.len() > MAX_BUFFERED_BYTES {
            return Err(IngestError::refused(
                Refusal::ExportTooLarge,
                format!(
                    "the export is over {MAX_BUFFERED_BYTES} bytes: narrow it (since, until, \
                     computeTargetId, fileId), or export with `syncplane export`"
                ),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, content_type)
        .header(
            http::header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{filename}\""),
        )
        .body(Body::Binary(body))
        .map_err(|_| IngestError::IngestionFailed)
}
