//! Thin Lambda entry point for the sync API (`/api/sync`, `/api/repos`, `/api/sync/runs[/{id}]`)
//! and the read API (`/api/search`, `/api/repos/{owner}/{name}/...`, `/api/openapi.json`):
//! logging, configuration (fail fast, naming the variable), the state built once and kept across
//! invocations (lazily connected pools), then, in the runtime loop built once in
//! `syncplane_core::runtime`, `syncplane_api::serve`: `GET /api/health`, else the
//! schema check (503 `schema_behind`) and `syncplane_api::handle`.

use lambda_http::Error;
use syncplane_core::schema::SchemaGuard;
use syncplane_core::start::for_process;
use syncplane_jobs::app::AppState;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = syncplane_core::start::function().await;
    let state = AppState::for_lambda(&config, Some(&syncplane_worker::runner())).await;
    let schema = for_process(SchemaGuard::default());
    syncplane_core::runtime::serve_http(Box::new(move |req| {
        Box::pin(syncplane_api::serve(state, schema, req))
    }))
    .await
}
