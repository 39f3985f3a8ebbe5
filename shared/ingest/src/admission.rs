//! Admission: how many batches one process works on at once (`INGEST_MAX_IN_FLIGHT`).
//!
//! A batch is CPU work (inflate, two JSON passes) and one transaction on one pooled connection.
//! Past a few at a time, more only share the same cores and connections: every batch gets slower
//! (latency grows with the queue, Little's law) and waiters on the pool can time out as 500s. So
//! a batch that finds every slot taken waits at most [`ADMISSION_WAIT`] for one, then is refused
//! at once with `429 server_busy` and `Retry-After: 1`, which clients already honour: the work
//! is spread over time instead of piled up, and nothing is written for a refused batch.
//!
//! A Lambda instance serves one request at a time, so there the limit never binds (the
//! function's concurrency and the pool budget bound the database instead); it matters to a
//! long-running server (`syncplane serve`) that many clients share.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::IngestError;

/// Longest a batch waits for a slot before it is refused.
pub(crate) const ADMISSION_WAIT: Duration =
    Duration::from_millis(syncplane_contract::SERVER_BUSY_WAIT_MS);
/// `Retry-After` of a refusal.
pub(crate) const BUSY_RETRY_AFTER_SECS: u64 = syncplane_contract::SERVER_BUSY_RETRY_AFTER_SECS;

/// The slots of one process; clones share them.
#[derive(Clone, Debug)]
pub struct Admission {
    slots: Option<Arc<Semaphore>>,
}

/// A slot, held until the batch is answered (dropping it frees the slot).
pub struct Slot {
    _permit: Option<OwnedSemaphorePermit>,
}

impl Admission {
    /// No limit: every batch goes on at once.
    pub fn unlimited() -> Self {
        Self { slots: None }
    }

    /// At most `n` batches at once (at least one).
    pub fn limited(n: u32) -> Self {
        Self {
            slots: Some(Arc::new(Semaphore::new(n.max(1) as usize))),
        }
    }

    /// A slot, waiting at most [`ADMISSION_WAIT`]; `ServerBusy` when none frees up.
    pub async fn enter(&self) -> Result<Slot, IngestError> {
        let Some(slots) = &self.slots else {
            return Ok(Slot { _permit: None });
        };
        match tokio::time::timeout(ADMISSION_WAIT, slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Slot {
                _permit: Some(permit),
            }),
            // Timed out, or the semaphore was closed (never done): refuse, nothing started.
            _ => Err(IngestError::ServerBusy {
                retry_after_secs: BUSY_RETRY_AFTER_SECS,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_batch_past_the_limit_waits_briefly_then_is_refused_and_a_freed_slot_admits() {
        let a = Admission::limited(1);
        let held = a.enter().await.expect("the first slot");
        let started = tokio::time::Instant::now();
        let refused = a.enter().await;
        assert!(matches!(
            refused,
            Err(IngestError::ServerBusy {
                retry_after_secs: 1
            })
        ));
        assert!(started.elapsed() >= ADMISSION_WAIT);
        drop(held);
        assert!(
            a.enter().await.is_ok(),
            "a freed slot admits the next batch"
        );
    }

    #[tokio::test]
    async fn unlimited_never_refuses() {
        let a = Admission::unlimited();
        let _held: Vec<Slot> = futures::future::join_all((0..100).map(|_| a.enter()))
            .await
            .into_iter()
            .map(|s| s.expect("admitted"))
            .collect();
    }
}
