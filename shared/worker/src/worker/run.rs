//! Running one job against its tenant's workspace (spec "Jobs and tenants"): the job's tenant
//! is looked up when it runs, and each kind calls into the engine (`syncplane_engine::sync`), the scheduler
//! (a scheduled full sync takes the tenant's scheduler lock), the routing of a webhook delivery
//! or the transcript archive's retention (`transcripts.expire`, [`super::expire`], given the
//! archive with [`run_in`]). [`Runner`] is the inline adapter's runner, handed to it where the
//! application is assembled ([`inline`], [`inline_with_archive`], [`jobs_adapter`]).

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::expire::{self, TranscriptArchive};
use super::routing;
use crate::jobs::adapter::{JobRunner, JobsAdapter};
use crate::jobs::sqs::SqsAdapter;
use crate::jobs::{Job, JobError, JobOutcome};
use crate::scheduler;
use crate::tenants::Tenants;
use syncplane_core::config::{Config, JobsBackend};
use syncplane_engine::sync::coalescing::{NoRowBusy, RequestOutcome, request_sync};
use syncplane_engine::sync::full::{drain_sync_requests, sync_all};
use syncplane_engine::sync::reaper;
use syncplane_engine::sync::runs::Trigger;

/// Run one job against its tenant's workspace, in a process without a transcript archive.
pub async fn run(tenants: &Tenants, job: &Job) -> Result<JobOutcome, JobError> {
    run_in(tenants, None, job).await
}

/// Run one job against its tenant's workspace; `archive` is where `transcripts.expire` runs.
pub async fn run_in(
    tenants: &Tenants,
    archive: Option<&TranscriptArchive>,
    job: &Job,
) -> Result<JobOutcome, JobError> {
    let tenant = job.tenant().as_str();
    match job {
        Job::TranscriptsExpire { .. } => {
            expire::expire(tenants, archive, tenant, chrono::Utc::now()).await
        }
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
                _ => Some(sync_all(&ws, *trigger).await?),
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
            routing::dispatch(&ws, event, delivery, payload).await
        }
    }
}

/// Runs jobs in the calling process: the inline adapter's runner.
pub(crate) struct Runner {
    tenants: Arc<Tenants>,
    archive: Option<TranscriptArchive>,
}

impl JobRunner for Runner {
    fn run<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Result<JobOutcome, JobError>> {
        run_in(&self.tenants, self.archive.as_ref(), job).boxed()
    }
}

/// The inline adapter: jobs run in the submitting process, against `tenants`.
pub fn inline(tenants: Arc<Tenants>) -> JobsAdapter {
    inline_with_archive(tenants, None)
}

/// The inline adapter with the transcript archive `transcripts.expire` runs in (`syncplane
/// serve`'s scheduler: the store its ingest uses).
pub fn inline_with_archive(
    tenants: Arc<Tenants>,
    archive: Option<TranscriptArchive>,
) -> JobsAdapter {
    JobsAdapter::Inline(Arc::new(Runner { tenants, archive }))
}

/// The jobs adapter the configuration asks for (`JOBS_BACKEND`), built once per process.
pub async fn jobs_adapter(config: &Config, tenants: Arc<Tenants>) -> JobsAdapter {
    match &config.jobs {
        JobsBackend::Inline => inline(tenants),
        JobsBackend::Sqs { queue_url } => {
            JobsAdapter::Sqs(SqsAdapter::from_env(queue_url, config.sqs_endpoint.as_deref()).await)
        }
    }
}
