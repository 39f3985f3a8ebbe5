//! Transcript lane support: the direct transport's store in a fresh temporary directory, and an
//! ingest state around it.

use std::path::{Path, PathBuf};

use shared::ingest::IngestState;
use shared::ingest::transcripts::TranscriptsState;
use sqlx::PgPool;

/// A fresh, empty directory under the system's temporary directory (left for the OS to clean).
pub fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("syncplane-transcripts-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// The direct transport into a fresh temporary directory.
pub fn temp_state() -> TranscriptsState {
    TranscriptsState::direct(temp_dir())
}

/// An ingest state on `pool` with the direct transport into `dir`, generous rate limits.
pub fn direct_state(pool: &PgPool, dir: &Path) -> IngestState {
    IngestState {
        pool: pool.clone(),
        rate_limit_per_minute: 1_000_000,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: TranscriptsState::direct(dir),
    }
}

/// `syncplane serve`'s router (the real one) on a loopback port, configured as the CLI configures
/// it from `DATABASE_URL` and `TRANSCRIPT_DATA_DIR` alone; its base URL. For the benchmarks.
pub async fn serve_locally(database_url: &str, dir: &Path) -> String {
    let (url, dir) = (database_url.to_owned(), dir.display().to_string());
    let config = shared::config::from_lookup(|k| match k {
        "DATABASE_URL" => Some(url.clone()),
        "TRANSCRIPT_DATA_DIR" => Some(dir.clone()),
        _ => None,
    })
    .expect("configuration");
    let functions = syncplane_cli::serve::Functions::from_config(&config)
        .await
        .expect("functions");
    let app = syncplane_cli::serve::router(std::sync::Arc::new(functions));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listener");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    base
}
