//! The GitHub client's one error type, and the pure rules that turn a GitHub answer into it.
//!
//! Spec "Failure handling": some errors stop the whole run because continuing would fail the same
//! way (rate limit, unauthorized, bad App credentials, unusable key, unavailable installation,
//! abort); every other error fails only the repository being synced.

use chrono::{DateTime, Utc};
use http::{HeaderMap, StatusCode};

use super::message::message_mentions;
use super::rate_limit::{self, RateLimitHit};

/// Why a GitHub call failed. Messages never carry a token, a JWT or the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GithubError {
    /// The rate limit is exhausted and GitHub's wait does not fit the budget.
    #[error("GitHub rate limit exhausted until {retry_at} (secondary: {secondary})")]
    RateLimited {
        retry_at: DateTime<Utc>,
        secondary: bool,
    },
    /// The installation token was refused even after one fresh exchange.
    #[error("GitHub refused the installation token")]
    Unauthorized,
    /// The App JWT was refused: wrong App id, or a key GitHub does not trust.
    #[error("GitHub refused the App credentials")]
    BadCredentials,
    /// The configured private key cannot sign an RS256 JWT.
    #[error("the GitHub App private key is unusable")]
    InvalidPrivateKey,
    /// The installation was deleted (404) or suspended.
    #[error("the GitHub App installation is unavailable (suspended: {suspended})")]
    InstallationUnavailable { suspended: bool },
    /// `GithubClient::abort` was called.
    #[error("the GitHub client was aborted")]
    Aborted,
    #[error("not found on GitHub")]
    NotFound,
    #[error("GitHub server error {status}")]
    Server { status: u16 },
    #[error("GitHub did not answer in time")]
    Timeout,
    #[error("connection to GitHub failed")]
    Transport,
    #[error("unexpected GitHub status {status}")]
    Unexpected { status: u16 },
    /// The body is not as documented, or a blob's bytes do not hash to the requested SHA.
    #[error("GitHub answer could not be decoded")]
    Decode,
}

impl GithubError {
    /// Whether the whole run must stop (continuing would fail the same way for every repository).
    pub fn is_run_stopping(&self) -> bool {
        matches!(
            self,
            GithubError::RateLimited { .. }
                | GithubError::Unauthorized
                | GithubError::BadCredentials
                | GithubError::InvalidPrivateKey
                | GithubError::InstallationUnavailable { .. }
                | GithubError::Aborted
        )
    }

    /// A stable machine-readable code (sync errors, logs, API bodies).
    pub fn code(&self) -> &'static str {
        match self {
            GithubError::RateLimited { .. } => "rate_limited",
            GithubError::Unauthorized => "unauthorized",
            GithubError::BadCredentials => "bad_credentials",
            GithubError::InvalidPrivateKey => "invalid_private_key",
            GithubError::InstallationUnavailable { .. } => "installation_unavailable",
            GithubError::Aborted => "aborted",
            GithubError::NotFound => "not_found",
            GithubError::Server { .. } => "upstream_error",
            GithubError::Timeout => "timeout",
            GithubError::Transport => "transport",
            GithubError::Unexpected { .. } => "unexpected_status",
            GithubError::Decode => "decode",
        }
    }

    /// The HTTP status an API surface answers with when it reports this error: 429 for a rate
    /// limit, 503 when the installation cannot be used, 502/504 for an upstream fault.
    pub fn http_status(&self) -> u16 {
        match self {
            GithubError::RateLimited { .. } => 429,
            GithubError::Unauthorized
            | GithubError::BadCredentials
            | GithubError::InvalidPrivateKey
            | GithubError::InstallationUnavailable { .. } => 503,
            GithubError::Aborted => 503,
            GithubError::NotFound => 404,
            GithubError::Timeout => 504,
            GithubError::Server { .. }
            | GithubError::Transport
            | GithubError::Unexpected { .. }
            | GithubError::Decode => 502,
        }
    }
}

/// Which credential a request carried: it decides what a 401, 403 or 404 means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthKind {
    /// The App JWT, on `/app/installations/{id}` and its token exchange.
    App,
    /// An installation token, on every repository endpoint.
    Installation,
}

/// What to do with a non-success answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// A rate limit: wait (if the budget allows) and retry, else fail with `RateLimited`.
    RateLimit(RateLimitHit),
    /// The installation token was refused: exchange a fresh one and retry once.
    TokenRefused,
    Error(GithubError),
}

/// Classify a non-2xx, non-304 answer. Pure, so the rules are unit-tested.
pub(crate) fn classify(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    auth: AuthKind,
    now: DateTime<Utc>,
) -> Failure {
    let code = status.as_u16();
    if matches!(code, 403 | 429)
        && let Some(hit) = rate_limit::hit(headers, body, now)
    {
        return Failure::RateLimit(hit);
    }
    match (code, auth) {
        (401, AuthKind::App) => Failure::Error(GithubError::BadCredentials),
        (401, AuthKind::Installation) => Failure::TokenRefused,
        (403, _) if message_mentions(body, "suspended") => {
            Failure::Error(GithubError::InstallationUnavailable { suspended: true })
        }
        (404, AuthKind::App) => {
            Failure::Error(GithubError::InstallationUnavailable { suspended: false })
        }
        (404, AuthKind::Installation) => Failure::Error(GithubError::NotFound),
        (500..=599, _) => Failure::Error(GithubError::Server { status: code }),
        _ => Failure::Error(GithubError::Unexpected { status: code }),
    }
}

/// Map a transport-level failure (no HTTP answer, or the body broke off).
pub(crate) fn from_transport(err: &reqwest::Error) -> GithubError {
    if err.is_timeout() {
        GithubError::Timeout
    } else {
        GithubError::Transport
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use std::time::Duration;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    fn classify_simple(status: u16, body: &str, auth: AuthKind) -> Failure {
        classify(
            StatusCode::from_u16(status).unwrap(),
            &headers(&[("x-ratelimit-remaining", "4000")]),
            body.as_bytes(),
            auth,
            now(),
        )
    }

    #[test]
    fn run_stopping_errors_are_exactly_the_specs_list() {
        let stopping = [
            GithubError::RateLimited {
                retry_at: now(),
                secondary: false,
            },
            GithubError::Unauthorized,
            GithubError::BadCredentials,
            GithubError::InvalidPrivateKey,
            GithubError::InstallationUnavailable { suspended: true },
            GithubError::Aborted,
        ];
        let per_repository = [
            GithubError::NotFound,
            GithubError::Server { status: 500 },
            GithubError::Timeout,
            GithubError::Transport,
            GithubError::Unexpected { status: 422 },
            GithubError::Decode,
        ];
        assert!(stopping.iter().all(GithubError::is_run_stopping));
        assert!(!per_repository.iter().any(GithubError::is_run_stopping));
        let codes: std::collections::HashSet<_> = stopping
            .iter()
            .chain(per_repository.iter())
            .map(GithubError::code)
            .collect();
        assert_eq!(codes.len(), 12, "every variant has its own code");
        assert_eq!(GithubError::Server { status: 502 }.code(), "upstream_error");
        assert_eq!(
            GithubError::InstallationUnavailable { suspended: false }.code(),
            "installation_unavailable"
        );
    }

    #[test]
    fn a_refused_app_jwt_is_bad_credentials() {
        assert_eq!(
            classify_simple(
                401,
                r#"{"message":"A JSON web token could not be decoded"}"#,
                AuthKind::App
            ),
            Failure::Error(GithubError::BadCredentials)
        );
    }

    #[test]
    fn a_refused_installation_token_asks_for_a_fresh_exchange() {
        assert_eq!(
            classify_simple(
                401,
                r#"{"message":"Bad credentials"}"#,
                AuthKind::Installation
            ),
            Failure::TokenRefused
        );
    }

    #[test]
    fn a_deleted_or_suspended_installation_is_unavailable() {
        assert_eq!(
            classify_simple(404, r#"{"message":"Not Found"}"#, AuthKind::App),
            Failure::Error(GithubError::InstallationUnavailable { suspended: false })
        );
        assert_eq!(
            classify_simple(
                403,
                r#"{"message":"This installation has been suspended"}"#,
                AuthKind::App
            ),
            Failure::Error(GithubError::InstallationUnavailable { suspended: true })
        );
    }

    #[test]
    fn repository_errors_are_per_repository() {
        assert_eq!(
            classify_simple(404, r#"{"message":"Not Found"}"#, AuthKind::Installation),
            Failure::Error(GithubError::NotFound)
        );
        assert_eq!(
            classify_simple(502, "<html>bad gateway</html>", AuthKind::Installation),
            Failure::Error(GithubError::Server { status: 502 })
        );
        assert_eq!(
            classify_simple(
                403,
                r#"{"message":"Resource not accessible by integration"}"#,
                AuthKind::Installation
            ),
            Failure::Error(GithubError::Unexpected { status: 403 })
        );
        assert_eq!(
            classify_simple(422, "{}", AuthKind::Installation),
            Failure::Error(GithubError::Unexpected { status: 422 })
        );
    }

    #[test]
    fn rate_limit_answers_are_recognised_before_anything_else() {
        let primary = classify(
            StatusCode::FORBIDDEN,
            &headers(&[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "1800000030"),
            ]),
            br#"{"message":"API rate limit exceeded for installation ID 1"}"#,
            AuthKind::Installation,
            now(),
        );
        let Failure::RateLimit(hit) = primary else {
            panic!("expected a rate limit, got {primary:?}")
        };
        assert!(!hit.secondary);
        assert_eq!(hit.retry_at.timestamp(), 1_800_000_030);

        let secondary = classify(
            StatusCode::TOO_MANY_REQUESTS,
            &headers(&[("x-ratelimit-remaining", "10")]),
            br#"{"message":"You have exceeded a secondary rate limit. Please wait."}"#,
            AuthKind::App,
            now(),
        );
        let Failure::RateLimit(hit) = secondary else {
            panic!("expected a rate limit, got {secondary:?}")
        };
        assert!(hit.secondary);
        assert_eq!(hit.wait, Duration::from_secs(60), "no retry-after: 60 s");
    }
}
