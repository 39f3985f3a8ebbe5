//! `syncplane reap [--tenant id] [--json]` and `syncplane drain [--tenant id] [--json]`: the
//! `sync.reap` and `sync.drain` jobs run here, by the same library calls (issue 12 §4). With the
//! scheduler off (the local default) no tick runs them, so `syncplane sync` runs both before it
//! exits too.
//!
//! Reap (spec "Serialization and locks"): `running` rows older than the grace whose run lock is
//! free are marked failed. Drain (spec `drainSyncRequests`): every repository with a waiting rerun
//! marker is synced, in one run recorded only when something waits.

use shared::worker::TenantWorkspace;
use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use shared::config::Config;
use shared::sync::full::drain_sync_requests;
use shared::sync::reaper;
use shared::sync::runs::Trigger;
use shared::sync::workspace::{RunOptions, Workspace};
use shared::tenants::Tenants;

use crate::report::{SyncResult, finish, summary, tenant_ids};

/// Which housekeeping command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upkeep {
    Reap,
    Drain,
}

/// The tenants a housekeeping command or `syncplane sync` acts on, and how it reports.
#[derive(clap::Args)]
pub struct UpkeepArgs {
    /// Only this tenant (default: every configured tenant).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `syncplane reap` or `syncplane drain` for the tenants asked for.
pub async fn run(
    config: &Config,
    what: Upkeep,
    args: &UpkeepArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let tenants =
        Tenants::from_config(config, shared::db::DEFAULT_POOL_SIZE, RunOptions::default())?;
    let ids = tenant_ids(&tenants, args.tenant.as_deref())?;
    let mut results = Vec::new();
    for id in &ids {
        let result = match what {
            Upkeep::Reap => {
                let ws = tenants.database(id)?;
                reap(id, &ws.pool, ws.options.reaper_grace).await?
            }
            Upkeep::Drain => drain(&tenants.workspace(id)?).await?,
        };
        if !args.json {
            let line = summary(&result).unwrap_or_else(|| nothing_to_do(id, what));
            writeln!(out, "{line}")?;
        }
        results.push(result);
    }
    finish(&results, args.json, out)
}

fn nothing_to_do(tenant: &str, what: Upkeep) -> String {
    match what {
        Upkeep::Reap => format!("tenant {tenant}: no dead runs to reap"),
        Upkeep::Drain => format!("tenant {tenant}: no rerun markers waiting; nothing to drain"),
    }
}

/// What `syncplane sync` does before it exits: reap, then (with `drain`) drain: a request
/// coalesced into a holder at its pass cap is synced here rather than waiting for a tick that
/// may never come.
pub async fn reap_and_drain(ws: &Workspace, drain_too: bool) -> anyhow::Result<Vec<SyncResult>> {
    let mut done = vec![reap(ws.tenant.as_str(), &ws.pool, ws.options.reaper_grace).await?];
    if drain_too {
        done.push(drain(ws).await?);
    }
    Ok(done)
}

/// Reap `tenant`'s dead runs (also `serve`'s upkeep for a tenant without a GitHub App).
pub(crate) async fn reap(
    tenant: &str,
    pool: &sqlx::PgPool,
    grace: std::time::Duration,
) -> anyhow::Result<SyncResult> {
    let runs = reaper::reap(pool, grace).await.context("reap")?;
    Ok(SyncResult::Reaped {
        tenant: tenant.to_owned(),
        runs,
    })
}

async fn drain(ws: &Workspace) -> anyhow::Result<SyncResult> {
    let report = drain_sync_requests(ws, Trigger::Manual)
        .await
        .context("drain")?;
    Ok(SyncResult::Drained {
        tenant: ws.tenant.as_str().to_owned(),
        report,
    })
}
