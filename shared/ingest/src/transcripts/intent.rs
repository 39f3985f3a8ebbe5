//! `POST /api/agent-sessions/transcripts/intent`: an upload intent, its checks in the metadata
//! lane's order (contract "Routes"), the first failing one deciding: token (`401`), the lane's
//! own rate limit per compute target (`429`), parse (`400`; the body at most 4,096 bytes, one
//! JSON object without duplicate keys), the org's sync policy fail-closed (`403
//! feature_disabled`), the transcript gate (`403 transcripts_disabled`), ownership (`403
//! target_not_owned`), the caps (`413`), the position (`409 offset_mismatch` with the file's
//! state). Then the intent is recorded and the store says where the bytes go.

use chrono::Utc;
use lambda_http::Request;
use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::PgPool;
use syncplane_contract::transcripts::{MAX_INTENT_BODY_BYTES, Refusal, valid_file_id};
use syncplane_contract::{MAX_SAFE_INTEGER, chars};

use super::Lane;
use super::{archive_failure, body_too_large, check_policy_and_gate, store_failure};
use crate::error::IngestError;
use crate::rate_limit::{self, Window};
use crate::strict_json::{self, Checked};
use syncplane_accounts::tokens;
use syncplane_archive::files::{self, FileName, NewUpload};
use syncplane_archive::key::SegmentKey;
use syncplane_archive::segment::Claim;
use syncplane_archive::store::UploadSpec;
use syncplane_core::http::{FORWARDED_PREFIX, body_bytes, header, route_path};

/// The intent's body as sent (unknown fields ignored: a newer client may send more).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawIntent {
    compute_target_id: String,
    session_id: String,
    file_id: String,
    generation: u64,
    offset: u64,
    source_bytes: u64,
    decoded_bytes: u64,
    compressed_bytes: u64,
    sha256: String,
}

/// An intent past the parse.
#[derive(Debug)]
struct Intent {
    compute_target_id: String,
    session_id: String,
    file_id: String,
    generation: u32,
    offset: u64,
    claim: Claim,
}

pub async fn post(lane: Lane<'_>, req: &Request) -> Result<Value, IngestError> {
    // 1. Token.
    let device = tokens::authenticate(lane.pool, req.headers()).await?;
    // 2. Rate limit, per compute target, on the lane's own table (the target picked out of a
    // bounded, duplicate-free JSON object first: nothing to count without it).
    let body = body_bytes(req.body());
    if body.len() > MAX_INTENT_BODY_BYTES {
        return Err(body_too_large());
    }
    let target = target_of(body)?;
    rate_limit(lane.pool, &target, lane.transcripts.rate_limit_per_minute).await?;
    // 3. Parse.
    let intent = parse(body)?;
    // 4, 5. The org's sync policy, then the transcript gate.
    check_policy_and_gate(lane, &device).await?;
    // 6. Ownership.
    if !tokens::owns_target(lane.pool, &device, &intent.compute_target_id).await? {
        return Err(IngestError::TargetNotOwned);
    }
    // 7. Caps.
    intent
        .claim
        .check_caps()
        .map_err(|over| IngestError::refused(Refusal::SegmentTooLarge, over.to_string()))?;
    // 8. Position, and the intent recorded.
    record(lane, req, device.org_id, &intent).await
}

/// Step 8 and the answer: the intent recorded if the position is right (`409` otherwise), then
/// where the store wants the bytes.
async fn record(
    lane: Lane<'_>,
    req: &Request,
    org_id: i64,
    intent: &Intent,
) -> Result<Value, IngestError> {
    let upload_id = uuid::Uuid::new_v4();
    let file = FileName {
        org_id,
        compute_target_id: &intent.compute_target_id,
        session_id: &intent.session_id,
        file_id: &intent.file_id,
    };
    let key = SegmentKey {
        file,
        generation: intent.generation,
        offset: intent.offset,
        sha256: &intent.claim.sha256,
    }
    .key();
    let ttl = chrono::Duration::from_std(lane.transcripts.upload_ttl)
        .unwrap_or_else(|_| chrono::Duration::seconds(300));
    // Whole seconds: the answer's `expiresAt` and the stored one are the same instant.
    let expires_at = Utc::now() + ttl;
    let expires_at =
        expires_at - chrono::Duration::nanoseconds(i64::from(expires_at.timestamp_subsec_nanos()));
    files::create_upload(
        lane.pool,
        &NewUpload {
            upload_id,
            file,
            generation: intent.generation,
            offset: intent.offset,
            claim: intent.claim,
            object_key: &key,
            expires_at,
        },
    )
    .await
    .map_err(archive_failure)?;
    let spec = UploadSpec {
        key: &key,
        upload_id,
        compressed_bytes: intent.claim.compressed_bytes,
        sha256: intent.claim.sha256,
        expires_at,
    };
    let mut target = lane
        .transcripts
        .store
        .upload_target(&spec)
        .await
        .map_err(store_failure)?;
    if target.url.starts_with('/') {
        // The direct transport: the ingest function's own route, behind the same prefix (a
        // named stage) as this request.
        target.url = format!("{}{}", path_prefix(req), target.url);
    }
    let headers: serde_json::Map<String, Value> = target
        .headers
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    Ok(json!({
        "uploadId": upload_id,
        "upload": {
            "method": target.method,
            "url": target.url,
            "headers": headers,
            "expiresAt": target.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        },
        "objectKey": key,
    }))
}

/// What stands in front of the route in this request's path: a prefix a local server removed
/// (`/lambda-url/ingest`, [`FORWARDED_PREFIX`]), then a named API Gateway stage (`/prod`); empty
/// when the function sees the route as is. Only path characters are kept (a client can send the
/// header too: it only shapes the URL answered to itself).
fn path_prefix(req: &Request) -> String {
    let safe = |p: &&str| {
        p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.'))
            && !p.contains("..")
    };
    let forwarded = header(req, FORWARDED_PREFIX)
        .filter(|p| p.starts_with('/'))
        .filter(safe)
        .unwrap_or("");
    let stage = req
        .uri()
        .path()
        .strip_suffix(route_path(req))
        .filter(safe)
        .unwrap_or("");
    format!(
        "{}{}",
        forwarded.trim_end_matches('/'),
        stage.trim_end_matches('/')
    )
}

/// The body's `computeTargetId`, from one JSON object without duplicate keys (400 otherwise).
fn target_of(body: &[u8]) -> Result<String, IngestError> {
    let checked = strict_json::check(body).map_err(|e| {
        tracing::debug!(error = %e, "invalid intent JSON");
        IngestError::refused(Refusal::InvalidJson, "invalid JSON")
    })?;
    match checked {
        Checked::Object {
            compute_target_id: Some(t),
        } if !t.is_empty()
            && !t.contains('\0')
            && t.chars().count() <= chars::COMPUTE_TARGET_ID =>
        {
            Ok(t)
        }
        Checked::Object { .. } => Err(IngestError::refused(
            Refusal::InvalidComputeTargetId,
            format!(
                "computeTargetId: required string of 1 to {} characters",
                chars::COMPUTE_TARGET_ID
            ),
        )),
        Checked::NotObject => Err(IngestError::refused(
            Refusal::InvalidJson,
            "the body must be a JSON object",
        )),
    }
}

/// Every field present and in range (contract step 3).
fn parse(body: &[u8]) -> Result<Intent, IngestError> {
    let raw: RawIntent = serde_json::from_slice(body).map_err(|e| {
        // serde's message names the field ("missing field `sha256`"), never more of the body
        // than the client sent.
        IngestError::refused(Refusal::InvalidRequest, format!("invalid intent: {e}"))
    })?;
    let bad = |refusal, field: &str, rule: &str| {
        IngestError::refused(refusal, format!("{field}: {rule}"))
    };
    if raw.session_id.is_empty()
        || raw.session_id.chars().count() > chars::SESSION_ID
        || raw.session_id.contains('\0')
    {
        return Err(bad(
            Refusal::InvalidSessionId,
            "sessionId",
            "must be 1 to 200 characters without NUL",
        ));
    }
    if !valid_file_id(&raw.file_id) {
        return Err(bad(
            Refusal::InvalidFileId,
            "fileId",
            "must be 1 to 256 bytes of A-Z a-z 0-9 . _ -, not starting with '.'",
        ));
    }
    let generation = u32::try_from(raw.generation)
        .ok()
        .filter(|g| (1..=i32::MAX as u32).contains(g))
        .ok_or_else(|| {
            bad(
                Refusal::InvalidGeneration,
                "generation",
                "must be a whole number from 1 to 2^31 - 1",
            )
        })?;
    for (refusal, field, n, min) in [
        (Refusal::InvalidOffset, "offset", raw.offset, 0),
        (Refusal::InvalidLength, "sourceBytes", raw.source_bytes, 1),
        (Refusal::InvalidLength, "decodedBytes", raw.decoded_bytes, 0),
        (
            Refusal::InvalidLength,
            "compressedBytes",
            raw.compressed_bytes,
            1,
        ),
    ] {
        if n < min || n > MAX_SAFE_INTEGER {
            return Err(bad(
                refusal,
                field,
                &format!("must be a whole number from {min} to 2^53 - 1"),
            ));
        }
    }
    let sha256 = sha256_of(&raw.sha256).ok_or_else(|| {
        bad(
            Refusal::InvalidSha256,
            "sha256",
            "must be 64 lowercase hex digits",
        )
    })?;
    Ok(Intent {
        compute_target_id: raw.compute_target_id,
        session_id: raw.session_id,
        file_id: raw.file_id,
        generation,
        offset: raw.offset,
        claim: Claim {
            source_bytes: raw.source_bytes,
            decoded_bytes: raw.decoded_bytes,
            compressed_bytes: raw.compressed_bytes,
            sha256,
        },
    })
}

/// 64 lowercase hex digits as bytes.
fn sha256_of(hex_digits: &str) -> Option<[u8; 32]> {
    if hex_digits.len() != 64
        || !hex_digits
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_digits, &mut out).ok()?;
    Some(out)
}

/// Count this intent in the target's current minute, apart from the metadata lane's batches.
async fn rate_limit(pool: &PgPool, target: &str, limit: u32) -> Result<(), IngestError> {
    rate_limit::check_window(pool, Window::TranscriptIntents, target, limit).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(over: &[(&str, Value)]) -> Vec<u8> {
        let mut v = json!({"computeTargetId": "laptop-1", "sessionId": "s-1", "fileId": "s-1.jsonl",
            "generation": 1, "offset": 0, "sourceBytes": 5120, "decodedBytes": 5120,
            "compressedBytes": 1400, "sha256": "ab".repeat(32)});
        for (k, x) in over {
            v[*k] = x.clone();
        }
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn an_intent_parses_and_each_bad_field_is_named() {
        let i = parse(&body(&[])).unwrap();
        assert_eq!(i.generation, 1);
        assert_eq!(i.claim.sha256, [0xab; 32]);
        for (field, value) in [
            ("fileId", json!("a/b")),
            ("fileId", json!("..")),
            ("fileId", json!("a\u{0}b")),
            ("fileId", json!("a".repeat(257))),
            ("generation", json!(0)),
            ("sourceBytes", json!(0)),
            ("sha256", json!("AB".repeat(32))),
            ("sha256", json!("ab")),
            ("sessionId", json!("")),
        ] {
            let err = parse(&body(&[(field, value.clone())])).unwrap_err();
            assert_eq!(err.status(), 400, "{field} {value}");
            assert!(err.to_string().contains(field), "{field}: {err}");
        }
        for (field, value) in [
            ("generation", json!(1.5)),
            ("offset", json!(-1)),
            ("sha256", json!(null)),
        ] {
            let err = parse(&body(&[(field, value.clone())])).unwrap_err();
            assert_eq!(err.status(), 400, "{field} {value}");
        }
    }
}
