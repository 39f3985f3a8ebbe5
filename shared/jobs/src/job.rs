//! The job itself (spec "Jobs and tenants"; docs/design.md "Jobs"): what a job is, what it did,
//! and why it failed. A job is a small JSON document naming its kind and its tenant.

use serde::{Deserialize, Serialize};

use crate::tenants::TenantError;
use syncplane_core::config::TenantId;
use syncplane_github::GithubError;
use syncplane_runs::{RemovalError, RequestOutcome, RunReport, SyncError, Trigger};

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
    /// The transcript archive's retention (issue 20 §7): delete what the orgs' retention says
    /// is due and the objects of uploads never completed. Only the tenant whose database holds
    /// the archive (the first) has anything to expire; the tick submits it hourly.
    #[serde(rename = "transcripts.expire")]
    TranscriptsExpire { tenant: TenantId },
}

impl Job {
    pub fn tenant(&self) -> &TenantId {
        match self {
            Self::SyncFull { tenant, .. }
            | Self::SyncRepo { tenant, .. }
            | Self::SyncDrain { tenant }
            | Self::SyncReap { tenant }
            | Self::TranscriptsExpire { tenant }
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
            Self::TranscriptsExpire { .. } => "transcripts.expire",
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
    /// What `transcripts.expire` deleted: the counts of the archive's `retention::Expired`,
    /// copied (the mailbox does not import the archive).
    Expired {
        segments: u64,
        files: u64,
        uploads: u64,
        /// Objects deleted from the store (segments' and abandoned uploads').
        objects: u64,
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
    /// The transcript archive's store failed (unreachable, refused); the detail is the store's.
    #[error("transcript store: {0}")]
    TranscriptStore(String),
}

impl From<GithubError> for JobError {
    fn from(e: GithubError) -> Self {
        Self::Sync(SyncError::RunStopped(e))
    }
}

impl From<RemovalError> for JobError {
    fn from(e: RemovalError) -> Self {
        match e {
            RemovalError::RunStopped(g) => g.into(),
            RemovalError::Database(d) => Self::Database(d),
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

impl From<TenantError> for JobError {
    fn from(e: TenantError) -> Self {
        match e {
            TenantError::Unknown(tenant) => Self::UnknownTenant(tenant),
            TenantError::GithubNotConfigured(tenant) => Self::GithubNotConfigured(tenant),
            TenantError::Github(e) => e.into(),
        }
    }
}
