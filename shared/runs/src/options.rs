//! The runs layer's tunables: the spec's numbers by default, shorter waits in tests.

use std::time::Duration;

/// Passes one `request_sync` call may run (spec "Coalescing": at most 5 per call).
pub const MAX_PASSES: u32 = 5;
/// Repositories synced at once by a full run (spec "Limits": 1).
const DEFAULT_REPO_CONCURRENCY: usize = 1;
/// Age past which a `running` row without a held run lock is reaped (spec: one minute).
pub const REAPER_GRACE: Duration = Duration::from_secs(60);

/// Tunables of the runs layer; the defaults are the spec's numbers, tests shorten the waits.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub max_passes: u32,
    pub repo_concurrency: usize,
    pub reaper_grace: Duration,
    /// Backoff for a webhook-driven request of a repository with no row whose lock is busy:
    /// the first wait, doubled each time, for this many attempts.
    pub no_row_retry_first: Duration,
    pub no_row_retry_attempts: u32,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            max_passes: MAX_PASSES,
            repo_concurrency: DEFAULT_REPO_CONCURRENCY,
            reaper_grace: REAPER_GRACE,
            no_row_retry_first: Duration::from_millis(200),
            no_row_retry_attempts: 5,
        }
    }
}
