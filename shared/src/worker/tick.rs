//! The tick function's logic (EventBridge, every minute): per tenant, the schedule rules decide
//! whether a scheduled or startup full sync is due and submit `sync.full`; every tick submits
//! `sync.drain` and `sync.reap`. Tenants are independent: one tenant's failure (its database
//! unreachable, the queue refusing its jobs) is reported and the others go on.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::run::inline;
use crate::config::{Config, JobsBackend};
use crate::db::DEFAULT_POOL_SIZE;
use crate::jobs::Job;
use crate::jobs::adapter::{JobsAdapter, Submitted};
use crate::jobs::sqs::SqsAdapter;
use crate::scheduler;
use crate::sync::runs::Trigger;
use crate::sync::workspace::RunOptions;
use crate::tenants::Tenants;

/// What one tick did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TickReport {
    pub scheduler_enabled: bool,
    pub tenants: Vec<TenantTick>,
}

/// What one tick did for one tenant.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantTick {
    pub tenant: String,
    /// The full sync submitted, if one was due.
    pub full_sync: Option<Trigger>,
    /// Kinds of the jobs handed to the adapter, in order.
    pub submitted: Vec<&'static str>,
    /// Why something failed for this tenant (never a secret: codes and library messages).
    pub errors: Vec<String>,
}

/// One tick over `tenants` at `now`. With the scheduler off it does nothing.
pub async fn run_tick(
    tenants: &Tenants,
    jobs: &JobsAdapter,
    scheduler_enabled: bool,
    now: DateTime<Utc>,
) -> TickReport {
    if !scheduler_enabled {
        tracing::info!("scheduler off (SYNC_SCHEDULER=0): tick does nothing");
        return TickReport {
            scheduler_enabled,
            tenants: Vec::new(),
        };
    }
    let ticks = tenants
        .ids()
        .map(|id| tick_tenant(tenants, jobs, id, now))
        .collect::<Vec<_>>();
    TickReport {
        scheduler_enabled,
        tenants: futures::future::join_all(ticks).await,
    }
}

async fn tick_tenant(
    tenants: &Tenants,
    jobs: &JobsAdapter,
    id: &str,
    now: DateTime<Utc>,
) -> TenantTick {
    let mut report = TenantTick {
        tenant: id.to_owned(),
        full_sync: None,
        submitted: Vec::new(),
        errors: Vec::new(),
    };
    let (Some(pool), Some(config), Some(tenant)) = (
        tenants.pool(id),
        tenants.config(id),
        tenants.config(id).map(|c| c.id.clone()),
    ) else {
        return report;
    };
    // The tenant's database holds its schedule; unreachable, nothing useful can be submitted
    // for it (drain and reap would fail the same way).
    let due = match scheduler::tick(pool, id, &config.sync, now).await {
        Ok(due) => due,
        Err(e) => {
            tracing::error!(tenant = id, error = %e, "schedule unreadable; tenant skipped this tick");
            report.errors.push(format!("schedule: {e}"));
            return report;
        }
    };
    let mut batch = Vec::new();
    if let Some(trigger) = due {
        report.full_sync = Some(trigger);
        batch.push(Job::SyncFull {
            tenant: tenant.clone(),
            trigger,
        });
    }
    batch.push(Job::SyncDrain {
        tenant: tenant.clone(),
    });
    batch.push(Job::SyncReap { tenant });
    for job in batch {
        match jobs.submit(&job).await {
            Ok(Submitted::Queued { .. }) => report.submitted.push(job.kind()),
            Ok(Submitted::Ran(result)) => {
                report.submitted.push(job.kind());
                if let Err(e) = result {
                    tracing::warn!(tenant = id, kind = job.kind(), error = %e, "inline job failed");
                    report.errors.push(format!("{}: {e}", job.kind()));
                }
            }
            Err(e) => {
                tracing::error!(tenant = id, kind = job.kind(), error = %e, "job not submitted");
                report.errors.push(format!("{}: {e}", job.kind()));
            }
        }
    }
    tracing::info!(
        tenant = id,
        full_sync = report.full_sync.map_or("none", Trigger::as_str),
        submitted = %report.submitted.join(","),
        "tick"
    );
    report
}

/// The tick function's state kept across invocations: the queue client only. The configuration
/// (and so the tenant list) is read again on every tick, so tenants that came or went are seen.
pub struct TickFunction {
    queue: Option<SqsAdapter>,
}

impl TickFunction {
    pub async fn new(config: &Config) -> Self {
        let queue = match &config.jobs {
            JobsBackend::Sqs { queue_url } => {
                Some(SqsAdapter::from_env(queue_url, config.sqs_endpoint.as_deref()).await)
            }
            JobsBackend::Inline => None,
        };
        Self { queue }
    }

    pub fn with_queue(queue: Option<SqsAdapter>) -> Self {
        Self { queue }
    }

    /// One tick with the configuration as read now.
    pub async fn invoke(
        &self,
        config: &Config,
        now: DateTime<Utc>,
    ) -> Result<TickReport, sqlx::Error> {
        if !config.scheduler_enabled {
            tracing::info!("scheduler off (SYNC_SCHEDULER=0): tick does nothing");
            return Ok(TickReport {
                scheduler_enabled: false,
                tenants: Vec::new(),
            });
        }
        let tenants = Arc::new(Tenants::from_config(
            config,
            DEFAULT_POOL_SIZE,
            RunOptions::default(),
        )?);
        let jobs = match (&config.jobs, &self.queue) {
            (JobsBackend::Sqs { queue_url }, Some(queue)) if queue.queue_url() == queue_url => {
                JobsAdapter::Sqs(queue.clone())
            }
            (JobsBackend::Sqs { queue_url }, _) => JobsAdapter::Sqs(
                SqsAdapter::from_env(queue_url, config.sqs_endpoint.as_deref()).await,
            ),
            (JobsBackend::Inline, _) => inline(tenants.clone()),
        };
        let report = run_tick(&tenants, &jobs, true, now).await;
        // These pools live for this tick only.
        for id in tenants.ids() {
            if let Some(pool) = tenants.pool(id) {
                pool.close().await;
            }
        }
        Ok(report)
    }
}
