//! Thin Lambda entry point for `POST /github/webhook[/{tenant}]`: the function's start (logging,
//! configuration that fails fast naming the variable, the databases tried), the state built once
//! and kept across invocations (lazily connected pools), then, in the runtime loop built once in
//! `syncplane_core::runtime`, `syncplane_webhook::serve`: the schema check (503 `schema_behind`),
//! then the handler.

use lambda_http::Error;
use syncplane_core::schema::SchemaGuard;
use syncplane_core::start::{OrExit, for_process};
use syncplane_worker::app::AppState;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = syncplane_core::start::function().await;
    let state = AppState::for_lambda(&config).await;
    state
        .default_pool()
        .or_exit("configuration error: no tenant configured (DATABASE_URL or TENANTS_FILE)");
    let schema = for_process(SchemaGuard::default());
    syncplane_core::runtime::serve_http(Box::new(move |req| {
        Box::pin(syncplane_webhook::serve(state, schema, req))
    }))
    .await
}
