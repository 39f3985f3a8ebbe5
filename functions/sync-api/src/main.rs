//! Thin Lambda entry point for the sync API (`/api/sync`, `/api/repos`, `/api/sync/runs[/{id}]`)
//! and the read API (`/api/search`, `/api/repos/{owner}/{name}/...`, `/api/openapi.json`):
//! logging, configuration (fail fast, naming the variable), the state built once and kept across
//! invocations (lazily connected pools), then `shared::api::serve`: `GET /api/health`, else the
//! schema check (503 `schema_behind`) and `shared::api::handle`.

use lambda_http::{Error, Request, run_concurrent, service_fn};
use shared::app::{AppState, check_deployed_backend};
use shared::schema::SchemaGuard;
use shared::start::{OrExit, for_process};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init(true);
    let config = shared::start::config().await;
    shared::start::check_databases(&config).await;
    check_deployed_backend(&config, |k| std::env::var(k).ok());
    let state = AppState::from_config(&config, shared::db::DEFAULT_POOL_SIZE)
        .await
        .or_exit("configuration error");
    let state = for_process(state);
    let schema = for_process(SchemaGuard::default());
    run_concurrent(service_fn(move |req: Request| async move {
        Ok::<_, Error>(shared::api::serve(state, schema, req).await)
    }))
    .await
}
