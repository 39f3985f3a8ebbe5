//! The tick function's logic (EventBridge, every minute): per tenant, the schedule rules decide
//! whether a scheduled or startup full sync is due and submit `sync.full`; every tick submits
//! `sync.drain` and `sync.reap`. Tenants are independent: one tenant's failure (its database
//! unreachable, the queue refusing its jobs) is reported and the others go on.
//!
//! The transcript archive's retention (issue 20 §7: "a deletion path that removes objects and
//! rows"): when an archive is configured, [`TickFunction`] also submits `transcripts.expire` for
//! the tenant whose database holds it (the first) once [`rules::retention_due`] says so: hourly,
//! counted from its last submission, so a missed tick delays it by a minute.

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::Job;
use crate::adapter::{InlineRunner, JobsAdapter, Submitted};
use crate::app::AppError;
use crate::scheduler;
use crate::scheduler::rules;
use crate::sqs::SqsAdapter;
use crate::tenants::Tenants;
use syncplane_core::config::{Config, JobsBackend, TenantId};
use syncplane_core::db::DEFAULT_POOL_SIZE;
use syncplane_runs::{RunOptions, Trigger};

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
    run_tick_with_retention(tenants, jobs, scheduler_enabled, now, None).await
}

/// [`run_tick`], submitting `transcripts.expire` too for the tenant `expire` names (after its
/// drain and reap; nothing for it when its schedule is unreadable).
pub async fn run_tick_with_retention(
    tenants: &Tenants,
    jobs: &JobsAdapter,
    scheduler_enabled: bool,
    now: DateTime<Utc>,
    expire: Option<&TenantId>,
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
        .map(|id| {
            tick_tenant(
                tenants,
                jobs,
                id,
                now,
                expire.is_some_and(|e| e.as_str() == id),
            )
        })
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
    expire: bool,
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
    batch.push(Job::SyncReap {
        tenant: tenant.clone(),
    });
    if expire {
        batch.push(Job::TranscriptsExpire { tenant });
    }
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

/// The tick function's state kept across invocations: the queue client, or for inline jobs the
/// runner's maker and the transcript archive's tenant, and when this process last submitted
/// `transcripts.expire`. The configuration (and so the tenant list) is read again on every tick,
/// so tenants that came or went are seen.
pub struct TickFunction {
    queue: Option<SqsAdapter>,
    /// The first tenant of the configuration at start: the archive's, even on a tick whose
    /// configuration lost it (its schema behind the build: `crate::held`).
    first_tenant: Option<TenantId>,
    /// Makes the runner of inline jobs ([`TickFunction::with_inline`]).
    inline: Option<InlineRunner>,
    /// The tenant whose transcript archive inline jobs expire ([`TickFunction::with_archive`]).
    archive_tenant: Option<TenantId>,
    /// When `transcripts.expire` was last handed over ([`rules::retention_due`]).
    last_expire: Mutex<Option<DateTime<Utc>>>,
}

impl TickFunction {
    /// The tick function of a process whose configuration at start is `config`; `inline` makes
    /// the runner of inline jobs (none: `JOBS_BACKEND=inline` is [`AppError::NoInlineRunner`]).
    pub async fn new(config: &Config, inline: Option<InlineRunner>) -> Result<Self, AppError> {
        let queue = match &config.jobs {
            JobsBackend::Sqs { queue_url } => {
                Some(SqsAdapter::from_env(queue_url, config.sqs_endpoint.as_deref()).await)
            }
            JobsBackend::Inline if inline.is_none() => return Err(AppError::NoInlineRunner),
            JobsBackend::Inline => None,
        };
        Ok(Self {
            first_tenant: config.tenants.first().map(|t| t.id.clone()),
            inline,
            ..Self::with_queue(queue)
        })
    }

    pub fn with_queue(queue: Option<SqsAdapter>) -> Self {
        Self {
            queue,
            first_tenant: None,
            inline: None,
            archive_tenant: None,
            last_expire: Mutex::new(None),
        }
    }

    /// Inline jobs: `inline` makes their runner.
    pub fn with_inline(mut self, inline: InlineRunner) -> Self {
        self.inline = Some(inline);
        self
    }

    /// Inline jobs (`syncplane serve`) with a transcript archive: `tenant` holds it and `inline`
    /// makes a runner that expires it (on the store its ingest uses), so the tick submits
    /// `transcripts.expire` for that tenant (the archive's own: `syncplane_worker`'s
    /// `runner_with_archive(Some(archive))` with `archive.tenant`). Queued jobs need none: with `TRANSCRIPT_BUCKET` the
    /// worker holds the store.
    pub fn with_archive(mut self, tenant: TenantId, inline: InlineRunner) -> Self {
        self.archive_tenant = Some(tenant);
        self.with_inline(inline)
    }

    /// The tenant to submit `transcripts.expire` for at `now`, when an archive is configured
    /// (queued jobs: `TRANSCRIPT_BUCKET`, for the first tenant; inline:
    /// [`TickFunction::with_archive`]'s), that tenant ticks now, and retention is due.
    fn retention_due(&self, config: &Config, now: DateTime<Utc>) -> Option<TenantId> {
        let tenant = match config.jobs {
            JobsBackend::Sqs { .. } => {
                config.transcripts.bucket.as_ref()?;
                (self.first_tenant.clone()).or_else(|| Some(config.tenants.first()?.id.clone()))?
            }
            JobsBackend::Inline => self.archive_tenant.clone()?,
        };
        // A tenant held back (or gone) this tick: the next tick tries again.
        config.tenants.iter().find(|t| t.id == tenant)?;
        let last = *self
            .last_expire
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        rules::retention_due(now, last).then_some(tenant)
    }

    /// Remember `now` when the tick handed `transcripts.expire` over for `tenant`.
    fn record_expire(&self, report: &TickReport, tenant: &TenantId, now: DateTime<Utc>) {
        let kind = Job::TranscriptsExpire {
            tenant: tenant.clone(),
        }
        .kind();
        let submitted = report
            .tenants
            .iter()
            .any(|t| t.tenant == tenant.as_str() && t.submitted.contains(&kind));
        if submitted {
            *self
                .last_expire
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(now);
        }
    }

    /// One tick with the configuration as read now.
    pub async fn invoke(
        &self,
        config: &Config,
        now: DateTime<Utc>,
    ) -> Result<TickReport, AppError> {
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
        let expire = self.retention_due(config, now);
        let jobs = match (&config.jobs, &self.queue) {
            (JobsBackend::Sqs { queue_url }, Some(queue)) if queue.queue_url() == queue_url => {
                JobsAdapter::Sqs(queue.clone())
            }
            (JobsBackend::Sqs { queue_url }, _) => JobsAdapter::Sqs(
                SqsAdapter::from_env(queue_url, config.sqs_endpoint.as_deref()).await,
            ),
            (JobsBackend::Inline, _) => {
                let make = self.inline.as_ref().ok_or(AppError::NoInlineRunner)?;
                JobsAdapter::Inline(make(tenants.clone()))
            }
        };
        let report = run_tick_with_retention(&tenants, &jobs, true, now, expire.as_ref()).await;
        if let Some(tenant) = &expire {
            self.record_expire(&report, tenant, now);
        }
        // These pools live for this tick only.
        for id in tenants.ids() {
            if let Some(pool) = tenants.pool(id) {
                pool.close().await;
            }
        }
        Ok(report)
    }
}
