//! `syncplane-agent transcripts push`, `transcripts flush` and `syncplane-agent hook`: the
//! transcript lane as commands (docs/transcript-wire-contract.md, "Client rules";
//! docs/desktop-client.md, "The transcript lane").
//!
//! `transcripts push --dir DIR` sweeps the directory (the layouts of
//! [`syncplane_agent::JsonlDirSource`]), uploads every file's segments and exits when every file
//! is acknowledged or set aside. `hook <event> --session S --file F` is what a desktop app's
//! hooks call: `session-end`, `stop` and `subagent-stop` are terminal and flush the file now;
//! any other event marks the file due at the end of its debounce (the first activity of a quiet
//! file sets it; later activity does not push it back) and exits at once, leaving the upload to
//! the state file's background flusher, which it starts when none runs: `transcripts flush`, a
//! detached process that sends each marked file when its time comes and exits once nothing is
//! due (spec, "Live triggers": ordinary activity flushes on a debounce, with hooks alone too).
//! Every process that sends from one state file takes its upload lock first, so a running lane
//! and hook processes never send the same bytes twice. Exit codes are `push`'s
//! ([`crate::exit`]): 0 acknowledged (an activity hook: marked), 2 set aside or still pending (a
//! later push retries), 3 the token was refused, 4 transcripts are off (the org's policy, the
//! transcript gate, or a server without the lane), 1 anything else (a usage error too).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use syncplane_agent::transcripts::state::LockKind;
use syncplane_agent::transcripts::{Settings, TranscriptStatus};
use syncplane_agent::transport::DEFAULT_DEADLINE;
use syncplane_agent::{
    JsonlDirSource, SystemClock, TokenHandle, TranscriptLane, TranscriptState, TranscriptTransport,
};

use crate::exit;
use crate::push_cli::Device;

/// The options every transcript command shares with `push`.
#[derive(Args)]
pub struct Common {
    /// Ingest base URL (the host serving /api/agent-sessions/*).
    #[arg(long, env = "SYNCPLANE_AGENT_URL")]
    url: Option<String>,
    /// Device token (spd_...).
    #[arg(long, env = "SYNCPLANE_AGENT_TOKEN", hide_env_values = true)]
    token: Option<String>,
    #[command(flatten)]
    device: Device,
    /// Milliseconds between ticks when nothing is due sooner.
    #[arg(long, default_value_t = 1000)]
    tick_ms: u64,
}

#[derive(Subcommand)]
pub enum TranscriptsCommand {
    /// Upload every transcript of the directory the cloud does not have yet, then exit.
    Push {
        /// Directory of transcripts: <dir>/<session>.jsonl or <dir>/<session>/<file>.jsonl.
        #[arg(long)]
        dir: PathBuf,
        #[command(flatten)]
        common: Common,
    },
    /// Send the files activity hooks marked, each when its debounce ends, then exit once nothing
    /// is due (what `hook` starts in the background; one per state file).
    Flush {
        /// Exit when nothing is due within this many milliseconds.
        #[arg(long, default_value_t = 30_000)]
        idle_ms: u64,
        #[command(flatten)]
        common: Common,
    },
}

/// `hook`'s arguments.
#[derive(Args)]
pub struct Hook {
    /// The hook's event: session-end, stop, subagent-stop (terminal: flush now), or any other
    /// (activity: flushed after the debounce).
    event: String,
    /// The session the transcript belongs to.
    #[arg(long)]
    session: String,
    /// The transcript file.
    #[arg(long)]
    file: PathBuf,
    /// The transcripts directory (for the default state database).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The debounce of activity events, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    debounce_ms: u64,
    #[command(flatten)]
    common: Common,
}

/// Whether a hook event is terminal (session end, stop, sub-agent stop), in any spelling
/// (`session-end`, `SessionEnd`, `subagent_stop`).
pub fn is_terminal(event: &str) -> bool {
    let norm: String = event
        .chars()
        .filter(|c| !matches!(c, '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect();
    matches!(norm.as_str(), "sessionend" | "stop" | "subagentstop")
}

fn state_path(common: &Common, dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    match (&common.device.state, dir) {
        (Some(p), _) => Ok(p.clone()),
        (None, Some(d)) => Ok(d.join(".syncplane-agent.db")),
        (None, None) => anyhow::bail!("pass --state (or --dir, for <dir>/.syncplane-agent.db)"),
    }
}

/// How a command's lane starts: `push` is a cold start (what was set aside deterministically is
/// tried again); a hook's process joins the state file as it is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    Cold,
    Join,
}

fn lane<S: syncplane_agent::TranscriptSource>(
    source: S,
    common: &Common,
    state: &Path,
    settings: Settings,
    start: Start,
) -> anyhow::Result<TranscriptLane<S>> {
    let url = common
        .url
        .as_deref()
        .context("pass --url (or SYNCPLANE_AGENT_URL)")?;
    let token = common
        .token
        .clone()
        .context("pass --token (or SYNCPLANE_AGENT_TOKEN)")?;
    let state = TranscriptState::open(state, &common.device.identity, &common.device.target)?;
    let state = match start {
        Start::Cold => state,
        Start::Join => state.joining(),
    };
    let transport = TranscriptTransport::new(url, TokenHandle::new(Some(token)), DEFAULT_DEADLINE)?;
    let clock = Arc::new(SystemClock);
    Ok(TranscriptLane::new(
        source,
        state,
        transport,
        clock,
        settings,
        &common.device.target,
    )?)
}

fn exit_code(status: TranscriptStatus, pending: usize) -> ExitCode {
    let (code, why) = match status {
        TranscriptStatus::Running if pending == 0 => return exit::code(exit::DELIVERED),
        TranscriptStatus::Running => (
            exit::SET_ASIDE,
            format!("{pending} transcript(s) set aside or pending; a later push retries them"),
        ),
        TranscriptStatus::Paused => (
            exit::TOKEN_REFUSED,
            "--token was refused (401): issue a new device token and pass it with --token".into(),
        ),
        TranscriptStatus::Parked => (
            exit::FEATURE_DISABLED,
            "transcripts are disabled for this org (feature_disabled or transcripts_disabled)"
                .into(),
        ),
        TranscriptStatus::Idle => (
            exit::FEATURE_DISABLED,
            "the server has no transcript lane (no agentTranscriptUpload)".into(),
        ),
    };
    eprintln!("syncplane-agent: {why}");
    exit::code(code)
}

pub async fn transcripts(command: TranscriptsCommand) -> anyhow::Result<ExitCode> {
    let (dir, common) = match command {
        TranscriptsCommand::Push { dir, common } => (dir, common),
        TranscriptsCommand::Flush { idle_ms, common } => return flush(&common, idle_ms).await,
    };
    let state = state_path(&common, Some(&dir))?;
    let settings = Settings {
        tick: Duration::from_millis(common.tick_ms),
        ..Settings::default()
    };
    let mut lane = lane(
        JsonlDirSource::new(&dir),
        &common,
        &state,
        settings,
        Start::Cold,
    )?;
    let status = lane.run_until_drained().await?;
    let dead = lane.state().dead_letters()?.len();
    let pending = usize::try_from(lane.state().pending_count()?).unwrap_or(0);
    println!(
        "{}",
        serde_json::json!({"status": status, "figures": lane.figures(), "deadLetters": dead})
    );
    Ok(exit_code(status, dead + pending))
}

/// `transcripts flush`: the state file's one background flusher (a second one exits at once).
async fn flush(common: &Common, idle_ms: u64) -> anyhow::Result<ExitCode> {
    let state_file = state_path(common, None)?;
    let lock = TranscriptState::open(&state_file, &common.device.identity, &common.device.target)?;
    let Some(mut held) = lock.try_lock(LockKind::Flusher)? else {
        return Ok(exit::code(exit::DELIVERED));
    };
    let mut lane = lane(
        JsonlDirSource::new(state_file.parent().unwrap_or(Path::new("."))),
        common,
        &state_file,
        Settings::default(),
        Start::Join,
    )?;
    let idle = Duration::from_millis(idle_ms);
    loop {
        let status = lane.flush_scheduled(idle).await?;
        drop(held);
        // A hook that marked a file just as this flusher found nothing due saw the lock held and
        // started no other: look once more after letting go, and carry on if it is there.
        let due_soon = lane
            .state()
            .next_due_ms()?
            .is_some_and(|at| at <= chrono::Utc::now().timestamp_millis() + idle_ms as i64);
        if status != TranscriptStatus::Running || !due_soon {
            let pending = usize::try_from(lane.state().pending_count()?).unwrap_or(0);
            return Ok(exit_code(status, pending));
        }
        match lock.try_lock(LockKind::Flusher)? {
            Some(again) => held = again,
            None => return Ok(exit::code(exit::DELIVERED)),
        }
    }
}

/// Start the state file's background flusher (`transcripts flush`), detached: no terminal, no
/// output, its own process group, the token in its environment (never on a command line). A
/// flusher already running makes the new one exit at once.
fn start_flusher(common: &Common, state_file: &Path) -> anyhow::Result<()> {
    let (Some(url), Some(token)) = (&common.url, &common.token) else {
        eprintln!(
            "syncplane-agent: no --url or --token: the file is marked, and waits for a lane, a push or a terminal hook"
        );
        return Ok(());
    };
    let exe = std::env::current_exe().context("the syncplane-agent executable")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["transcripts", "flush", "--state"])
        .arg(state_file)
        .args([
            "--target",
            &common.device.target,
            "--identity",
            &common.device.identity,
        ])
        .env("SYNCPLANE_AGENT_URL", url)
        .env("SYNCPLANE_AGENT_TOKEN", token)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.spawn().context("starting the background flusher")?;
    Ok(())
}

pub async fn hook(hook: Hook) -> anyhow::Result<ExitCode> {
    // The path as the flusher (another process, perhaps another directory) will read it.
    let path = std::fs::canonicalize(&hook.file).unwrap_or_else(|_| hook.file.clone());
    let file = JsonlDirSource::file(&hook.session, &path)
        .with_context(|| format!("--file {}", hook.file.display()))?;
    let state_file = state_path(&hook.common, hook.dir.as_deref())?;
    let state_file = match state_file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::canonicalize(dir)
            .map(|d| d.join(state_file.file_name().unwrap_or_default()))
            .unwrap_or(state_file),
        _ => state_file,
    };
    if !is_terminal(&hook.event) {
        let mut state = TranscriptState::open(
            &state_file,
            &hook.common.device.identity,
            &hook.common.device.target,
        )?;
        let at = chrono::Utc::now().timestamp_millis()
            + i64::try_from(hook.debounce_ms).unwrap_or(i64::MAX / 2);
        state.schedule(&file, at)?;
        drop(state);
        start_flusher(&hook.common, &state_file)?;
        return Ok(exit::code(exit::DELIVERED));
    }
    let root = hook
        .dir
        .clone()
        .or_else(|| hook.file.parent().map(Path::to_owned))
        .unwrap_or_default();
    let mut lane = lane(
        JsonlDirSource::new(root),
        &hook.common,
        &state_file,
        Settings::default(),
        Start::Join,
    )?;
    let (pending, status) = lane.flush_now(&file).await?;
    let dead = lane
        .state()
        .dead_letters()?
        .iter()
        .filter(|d| d.session_id == file.session_id && d.file_id == file.file_id)
        .count();
    println!(
        "{}",
        serde_json::json!({"status": status, "figures": lane.figures(), "deadLetters": dead})
    );
    Ok(exit_code(status, dead + usize::from(pending)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_end_stop_and_subagent_stop_are_terminal_in_any_spelling() {
        for t in [
            "session-end",
            "SessionEnd",
            "stop",
            "Stop",
            "subagent-stop",
            "SubagentStop",
            "subagent_stop",
        ] {
            assert!(is_terminal(t), "{t}");
        }
        for a in [
            "pre-tool-use",
            "PostToolUse",
            "user-prompt-submit",
            "notification",
            "",
        ] {
            assert!(!is_terminal(a), "{a}");
        }
    }
}
