//! What stops a run (spec "Failure handling").

use syncplane_github::GithubError;

/// Errors that stop the caller's whole run (spec "Failure handling").
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("run stopped by GitHub: {0}")]
    RunStopped(#[source] GithubError),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

impl From<GithubError> for SyncError {
    fn from(e: GithubError) -> Self {
        Self::RunStopped(e)
    }
}

/// What stops a removal: GitHub (the run stops) or the database.
#[derive(Debug, thiserror::Error)]
pub enum RemovalError {
    #[error("run stopped by GitHub: {0}")]
    RunStopped(GithubError),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}
