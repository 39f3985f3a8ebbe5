//! The `syncplane` operator commands. Every command calls the same library as the Lambda
//! functions; output goes to the writer given, progress to a terminal's stderr.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use shared::config::Config;

pub mod database;
pub mod demo;
pub mod export;
pub mod provision;
pub mod report;
pub mod search;
pub mod serve;
pub mod sessions;
pub mod sync;
pub mod transcripts;
pub mod upkeep;

#[derive(Parser)]
#[command(name = "syncplane", version, about = "syncplane operator tool")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Apply every pending database migration (for every configured tenant).
    Migrate,
    /// The databases themselves: `check` says why one cannot be used (nothing listening,
    /// authentication, role or database missing) and, with --create, creates a missing one.
    #[command(subcommand)]
    Db(database::DbCommand),
    /// Sync now: every selected repository, or one with --repo; then reap dead runs and drain
    /// waiting rerun markers. Exit status: 0 success (or coalesced into a running sync), 1
    /// failed or busy, 3 partial (some repositories failed).
    Sync(sync::SyncArgs),
    /// Mark failed the runs left `running` by a dead process (past the grace, run lock free), as
    /// the `sync.reap` job does.
    Reap(upkeep::UpkeepArgs),
    /// Sync every repository with a waiting rerun marker (requests coalesced into a sync that
    /// had reached its pass cap), as the `sync.drain` job does.
    Drain(upkeep::UpkeepArgs),
    /// Show each tenant's repositories and recent sync runs.
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Search the synced documents and READMEs (as GET /api/search). Exit status: 0 hits, 1
    /// none, 2 refused query.
    Search(search::SearchArgs),
    /// Agent session ingest: provision orgs, users, compute targets, device tokens, read tokens;
    /// list the sessions ingested (`ingest sessions`).
    #[command(subcommand)]
    Ingest(provision::IngestCommand),
    /// The transcript archive: `expire` deletes what the orgs' retention says is due.
    #[command(subcommand)]
    Transcripts(transcripts::TranscriptsCommand),
    /// Export an org's sessions (JSON Lines or CSV) or a session's redacted transcript to
    /// stdout, streamed.
    #[command(subcommand)]
    Export(export::ExportCommand),
    /// The local run's demo data (SYNCPLANE_LOCAL=1): `load` syncs the demo repositories and
    /// loads example sessions and a transcript, `remove` takes all of it out again.
    #[command(subcommand)]
    Demo(demo::DemoCommand),
    /// Serve the HTTP functions (webhook, sync-api, ingest) on one local server, binary-safe,
    /// with inline jobs and, with SYNC_SCHEDULER=1, the minute tick: the local run that takes
    /// what real clients send (`scripts/local.sh --serve`).
    Serve(serve::ServeArgs),
}

/// Run one command against `config`, writing its output to `out`. Every command but `migrate`
/// first checks the databases it will use: one that does not answer, or whose schema is behind
/// this build, is one error line saying what to do (issue 13 §10), before any work.
pub async fn run(cli: Cli, config: &Config, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    if let Some(only) = cli.command.databases() {
        preflight(config, only).await?;
    }
    match cli.command {
        Command::Migrate => migrate(config, out).await,
        Command::Db(cmd) => database::run(config, cmd, out).await,
        Command::Sync(args) => sync::run(config, &args, out).await,
        Command::Reap(args) => upkeep::run(config, upkeep::Upkeep::Reap, &args, out).await,
        Command::Drain(args) => upkeep::run(config, upkeep::Upkeep::Drain, &args, out).await,
        Command::Status { json } => status(config, json, out).await,
        Command::Search(args) => search::run(config, &args, out).await,
        Command::Ingest(cmd) => provision::run(config, cmd, out).await,
        Command::Transcripts(cmd) => transcripts::run(config, cmd, out).await,
        Command::Demo(cmd) => demo::run(config, cmd, out).await,
        Command::Export(cmd) => export::run(config, cmd, out).await,
        Command::Serve(args) => serve::run(config, &args, out).await,
    }
}

/// Which tenants' databases a command uses.
enum Databases<'a> {
    All,
    One(&'a str),
    First,
}

impl Command {
    /// The databases to check before running (`None`: `migrate`, which makes them current, and
    /// `serve`, which checks per request).
    fn databases(&self) -> Option<Databases<'_>> {
        fn named(t: &Option<String>) -> Databases<'_> {
            t.as_deref().map_or(Databases::All, Databases::One)
        }
        Some(match self {
            Command::Migrate => return None,
            // It is the check: it reports each database's state itself.
            Command::Db(_) => return None,
            // Like the functions it serves: each request meets the schema check (503
            // `schema_behind`), and `GET /api/health` reports the database.
            Command::Serve(_) => return None,
            Command::Sync(a) => named(&a.tenants.tenant),
            Command::Reap(a) | Command::Drain(a) => named(&a.tenant),
            Command::Search(a) => a.tenant.as_deref().map_or(Databases::First, Databases::One),
            Command::Status { .. } => Databases::All,
            Command::Ingest(_) | Command::Demo(_) | Command::Export(_) => Databases::First,
            Command::Transcripts(
                transcripts::TranscriptsCommand::Expire { tenant, .. }
                | transcripts::TranscriptsCommand::Usage { tenant, .. }
                | transcripts::TranscriptsCommand::Reindex { tenant },
            ) => named(tenant),
        })
    }
}

/// The schema of a tenant's database is behind this build.
#[derive(Debug)]
pub struct SchemaBehind {
    pub tenant: String,
    pub database: i64,
    pub build: i64,
}

impl std::fmt::Display for SchemaBehind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tenant {}: the database schema is behind this build (migration {} applied, this build needs {}): run `syncplane migrate` first",
            self.tenant, self.database, self.build
        )
    }
}

impl std::error::Error for SchemaBehind {}

async fn preflight(config: &Config, only: Databases<'_>) -> anyhow::Result<()> {
    let tenants: Vec<_> = match only {
        Databases::All => config.tenants.iter().collect(),
        Databases::First => config.tenants.first().into_iter().collect(),
        // An unknown tenant is the command's own error to report.
        Databases::One(id) => config.tenant(id).into_iter().collect(),
    };
    for tenant in tenants {
        let pool = shared::db::connect_tenant(tenant, 1).await?;
        let versions = shared::schema::check::versions(&pool).await;
        pool.close().await;
        let (database, missing) = versions?;
        if missing {
            return Err(SchemaBehind {
                tenant: tenant.id.to_string(),
                database,
                build: shared::schema::check::build_version(),
            }
            .into());
        }
    }
    Ok(())
}

/// Every tenant's database, under the migration lock (a deploy's migrate function may run at the
/// same time).
async fn migrate(config: &Config, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    for tenant in &config.tenants {
        let pool = shared::db::connect_tenant(tenant, 1).await?;
        let migrated = shared::schema::migrate_locked(&pool).await;
        pool.close().await;
        let migrated = migrated?;
        writeln!(
            out,
            "tenant {}: migrations applied ({} new; schema at migration {})",
            tenant.id,
            migrated.applied.len(),
            migrated.version
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn status(config: &Config, json: bool, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let mut all = Vec::new();
    for tenant in &config.tenants {
        let pool = shared::db::connect_tenant(tenant, 1).await?;
        let report = shared::status::tenant_status(&pool).await?;
        if !json {
            writeln!(out, "tenant {}", tenant.id)?;
            write!(out, "{}", report.render_text())?;
        }
        all.push(serde_json::json!({ "tenant": tenant.id, "status": report }));
    }
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
    }
    Ok(ExitCode::SUCCESS)
}
