//! `syncplane export`: an organization's sessions (JSON Lines or CSV) or a session's transcript
//! (its redacted JSON Lines) to stdout, streamed, as the export routes write them
//! (`shared::ingest::export`; docs/transcript-search.md "Export"), from the first tenant's
//! database (the ingest function's) and the transcript store the configuration names.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use shared::ingest::export::{self, Plan, sessions, transcript};
use shared::ingest::transcripts::TranscriptsState;

#[derive(Subcommand)]
pub enum ExportCommand {
    /// The org's sessions, oldest update first, with the columns the console shows.
    Sessions {
        /// The organization (its name).
        #[arg(long)]
        org: String,
        /// jsonl or csv.
        #[arg(long, default_value = "jsonl")]
        format: String,
        /// Sessions updated at or after this time (RFC 3339).
        #[arg(long)]
        since: Option<chrono::DateTime<chrono::Utc>>,
        /// Sessions updated before this time (RFC 3339).
        #[arg(long)]
        until: Option<chrono::DateTime<chrono::Utc>>,
        /// Only this compute target's sessions.
        #[arg(long)]
        target: Option<String>,
    },
    /// A session's transcript files as uploaded (secrets redacted), one after another.
    Transcript {
        /// The organization (its name).
        #[arg(long)]
        org: String,
        /// The session's compute target.
        #[arg(long)]
        target: String,
        /// The session.
        #[arg(long)]
        session: String,
        /// Only this file (default: every file of the session, in fileId order).
        #[arg(long)]
        file: Option<String>,
    },
}

pub async fn run(
    config: &shared::config::Config,
    cmd: ExportCommand,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let tenant = config
        .tenants
        .first()
        .context("no tenant configured (DATABASE_URL or TENANTS_FILE)")?;
    let pool = shared::db::connect_tenant(tenant, 2).await?;
    let store = TranscriptsState::from_settings(&config.transcripts)
        .await
        .store;
    let plan = plan(&pool, cmd).await?;
    let mut rx = export::start(plan, pool.clone(), store);
    while let Some(chunk) = rx.recv().await {
        out.write_all(&chunk.context("export stopped")?)?;
    }
    out.flush()?;
    pool.close().await;
    Ok(ExitCode::SUCCESS)
}

async fn plan(pool: &sqlx::PgPool, cmd: ExportCommand) -> anyhow::Result<Plan> {
    Ok(match cmd {
        ExportCommand::Sessions {
            org,
            format,
            since,
            until,
            target,
        } => {
            let format = sessions::Format::parse(&format)
                .with_context(|| format!("--format {format}: jsonl or csv"))?;
            if let (Some(a), Some(b)) = (since, until)
                && a >= b
            {
                anyhow::bail!("--since must be before --until");
            }
            Plan::Sessions(sessions::Plan {
                org_id: org_id(pool, &org).await?,
                format,
                since,
                until,
                compute_target_id: target,
            })
        }
        ExportCommand::Transcript {
            org,
            target,
            session,
            file,
        } => {
            let org_id = org_id(pool, &org).await?;
            let files = transcript::files(pool, org_id, &target, &session, file.as_deref())
                .await
                .context("reading the session's transcript files")?;
            if files.is_empty() {
                anyhow::bail!(
                    "no transcript for session '{session}' of target '{target}' in org '{org}'"
                );
            }
            Plan::Transcript(transcript::Plan {
                org_id,
                compute_target_id: target,
                session_id: session,
                files,
            })
        }
    })
}

async fn org_id(pool: &sqlx::PgPool, name: &str) -> anyhow::Result<i64> {
    sqlx::query_scalar("SELECT id FROM orgs WHERE name = $1")
        .bind(name)
        .fetch_optional(pool)
        .await?
        .with_context(|| {
            format!("no organization named '{name}' (syncplane ingest orgs lists them)")
        })
}
