//! Jobs and tenants (spec "Jobs and tenants"; docs/design.md "Jobs").
//!
//! The scheduler and the webhook endpoint never call the sync engine directly: they submit a
//! [`Job`], whose payload names its tenant; [`run`] reads that tenant's workspace when the job
//! runs. The locks and rerun markers live in the tenant's database, so two copies of one job
//! leave the state of one sync, whichever process runs them.

pub mod adapter;
pub mod fan_out;
pub mod pause;
pub mod sqs;
pub mod tenants;
pub mod worker;

use serde::{Deserialize, Serialize};

use crate::config::TenantId;
use crate::github::GithubError;
use crate::scheduler;
use crate::sync::coalescing::{NoRowBusy, RequestOutcome, request_sync};
use crate::sync::full::{RunReport, drain_sync_requests};
use crate::sync::repository::SyncError;
use crate::sync::runs::Trigger;
use crate::sync::{reaper, removal};
pub use tenants::Tenants;

/// A repository named by a job: the GitHub id is the identity, the name finds it upstream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoRef {
    pub github_id: Option<i64>,
    pub owner: String,
    pub name: String,
}

/// One unit of background work, serialized as `{"kind": "...", "tenant": "...", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum Job {
    /// A full sync (scheduled, startup or manual "everything").
    #[serde(rename = "sync.full")]
    SyncFull { tenant: TenantId, trigger: Trigger },
    /// One repository.
    #[serde(rename = "sync.repo")]
    SyncRepo {
        tenant: TenantId,
        repository: RepoRef,
        trigger: Trigger,
    },
    /// Every repository with a waiting rerun marker.
    #[serde(rename = "sync.drain")]
    SyncDrain { tenant: TenantId },
    /// Mark dead runs failed.
    #[serde(rename = "sync.reap")]
    SyncReap { tenant: TenantId },
    /// One verified webhook delivery, routed into syncs or removals.
    #[serde(rename = "webhook.dispatch")]
    WebhookDispatch {
        tenant: TenantId,
        event: String,
        delivery: String,
        payload: serde_json::Value,
    },
}

impl Job {
    pub fn tenant(&self) -> &TenantId {
        match self {
            Self::SyncFull { tenant, .. }
            | Self::SyncRepo { tenant, .. }
            | Self::SyncDrain { tenant }
            | Self::SyncReap { tenant }
            | Self::WebhookDispatch { tenant, .. } => tenant,
        }
    }
    pub fn kind(&self) -> &'static str {
        match self {
            Self::SyncFull { .. } => "sync.full",
            Self::SyncRepo { .. } => "sync.repo",
            Self::SyncDrain { .. } => "sync.drain",
            Self::SyncReap { .. } => "sync.reap",
            Self::WebhookDispatch { .. } => "webhook.dispatch",
        }
    }
}

/// What a job did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "result", rename_all = "camelCase")]
pub enum JobOutcome {
    Run {
        report: Option<RunReport>,
    },
    Request {
        outcome: RequestOutcome,
    },
    Reaped {
        runs: u32,
    },
    Removed {
        repositories: u32,
    },
    /// Nothing to do (e.g. an event that is acknowledged and ignored).
    Ignored {
        reason: String,
    },
    /// Several outcomes (a delivery that touched several repositories).
    Many {
        outcomes: Vec<JobOutcome>,
    },
}

/// Why a job failed. `retryable` jobs are redelivered by the queue.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("unknown tenant '{0}'")]
    UnknownTenant(String),
    #[error("tenant '{0}' has no GitHub App configured")]
    GithubNotConfigured(String),
    #[error("invalid job payload: {0}")]
    InvalidPayload(String),
    #[error("repository busy and not yet stored; retry later")]
    Busy,
    #[error(transparent)]
    Sync(#[from] SyncError),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

impl From<GithubError> for JobError {
    fn from(e: GithubError) -> Self {
        Self::Sync(SyncError::RunStopped(e))
    }
}

impl From<removal::RemovalError> for JobError {
    fn from(e: removal::RemovalError) -> Self {
        match e {
            removal::RemovalError::RunStopped(g) => g.into(),
            removal::RemovalError::Database(d) => Self::Database(d),
        }
    }
}

impl JobError {
    /// Whether running the same job again later can succeed.
    pub fn retryable(&self) -> bool {
        !matches!(
            self,
            Self::UnknownTenant(_) | Self::GithubNotConfigured(_) | Self::InvalidPayload(_)
        )
    }
}

/// Run one job against its tenant's workspace.
pub async fn run(tenants: &Tenants, job: &Job) -> Result<JobOutcome, JobError> {
    let tenant = job.tenant().as_str();
    match job {
        Job::SyncReap { .. } => {
            let ws = tenants.database(tenant)?;
            let runs = reaper::reap(&ws.pool, ws.options.reaper_grace).await?;
            Ok(JobOutcome::Reaped { runs })
        }
        Job::SyncFull { trigger, .. } => {
            let ws = tenants.workspace(tenant)?;
            let report = match trigger {
                // Scheduled and startup runs take the tenant's scheduler lock and feed the schedule.
                Trigger::Schedule | Trigger::Startup => {
                    scheduler::run_scheduled_full(&ws, *trigger).await?
                }
                _ => Some(crate::sync::full::sync_all(&ws, *trigger).await?),
            };
            Ok(JobOutcome::Run { report })
        }
        Job::SyncDrain { .. } => {
            let ws = tenants.workspace(tenant)?;
            let report = drain_sync_requests(&ws, Trigger::Schedule).await?;
            Ok(JobOutcome::Run { report })
        }
        Job::SyncRepo {
            repository,
            trigger,
            ..
        } => {
            let ws = tenants.workspace(tenant)?;
            let info = ws.client.repo(&repository.owner, &repository.name).await?;
            let policy = if *trigger == Trigger::Webhook {
                NoRowBusy::RetryWithBackoff
            } else {
                NoRowBusy::Refuse
            };
            match request_sync(&ws, &info, *trigger, policy).await? {
                RequestOutcome::Busy => Err(JobError::Busy),
                outcome => Ok(JobOutcome::Request { outcome }),
            }
        }
        Job::WebhookDispatch {
            event,
            delivery,
            payload,
            ..
        } => {
            let ws = tenants.workspace(tenant)?;
            crate::webhook::routing::dispatch(&ws, event, delivery, payload).await
        }
    }
}
