//! What `syncplane sync`, `reap` and `drain` report: one [`SyncResult`] per tenant and step,
//! its one-line summary, the JSON array with `--json`, and the exit status the worst result
//! decides (0 success or coalesced, 1 failed or busy, [`EXIT_PARTIAL`] partial). Below both
//! commands ([`crate::sync`] and [`crate::upkeep`]), which produce these results.

use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;
use chrono::{DateTime, Utc};
use serde::Serialize;
use shared::sync::coalescing::{RequestOutcome, coalesced_message};
use shared::sync::full::RunReport;
use shared::sync::runs::{RunCounts, RunStatus};
use shared::sync::workspace::MAX_PASSES;
use shared::tenants::Tenants;

/// Exit status of a run in which some repositories failed (the others were synced).
pub const EXIT_PARTIAL: u8 = 3;

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
    pub fn retry_after(&self) -> Option<DateTime<Utc>> {
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
