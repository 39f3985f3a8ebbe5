//! The ingest function's one router: each request goes to the lane that owns its path, the
//! exports (`crate::export`), the transcript lane (every path under `/api/agent-sessions/transcripts`, with the pool and its own
//! state only) or the metadata lane (the hello, `POST /sync` and the console's session routes).
//! Nothing is offered to one lane and then to the other.

use lambda_http::{Body, Request, Response};
use sqlx::PgPool;
use syncplane_core::http::{error_response, route_path};
use syncplane_core::schema::SchemaGuard;

use crate::transcripts::{self, Lane};
use crate::{Admission, handler};

/// Built once per execution environment and kept across invocations.
#[derive(Clone)]
pub struct IngestState {
    pub pool: PgPool,
    /// Batches per minute per compute target (`INGEST_RATE_LIMIT_PER_MINUTE`).
    pub rate_limit_per_minute: u32,
    /// Batches this process works on at once (`INGEST_MAX_IN_FLIGHT`).
    pub admission: Admission,
    /// The transcript lane: its store, upload TTL and rate limit (`super::transcripts`).
    pub transcripts: transcripts::TranscriptsState,
}

/// What the function serves: the schema check (503 `schema_behind` while the database is
/// behind this build, 503 `database_unreachable` while it does not answer), then [`handle`].
pub async fn serve(state: &IngestState, schema: &SchemaGuard, req: Request) -> Response<Body> {
    if let Err(refused) = schema.check(&state.pool).await {
        return error_response(&refused);
    }
    handle(state, req).await
}

/// Answer one request; never fails (every error is an enveloped response).
pub async fn handle(state: &IngestState, req: Request) -> Response<Body> {
    let lane = Lane {
        pool: &state.pool,
        transcripts: &state.transcripts,
    };
    if crate::export::owns(route_path(&req)) {
        return crate::export::deliver::respond(lane, &req).await;
    }
    if transcripts::owns(route_path(&req)) {
        return transcripts::serve(lane, &req).await;
    }
    handler::handle(state, req).await
}
