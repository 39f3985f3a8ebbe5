//! Reading the archive (docs/transcript-wire-contract.md "Reading"), with a read token scoped to
//! one org: a session's files and segments, one segment's bytes (direct mode), a file's lines.
//! (Skeleton: filled in by the read-side work.)

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde_json::Value;

use crate::ingest::IngestState;
use crate::ingest::error::IngestError;

/// `GET /api/agent-sessions/transcripts`: the session's files with their segments.
pub async fn files(
    _state: &IngestState,
    _req: &Request,
) -> Result<(StatusCode, Value), IngestError> {
    Err(IngestError::NotFound)
}

/// `GET /api/agent-sessions/transcripts/segment`: one segment's stored bytes (direct mode).
pub async fn segment(_state: &IngestState, _req: &Request) -> Result<Response<Body>, IngestError> {
    Err(IngestError::NotFound)
}

/// `GET /api/agent-sessions/transcripts/lines`: a file's decompressed lines, paged.
pub async fn lines(
    _state: &IngestState,
    _req: &Request,
) -> Result<(StatusCode, Value), IngestError> {
    Err(IngestError::NotFound)
}
