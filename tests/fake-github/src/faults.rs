//! Failures on demand: armed per endpoint or per path substring, for N requests or until
//! cleared, answered the way GitHub answers them.

use std::time::Duration;

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};

use super::Endpoint;
use super::routes::gh_error;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// That status with a GitHub-shaped JSON body.
    Status(u16),
    /// Never answers (the request hangs far longer than any client timeout).
    Timeout,
    /// 403 with `x-ratelimit-remaining: 0` and the given reset.
    PrimaryRateLimit { reset_in: Duration },
    /// 403 with `retry-after` (or without it, as GitHub sometimes does).
    SecondaryRateLimit { retry_after: Option<Duration> },
    /// 403 "This installation has been suspended".
    Suspended,
}

#[derive(Clone, Debug)]
pub(crate) enum Target {
    Endpoint(Endpoint),
    PathContains(String),
}

#[derive(Clone, Debug)]
pub(crate) struct FaultRule {
    pub target: Target,
    pub fault: Fault,
    /// None = until cleared.
    pub remaining: Option<u32>,
}

/// The first armed fault matching this request, consuming one of its uses.
pub(crate) fn take(rules: &mut Vec<FaultRule>, endpoint: Endpoint, path: &str) -> Option<Fault> {
    let index = rules.iter().position(|rule| match &rule.target {
        Target::Endpoint(e) => *e == endpoint,
        Target::PathContains(part) => path.contains(part.as_str()),
    })?;
    let fault = rules[index].fault.clone();
    if let Some(left) = rules[index].remaining.as_mut() {
        *left = left.saturating_sub(1);
        if *left == 0 {
            rules.remove(index);
        }
    }
    Some(fault)
}

/// 403 with the rate-limit headers of an exhausted budget (used by the fault and by a real
/// exhaustion alike).
pub(crate) fn primary_rate_limit(limit: u32, reset_at: i64, installation: Option<u64>) -> Response {
    let message = match installation {
        Some(id) => format!("API rate limit exceeded for installation ID {id}."),
        None => "API rate limit exceeded.".to_owned(),
    };
    let mut response = gh_error(StatusCode::FORBIDDEN, &message);
    let headers = response.headers_mut();
    headers.insert("x-ratelimit-limit", HeaderValue::from(limit));
    headers.insert("x-ratelimit-remaining", HeaderValue::from(0u32));
    headers.insert("x-ratelimit-used", HeaderValue::from(limit));
    headers.insert("x-ratelimit-reset", HeaderValue::from(reset_at));
    headers.insert("x-ratelimit-resource", HeaderValue::from_static("core"));
    response
}

/// The answer to a non-hanging fault.
pub(crate) fn respond(fault: &Fault, limit: u32, now: i64, installation: Option<u64>) -> Response {
    match fault {
        Fault::Status(code) => {
            let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let message = status.canonical_reason().unwrap_or("Error");
            gh_error(status, message)
        }
        Fault::PrimaryRateLimit { reset_in } => {
            let reset_at = now + reset_in.as_secs_f64().ceil() as i64;
            primary_rate_limit(limit, reset_at, installation)
        }
        Fault::SecondaryRateLimit { retry_after } => {
            let mut response = gh_error(
                StatusCode::FORBIDDEN,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you \
                 try again. If you reach out to GitHub Support for help, please include the \
                 request ID FAKE:0000:0000000:0000000:00000000.",
            );
            if let Some(wait) = retry_after {
                let secs = wait.as_secs_f64().ceil() as u64;
                response
                    .headers_mut()
                    .insert("retry-after", HeaderValue::from(secs));
            }
            response
        }
        Fault::Suspended => gh_error(
            StatusCode::FORBIDDEN,
            "This installation has been suspended",
        ),
        Fault::Timeout => StatusCode::GATEWAY_TIMEOUT.into_response(),
    }
}
