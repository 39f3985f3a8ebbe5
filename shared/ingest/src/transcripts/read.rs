//! Reading the archive (docs/transcript-wire-contract.md "Reading"), with a read token scoped to
//! one org: a session's files and segments, one segment's bytes (direct mode), a file's lines,
//! and a search over every line of the org's archive ([`search`]).
//! Spec: "that archive is what the web renders turn and tool detail from"; issue 20: large
//! transcripts never stream through Lambda (the listing hands out presigned GETs in AWS), and
//! another organization's session is 404.
//!
//! Each route authenticates the read token ([`super::read_auth`]) first (401), then reads what
//! Postgres verified (current generation only) through the [`Reading`] the state gives.

mod access;
mod listing;
mod page;
mod search;

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde_json::Value;

pub use access::{Params, Reading};
pub use listing::{MAX_LISTED_FILES, MAX_LISTED_SEGMENTS};
pub use page::Cursor;
pub(crate) use page::{SegmentRow, read_segment};

use super::Lane;
use crate::error::IngestError;
use syncplane_accounts::tokens;

/// `GET /api/agent-sessions/transcripts`: the session's files with their segments.
pub async fn files(lane: Lane<'_>, req: &Request) -> Result<(StatusCode, Value), IngestError> {
    files_in(&reading(lane)?, req).await
}

/// `GET /api/agent-sessions/transcripts/segment`: one segment's stored bytes (direct mode).
pub async fn segment(lane: Lane<'_>, req: &Request) -> Result<Response<Body>, IngestError> {
    segment_in(&reading(lane)?, req).await
}

/// `GET /api/agent-sessions/transcripts/lines`: a file's decompressed lines, paged.
pub async fn lines(lane: Lane<'_>, req: &Request) -> Result<(StatusCode, Value), IngestError> {
    lines_in(&reading(lane)?, req).await
}

/// `GET /api/agent-sessions/transcripts/search`: the org's lines that match a query.
pub async fn search(lane: Lane<'_>, req: &Request) -> Result<(StatusCode, Value), IngestError> {
    search::search(
        lane.pool,
        lane.transcripts.search_rate_limit_per_minute,
        req,
    )
    .await
}

/// `GET /api/agent-sessions/transcripts/retention`: what the org's archive keeps (sessions, files,
/// segments, bytes stored and decoded, indexed lines) and when its oldest segment expires.
pub async fn retention(lane: Lane<'_>, req: &Request) -> Result<Value, IngestError> {
    let reader = tokens::authenticate_reader(lane.pool, req.headers()).await?;
    Params::parse(req, &[])?;
    let kept = syncplane_archive::usage::kept(lane.pool, Some(reader.org_id))
        .await
        .map_err(crate::error::db_failure("transcript retention"))?;
    let kept = kept.into_iter().next().ok_or(IngestError::NotFound)?;
    serde_json::to_value(kept).map_err(|e| {
        tracing::error!(error = %e, "retention answer not serialized");
        IngestError::IngestionFailed
    })
}

/// [`files`] on the archive `r`.
pub async fn files_in(r: &Reading<'_>, req: &Request) -> Result<(StatusCode, Value), IngestError> {
    let reader = tokens::authenticate_reader(r.pool, req.headers()).await?;
    listing::files(r, reader.org_id, req).await
}

/// [`segment`] on the archive `r`.
pub async fn segment_in(r: &Reading<'_>, req: &Request) -> Result<Response<Body>, IngestError> {
    let reader = tokens::authenticate_reader(r.pool, req.headers()).await?;
    listing::segment(r, reader.org_id, req).await
}

/// [`lines`] on the archive `r`.
pub async fn lines_in(r: &Reading<'_>, req: &Request) -> Result<(StatusCode, Value), IngestError> {
    let reader = tokens::authenticate_reader(r.pool, req.headers()).await?;
    page::lines(r, reader.org_id, req).await
}

/// The archive the ingest state reads: its pool, the transcript store and the URL lifetime.
fn reading(lane: Lane<'_>) -> Result<Reading<'_>, IngestError> {
    Ok(Reading {
        pool: lane.pool,
        store: &lane.transcripts.store,
        url_ttl: lane.transcripts.upload_ttl,
    })
}
