//! Thin Lambda entry point for `POST /github/webhook[/{tenant}]`: the function's start (logging,
//! configuration that fails fast naming the variable, the databases tried), the state built once
//! and kept across invocations (lazily connected pools), then, in the runtime loop built once in
//! `syncplane_core::runtime`, `syncplane_webhook::serve`: the schema check (503 `schema_behind`),
//! then the handler.

use lambda_http::Error;
use syncplane_core::schema::SchemaGuard;
use syncplane_core::start::{OrExit, for_process};
use syncplane_jobs::adapter::InlineRunner;
use syncplane_jobs::app::AppState;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = syncplane_core::start::function().await;
    let state = AppState::for_lambda(&config, inline_jobs().as_ref()).await;
    state
        .default_pool()
        .or_exit("configuration error: no tenant configured (DATABASE_URL or TENANTS_FILE)");
    let schema = for_process(SchemaGuard::default());
    syncplane_core::runtime::serve_http(Box::new(move |req| {
        Box::pin(syncplane_webhook::serve(state, schema, req))
    }))
    .await
}

/// The runner of inline jobs: the worker's with the `inline-jobs` feature (local runs), none
/// without it (deployed: `JOBS_BACKEND=sqs`; `inline` is then refused at start, in one line).
fn inline_jobs() -> Option<InlineRunner> {
    #[cfg(feature = "inline-jobs")]
    return Some(syncplane_worker::runner());
    #[cfg(not(feature = "inline-jobs"))]
    None
}
