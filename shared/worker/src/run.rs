//! Running one job against its tenant's workspace (spec "Jobs and tenants"): the job's tenant
//! is looked up when it runs, and each kind calls into the engine (`syncplane_engine::sync`), the scheduler
//! (a scheduled full sync takes the tenant's scheduler lock), the routing of a webhook delivery
//! or the transcript archive's retention (`transcripts.expire`, [`crate::expire`], given the
//! archive with [`run_in`]). [`Runner`] is the inline adapter's runner, handed to it where a
//! process is assembled ([`runner`], [`runner_with_archive`], [`inline`], [`app_state`]).

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::expire::{self, TranscriptArchive};
use crate::routing;
use crate::scheduled::run_scheduled_full;
use crate::workspace::TenantWorkspace;
use syncplane_core::config::Config;
use syncplane_engine::sync::coalescing::{NoRowBusy, RequestOutcome, request_sync};
use syncplane_engine::sync::full::{drain_sync_requests, sync_all};
use syncplane_engine::sync::reaper;
use syncplane_engine::sync::runs::Trigger;
use syncplane_jobs::adapter::{InlineRunner, JobRunner, JobsAdapter};
use syncplane_jobs::app::{AppError, AppState};
use syncplane_jobs::tenants::Tenants;
use syncplane_jobs::{Job, JobError, JobOutcome};

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
                Trigger::Schedule | Trigger::Startup => run_scheduled_full(&ws, *trigger).await?,
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

/// Makes the inline adapter's runner over a process's tenants (no transcript archive).
pub fn runner() -> InlineRunner {
    runner_with_archive(None)
}

/// Makes the inline adapter's runner with the transcript archive `transcripts.expire` runs in
/// (`syncplane serve`'s scheduler: the store its ingest uses).
pub fn runner_with_archive(archive: Option<TranscriptArchive>) -> InlineRunner {
    Arc::new(move |tenants| {
        Arc::new(Runner {
            tenants,
            archive: archive.clone(),
        })
    })
}

/// The inline adapter: jobs run in the submitting process, against `tenants`.
pub fn inline(tenants: Arc<Tenants>) -> JobsAdapter {
    inline_with_archive(tenants, None)
}

/// The inline adapter with the transcript archive `transcripts.expire` runs in.
pub fn inline_with_archive(
    tenants: Arc<Tenants>,
    archive: Option<TranscriptArchive>,
) -> JobsAdapter {
    JobsAdapter::Inline(runner_with_archive(archive)(tenants))
}

/// The state of a process that runs its inline jobs itself (`syncplane serve`, the tests):
/// [`AppState::from_config`] with this crate's [`runner`].
pub async fn app_state(config: &Config, pool_size: u32) -> Result<AppState, AppError> {
    AppState::from_config(config, pool_size, Some(&runner())).await
}
