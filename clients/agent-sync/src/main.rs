//! `syncplane-agent`: the metadata lane as a command, reading sessions from a directory of JSON
//! files (one session each, in the contract's camelCase shape) — for scripting and tests.
//!
//! Spec, "Cursors and eventual consistency": the cursor and the outbox live in a state database
//! beside the store, so each `push` is a launch that resumes where the last one stopped (a cold
//! restart: deterministic dead letters are looked at again). "Retries, backoff, and
//! dead-lettering" and "Sync error codes": a push ends when everything is delivered or set aside,
//! or when the lane stops, and the exit code says which: 0 delivered, 2 some sessions set aside
//! (a later push retries them), 3 paused (`unauthenticated`: the token was refused), 4 parked
//! (`feature_disabled`: the org's sync policy is off), 1 anything else (bad arguments, state).
//!
//! `transcripts push` and `hook` run the transcript lane with the same options and exit codes
//! (`transcripts_cli`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

mod transcripts_cli;
use syncplane_agent::transport::DEFAULT_DEADLINE;
use syncplane_agent::{
    JsonDirStore, Lane, LaneStatus, Settings, State, SystemClock, TokenHandle, Transport,
};

#[derive(Parser)]
#[command(
    name = "syncplane-agent",
    about = "Push local agent sessions to syncplane's ingest endpoint"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Send every session of the store that the cloud does not have yet, then exit.
    Push {
        /// Directory of session JSON files.
        #[arg(long)]
        store: PathBuf,
        /// Ingest base URL (the host serving /api/agent-sessions/*).
        #[arg(long, env = "SYNCPLANE_AGENT_URL")]
        url: String,
        /// Device token (spd_...).
        #[arg(long, env = "SYNCPLANE_AGENT_TOKEN", hide_env_values = true)]
        token: String,
        /// This device's compute target id.
        #[arg(long, env = "SYNCPLANE_AGENT_TARGET")]
        target: String,
        /// The signed-in identity; a different one clears the lane's state.
        #[arg(long, env = "SYNCPLANE_AGENT_IDENTITY", default_value = "default")]
        identity: String,
        /// Lane state database (default: <store>/.syncplane-agent.db).
        #[arg(long)]
        state: Option<PathBuf>,
        /// Milliseconds between ticks (the spec's 5000 by default).
        #[arg(long, default_value_t = 5000)]
        tick_ms: u64,
        /// Raise pass sizes to the server's cap and send passes back to back.
        #[arg(long)]
        raise_pass_sizes: bool,
    },
    /// The transcript lane: upload the redacted transcripts of a directory.
    Transcripts {
        #[command(subcommand)]
        command: transcripts_cli::TranscriptsCommand,
    },
    /// What a desktop app's hooks call: terminal events flush the transcript now, others mark it
    /// for the next debounced flush.
    Hook(transcripts_cli::Hook),
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    bound_allocator();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("syncplane-agent: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Transcripts { command } => transcripts_cli::transcripts(command).await,
        Command::Hook(hook) => transcripts_cli::hook(hook).await,
        push @ Command::Push { .. } => metadata_push(push).await,
    }
}

async fn metadata_push(command: Command) -> anyhow::Result<ExitCode> {
    let Command::Push {
        store,
        url,
        token,
        target,
        identity,
        state,
        tick_ms,
        raise_pass_sizes,
    } = command
    else {
        anyhow::bail!("not the push command");
    };
    let state_path = state.unwrap_or_else(|| store.join(".syncplane-agent.db"));
    let state = State::open(&state_path, &identity, &target)?;
    let transport = Transport::new(&url, TokenHandle::new(Some(token)), DEFAULT_DEADLINE)?;
    let settings = Settings {
        tick: Duration::from_millis(tick_ms),
        raise_pass_sizes,
        ..Settings::default()
    };
    let mut lane = Lane::new(
        JsonDirStore::new(&store),
        state,
        transport,
        Arc::new(SystemClock),
        settings,
        &target,
    )?;
    let status = lane.run_until_drained().await?;
    let dead = lane.state().dead_letters()?.len();
    println!(
        "{}",
        serde_json::json!({ "status": format!("{status:?}"), "counts": lane.counts(), "deadLetters": dead })
    );
    Ok(match status {
        LaneStatus::Running if dead == 0 => ExitCode::SUCCESS,
        LaneStatus::Running => {
            eprintln!(
                "syncplane-agent: {dead} session(s) set aside; they are retried on a later push"
            );
            ExitCode::from(2)
        }
        LaneStatus::Paused => {
            eprintln!(
                "syncplane-agent: --token was refused (401): issue a new device token and pass it with --token"
            );
            ExitCode::from(3)
        }
        LaneStatus::Parked => {
            eprintln!(
                "syncplane-agent: agent session sync is disabled for this org (feature_disabled): enable the org's sync policy, then push again"
            );
            ExitCode::from(4)
        }
    })
}

/// Keep the process's resident memory bounded by what it holds (issue 20: ≤ 64 MB whatever the
/// file size). The transcript lane allocates and frees windows of a few MiB; glibc raises its mmap
/// threshold to the largest block freed, after which such windows come from the heap arenas and
/// are not given back: measured, a 210 MB backfill peaked at 1.1 GB resident instead of 22 MB.
/// Pinning the threshold at 128 KiB (glibc's default) keeps every window an mmap of its own,
/// returned when freed. An app that embeds the lanes chooses its own allocator.
fn bound_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called once, at the start of main,
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
