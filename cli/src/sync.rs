//! `syncplane sync [--repo owner/name] [--tenant id] [--json]`: a manual sync, run in this
//! process through the same library calls the worker makes (`sync_all` for everything,
//! `request_sync` for one repository, both with trigger `manual`).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use serde::Serialize;
use shared::config::{Config, RepoName};
use shared::sync::coalescing::{NoRowBusy, RequestOutcome, coalesced_message, request_sync};
use shared::sync::full::{RunReport, sync_all};
use shared::sync::repository::SyncError;
use shared::sync::runs::{RunCounts, RunStatus, Stopped, Trigger};
use shared::sync::workspace::{MAX_PASSES, RunOptions, Workspace};
use shared::tenants::Tenants;

use crate::upkeep;

/// Exit status of a run in which some repositories failed (the others were synced).
pub const EXIT_PARTIAL: u8 = 3;

#[derive(clap::Args)]
pub struct SyncArgs {
    /// Only this repository (`owner/name`); it must be selected by SYNC_CONFIG.
    #[arg(long)]
    pub repo: Option<String>,
    /// Only this tenant (default: every configured tenant).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One tenant's result.
#[derive(Debug, Serialize)]
#[serde(tag = "result", rename_all = "camelCase")]
pub enum SyncResult {
    /// A full run (everything selected).
    #[serde(rename_all = "camelCase")]
    Run { tenant: String, report: RunReport },
    /// One repository.
    #[serde(rename_all = "camelCase")]
    Repository {
        tenant: String,
        repository: String,
        outcome: RequestOutcome,
        /// The run's counts when this call ran the sync.
        counts: Option<RunCounts>,
    },
    /// One repository whose run GitHub stopped (rate limit, refused credentials): the run is
    /// recorded failed; `retry_after` says when a retry can succeed.
    #[serde(rename_all = "camelCase")]
    Stopped {
        tenant: String,
        repository: String,
        error: String,
        retry_after: Option<DateTime<Utc>>,
    },
    /// Dead runs marked failed before exiting (the reaper, as the `sync.reap` job runs it).
    #[serde(rename_all = "camelCase")]
    Reaped { tenant: String, runs: u32 },
    /// Waiting rerun markers drained before exiting (as the `sync.drain` job drains them); no
    /// report when nothing was waiting.
    #[serde(rename_all = "camelCase")]
    Drained {
        tenant: String,
        report: Option<RunReport>,
    },
}

impl SyncResult {
    /// When a rate limit stopped this result's run: the instant a retry can succeed.
    fn retry_after(&self) -> Option<DateTime<Utc>> {
        match self {
            Self::Run { report, .. } => report.retry_after,
            Self::Drained { report, .. } => report.as_ref().and_then(|r| r.retry_after),
            Self::Stopped { retry_after, .. } => *retry_after,
            Self::Repository { .. } | Self::Reaped { .. } => None,
        }
    }

    /// The worst status: failed (or busy) before partial before success.
    fn exit(&self) -> Severity {
        match self {
            Self::Run { report, .. } => report.status.into(),
            Self::Drained { report, .. } => {
                report.as_ref().map_or(Severity::Ok, |r| r.status.into())
            }
            Self::Reaped { .. } => Severity::Ok,
            Self::Stopped { .. } => Severity::Failed,
            Self::Repository { outcome, .. } => match outcome {
                RequestOutcome::Synced { status, .. } => (*status).into(),
                RequestOutcome::Coalesced => Severity::Ok,
                RequestOutcome::Busy => Severity::Failed,
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Severity {
    Ok,
    Partial,
    Failed,
}

impl From<RunStatus> for Severity {
    fn from(s: RunStatus) -> Self {
        match s {
            RunStatus::Success => Self::Ok,
            RunStatus::Partial => Self::Partial,
            RunStatus::Failed => Self::Failed,
        }
    }
}

/// `syncplane sync`: the sync asked for, then, for each tenant, what the scheduler's jobs would
/// do next (with the scheduler off, the local default, nothing else does it): reap dead runs and
/// drain waiting rerun markers.
pub async fn run(
    config: &Config,
    args: &SyncArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let repo = match &args.repo {
        Some(r) => {
            Some(RepoName::parse(r).with_context(|| format!("--repo '{r}' is not owner/name"))?)
        }
        None => None,
    };
    let tenants =
        Tenants::from_config(config, shared::db::DEFAULT_POOL_SIZE, RunOptions::default())?;
    let ids = tenant_ids(&tenants, args.tenant.as_deref())?;
    let progress = std::io::stderr().is_terminal() && !args.json;
    let mut results = Vec::new();
    for id in &ids {
        let ws = tenants.workspace(id)?;
        let result = match &repo {
            None => {
                if progress {
                    eprintln!("tenant {id}: syncing every selected repository");
                }
                let report = with_progress(progress, &ws, sync_all(&ws, Trigger::Manual))
                    .await
                    .context("full sync")?;
                SyncResult::Run {
                    tenant: id.clone(),
                    report,
                }
            }
            Some(name) => sync_one(&ws, name, progress).await?,
        };
        // A drain now would meet the same rate limit: it waits for the retry time.
        let drain = result.retry_after().is_none();
        let mut done = vec![result];
        done.extend(upkeep::reap_and_drain(&ws, drain).await?);
        for result in done {
            if !args.json
                && let Some(line) = summary(&result)
            {
                writeln!(out, "{line}")?;
            }
            results.push(result);
        }
    }
    finish(&results, args.json, out)
}

/// The tenant asked for (it must be configured), or every configured tenant.
pub fn tenant_ids(tenants: &Tenants, only: Option<&str>) -> anyhow::Result<Vec<String>> {
    Ok(match only {
        Some(t) if tenants.config(t).is_some() => vec![t.to_owned()],
        Some(t) => bail!("unknown tenant '{t}'"),
        None => tenants.ids().map(str::to_owned).collect(),
    })
}

/// Print the JSON array (with `json`) and choose the exit status: the worst result decides.
pub fn finish(results: &[SyncResult], json: bool, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(results)?)?;
    }
    Ok(
        match results
            .iter()
            .map(SyncResult::exit)
            .max()
            .unwrap_or(Severity::Ok)
        {
            Severity::Ok => ExitCode::SUCCESS,
            Severity::Partial => ExitCode::from(EXIT_PARTIAL),
            Severity::Failed => ExitCode::FAILURE,
        },
    )
}

async fn sync_one(ws: &Workspace, name: &RepoName, progress: bool) -> anyhow::Result<SyncResult> {
    let full_name = name.full_name();
    // The same answer the sync API gives with 404: configuration decides what is synced.
    if !ws.config.selects(&full_name) {
        bail!("{full_name} is not selected by the configuration (SYNC_CONFIG repos/exclude)");
    }
    if progress {
        eprintln!("tenant {}: syncing {full_name}", ws.tenant);
    }
    let info = ws
        .client
        .repo(&name.owner, &name.name)
        .await
        .with_context(|| format!("{full_name} on GitHub"))?;
    let outcome = match with_progress(
        progress,
        ws,
        request_sync(ws, &info, Trigger::Manual, NoRowBusy::Refuse),
    )
    .await
    {
        Ok(outcome) => outcome,
        Err(SyncError::RunStopped(e)) => {
            let stop = Stopped::github(&e);
            return Ok(SyncResult::Stopped {
                tenant: ws.tenant.as_str().to_owned(),
                repository: full_name,
                error: stop.code.to_owned(),
                retry_after: stop.retry_after,
            });
        }
        Err(e) => return Err(e).context("sync"),
    };
    let counts = match &outcome {
        RequestOutcome::Synced { run_id, .. } => Some(run_counts(ws, *run_id).await?),
        _ => None,
    };
    Ok(SyncResult::Repository {
        tenant: ws.tenant.as_str().to_owned(),
        repository: full_name,
        outcome,
        counts,
    })
}

/// Await `work`; on a terminal, print a progress line every two seconds meanwhile: elapsed
/// time and how many repositories were written since the start (an unchanged repository is
/// not written, so it does not move the count).
async fn with_progress<T>(enabled: bool, ws: &Workspace, work: impl Future<Output = T>) -> T {
    if !enabled {
        return work.await;
    }
    let started = Instant::now();
    let since: DateTime<Utc> = Utc::now();
    let pool = ws.pool.clone();
    let ticker = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(2));
        every.tick().await;
        loop {
            every.tick().await;
            let written: i64 =
                sqlx::query_scalar("SELECT count(*) FROM repos WHERE updated_at >= $1")
                    .bind(since)
                    .fetch_one(&pool)
                    .await
                    .unwrap_or(0);
            eprintln!(
                "  ... {}s, {written} repositories written so far",
                started.elapsed().as_secs()
            );
        }
    });
    let result = work.await;
    ticker.abort();
    result
}

async fn run_counts(ws: &Workspace, run_id: i64) -> Result<RunCounts, sqlx::Error> {
    let row: (i32, i32, i32, i32, i32, i32, i32, i32) = sqlx::query_as(
        "SELECT repos_synced, repos_unchanged, repos_failed, repos_removed,
                docs_added, docs_changed, docs_removed, repos_already_current
           FROM sync_runs WHERE id = $1",
    )
    .bind(run_id)
    .fetch_one(&ws.pool)
    .await?;
    let github: (i32, i32, i32, i32, i32) = sqlx::query_as(
        "SELECT github_requests, github_rest_requests, github_graphql_requests,
                github_rest_units, github_graphql_points
           FROM sync_runs WHERE id = $1",
    )
    .bind(run_id)
    .fetch_one(&ws.pool)
    .await?;
    let n = |v: i32| u32::try_from(v).unwrap_or(0);
    Ok(RunCounts {
        repos_synced: n(row.0),
        repos_unchanged: n(row.1),
        repos_failed: n(row.2),
        repos_removed: n(row.3),
        docs_added: n(row.4),
        docs_changed: n(row.5),
        docs_removed: n(row.6),
        repos_already_current: n(row.7),
        github_requests: u64::from(n(github.0)),
        github_rest_requests: u64::from(n(github.1)),
        github_graphql_requests: u64::from(n(github.2)),
        github_rest_units: u64::from(n(github.3)),
        github_graphql_points: u64::from(n(github.4)),
    })
}

fn counts_line(c: &RunCounts) -> String {
    let mut line = format!(
        "repositories {} synced, {} unchanged, {} failed, {} removed; documents {} added, {} changed, {} removed; {} GitHub requests ({} REST, {} GraphQL; rate limit: {} REST units, {} GraphQL points)",
        c.repos_synced,
        c.repos_unchanged,
        c.repos_failed,
        c.repos_removed,
        c.docs_added,
        c.docs_changed,
        c.docs_removed,
        c.github_requests,
        c.github_rest_requests,
        c.github_graphql_requests,
        c.github_rest_units,
        c.github_graphql_points
    );
    if c.repos_already_current > 0 {
        // A lost COMMIT reply leaves "failed, 0 synced" on the earlier run: say what was true.
        line.push_str(&format!(
            "; {} already current (an earlier run recorded as failed had committed the content)",
            c.repos_already_current
        ));
    }
    line
}

/// ` (code; retry after T)` for a run something stopped, empty otherwise.
fn stop_note(error: Option<&str>, retry_after: Option<DateTime<Utc>>) -> String {
    match (error, retry_after) {
        (Some(e), Some(t)) => format!(" ({e}; retry after {})", t.to_rfc3339()),
        (Some(e), None) => format!(" ({e})"),
        (None, Some(t)) => format!(" (retry after {})", t.to_rfc3339()),
        (None, None) => String::new(),
    }
}

fn run_line(tenant: &str, what: &str, report: &RunReport) -> String {
    format!(
        "tenant {tenant}: {what}#{} {}{}: {}",
        report.run_id,
        report.status.as_str(),
        stop_note(report.error.as_deref(), report.retry_after),
        counts_line(&report.counts)
    )
}

/// The one-line summary printed for a result (none for housekeeping that found nothing to do).
pub fn summary(result: &SyncResult) -> Option<String> {
    Some(match result {
        SyncResult::Run { tenant, report } => run_line(tenant, "run ", report),
        SyncResult::Drained {
            tenant,
            report: Some(report),
        } => run_line(tenant, "drain run ", report),
        SyncResult::Drained { report: None, .. } => return None,
        SyncResult::Reaped { runs: 0, .. } => return None,
        SyncResult::Reaped { tenant, runs } => {
            format!("tenant {tenant}: reaped {runs} run(s) left running by a dead process")
        }
        SyncResult::Stopped {
            tenant,
            repository,
            error,
            retry_after,
        } => format!(
            "tenant {tenant}: {repository} failed{}: the run was stopped by GitHub",
            stop_note(Some(error), *retry_after)
        ),
        SyncResult::Repository {
            tenant,
            repository,
            outcome,
            counts,
        } => match outcome {
            RequestOutcome::Synced {
                run_id,
                passes,
                status,
            } => format!(
                "tenant {tenant}: {repository} run #{run_id} {} after {passes} pass(es): {}",
                status.as_str(),
                counts.as_ref().map(counts_line).unwrap_or_default()
            ),
            RequestOutcome::Coalesced => format!(
                "tenant {tenant}: {repository} coalesced: {}",
                coalesced_message(MAX_PASSES)
            ),
            RequestOutcome::Busy => format!(
                "tenant {tenant}: {repository} busy: another sync holds it and it is not stored yet; retry shortly"
            ),
        },
    })
}
