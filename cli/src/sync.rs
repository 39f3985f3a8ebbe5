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
use shared::jobs::Tenants;
use shared::sync::coalescing::{NoRowBusy, RequestOutcome, request_sync};
use shared::sync::full::{RunReport, sync_all};
use shared::sync::runs::{RunCounts, RunStatus, Trigger};
use shared::sync::workspace::{RunOptions, Workspace};

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
}

impl SyncResult {
    /// The worst status: failed (or busy) before partial before success.
    fn exit(&self) -> Severity {
        match self {
            Self::Run { report, .. } => report.status.into(),
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
    let ids: Vec<String> = match &args.tenant {
        Some(t) if tenants.config(t).is_some() => vec![t.clone()],
        Some(t) => bail!("unknown tenant '{t}'"),
        None => tenants.ids().map(str::to_owned).collect(),
    };
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
        if !args.json {
            writeln!(out, "{}", summary(&result))?;
        }
        results.push(result);
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&results)?)?;
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
    let outcome = with_progress(
        progress,
        ws,
        request_sync(ws, &info, Trigger::Manual, NoRowBusy::Refuse),
    )
    .await
    .context("sync")?;
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
    let row: (i32, i32, i32, i32, i32, i32, i32) = sqlx::query_as(
        "SELECT repos_synced, repos_unchanged, repos_failed, repos_removed,
                docs_added, docs_changed, docs_removed
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
        github_requests: u64::from(n(github.0)),
        github_rest_requests: u64::from(n(github.1)),
        github_graphql_requests: u64::from(n(github.2)),
        github_rest_units: u64::from(n(github.3)),
        github_graphql_points: u64::from(n(github.4)),
    })
}

fn counts_line(c: &RunCounts) -> String {
    format!(
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
    )
}

/// The one-line summary printed at the end.
pub fn summary(result: &SyncResult) -> String {
    match result {
        SyncResult::Run { tenant, report } => {
            let error = report
                .error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            format!(
                "tenant {tenant}: run #{} {}{error}: {}",
                report.run_id,
                report.status.as_str(),
                counts_line(&report.counts)
            )
        }
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
                "tenant {tenant}: {repository} coalesced: a sync in progress runs another pass for this request"
            ),
            RequestOutcome::Busy => format!(
                "tenant {tenant}: {repository} busy: another sync holds it and it is not stored yet; retry shortly"
            ),
        },
    }
}
