//! `syncplane-agent`: the metadata lane as a command, reading sessions from a directory of JSON
//! files (one session each, in the contract's camelCase shape) — for scripting and tests.
//!
//! Spec, "Cursors and eventual consistency": the cursor and the outbox live in a state database
//! beside the store, so each `push` is a launch that resumes where the last one stopped (a cold
//! restart: deterministic dead letters are looked at again, deferral holds lifted). "Retries,
//! backoff, and dead-lettering" and "Sync error codes": a push ends when everything is delivered
//! or set aside, when the lane stops, or when a wait has lasted its bound (issue 21, point 8),
//! and the exit code says which ([`exit`]: the table is in `--help` and the README).
//!
//! Issue 21, point 11: a usage error exits 1, as every error but the lane's own outcomes; clap
//! would exit 2, the code of "sessions were set aside".
//!
//! `transcripts push` and `hook` run the transcript lane with the same options and exit codes
//! (`transcripts_cli`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod exit;
mod push_cli;
mod transcripts_cli;

#[derive(Parser)]
#[command(
    name = "syncplane-agent",
    about = "Push local agent sessions to syncplane's ingest endpoint",
    after_help = exit::TABLE
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Send every session of the store that the cloud does not have yet, then exit.
    #[command(after_help = exit::TABLE)]
    Push(push_cli::Push),
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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print to stdout and succeed; a usage error is 1, not clap's 2.
            let _ = e.print();
            return exit::code(if e.use_stderr() {
                exit::OTHER
            } else {
                exit::DELIVERED
            });
        }
    };
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("syncplane-agent: {e:#}");
            exit::code(exit::OTHER)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Transcripts { command } => transcripts_cli::transcripts(command).await,
        Command::Hook(hook) => transcripts_cli::hook(hook).await,
        Command::Push(push) => push_cli::push(push).await,
    }
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
