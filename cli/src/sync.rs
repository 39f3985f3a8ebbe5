//! `syncplane sync [--repo owner/name] [--tenant id] [--json]`: a manual sync, run in this
//! process through the same library calls the worker makes (`sync_all` for everything,
//! `request_sync` for one repository, both with trigger `manual`). One repository is described
//! from its stored row when it has a healthy one, so an unchanged repository costs one conditional
//! request (issue 21 point 17); the summary counts repositories, not passes (point 18).

use shared::worker::TenantWorkspace;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use shared::config::{Config, RepoName};
use shared::sync::coalescing::{NoRowBusy, RequestOutcome, request_sync_since};
use shared::sync::full::sync_all;
use shared::sync::persist::stored_info;
use shared::sync::repository::SyncError;
use shared::sync::runs::{RunCounts, Stopped, Trigger};
use shared::sync::workspace::{RunOptions, Workspace};
use shared::tenants::Tenants;

use crate::report::{SyncResult, finish, summary, tenant_ids};
use crate::upkeep;

#[derive(clap::Args)]
pub struct SyncArgs {
    /// Only this repository (`owner/name`); it must be selected by SYNC_CONFIG.
    #[arg(long)]
    pub repo: Option<String>,
    #[command(flatten)]
    pub tenants: upkeep::UpkeepArgs,
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
    let ids = tenant_ids(&tenants, args.tenants.tenant.as_deref())?;
    let progress = std::io::stderr().is_terminal() && !args.tenants.json;
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
            if !args.tenants.json
                && let Some(line) = summary(&result)
            {
                writeln!(out, "{line}")?;
            }
            results.push(result);
        }
    }
    finish(&results, args.tenants.json, out)
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
    // The stored row when there is a healthy one: an unchanged repository then costs the one
    // conditional head check (issue 21 point 17). Otherwise GitHub's answer, counted in the run.
    let usage = ws.client.usage();
    let info = match stored_info(&ws.pool, &name.owner, &name.name).await? {
        Some(info) => info,
        None => ws
            .client
            .repo(&name.owner, &name.name)
            .await
            .with_context(|| format!("{full_name} on GitHub"))?,
    };
    let request = request_sync_since(ws, &info, Trigger::Manual, NoRowBusy::Refuse, usage);
    let outcome = match with_progress(progress, ws, request).await {
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
