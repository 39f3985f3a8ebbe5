//! The one error type of the sync API: each variant has its HTTP status and stable code.
//! Messages are fixed; internal detail goes to the logs where it happened.

use http::StatusCode;

use crate::github::GithubError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed { allow: &'static str },
    #[error("unknown tenant")]
    UnknownTenant,
    #[error("missing or invalid token")]
    Unauthenticated,
    #[error("the body is not valid JSON")]
    InvalidJson,
    /// A fixed message saying what was wrong with the request.
    #[error("{0}")]
    BadRequest(&'static str),
    #[error("the configuration does not select this repository")]
    RepositoryNotSelected,
    #[error("the installation cannot see this repository")]
    RepositoryNotFound,
    /// No row (so no rerun marker can be left) and another sync holds its lock: retry later.
    #[error("the repository is being synced; retry shortly")]
    RepositoryBusy,
    #[error("no such run")]
    RunNotFound,
    #[error("no GitHub App is configured for this tenant")]
    GithubNotConfigured,
    #[error("GitHub could not serve this request")]
    Github(GithubError),
    #[error("the jobs queue is unavailable")]
    QueueUnavailable,
    #[error("internal error")]
    Internal,
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NotFound
            | Self::UnknownTenant
            | Self::RepositoryNotSelected
            | Self::RepositoryNotFound
            | Self::RunNotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::InvalidJson | Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::RepositoryBusy => StatusCode::CONFLICT,
            Self::GithubNotConfigured | Self::QueueUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Github(e) => {
                StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_GATEWAY)
            }
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::UnknownTenant => "unknown_tenant",
            Self::Unauthenticated => "unauthenticated",
            Self::InvalidJson => "invalid_json",
            Self::BadRequest(_) => "invalid_request",
            Self::RepositoryNotSelected => "repository_not_selected",
            Self::RepositoryNotFound => "repository_not_found",
            Self::RepositoryBusy => "repository_busy",
            Self::RunNotFound => "run_not_found",
            Self::GithubNotConfigured => "github_not_configured",
            // The GitHub client's own stable codes (rate_limited, installation_unavailable, ...).
            Self::Github(e) => e.code(),
            Self::QueueUnavailable => "queue_unavailable",
            Self::Internal => "internal_error",
        }
    }
}

/// A database failure: logged with its detail, answered as 500 `internal_error`.
pub(crate) fn db_failure(context: &'static str) -> impl FnOnce(sqlx::Error) -> ApiError {
    move |e| {
        tracing::error!(error = %e, context, "sync API database failure");
        ApiError::Internal
    }
}
