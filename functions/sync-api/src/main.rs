//! Thin Lambda entry point for the sync API (`/api/sync`, `/api/repos`, `/api/sync/runs[/{id}]`)
//! and the read API (`/api/search`, `/api/repos/{owner}/{name}/...`, `/api/openapi.json`):
//! logging, configuration (fail fast, naming the variable), the state built once and kept across
//! invocations (lazily connected pools), the schema check (503 `schema_behind`), then `shared::api::handle`.

use lambda_http::{Error, Request, run, service_fn};
use shared::app::{AppState, check_deployed_backend};
use shared::schema::SchemaGuard;

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init(true);
    let config = shared::config::from_env_resolved().await?;
    check_deployed_backend(&config, |k| std::env::var(k).ok());
    let state = AppState::from_config(&config, shared::db::DEFAULT_POOL_SIZE).await?;
    let state = &state;
    let pool = state.default_pool().ok_or("no tenant configured")?;
    let schema = &SchemaGuard::default();
    run(service_fn(move |req: Request| async move {
        Ok::<_, Error>(schema.serve(pool, shared::api::handle(state, req)).await)
    }))
    .await
}
