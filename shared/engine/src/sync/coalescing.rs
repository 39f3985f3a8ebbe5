//! Coalescing (spec "Coalescing"): a request that finds the repository busy is never dropped.
//!
//! The marker is `repos.sync_requested_at`, set before the lock attempt. A busy lock answers
//! "coalesced". A pass takes a database instant before it reads GitHub and clears the marker only
//! if the marker is not newer than that instant. After unlocking, the holder looks again and runs
//! another pass if a request arrived meanwhile, at most `max_passes` per call. A pass that was
//! aborted, lost its lock, or stopped the run leaves the marker for the next trigger.

use crate::sync::failure::DATABASE_ERROR;
use crate::sync::lock::{HeldLock, repo_key};
use crate::sync::repository::{HeadRead, RepoOutcome, SyncError, sync_repository_from};
use crate::sync::runs::{Run, RunCounts, RunStatus, Stopped, Trigger};
use crate::sync::workspace::Workspace;
use chrono::{DateTime, Utc};
use syncplane_github::{RepoInfo, Usage};

pub use syncplane_runs::RequestOutcome;

/// What a coalesced request is told. The holder runs at most `max_passes` passes per call; a
/// request that arrives after its last pass keeps its marker until a drain syncs it (issue 12 §4).
pub fn coalesced_message(max_passes: u32) -> String {
    format!(
        "the sync in progress runs another pass for this request; if it has already run its \
         {max_passes} passes, the request waits for the next drain (`syncplane drain`, or the \
         scheduler's tick)"
    )
}

/// How to treat a busy lock when the repository has no row yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoRowBusy {
    /// Webhook-driven: retry with bounded backoff, then answer `Busy`.
    RetryWithBackoff,
    /// Manual API: answer `Busy` at once.
    Refuse,
}

/// Set the rerun marker. Returns whether the repository has a row (and so holds the marker).
pub(crate) async fn set_marker(ws: &Workspace, github_id: i64) -> Result<bool, sqlx::Error> {
    let updated =
        sqlx::query("UPDATE repos SET sync_requested_at = clock_timestamp() WHERE github_id = $1")
            .bind(github_id)
            .execute(&ws.pool)
            .await?;
    Ok(updated.rows_affected() > 0)
}

async fn marker_is_set(ws: &Workspace, github_id: i64) -> Result<bool, sqlx::Error> {
    let set: Option<bool> =
        sqlx::query_scalar("SELECT sync_requested_at IS NOT NULL FROM repos WHERE github_id = $1")
            .bind(github_id)
            .fetch_optional(&ws.pool)
            .await?;
    Ok(set.unwrap_or(false))
}

/// `requestSync`: sync one repository for the manual API or a webhook, recording the rerun
/// marker first. Each call that gets the lock is one `sync_runs` row (scope owner/name).
pub async fn request_sync(
    ws: &Workspace,
    repo: &RepoInfo,
    trigger: Trigger,
    no_row: NoRowBusy,
) -> Result<RequestOutcome, SyncError> {
    request_sync_since(ws, repo, trigger, no_row, ws.client.usage()).await
}

/// [`request_sync`], the run's GitHub counts taken from the `since` reading of the client's usage:
/// a caller that asked GitHub about the repository first (`syncplane sync --repo` for a
/// repository with no stored row) counts that request in the run (issue 21 point 17).
pub async fn request_sync_since(
    ws: &Workspace,
    repo: &RepoInfo,
    trigger: Trigger,
    no_row: NoRowBusy,
    since: Usage,
) -> Result<RequestOutcome, SyncError> {
    let has_row = set_marker(ws, repo.github_id).await?;
    let key = repo_key(repo.github_id);
    let mut wait = ws.options.no_row_retry_first;
    let mut attempts = 0;
    let lock = loop {
        if let Some(lock) = HeldLock::try_acquire(&ws.pool, key).await? {
            break lock;
        }
        if has_row || marker_is_set(ws, repo.github_id).await? {
            return Ok(RequestOutcome::Coalesced);
        }
        attempts += 1;
        if no_row == NoRowBusy::Refuse || attempts > ws.options.no_row_retry_attempts {
            return Ok(RequestOutcome::Busy);
        }
        tokio::time::sleep(wait).await;
        wait = wait.saturating_mul(2);
        // The holder may have created the row meanwhile: leave a marker if it can be left now.
        if set_marker(ws, repo.github_id).await? {
            if let Some(lock) = HeldLock::try_acquire(&ws.pool, key).await? {
                break lock;
            }
            return Ok(RequestOutcome::Coalesced);
        }
    };

    let scope = format!("{}/{}", repo.owner, repo.name);
    let mut run = match Run::start(ws, trigger, Some(&scope)).await {
        Ok(run) => run,
        Err(e) => {
            lock.release().await;
            return Err(e.into());
        }
    };
    let mut counts = RunCounts::default();
    let read = match trigger {
        Trigger::Webhook => HeadRead::Probe,
        _ => HeadRead::Rest,
    };
    let result = run_passes(ws, repo, lock, &mut counts, Some(&mut run), read).await;
    counts.record_usage(&ws.client.usage().since(&since));
    match result {
        Ok(passes) => {
            let status = if counts.repos_failed > 0 {
                RunStatus::Partial
            } else {
                RunStatus::Success
            };
            // A one-repository run whose repository failed is "failed", not "partial".
            let status = if status == RunStatus::Partial
                && counts.repos_synced + counts.repos_unchanged == 0
            {
                RunStatus::Failed
            } else {
                status
            };
            let run_id = run.id;
            run.finish(ws, status, &counts, None).await?;
            Ok(RequestOutcome::Synced {
                run_id,
                passes,
                status,
            })
        }
        Err(e) => {
            run.finish(ws, RunStatus::Failed, &counts, Some(stopped(&e)))
                .await?;
            Err(e)
        }
    }
}

/// What a failed run records (fixed codes, never upstream text) and, for a rate limit, when to
/// retry.
pub fn stopped(e: &SyncError) -> Stopped {
    match e {
        SyncError::RunStopped(g) => Stopped::github(g),
        SyncError::Database(_) => Stopped::code(DATABASE_ERROR),
    }
}

/// Run passes for one repository while its marker asks for more, starting with `lock` held.
/// Returns the number of passes run. Used by `request_sync`, the full run and the drain; with
/// `run`, its run lock is checked after each pass (a run that lost its lock stops).
///
/// The documents each pass wrote add up; the repository counts once, however many passes it took
/// (issue 21 point 18: two passes over one repository are "1 synced", not 2), as [`RepoTally`]
/// says, also when a later pass stops the run.
///
/// `read`: how the first pass reads the head. A head a batch read before the first pass (a full
/// run's or drain's GraphQL check) spares the REST head check; a webhook's request probes it
/// with GraphQL (issue 23). Later passes, for requests that came during the first, read it
/// again: by a probe after a probe, else over REST.
pub async fn run_passes(
    ws: &Workspace,
    repo: &RepoInfo,
    first_lock: HeldLock,
    counts: &mut RunCounts,
    run: Option<&mut Run>,
    read: HeadRead,
) -> Result<u32, SyncError> {
    let mut tally = RepoTally::default();
    let result = passes(ws, repo, first_lock, counts, run, &mut tally, read).await;
    tally.count_into(counts);
    result
}

/// The passes of [`run_passes`], each outcome's documents added to `counts` and its kind to
/// `tally`.
async fn passes(
    ws: &Workspace,
    repo: &RepoInfo,
    first_lock: HeldLock,
    counts: &mut RunCounts,
    mut run: Option<&mut Run>,
    tally: &mut RepoTally,
    first: HeadRead,
) -> Result<u32, SyncError> {
    let key = repo_key(repo.github_id);
    let later = match first {
        HeadRead::Probe => HeadRead::Probe,
        _ => HeadRead::Rest,
    };
    let mut read = Some(first);
    let mut lock = first_lock;
    let mut passes = 0;
    loop {
        let this = read.take().unwrap_or_else(|| later.clone());
        let result = one_pass(ws, repo, &mut lock, this).await;
        lock.release().await;
        passes += 1;
        let outcome = result?;
        add_content(counts, &outcome);
        tally.pass(&outcome);
        let run_alive = match run.as_deref_mut() {
            Some(run) => run.lock_held().await,
            None => true,
        };
        if !run_alive {
            // The run lost its lock (its connection died): stop; markers stay for the next trigger.
            return Err(SyncError::Database(sqlx::Error::Protocol(
                "run lock lost".into(),
            )));
        }
        if passes >= ws.options.max_passes || !marker_is_set(ws, repo.github_id).await? {
            return Ok(passes);
        }
        match HeldLock::try_acquire(&ws.pool, key).await? {
            Some(next) => lock = next,
            // Another caller took the lock: its pass covers the request.
            None => return Ok(passes),
        }
    }
}

/// One pass under the repository lock: take the instant, sync, clear the marker if not newer.
/// From a known head, the instant is the one taken before that head was read: a marker set after
/// it may be for a newer head, so it stays for another pass.
async fn one_pass(
    ws: &Workspace,
    repo: &RepoInfo,
    lock: &mut HeldLock,
    read: HeadRead,
) -> Result<RepoOutcome, SyncError> {
    let pass_start: DateTime<Utc> = match &read {
        HeadRead::Known(k) => k.read_from,
        _ => {
            sqlx::query_scalar("SELECT clock_timestamp()")
                .fetch_one(&ws.pool)
                .await?
        }
    };
    let outcome = sync_repository_from(&ws.pool, &ws.client, &ws.config, repo, &read).await?;
    if lock.is_held().await {
        sqlx::query(
            "UPDATE repos SET sync_requested_at = NULL
             WHERE github_id = $1 AND sync_requested_at <= $2",
        )
        .bind(repo.github_id)
        .bind(pass_start)
        .execute(&ws.pool)
        .await?;
    } else {
        tracing::warn!(
            github_id = repo.github_id,
            "repository lock lost during the pass; marker kept"
        );
    }
    Ok(outcome)
}

/// The documents one pass wrote.
fn add_content(counts: &mut RunCounts, outcome: &RepoOutcome) {
    match outcome {
        RepoOutcome::Synced(c) | RepoOutcome::Failed { counts: c, .. } => {
            crate::sync::runs::add_documents(counts, c)
        }
        RepoOutcome::Unchanged | RepoOutcome::AlreadyCurrent { .. } => {}
    }
}

/// What the passes over one repository came to, counted once: failed when the last pass failed;
/// else synced when any pass wrote; else unchanged (and already current when a pass found the
/// content an earlier run recorded failed had committed).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RepoTally {
    passes: u32,
    last_failed: bool,
    synced: bool,
    already_current: bool,
}

impl RepoTally {
    /// One more pass.
    pub fn pass(&mut self, outcome: &RepoOutcome) {
        self.passes += 1;
        self.last_failed = matches!(outcome, RepoOutcome::Failed { .. });
        self.synced |= matches!(outcome, RepoOutcome::Synced(_));
        self.already_current |= matches!(outcome, RepoOutcome::AlreadyCurrent { .. });
    }

    /// Count the repository in `counts` (nothing when no pass finished).
    pub(crate) fn count_into(&self, counts: &mut RunCounts) {
        if self.passes == 0 {
            return;
        }
        if self.last_failed {
            counts.repos_failed += 1;
        } else if self.synced {
            counts.repos_synced += 1;
        } else {
            counts.repos_unchanged += 1;
            counts.repos_already_current += u32::from(self.already_current);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::failure::RepoFailure;
    use crate::sync::persist::Counts;

    fn counted(outcomes: &[RepoOutcome]) -> RunCounts {
        let mut tally = RepoTally::default();
        let mut counts = RunCounts::default();
        for o in outcomes {
            add_content(&mut counts, o);
            tally.pass(o);
        }
        tally.count_into(&mut counts);
        counts
    }

    fn synced(added: u32) -> RepoOutcome {
        RepoOutcome::Synced(Counts {
            added,
            ..Counts::default()
        })
    }

    /// Issue 21 point 18: passes are not repositories.
    #[test]
    fn a_repository_synced_in_two_passes_counts_once_with_both_passes_documents() {
        let c = counted(&[synced(2), synced(1)]);
        assert_eq!(
            (c.repos_synced, c.repos_unchanged, c.repos_failed),
            (1, 0, 0)
        );
        assert_eq!(c.docs_added, 3, "each pass's documents add up");
        let c = counted(&[synced(2), RepoOutcome::Unchanged]);
        assert_eq!(
            (c.repos_synced, c.repos_unchanged),
            (1, 0),
            "written, then current"
        );
        let c = counted(&[RepoOutcome::Unchanged, RepoOutcome::Unchanged]);
        assert_eq!((c.repos_synced, c.repos_unchanged), (0, 1));
        let failed = RepoOutcome::Failed {
            failure: RepoFailure::FetchIncomplete,
            counts: Counts::default(),
        };
        let c = counted(&[synced(1), failed]);
        assert_eq!(
            (c.repos_synced, c.repos_failed),
            (0, 1),
            "the last pass decides a failure"
        );
        let c = counted(&[
            RepoOutcome::AlreadyCurrent { written_by_run: 7 },
            RepoOutcome::Unchanged,
        ]);
        assert_eq!((c.repos_unchanged, c.repos_already_current), (1, 1));
        assert_eq!(counted(&[]), RunCounts::default(), "no pass, no repository");
    }
}
