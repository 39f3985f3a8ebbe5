//! Thin Lambda entry point for `POST /github/webhook[/{tenant}]`: logging, configuration (fail
//! fast, naming the variable), the state built once and kept across invocations (lazily connected pools), then `shared::webhook::serve`: the schema check (503
//! `schema_behind`), then the handler.

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
    state
        .default_pool()
        .or_exit("configuration error: no tenant configured (DATABASE_URL or TENANTS_FILE)");
    let schema = for_process(SchemaGuard::default());
    run_concurrent(service_fn(move |req: Request| async move {
        Ok::<_, Error>(shared::webhook::serve(state, schema, req).await)
    }))
    .await
}
