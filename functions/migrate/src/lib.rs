//! The migrate function's dispatcher: `{"action": "provision", ...}` provisions the first org,
//! user, compute target and device token (`syncplane_accounts::admin`); every other event
//! (CloudFormation's custom resource, `{"action": "migrate"}`) migrates
//! (`syncplane_core::schema::invoke::handle`). `main.rs` wires it; the tests call it in-process.

use serde_json::Value;
use syncplane_accounts::admin::{PROVISION, ProvisionError, parse, provision_on};
use syncplane_core::config::{Config, ConfigError};
use syncplane_core::schema::invoke::{self, InvokeError};
use tokio::time::Instant;

/// What the migrate function answers as a function error: the migration's or this action's.
#[derive(Debug, thiserror::Error)]
pub enum MigrateFunctionError {
    #[error(transparent)]
    Migrate(#[from] InvokeError),
    #[error(transparent)]
    Provision(#[from] ProvisionError),
}

/// The migrate function's event handler: `{"action": "provision", ...}` provisions on the first
/// tenant's database (configuration read only then, by `config`), every other event goes to
/// `syncplane_core::schema::invoke::handle` (`migrate`, as the function's main wires it). Both are done
/// by `answer_by`.
pub async fn handle<M, C>(
    event: Value,
    http: &reqwest::Client,
    answer_by: Instant,
    migrate: M,
    config: C,
) -> Result<Value, MigrateFunctionError>
where
    M: AsyncFnOnce(Instant) -> Result<Value, String>,
    C: AsyncFnOnce() -> Result<Config, ConfigError>,
{
    if event.get("action").and_then(Value::as_str) != Some(PROVISION) {
        return Ok(invoke::handle(event, http, answer_by, migrate).await?);
    }
    let request = parse(&event)?;
    let started = Instant::now();
    let run = Box::pin(async move {
        let config = config()
            .await
            .map_err(|e| ProvisionError::Configuration(e.to_string()))?;
        provision_on(&config, &request).await
    });
    let provisioned = tokio::time::timeout_at(answer_by, run)
        .await
        .map_err(|_| ProvisionError::OutOfTime((answer_by - started).as_secs()))??;
    tracing::info!(
        org_id = provisioned.org_id,
        user_id = provisioned.user_id,
        token_id = provisioned.token_id,
        created = ?provisioned.created,
        "provisioned a device token (returned in the invoke response only)"
    );
    Ok(provisioned.answer())
}
