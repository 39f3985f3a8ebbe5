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
