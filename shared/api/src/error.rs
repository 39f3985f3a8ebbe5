//! The one error type of the sync API: each variant has its HTTP status and stable code.
//! Messages are fixed; internal detail goes to the logs where it happened.

use http::StatusCode;

use syncplane_core::http::HttpError;
use syncplane_core::params::ParamError;
use syncplane_github::GithubError;

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
    /// No connection within `db::ACQUIRE_TIMEOUT`, or the server refused one (`db::is_unreachable`).
    #[error("the database does not answer")]
    DatabaseUnreachable,
    /// The read-only token (`SYNC_READ_TOKEN`) on a route that changes state.
    #[error("the read-only token cannot request syncs")]
    ReadOnlyToken,
    /// A query parameter the route does not take, or one given twice (issue 21 point 14: the
    /// message names it; see `ParamError`).
    #[error("{0}")]
    UnknownParameter(ParamError),
    /// `limit` outside `1..=max` (the message names the range).
    #[error("limit must be a whole number from 1 to {max}")]
    InvalidLimit { max: i64 },
    /// A parameter the route requires is absent (the message names it).
    #[error("the query parameter {0:?} is required")]
    MissingParameter(&'static str),
    #[error("the cursor is not one this request handed out")]
    InvalidCursor,
    #[error("the path must be relative, without '.' or '..' segments, NUL or bad percent-encoding")]
    InvalidPath,
    #[error("the query must be a text of at most 512 bytes without NUL")]
    InvalidQuery,
    #[error("the query has no searchable words (empty, or only stop words)")]
    EmptyQuery,
    #[error("a repository is named owner/name")]
    InvalidRepository,
    #[error("no synced repository has this name")]
    UnknownRepository,
    #[error("no synced document has this path")]
    DocumentNotFound,
    #[error("this path is a folder of documents, not a document")]
    PathIsFolder,
    #[error("this repository has no synced README")]
    ReadmeNotFound,
    /// `format` other than `markdown` or `html` on a document or README route.
    #[error("format must be markdown or html")]
    InvalidFormat,
    /// The image route: the document does not reference this image of the repository, or the
    /// repository has no such file at the synced commit.
    #[error("the document references no image of the repository by this src")]
    ImageNotFound,
    #[error("the image is larger than 5 MiB")]
    ImageTooLarge,
    #[error("the file is not an image the console shows (PNG, JPEG, GIF, WebP, AVIF or SVG)")]
    ImageTypeUnsupported,
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NotFound
            | Self::UnknownTenant
            | Self::RepositoryNotSelected
            | Self::RepositoryNotFound
            | Self::RunNotFound
            | Self::UnknownRepository
            | Self::DocumentNotFound
            | Self::PathIsFolder
            | Self::ReadmeNotFound
            | Self::ImageNotFound => StatusCode::NOT_FOUND,
            Self::ImageTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::ImageTypeUnsupported => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::InvalidJson
            | Self::BadRequest(_)
            | Self::UnknownParameter(_)
            | Self::InvalidLimit { .. }
            | Self::MissingParameter(_)
            | Self::InvalidCursor
            | Self::InvalidPath
            | Self::InvalidQuery
            | Self::EmptyQuery
            | Self::InvalidRepository
            | Self::InvalidFormat => StatusCode::BAD_REQUEST,
            Self::ReadOnlyToken => StatusCode::FORBIDDEN,
            Self::RepositoryBusy => StatusCode::CONFLICT,
            Self::GithubNotConfigured | Self::QueueUnavailable | Self::DatabaseUnreachable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
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
            Self::DatabaseUnreachable => syncplane_core::db::UNREACHABLE_CODE,
            Self::ReadOnlyToken => "read_only_token",
            Self::UnknownParameter(_) => "unknown_parameter",
            Self::InvalidLimit { .. } => "invalid_limit",
            Self::MissingParameter(_) => "missing_parameter",
            Self::InvalidCursor => "invalid_cursor",
            Self::InvalidPath => "invalid_path",
            Self::InvalidQuery => "invalid_query",
            Self::EmptyQuery => "empty_query",
            Self::InvalidRepository => "invalid_repository",
            Self::UnknownRepository => "unknown_repository",
            Self::DocumentNotFound => "document_not_found",
            Self::PathIsFolder => "path_is_folder",
            Self::ReadmeNotFound => "readme_not_found",
            Self::InvalidFormat => "invalid_format",
            Self::ImageNotFound => "image_not_found",
            Self::ImageTooLarge => "image_too_large",
            Self::ImageTypeUnsupported => "image_type_unsupported",
        }
    }
}

impl HttpError for ApiError {
    fn status(&self) -> StatusCode {
        ApiError::status(self)
    }
    fn code(&self) -> Option<&'static str> {
        Some(ApiError::code(self))
    }
    fn headers(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::MethodNotAllowed { allow } => vec![("allow", (*allow).to_owned())],
            Self::DatabaseUnreachable => vec![(
                "retry-after",
                syncplane_core::db::UNREACHABLE_RETRY_AFTER_SECS.to_string(),
            )],
            _ => Vec::new(),
        }
    }
}

/// A query parameter refused (`syncplane_core::params`), as the API answers it.
impl From<ParamError> for ApiError {
    fn from(e: ParamError) -> Self {
        match e {
            ParamError::Missing(name) => Self::MissingParameter(name),
            ParamError::InvalidLimit { max } => Self::InvalidLimit { max },
            unknown_or_repeated => Self::UnknownParameter(unknown_or_repeated),
        }
    }
}

/// A database failure: logged with its detail, answered as 500 `internal_error`, or 503
/// `database_unreachable` when the database does not answer at all (`db::is_unreachable`).
pub(crate) fn db_failure(context: &'static str) -> impl FnOnce(sqlx::Error) -> ApiError {
    move |e| {
        if syncplane_core::db::is_unreachable(&e) {
            tracing::warn!(error = %e, context, "sync API: the database does not answer");
            return ApiError::DatabaseUnreachable;
        }
        tracing::error!(error = %e, context, "sync API database failure");
        ApiError::Internal
    }
}
