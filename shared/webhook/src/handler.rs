//! The webhook endpoint: `POST /github/webhook` (the default tenant) and
//! `POST /github/webhook/{tenant}`.
//!
//! Order of work (spec "Jobs and tenants"): resolve the tenant, verify the signature over the raw
//! body with that tenant's secrets, check the delivery's installation is the tenant's, then submit
//! one `webhook.dispatch` job and answer 202. Nothing slow happens before the answer when the
//! jobs backend is SQS (deployed); the inline backend (local runs, tests) runs the job first.
//! Deliveries are not deduplicated by `X-GitHub-Delivery`: a redelivery must sync again.

use http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};

use super::signature::{self, SignatureProblem};
use syncplane_core::config::{TenantConfig, TenantId};
use syncplane_core::http::{
    HttpError, body_bytes, error_response, header, result_response, route_path,
};
use syncplane_core::schema::SchemaGuard;
use syncplane_jobs::Job;
use syncplane_jobs::adapter::Submitted;
use syncplane_jobs::app::AppState;

pub(crate) const WEBHOOK_PATH: &str = "/github/webhook";
/// Longest delivery id or event name written to the logs (GitHub's ids are UUIDs).
const MAX_LOGGED_DELIVERY: usize = 64;

/// The one error type of the webhook surface: each variant has its status and stable code.
/// Messages are fixed; the detail goes to the logs.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("unknown tenant")]
    UnknownTenant,
    #[error("missing X-Hub-Signature-256")]
    MissingSignature,
    #[error("invalid signature")]
    InvalidSignature,
    #[error("missing X-GitHub-Event")]
    MissingEvent,
    #[error("the payload is not valid JSON")]
    InvalidJson,
    /// Signed with the tenant's secret but sent for another installation (or the tenant has no
    /// GitHub App): never dispatched into this tenant's database.
    #[error("the delivery's installation is not this tenant's")]
    InstallationMismatch,
    #[error("the jobs queue is unavailable")]
    QueueUnavailable,
    /// Inline backend only: the job ran and failed.
    #[error("the delivery could not be processed")]
    DispatchFailed,
}

impl WebhookError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NotFound | Self::UnknownTenant => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::MissingSignature | Self::InvalidSignature => StatusCode::UNAUTHORIZED,
            Self::MissingEvent | Self::InvalidJson => StatusCode::BAD_REQUEST,
            Self::InstallationMismatch => StatusCode::FORBIDDEN,
            Self::QueueUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::DispatchFailed => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::UnknownTenant => "unknown_tenant",
            Self::MissingSignature => "missing_signature",
            Self::InvalidSignature => "invalid_signature",
            Self::MissingEvent => "missing_event",
            Self::InvalidJson => "invalid_json",
            Self::InstallationMismatch => "installation_mismatch",
            Self::QueueUnavailable => "queue_unavailable",
            Self::DispatchFailed => "dispatch_failed",
        }
    }
}

impl HttpError for WebhookError {
    fn status(&self) -> StatusCode {
        WebhookError::status(self)
    }
    fn code(&self) -> Option<&'static str> {
        Some(WebhookError::code(self))
    }
    fn headers(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::MethodNotAllowed => vec![("allow", "POST".to_owned())],
            _ => Vec::new(),
        }
    }
}

/// What the function serves: the schema check of the default tenant's database (503
/// `schema_behind` while it is behind this build, 503 `database_unreachable` while it does not
/// answer), then [`handle`].
pub async fn serve(state: &AppState, schema: &SchemaGuard, req: Request) -> Response<Body> {
    if let Some(pool) = state.default_pool()
        && let Err(refused) = schema.check(pool).await
    {
        return error_response(&refused);
    }
    handle(state, req).await
}

/// Answer one delivery; never fails (every error is an enveloped response).
pub async fn handle(state: &AppState, req: Request) -> Response<Body> {
    let delivery: String = header(&req, "x-github-delivery")
        .unwrap_or("")
        .chars()
        .take(MAX_LOGGED_DELIVERY)
        .collect();
    let event: String = header(&req, "x-github-event")
        .unwrap_or("")
        .chars()
        .take(MAX_LOGGED_DELIVERY)
        .collect();
    let result = accept(state, &req, &delivery).await;
    match &result {
        Ok((status, _)) => tracing::info!(
            delivery,
            event,
            status = status.as_u16(),
            "webhook accepted"
        ),
        Err(e) => tracing::info!(
            delivery,
            event,
            status = e.status().as_u16(),
            code = e.code(),
            "webhook refused"
        ),
    }
    result_response(&result)
}

/// `None`: the default tenant's path; `Some(segment)`: a named tenant.
fn tenant_segment(path: &str) -> Result<Option<&str>, WebhookError> {
    let rest = path
        .strip_prefix(WEBHOOK_PATH)
        .ok_or(WebhookError::NotFound)?;
    match rest {
        "" | "/" => Ok(None),
        _ => {
            let seg = rest.strip_prefix('/').ok_or(WebhookError::NotFound)?;
            let seg = seg.strip_suffix('/').unwrap_or(seg);
            if seg.is_empty() || seg.contains('/') {
                return Err(WebhookError::NotFound);
            }
            Ok(Some(seg))
        }
    }
}

fn resolve_tenant<'s>(
    state: &'s AppState,
    segment: Option<&str>,
) -> Result<&'s TenantConfig, WebhookError> {
    let id = match segment {
        None => state.default_tenant.clone(),
        Some(s) => TenantId::parse(s).ok_or(WebhookError::UnknownTenant)?,
    };
    state
        .tenants
        .config(id.as_str())
        .ok_or(WebhookError::UnknownTenant)
}

async fn accept(
    state: &AppState,
    req: &Request,
    delivery: &str,
) -> Result<(StatusCode, Value), WebhookError> {
    // 1. Route and resolve the tenant first: its secrets decide the signature check.
    let segment = tenant_segment(route_path(req))?;
    if req.method() != Method::POST {
        return Err(WebhookError::MethodNotAllowed);
    }
    let tenant = resolve_tenant(state, segment)?;

    // 2. The signature, over the bytes GitHub sent.
    let body = body_bytes(req.body());
    verify(tenant, req, body)?;

    // 3. What was delivered.
    let event = header(req, "x-github-event")
        .filter(|e| !e.is_empty())
        .ok_or(WebhookError::MissingEvent)?
        .to_owned();
    let payload: Value = serde_json::from_slice(body).map_err(|e| {
        tracing::debug!(error = %e, "webhook payload is not JSON");
        WebhookError::InvalidJson
    })?;
    if event == "ping" {
        // Sent when the hook is created; an App's ping names no installation.
        return Ok((
            StatusCode::OK,
            json!({ "event": "ping", "delivery": delivery }),
        ));
    }

    // 4. Only this tenant's installation may touch this tenant's database. An App-level event
    //    that names no installation (e.g. `github_app_authorization`) concerns no repository:
    //    acknowledged, not dispatched.
    let Some(delivered) = payload["installation"]["id"].as_u64() else {
        return Ok((
            StatusCode::ACCEPTED,
            json!({ "status": "ignored", "event": event, "delivery": delivery }),
        ));
    };
    let expected = tenant.github.as_ref().map(|g| g.installation_id);
    if expected != Some(delivered) {
        tracing::warn!(tenant = %tenant.id, delivered, "delivery for another installation");
        return Err(WebhookError::InstallationMismatch);
    }

    // 5. One webhook.dispatch job.
    submit(state, tenant, event, delivery, payload).await
}

/// Step 2: the signature over the raw body, with the tenant's secrets.
fn verify(tenant: &TenantConfig, req: &Request, body: &[u8]) -> Result<(), WebhookError> {
    if tenant.webhook_secrets.is_empty() {
        // A setting, not an event: said once per process, not on every delivery.
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            tracing::warn!(tenant = %tenant.id, "no webhook secret configured: every delivery is refused");
        });
    }
    signature::verify(
        &tenant.webhook_secrets,
        header(req, "x-hub-signature-256"),
        body,
    )
    .map_err(|p| match p {
        SignatureProblem::Missing => WebhookError::MissingSignature,
        SignatureProblem::Invalid => WebhookError::InvalidSignature,
    })
}

/// Step 5: one `webhook.dispatch` job, queued (deployed) or run before the answer (inline).
async fn submit(
    state: &AppState,
    tenant: &TenantConfig,
    event: String,
    delivery: &str,
    payload: Value,
) -> Result<(StatusCode, Value), WebhookError> {
    let job = Job::WebhookDispatch {
        tenant: tenant.id.clone(),
        event: event.clone(),
        delivery: delivery.to_owned(),
        payload,
    };
    match state.jobs.submit(&job).await {
        Ok(Submitted::Queued { message_id }) => Ok((
            StatusCode::ACCEPTED,
            json!({ "status": "queued", "event": event, "delivery": delivery, "jobId": message_id }),
        )),
        Ok(Submitted::Ran(Ok(outcome))) => Ok((
            StatusCode::ACCEPTED,
            json!({ "status": "processed", "event": event, "delivery": delivery, "outcome": outcome }),
        )),
        Ok(Submitted::Ran(Err(e))) => {
            tracing::error!(error = %e, tenant = %tenant.id, "webhook.dispatch failed inline");
            Err(WebhookError::DispatchFailed)
        }
        Err(e) => {
            tracing::error!(error = %e, tenant = %tenant.id, "webhook.dispatch not queued");
            Err(WebhookError::QueueUnavailable)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenant_is_the_segment_after_the_webhook_path() {
        assert_eq!(tenant_segment("/github/webhook").unwrap(), None);
        assert_eq!(tenant_segment("/github/webhook/").unwrap(), None);
        assert_eq!(
            tenant_segment("/github/webhook/acme").unwrap(),
            Some("acme")
        );
        assert!(tenant_segment("/github/webhookx").is_err());
        assert!(tenant_segment("/github/webhook/a/b").is_err());
        assert!(tenant_segment("/other").is_err());
    }
}
