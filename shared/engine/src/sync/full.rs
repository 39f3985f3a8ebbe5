//! Full runs and the drain (spec entry points `syncAll` and `drainSyncRequests`).
//!
//! `sync_all` lists the installation's repositories with their heads (`estate`), narrows them by
//! configuration, sorts them by head (`head_batch`), syncs each one that changed, removes stored
//! repositories that are no longer selected, then drains waiting markers.
//! Run-stopping errors stop the whole run (the remaining repositories are not attempted; the run
//! is failed); other failures make the run partial.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use futures::StreamExt;

use crate::sync::coalescing::{run_passes, stopped};
use crate::sync::estate;
use crate::sync::head_batch::{self, Scope};
use crate::sync::lock::{HeldLock, repo_key};
use crate::sync::persist::StoredInfo;
use crate::sync::removal::{self, RemovalError, selected};
use crate::sync::repository::{HeadRead, SyncError};
use crate::sync::runs::{Run, RunCounts, RunStatus, Trigger};
use crate::sync::workspace::Workspace;
use syncplane_github::RepoInfo;

pub use syncplane_runs::RunReport;

/// `syncAll`: one full run.
pub async fn sync_all(ws: &Workspace, trigger: Trigger) -> Result<RunReport, sqlx::Error> {
    let mut run = Run::start(ws, trigger, None).await?;
    let usage_before = ws.client.usage();
    let mut counts = RunCounts::default();
    let result = full_run(ws, &mut run, &mut counts).await;
    counts.record_usage(&ws.client.usage().since(&usage_before));
    finish(ws, run, counts, result).await
}

async fn finish(
    ws: &Workspace,
    run: Run,
    counts: RunCounts,
    result: Result<(), SyncError>,
) -> Result<RunReport, sqlx::Error> {
    let run_id = run.id;
    let (status, stop) = match &result {
        Ok(()) if counts.repos_failed > 0 => (RunStatus::Partial, None),
        Ok(()) => (RunStatus::Success, None),
        Err(e) => (RunStatus::Failed, Some(stopped(e))),
    };
    if let Err(e) = &result {
        tracing::warn!(run_id, error = %e, "run failed");
    }
    run.finish(ws, status, &counts, stop).await?;
    Ok(RunReport::new(run_id, status, counts, stop))
}

/// The removal rule after a complete listing (see `removal`).
pub async fn remove_unselected(
    ws: &Workspace,
    listing: &[RepoInfo],
    listed_at: DateTime<Utc>,
) -> Result<u32, SyncError> {
    match removal::apply_after_listing(&ws.pool, &ws.client, &ws.config, listing, listed_at).await {
        Ok(n) => Ok(n),
        Err(RemovalError::RunStopped(e)) => Err(SyncError::RunStopped(e)),
        Err(RemovalError::Database(e)) => Err(SyncError::Database(e)),
    }
}

/// What a full run works from, inline or fanned out to the queue: the installation listed
/// ([`estate::take`]), the repositories the configuration selects, and those triaged by head.
pub struct Plan {
    pub estate: estate::Estate,
    pub wanted: Vec<RepoInfo>,
    pub triage: head_batch::Triage,
}

/// List, narrow and triage (the unchanged repositories counted in `counts`).
pub async fn plan(ws: &Workspace, counts: &mut RunCounts) -> Result<Plan, SyncError> {
    let estate = estate::take(ws).await?;
    let wanted: Vec<RepoInfo> = estate
        .repos
        .iter()
        .filter(|r| selected(&ws.config, r))
        .cloned()
        .collect();
    let triage = head_batch::triage(ws, wanted.clone(), Scope::FullRun, &estate.heads).await?;
    counts.repos_unchanged += triage.unchanged.len() as u32;
    Ok(Plan {
        estate,
        wanted,
        triage,
    })
}

async fn full_run(ws: &Workspace, run: &mut Run, counts: &mut RunCounts) -> Result<(), SyncError> {
    let Plan {
        estate,
        wanted,
        triage,
    } = plan(ws, counts).await?;

    let concurrency = ws.repo_concurrency();
    let mut stop: Option<SyncError> = None;
    {
        let to_sync: Vec<_> = triage
            .to_sync
            .iter()
            .map(|repo| (repo.clone(), triage.head_read(repo)))
            .collect();
        let mut results = futures::stream::iter(to_sync)
            .map(|(repo, read)| {
                let ws = ws.clone();
                async move {
                    let mut local = RunCounts::default();
                    let r = sync_listed(&ws, &repo, &mut local, read).await;
                    (local, r)
                }
            })
            .buffer_unordered(concurrency);
        while let Some((local, r)) = results.next().await {
            counts.merge(&local);
            if let Err(e) = r {
                // Run-stopping: the remaining repositories are not attempted.
                stop = Some(e);
                break;
            }
        }
    }
    if let Some(e) = stop {
        return Err(e);
    }
    if !run.lock_held().await {
        return Err(SyncError::Database(sqlx::Error::Protocol(
            "run lock lost".into(),
        )));
    }

    head_batch::remember_node_ids(ws, &wanted).await?;
    counts.repos_removed += remove_unselected(ws, &estate.repos, estate.listed_at).await?;
    drain_into(ws, run, counts).await
}

/// One listed repository whose head check said it changed (or could not tell): no marker unless
/// the lock is busy (then the holder runs another pass for us). `read`: from the head the batch
/// read, when it read one.
async fn sync_listed(
    ws: &Workspace,
    repo: &RepoInfo,
    counts: &mut RunCounts,
    read: HeadRead,
) -> Result<(), SyncError> {
    let Some(lock) = HeldLock::try_acquire(&ws.pool, repo_key(repo.github_id)).await? else {
        crate::sync::coalescing::set_marker(ws, repo.github_id).await?;
        return Ok(());
    };
    // The full run's row covers these passes; its lock is checked once the batch is done.
    run_passes(ws, repo, lock, counts, None, read)
        .await
        .map(|_| ())
}

/// `drainSyncRequests`: every repository with a waiting marker. Records a run only when there is
/// something to drain.
pub async fn drain_sync_requests(
    ws: &Workspace,
    trigger: Trigger,
) -> Result<Option<RunReport>, sqlx::Error> {
    if waiting(ws).await?.is_empty() {
        return Ok(None);
    }
    let mut run = Run::start(ws, trigger, None).await?;
    let usage_before = ws.client.usage();
    let mut counts = RunCounts::default();
    let result = drain_into(ws, &mut run, &mut counts).await;
    counts.record_usage(&ws.client.usage().since(&usage_before));
    finish(ws, run, counts, result).await.map(Some)
}

/// Repositories with a waiting marker, oldest request first, described from their stored rows.
async fn waiting(ws: &Workspace) -> Result<Vec<RepoInfo>, sqlx::Error> {
    let rows: Vec<StoredInfo> = sqlx::query_as(
        "SELECT github_id, owner, name, default_branch, private, archived, html_url, description,
                node_id
         FROM repos WHERE sync_requested_at IS NOT NULL ORDER BY sync_requested_at",
    )
    .fetch_all(&ws.pool)
    .await?;
    Ok(rows.into_iter().map(RepoInfo::from).collect())
}

/// Drain: the waiting repositories' heads are read in GraphQL batches first; an unchanged one
/// only has its marker cleared (as a pass would), the rest run passes.
async fn drain_into(
    ws: &Workspace,
    run: &mut Run,
    counts: &mut RunCounts,
) -> Result<(), SyncError> {
    let waiting: Vec<RepoInfo> = waiting(ws)
        .await?
        .into_iter()
        .filter(|r| selected(&ws.config, r))
        .collect();
    let triage = head_batch::triage(ws, waiting, Scope::Drain, &HashMap::new()).await?;
    head_batch::clear_markers(ws, &triage.unchanged, triage.checked_from).await?;
    counts.repos_unchanged += triage.unchanged.len() as u32;
    for repo in &triage.to_sync {
        // A busy repository is left to its holder, which looks at the marker after unlocking.
        let Some(lock) = HeldLock::try_acquire(&ws.pool, repo_key(repo.github_id)).await? else {
            continue;
        };
        let read = triage.head_read(repo);
        run_passes(ws, repo, lock, counts, Some(&mut *run), read).await?;
    }
    Ok(())
}
