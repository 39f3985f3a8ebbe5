//! The migrate function's event: a CloudFormation custom resource request (every `sam deploy`) or
//! `{"action": "migrate"}` (by hand, `aws lambda invoke`). Its third event, `{"action":
//! "provision", ...}`, is answered above this layer (`syncplane_ingest::admin::handle`, which hands
//! every other event here).
//!
//! CloudFormation waits for an answer PUT to the request's pre-signed `ResponseURL`, so every
//! custom resource request is answered, whatever happens: `Create` and `Update` migrate and answer
//! `SUCCESS`, or `FAILED` with the reason (which fails and rolls back the deploy); `Delete` always
//! succeeds and changes nothing (removing the stack never drops data). The physical id is stable,
//! so CloudFormation never replaces the resource.
//!
//! The answer goes out before the invocation's deadline, whatever the migration does: the
//! migration (its wait for the schema lock included) gets until [`answer_by`], which keeps
//! [`ANSWER_MARGIN`] of the invocation for delivering the answer. A migration still waiting or
//! running then is abandoned and answered `FAILED` with why.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::time::Instant;

/// The physical id of the schema resource, the same on every answer.
pub const PHYSICAL_RESOURCE_ID: &str = "syncplane-schema";
/// CloudFormation caps a response at 4 KB; the reason is kept well below.
const MAX_REASON_CHARS: usize = 1000;
/// One try at delivering the answer (the migrate function's HTTP client timeout).
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);
/// Kept back from the invocation's deadline for the answer: [`deliver`]'s three tries of at
/// most [`DELIVERY_TIMEOUT`] and its pauses between them (1.5 s), with room to spare.
pub const ANSWER_MARGIN: Duration = Duration::from_secs(20);
/// The migrations must be done this long before [`answer_by`]: time to end the session of one
/// that is not (`apply::migrate_locked_by`) and to answer with its own reason.
const FINISH_MARGIN: Duration = Duration::from_secs(3);

/// When the migration must have finished for the answer to reach CloudFormation in time: the
/// invocation's deadline (the Lambda context's) less [`ANSWER_MARGIN`], and never in the past.
pub fn answer_by(deadline: SystemTime) -> Instant {
    let left = deadline
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    Instant::now() + left.saturating_sub(ANSWER_MARGIN)
}

/// By when the migrations must be done, given [`answer_by`] (the instant the migrate closure is
/// given; it waits for the schema lock until `apply::lock_deadline` of it).
pub fn finish_by(answer_by: Instant) -> Instant {
    let now = Instant::now();
    let left = answer_by.saturating_duration_since(now);
    // A short deadline still leaves half of it for the migration.
    now + left.saturating_sub(FINISH_MARGIN.min(left / 2))
}

/// What the migrate function was asked.
#[derive(Debug)]
pub enum Invocation {
    CustomResource(CustomResourceRequest),
    /// `{"action": "migrate"}`.
    Migrate,
}

/// A CloudFormation custom resource request (the fields this handler uses).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CustomResourceRequest {
    pub request_type: RequestType,
    #[serde(rename = "ResponseURL")]
    pub response_url: String,
    pub stack_id: String,
    pub request_id: String,
    pub logical_resource_id: String,
    #[serde(default)]
    pub physical_resource_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum RequestType {
    Create,
    Update,
    Delete,
}

/// The answer PUT to `ResponseURL`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct CustomResourceResponse {
    pub status: &'static str,
    pub reason: String,
    pub physical_resource_id: String,
    pub stack_id: String,
    pub request_id: String,
    pub logical_resource_id: String,
    pub data: Value,
}

/// The one error of this surface: what `aws lambda invoke` shows as the function error.
#[derive(Debug, thiserror::Error)]
pub enum InvokeError {
    #[error(
        "unknown event: expected a CloudFormation custom resource request, {{\"action\": \"migrate\"}} or {{\"action\": \"provision\", ...}}"
    )]
    UnknownEvent,
    #[error("{0}")]
    MigrationFailed(String),
    #[error("could not deliver the answer to CloudFormation's ResponseURL: {0}")]
    ResponseUndelivered(String),
}

/// Tell the two kinds of event apart.
pub fn parse(event: Value) -> Result<Invocation, InvokeError> {
    if event.get("RequestType").is_some() {
        return serde_json::from_value(event)
            .map(Invocation::CustomResource)
            .map_err(|_| InvokeError::UnknownEvent);
    }
    match event.get("action").and_then(Value::as_str) {
        Some("migrate") => Ok(Invocation::Migrate),
        _ => Err(InvokeError::UnknownEvent),
    }
}

/// Handle one event: `migrate` applies the migrations, done by the instant it is given
/// ([`finish_by`]), and returns a JSON summary or one line. It must be done by `answer_by`
/// ([`answer_by`] of the invocation's deadline), or it is abandoned and answered as failed.
pub async fn handle<M>(
    event: Value,
    http: &reqwest::Client,
    answer_by: Instant,
    migrate: M,
) -> Result<Value, InvokeError>
where
    M: AsyncFnOnce(Instant) -> Result<Value, String>,
{
    match parse(event)? {
        Invocation::Migrate => bounded(answer_by, migrate)
            .await
            .map_err(InvokeError::MigrationFailed),
        Invocation::CustomResource(request) => {
            let response = answer(&request, answer_by, migrate).await;
            deliver(http, &request.response_url, &response).await?;
            Ok(json!({ "Status": response.status, "Reason": response.reason }))
        }
    }
}

/// Run `migrate` until `answer_by` at most.
async fn bounded<M>(answer_by: Instant, migrate: M) -> Result<Value, String>
where
    M: AsyncFnOnce(Instant) -> Result<Value, String>,
{
    let started = Instant::now();
    // Boxed: the migration's future is deep (configuration, secrets, Postgres), too deep to
    // nest inline in the runtime's own.
    // The migration ends its own work by `finish_by`; this bound is the backstop for the rest
    // (configuration, secrets, connecting).
    let run = Box::pin(migrate(finish_by(answer_by)));
    match tokio::time::timeout_at(answer_by, run).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!(
            "the migration did not finish within the {}s the migrate function had left; it was \
             abandoned (an unfinished migration's transaction is rolled back): run `syncplane migrate` from a machine that reaches the database, then deploy again",
            (answer_by - started).as_secs()
        )),
    }
}

/// Decide the answer to one custom resource request (migrating for Create and Update, until
/// `answer_by` at most).
pub async fn answer<M>(
    request: &CustomResourceRequest,
    answer_by: Instant,
    migrate: M,
) -> CustomResourceResponse
where
    M: AsyncFnOnce(Instant) -> Result<Value, String>,
{
    let outcome = match request.request_type {
        RequestType::Delete => Ok(json!({})),
        RequestType::Create | RequestType::Update => bounded(answer_by, migrate).await,
    };
    let (status, reason, data) = match outcome {
        Ok(data) => ("SUCCESS", "schema migrated".to_owned(), data),
        Err(reason) => {
            tracing::error!(reason = %reason, "schema migration failed; failing the deploy");
            ("FAILED", truncate(&reason), json!({}))
        }
    };
    CustomResourceResponse {
        status,
        reason,
        physical_resource_id: request
            .physical_resource_id
            .clone()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| PHYSICAL_RESOURCE_ID.to_owned()),
        stack_id: request.stack_id.clone(),
        request_id: request.request_id.clone(),
        logical_resource_id: request.logical_resource_id.clone(),
        data: only_strings(data),
    }
}

/// CloudFormation's `Fn::GetAtt` reads `Data` values as strings.
fn only_strings(data: Value) -> Value {
    match data {
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| match v {
                    Value::String(_) => (k, v),
                    other => (k, Value::String(other.to_string())),
                })
                .collect(),
        ),
        _ => json!({}),
    }
}

fn truncate(reason: &str) -> String {
    if reason.chars().count() <= MAX_REASON_CHARS {
        return reason.to_owned();
    }
    let mut cut: String = reason.chars().take(MAX_REASON_CHARS).collect();
    cut.push_str("...");
    cut
}

/// PUT the answer to the pre-signed URL: an empty content type, as the URL was signed without
/// one. Retried a few times: an undelivered answer leaves the stack waiting for an hour.
pub async fn deliver(
    http: &reqwest::Client,
    url: &str,
    response: &CustomResourceResponse,
) -> Result<(), InvokeError> {
    let body = serde_json::to_vec(response)
        .map_err(|e| InvokeError::ResponseUndelivered(e.to_string()))?;
    let mut last = String::new();
    for attempt in 0..3u64 {
        if attempt > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(500 * attempt)).await;
        }
        let sent = http
            .put(url)
            .header(http::header::CONTENT_TYPE, "")
            .body(body.clone())
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) => last = format!("HTTP {}", r.status().as_u16()),
            // Without the URL: its query string is a signature.
            Err(e) => last = e.without_url().to_string(),
        }
        tracing::warn!(attempt, error = %last, "custom resource answer not delivered");
    }
    Err(InvokeError::ResponseUndelivered(last))
}
