//! `syncplane serve`'s transcript indexer (issue 34): the segments the ingest routes record are
//! queued for the search index (`syncplane_archive::search::index`); this task drains the queue
//! as they come, checking every [`IDLE_WAIT`] when it is empty, so a segment is searchable
//! within a second of its complete. A drain that fails (the database or the store down) is said
//! once while it lasts and tried again after [`FAILED_WAIT`]; what is queued stays queued.

use std::time::Duration;

use shared::archive::search::index;
use shared::archive::store::Store;
use sqlx::PgPool;

/// How long the indexer waits when the queue is empty.
pub const IDLE_WAIT: Duration = Duration::from_millis(250);
/// How long it waits after a failed drain.
const FAILED_WAIT: Duration = Duration::from_secs(5);
/// Segments per drain.
const SEGMENTS_PER_DRAIN: u64 = 16;

/// Run the indexer on the ingest function's database and store until the process stops.
pub fn spawn_indexer(pool: PgPool, store: Store) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut failing = false;
        loop {
            match index::drain(&pool, &store, SEGMENTS_PER_DRAIN).await {
                Ok(done) => {
                    if failing {
                        tracing::info!("transcript indexing works again");
                        failing = false;
                    }
                    if done.segments > 0 {
                        tracing::debug!(segments = done.segments, lines = done.lines, "indexed");
                        continue;
                    }
                    tokio::time::sleep(IDLE_WAIT).await;
                }
                Err(e) => {
                    if !failing {
                        tracing::warn!(error = %e, "transcript indexing failed (said once while it lasts)");
                        failing = true;
                    }
                    tokio::time::sleep(FAILED_WAIT).await;
                }
            }
        }
    })
}
