//! Thin Lambda entry point for `POST /api/agent-sessions/sync`, `GET /api/agent-sessions/hello`
//! and the transcript lane's `/api/agent-sessions/transcripts/...` routes:
//! logging, configuration, a lazily connected pool kept across invocations, the schema check
//! (503 `schema_behind`), then
//! `syncplane_ingest::serve` (the schema check, then the handler), in the runtime loop built once in
//! `syncplane_core::runtime`.

use lambda_http::Error;
use syncplane_core::schema::SchemaGuard;
use syncplane_core::start::{OrExit, for_process};
use syncplane_ingest::{IngestState, serve};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = syncplane_core::start::function().await;
    // Ingest serves the FIRST configured tenant's database: device tokens carry no tenant, so a
    // multi-tenant deployment runs one ingest function per tenant database.
    let tenant = config
        .tenants
        .first()
        .or_exit("configuration error: no tenant configured (DATABASE_URL or TENANTS_FILE)");
    let pool =
        syncplane_core::db::lazy_pool(&tenant.database_url, syncplane_core::db::DEFAULT_POOL_SIZE)
            .or_exit("configuration error: DATABASE_URL");
    let state = IngestState {
        pool,
        rate_limit_per_minute: config.ingest_rate_limit_per_minute,
        admission: syncplane_ingest::Admission::limited(config.ingest_max_in_flight),
        transcripts: syncplane_ingest::transcripts::TranscriptsState::from_settings(
            &config.transcripts,
        )
        .await,
    };
    let state = for_process(state);
    let schema = for_process(SchemaGuard::default());
    syncplane_core::runtime::serve_http(Box::new(move |req| Box::pin(serve(state, schema, req))))
        .await
}
