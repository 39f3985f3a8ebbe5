//! The state an HTTP function builds once per execution environment and keeps across invocations:
//! every tenant (lazy pools, GitHub clients), the jobs adapter, and which tenant is the default
//! (the first configured one: `POST /github/webhook` and the sync API serve it).

use std::sync::Arc;

use crate::config::{Config, JobsBackend, TenantId};
use crate::jobs::Tenants;
use crate::jobs::adapter::JobsAdapter;
use crate::jobs::sqs::jobs_adapter;
use crate::sync::workspace::RunOptions;

#[derive(Clone)]
pub struct AppState {
    pub tenants: Arc<Tenants>,
    pub jobs: JobsAdapter,
    pub default_tenant: TenantId,
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("no tenant configured (DATABASE_URL or TENANTS_FILE)")]
    NoTenant,
    #[error("database settings unusable: {0}")]
    Pool(#[from] sqlx::Error),
}

impl AppState {
    /// Build from configuration: pools connect lazily, so this does no database I/O (the SQS
    /// client reads the AWS environment once).
    pub async fn from_config(config: &Config, pool_size: u32) -> Result<Self, AppError> {
        let default_tenant = config
            .tenants
            .first()
            .map(|t| t.id.clone())
            .ok_or(AppError::NoTenant)?;
        let tenants = Arc::new(Tenants::from_config(
            config,
            pool_size,
            RunOptions::default(),
        )?);
        let jobs = jobs_adapter(config, tenants.clone()).await;
        Ok(Self {
            tenants,
            jobs,
            default_tenant,
        })
    }
}

impl AppState {
    /// The default tenant's pool (the database the schema check looks at).
    pub fn default_pool(&self) -> Option<&sqlx::PgPool> {
        self.tenants.pool(self.default_tenant.as_str())
    }
}

/// A deployed function cannot work after it has answered, so it must queue jobs (DESIGN.md
/// "Jobs adapter"). `cargo lambda watch` also sets `AWS_LAMBDA_FUNCTION_NAME`, so this only logs:
/// an error when `AWS_EXECUTION_ENV` (set by the Lambda service itself) is present, else a warning.
pub fn check_deployed_backend(config: &Config, get: impl Fn(&str) -> Option<String>) {
    if config.jobs != JobsBackend::Inline || get("AWS_LAMBDA_FUNCTION_NAME").is_none() {
        return;
    }
    if get("AWS_EXECUTION_ENV").is_some() {
        tracing::error!(
            "JOBS_BACKEND is not sqs in a deployed function: jobs run before the answer \
             (set JOBS_BACKEND=sqs and SQS_QUEUE_URL)"
        );
    } else {
        tracing::warn!("JOBS_BACKEND=inline: jobs run before the answer (fine for local runs)");
    }
}
