//! Failure handling (spec "Failure handling"): what a failed repository records, and the fixed
//! codes a failed run records that are not GitHub's.
//!
//! A failed repository keeps its stored content and is marked `sync_status = error` with a fixed
//! message: upstream text never reaches the database or a response, only the logs. A run that
//! stopped records a stable code in `sync_runs.error` (GitHub's own, see `GithubError::code`, or
//! one of the run codes below).

use syncplane_github::GithubError;

/// The code a run that stopped on a database error records.
pub const DATABASE_ERROR: &str = "database_error";

/// The code a run the reaper found dead records (spec "Serialization and locks").
pub const REAPED_ERROR: &str = "run_lost";

/// Why one repository failed, each with a stable code and a fixed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepoFailure {
    /// The recursive tree came back truncated; planning from it would delete what it left out.
    TreeTruncated,
    /// Some planned files could not be fetched; what arrived is written, markers are cleared.
    FetchIncomplete,
    /// The repository or its default branch is not on GitHub (possibly transient: never a removal).
    NotFound,
    /// GitHub answered with a server error.
    Upstream,
    /// GitHub did not answer in time, or the connection failed.
    Timeout,
    /// GitHub's answer was not what its API documents.
    UnexpectedAnswer,
    /// The installation is deleted or suspended (content kept).
    InstallationUnavailable,
}

impl RepoFailure {
    pub fn code(self) -> &'static str {
        match self {
            Self::TreeTruncated => "tree_truncated",
            Self::FetchIncomplete => "fetch_incomplete",
            Self::NotFound => "not_found",
            Self::Upstream => "upstream_error",
            Self::Timeout => "timeout",
            Self::UnexpectedAnswer => "unexpected_answer",
            Self::InstallationUnavailable => "installation_unavailable",
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Self::TreeTruncated => {
                "The repository tree is too large for one listing (GitHub truncated it); stored content is kept."
            }
            Self::FetchIncomplete => {
                "Some files could not be fetched; the next sync fetches the missing files."
            }
            Self::NotFound => "The repository or its default branch was not found on GitHub.",
            Self::Upstream => "GitHub answered with a server error; the next sync retries.",
            Self::Timeout => "GitHub did not answer in time; the next sync retries.",
            Self::UnexpectedAnswer => "GitHub's answer could not be read; the next sync retries.",
            Self::InstallationUnavailable => {
                "The GitHub App installation is deleted or suspended; stored content is kept."
            }
        }
    }

    /// The per-repository failure for a GitHub error that does not stop the run.
    pub fn from_github(error: &GithubError) -> Self {
        match error {
            GithubError::NotFound => Self::NotFound,
            GithubError::Server { .. } => Self::Upstream,
            GithubError::Timeout | GithubError::Transport => Self::Timeout,
            GithubError::InstallationUnavailable { .. } => Self::InstallationUnavailable,
            _ => Self::UnexpectedAnswer,
        }
    }
}
