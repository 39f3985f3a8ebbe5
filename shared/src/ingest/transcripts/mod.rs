//! The transcript lane's routes on the ingest function (docs/transcript-wire-contract.md): state,
//! upload intents, the direct transport's uploads, completes, and the read routes for the web app.
//! (Skeleton: routing filled in by the transcript server work.)

pub mod read;
pub mod read_auth;

use lambda_http::{Body, Request, Response};

use super::IngestState;

/// The answer when `req` is for a transcript route, else `None` (the metadata lane's routes).
pub async fn serve(_state: &IngestState, _req: &Request) -> Option<Response<Body>> {
    None
}
