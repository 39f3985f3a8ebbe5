//! A full sync that scales past one invocation (docs/design.md "Jobs": full syncs past one invocation): with the
//! SQS adapter, `sync.full` lists the installation, narrows it by configuration, reads the heads
//! in GraphQL batches (`sync::head_batch`), applies the removal rule, and sends one `sync.repo`
//! job per repository that changed (issue 10: an unchanged one gets none) plus a `sync.drain`;
//! other workers sync the repositories. The repository locks and rerun markers in Postgres keep
//! the semantics whichever worker runs each job.
//!
//! The run recorded here covers the listing, the removals and the fan-out; each `sync.repo`
//! records its own one-repository run.

use serde::Serialize;

use syncplane_engine::sync::full::{Plan, RunReport, plan, remove_unselected};
use syncplane_engine::sync::head_batch;
use syncplane_engine::sync::lock::{HeldLock, scheduler_key};
use syncplane_engine::sync::repository::SyncError;
use syncplane_engine::sync::runs::{Run, RunCounts, RunStatus, Stopped, Trigger};
use syncplane_engine::sync::workspace::Workspace;
use syncplane_github::{GithubError, RepoInfo};
use syncplane_jobs::scheduler;
use syncplane_jobs::sqs::{SqsAdapter, SubmitError};
use syncplane_jobs::{Job, RepoRef};

/// The end of a fanned-out full sync.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FanOut {
    pub report: RunReport,
    /// `sync.repo` jobs sent.
    pub repositories: usize,
    /// The GitHub error that stopped the run, if one did (a rate limit becomes a pause).
    #[serde(skip)]
    pub stopped_by: Option<GithubError>,
}

#[derive(Debug, thiserror::Error)]
enum Stop {
    #[error(transparent)]
    Github(GithubError),
    #[error(transparent)]
    Queue(SubmitError),
    #[error("database error: {0}")]
    Database(sqlx::Error),
}

impl Stop {
    fn stopped(&self) -> Stopped {
        match self {
            Stop::Github(e) => Stopped::github(e),
            Stop::Queue(_) => Stopped::code("queue_error"),
            Stop::Database(_) => Stopped::code(syncplane_engine::sync::failure::DATABASE_ERROR),
        }
    }
}

impl From<SyncError> for Stop {
    fn from(e: SyncError) -> Self {
        match e {
            SyncError::RunStopped(g) => Stop::Github(g),
            SyncError::Database(d) => Stop::Database(d),
        }
    }
}

impl From<sqlx::Error> for Stop {
    fn from(e: sqlx::Error) -> Self {
        Stop::Database(e)
    }
}

/// `sync.full` through the queue. Scheduled and startup runs take the tenant's scheduler lock and
/// feed the schedule, as [`crate::scheduled::run_scheduled_full`] does; `None`: that lock is busy.
pub async fn fan_out_full(
    ws: &Workspace,
    trigger: Trigger,
    queue: &SqsAdapter,
) -> Result<Option<FanOut>, sqlx::Error> {
    if !matches!(trigger, Trigger::Schedule | Trigger::Startup) {
        return fan_out(ws, trigger, queue).await.map(Some);
    }
    let Some(lock) = HeldLock::try_acquire(&ws.pool, scheduler_key(ws.tenant.as_str())).await?
    else {
        tracing::info!(tenant = %ws.tenant, "a scheduled full sync is already running; skipped");
        return Ok(None);
    };
    let result = fan_out(ws, trigger, queue).await;
    let recorded = match &result {
        Ok(f) => scheduler::record_run(&ws.pool, ws.tenant.as_str(), &ws.config, &f.report).await,
        Err(_) => Ok(()),
    };
    lock.release().await;
    recorded?;
    result.map(Some)
}

async fn fan_out(
    ws: &Workspace,
    trigger: Trigger,
    queue: &SqsAdapter,
) -> Result<FanOut, sqlx::Error> {
    let run = Run::start(ws, trigger, None).await?;
    let usage_before = ws.client.usage();
    let mut counts = RunCounts::default();
    let result = list_and_send(ws, trigger, queue, &mut counts).await;
    counts.record_usage(&ws.client.usage().since(&usage_before));
    let run_id = run.id;
    let (status, stopped, repositories, stopped_by) = match result {
        Ok(n) => (RunStatus::Success, None, n, None),
        Err(stop) => {
            tracing::warn!(run_id, error = %stop, "full sync fan-out failed");
            let stopped = stop.stopped();
            let github = match stop {
                Stop::Github(e) => Some(e),
                _ => None,
            };
            (RunStatus::Failed, Some(stopped), 0, github)
        }
    };
    run.finish(ws, status, &counts, stopped).await?;
    tracing::info!(
        run_id,
        repositories,
        status = status.as_str(),
        "full sync fanned out"
    );
    Ok(FanOut {
        report: RunReport::new(run_id, status, counts, stopped),
        repositories,
        stopped_by,
    })
}

/// List, narrow, send the jobs, then remove what is no longer selected. Returns the number of
/// `sync.repo` jobs sent. A failed listing removes nothing and sends nothing.
async fn list_and_send(
    ws: &Workspace,
    trigger: Trigger,
    queue: &SqsAdapter,
    counts: &mut RunCounts,
) -> Result<usize, Stop> {
    let Plan {
        estate,
        wanted,
        triage,
    } = plan(ws, counts).await?;
    let jobs: Vec<Job> = triage
        .to_sync
        .iter()
        .map(|r| repo_job(ws, r, trigger))
        .collect();
    let sent = queue.send_many(&jobs).await.map_err(Stop::Queue)?;
    head_batch::remember_node_ids(ws, &wanted).await?;

    counts.repos_removed += remove_unselected(ws, &estate.repos, estate.listed_at).await?;
    // Markers left by requests made while nothing ran are drained by a worker too.
    queue
        .send(
            &Job::SyncDrain {
                tenant: ws.tenant.clone(),
            },
            None,
        )
        .await
        .map_err(Stop::Queue)?;
    Ok(sent)
}

fn repo_job(ws: &Workspace, repo: &RepoInfo, trigger: Trigger) -> Job {
    Job::SyncRepo {
        tenant: ws.tenant.clone(),
        repository: RepoRef {
            github_id: Some(repo.github_id),
            owner: repo.owner.clone(),
            name: repo.name.clone(),
        },
        // Each repository's run carries the full sync's trigger.
        trigger,
    }
}
