//! `syncplane-agent transcripts push` and `syncplane-agent hook`: the transcript lane as
//! commands (docs/transcript-wire-contract.md, "Client rules"; README, "The desktop agent
//! client").
//!
//! `transcripts push --dir DIR` sweeps the directory (the layouts of
//! [`syncplane_agent::JsonlDirSource`]), uploads every file's segments and exits when every file
//! is acknowledged or set aside. `hook <event> --session S --file F` is what a desktop app's
//! hooks call: `session-end`, `stop` and `subagent-stop` are terminal and flush the file now;
//! any other event marks the file for the lane's next debounced flush in the state database and
//! exits at once, without the network. Exit codes are `push`'s ([`crate::exit`]): 0
//! acknowledged, 2 set aside or still pending (a later push retries), 3 the token was refused, 4
//! transcripts are off (the org's policy, the transcript gate, or a server without the lane), 1
//! anything else (a usage error too).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use syncplane_agent::transcripts::{Settings, TranscriptStatus};
use syncplane_agent::transport::DEFAULT_DEADLINE;
use syncplane_agent::{
    JsonlDirSource, SystemClock, TokenHandle, TranscriptLane, TranscriptState, TranscriptTransport,
};

use crate::exit;

/// The options every transcript command shares with `push`.
#[derive(Args)]
pub struct Common {
    /// Ingest base URL (the host serving /api/agent-sessions/*).
    #[arg(long, env = "SYNCPLANE_AGENT_URL")]
    url: Option<String>,
    /// Device token (spd_...).
    #[arg(long, env = "SYNCPLANE_AGENT_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// This device's compute target id.
    #[arg(long, env = "SYNCPLANE_AGENT_TARGET")]
    target: String,
    /// The signed-in identity; a different one clears the lane's state.
    #[arg(long, env = "SYNCPLANE_AGENT_IDENTITY", default_value = "default")]
    identity: String,
    /// Lane state database (default: <dir>/.syncplane-agent.db).
    #[arg(long)]
    state: Option<PathBuf>,
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
    match (&common.state, dir) {
        (Some(p), _) => Ok(p.clone()),
        (None, Some(d)) => Ok(d.join(".syncplane-agent.db")),
        (None, None) => anyhow::bail!("pass --state (or --dir, for <dir>/.syncplane-agent.db)"),
    }
}

fn lane<S: syncplane_agent::TranscriptSource>(
    source: S,
    common: &Common,
    state: &Path,
    settings: Settings,
) -> anyhow::Result<TranscriptLane<S>> {
    let url = common
        .url
        .as_deref()
        .context("pass --url (or SYNCPLANE_AGENT_URL)")?;
    let token = common
        .token
        .clone()
        .context("pass --token (or SYNCPLANE_AGENT_TOKEN)")?;
    let state = TranscriptState::open(state, &common.identity, &common.target)?;
    let transport = TranscriptTransport::new(url, TokenHandle::new(Some(token)), DEFAULT_DEADLINE)?;
    Ok(TranscriptLane::new(
        source,
        state,
        transport,
        Arc::new(SystemClock),
        settings,
        &common.target,
    )?)
}

fn exit_code(status: TranscriptStatus, pending: usize) -> ExitCode {
    match status {
        TranscriptStatus::Running if pending == 0 => exit::code(exit::DELIVERED),
        TranscriptStatus::Running => {
            eprintln!(
                "syncplane-agent: {pending} transcript(s) set aside or pending; a later push retries them"
            );
            exit::code(exit::SET_ASIDE)
        }
        TranscriptStatus::Paused => {
            eprintln!(
                "syncplane-agent: --token was refused (401): issue a new device token and pass it with --token"
            );
            exit::code(exit::TOKEN_REFUSED)
        }
        TranscriptStatus::Parked => {
            eprintln!(
                "syncplane-agent: transcripts are disabled for this org (feature_disabled or transcripts_disabled)"
            );
            exit::code(exit::FEATURE_DISABLED)
        }
        TranscriptStatus::Idle => {
            eprintln!(
                "syncplane-agent: the server has no transcript lane (no agentTranscriptUpload)"
            );
            exit::code(exit::FEATURE_DISABLED)
        }
    }
}

pub async fn transcripts(command: TranscriptsCommand) -> anyhow::Result<ExitCode> {
    let TranscriptsCommand::Push { dir, common } = command;
    let state = state_path(&common, Some(&dir))?;
    let settings = Settings {
        tick: Duration::from_millis(common.tick_ms),
        ..Settings::default()
    };
    let mut lane = lane(JsonlDirSource::new(&dir), &common, &state, settings)?;
    let status = lane.run_until_drained().await?;
    let dead = lane.state().dead_letters()?.len();
    let pending = usize::try_from(lane.state().pending_count()?).unwrap_or(0);
    println!(
        "{}",
        serde_json::json!({"status": status, "figures": lane.figures(), "deadLetters": dead})
    );
    Ok(exit_code(status, dead + pending))
}

pub async fn hook(hook: Hook) -> anyhow::Result<ExitCode> {
    let file = JsonlDirSource::file(&hook.session, &hook.file)
        .with_context(|| format!("--file {}", hook.file.display()))?;
    let state_file = state_path(&hook.common, hook.dir.as_deref())?;
    if !is_terminal(&hook.event) {
        let mut state =
            TranscriptState::open(&state_file, &hook.common.identity, &hook.common.target)?;
        let at = chrono::Utc::now().timestamp_millis()
            + i64::try_from(hook.debounce_ms).unwrap_or(i64::MAX / 2);
        state.schedule(&file, at)?;
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
