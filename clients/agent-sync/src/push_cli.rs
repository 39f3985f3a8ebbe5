//! `syncplane-agent push`: the metadata lane over a directory of session files, ended by
//! [`syncplane_agent::push`] and reported as one JSON line on stdout and one line on stderr.
//!
//! Issue 21: a wait is said on stderr as it happens (point 8: the URL, the outcome, the attempt,
//! the next try) and ends the push with a code of its own ([`crate::exit`]) once hello has failed
//! its budget or `--wait` has passed, or the target has been refused for `--wait`; a `404` from
//! both routes names `cargo lambda watch`'s layout (point 9); set-aside sessions are listed with
//! when they come back, and `--retry-set-aside` brings them back now (point 10); the final line
//! says what ended the push, which sessions were set aside and how many files were not sessions
//! (point 12).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use serde_json::json;
use syncplane_agent::clock::utc_text;
use syncplane_agent::push::{self, End};
use syncplane_agent::state::DeadLetter;
use syncplane_agent::transport::{DEFAULT_DEADLINE, HELLO_PATH, SYNC_PATH};
use syncplane_agent::{
    JsonDirStore, Lane, Outcome, Request, Settings, State, SystemClock, TokenHandle, Transport,
    Waiting,
};

use crate::exit;

/// `cargo lambda watch`'s URL of the ingest function (what `bash scripts/local.sh` serves).
const WATCH_URL: &str = "http://127.0.0.1:9000/lambda-url/ingest";
/// Set-aside sessions named on stderr; the JSON line lists them all.
const NAMED: usize = 10;

#[derive(Args)]
pub struct Push {
    /// Directory of session files: one JSON object per *.json file, the ingest wire contract's
    /// session in camelCase (docs/ingest-wire-contract.md, "Session": sessionId, updatedAt,
    /// dataRevision, agent, events, ...) plus the local fields the lane strips (tokenSeries, an
    /// event's summary and data). Example: examples/sessions.
    #[arg(long)]
    store: PathBuf,
    /// Ingest base URL: the host serving /api/agent-sessions/* (under `cargo lambda watch`:
    /// http://127.0.0.1:9000/lambda-url/ingest).
    #[arg(long, env = "SYNCPLANE_AGENT_URL")]
    url: String,
    /// Device token (spd_...).
    #[arg(long, env = "SYNCPLANE_AGENT_TOKEN", hide_env_values = true)]
    token: String,
    #[command(flatten)]
    device: Device,
    /// Milliseconds between ticks (the spec's 5000 by default).
    #[arg(long, default_value_t = 5000)]
    tick_ms: u64,
    /// Raise pass sizes to the server's cap and send passes back to back.
    #[arg(long)]
    raise_pass_sizes: bool,
    /// How long to wait on a server that does not answer hello, or on a compute target refused
    /// as not the token's user's, before giving up (exit 5 or 6): 90s, 2m, 500ms.
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    wait: Duration,
    /// Retry the sessions set aside by earlier pushes now, instead of when their window opens.
    #[arg(long)]
    retry_set_aside: bool,
}

/// Who pushes and where its lane keeps its state: the options of `push` and of every transcript
/// command.
#[derive(Args)]
pub struct Device {
    /// This device's compute target id.
    #[arg(long, env = "SYNCPLANE_AGENT_TARGET")]
    pub target: String,
    /// The signed-in identity; a different one clears the lane's state.
    #[arg(long, env = "SYNCPLANE_AGENT_IDENTITY", default_value = "default")]
    pub identity: String,
    /// Lane state database (default: .syncplane-agent.db in the directory read, --store or
    /// --dir; `transcripts flush` reads none, so it needs this).
    #[arg(long)]
    pub state: Option<PathBuf>,
}

/// `90s`, `2m`, `1h`, `500ms`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: write 90s, 2m, 1h or 500ms"))?;
    let ms = match unit.trim() {
        "ms" => Some(n),
        "" | "s" => n.checked_mul(1000),
        "m" | "min" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        _ => return Err(format!("{text:?}: the unit is one of ms, s, m, h")),
    };
    ms.map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is too long"))
}

/// What a wait's outcome usually means, for the line that says it.
fn hint(w: &Waiting) -> &'static str {
    match (w.request, w.outcome, w.status) {
        (Request::Hello, Outcome::TransportError | Outcome::TransportTimeout, _) => {
            " (no answer: is the server running at --url?)"
        }
        (_, _, Some(404)) => " (not found: is --url the ingest function?)",
        (_, Outcome::TargetNotOwned, _) => {
            " (--target is not a compute target of this token's user)"
        }
        _ => "",
    }
}

pub async fn push(args: Push) -> anyhow::Result<ExitCode> {
    let state_path = args
        .device
        .state
        .clone()
        .unwrap_or_else(|| args.store.join(".syncplane-agent.db"));
    let mut state = State::open(&state_path, &args.device.identity, &args.device.target)?;
    if args.retry_set_aside {
        let n = state.release_set_aside()?;
        eprintln!("syncplane-agent: {n} session(s) set aside earlier are retried now");
    }
    let transport = Transport::new(
        &args.url,
        TokenHandle::new(Some(args.token.clone())),
        DEFAULT_DEADLINE,
    )?;
    let settings = Settings {
        tick: Duration::from_millis(args.tick_ms),
        raise_pass_sizes: args.raise_pass_sizes,
        ..Settings::default()
    };
    let mut lane = Lane::new(
        JsonDirStore::new(&args.store),
        state,
        transport,
        Arc::new(SystemClock),
        settings,
        &args.device.target,
    )?;
    let end = push::run(&mut lane, args.wait, |w| {
        eprintln!("syncplane-agent: waiting: {w}{}", hint(w));
    })
    .await?;
    let set_aside = lane.state().dead_letters()?;
    println!("{}", summary(&lane, &end, &set_aside));
    Ok(exit::code(report(&lane, &end, &set_aside, &args)))
}

/// The final JSON line: what ended the push, sessions per outcome, what was set aside (and
/// until when), files that were not sessions, and the wait that ended it.
fn summary(lane: &Lane<JsonDirStore>, end: &End, set_aside: &[DeadLetter]) -> serde_json::Value {
    let aside: Vec<_> = set_aside
        .iter()
        .map(|d| {
            json!({
                "sessionId": d.session_id,
                "reason": d.reason,
                "retryAt": d.retry_at_ms.map(utc_text),
            })
        })
        .collect();
    let mut out = json!({
        "status": end.name(),
        "counts": lane.counts(),
        "deadLetters": set_aside.len(),
        "setAside": aside,
        "skippedFiles": lane.store().skipped_files(),
    });
    if let Some(w) = end.waiting() {
        out["waitingFor"] = json!({
            "url": w.url, "outcome": w.outcome.name(), "status": w.status,
            "attempts": w.attempts, "since": utc_text(w.since_ms),
        });
    }
    out
}

/// The one line on stderr that says what ended the push and what to do; the exit code.
fn report(lane: &Lane<JsonDirStore>, end: &End, set_aside: &[DeadLetter], args: &Push) -> u8 {
    let waited = |w: &Waiting| {
        let secs = w.waited_ms(lane.now_ms()).max(0) / 1000;
        format!("{} attempt(s) over {secs} s", w.attempts)
    };
    match end {
        End::Delivered => {
            if lane.hello().is_some_and(|h| !h.answered) && lane.counts().is_empty() {
                eprintln!(
                    "syncplane-agent: note: GET {} answered 404 and nothing was sent: a server \
                     older than hello, or --url is not the ingest function (under cargo lambda \
                     watch: --url {WATCH_URL})",
                    lane.transport().url(HELLO_PATH)
                );
            }
            exit::DELIVERED
        }
        End::SetAside => {
            eprintln!("syncplane-agent: {}", set_aside_line(set_aside));
            exit::SET_ASIDE
        }
        End::TokenRefused => {
            eprintln!(
                "syncplane-agent: --token was refused (401): issue a new device token and pass it with --token"
            );
            exit::TOKEN_REFUSED
        }
        End::FeatureDisabled => {
            eprintln!(
                "syncplane-agent: agent session sync is disabled for this org (feature_disabled): enable the org's sync policy, then push again"
            );
            exit::FEATURE_DISABLED
        }
        End::Unreachable(w) => {
            eprintln!(
                "syncplane-agent: --url {}: GET {} failed: {}{}, {}: check that the server is \
                 running and that --url names it (bash scripts/local.sh: {WATCH_URL}), then push again",
                args.url,
                w.url,
                w.outcome.name(),
                w.status.map(|s| format!(" (HTTP {s})")).unwrap_or_default(),
                waited(w)
            );
            exit::UNREACHABLE
        }
        End::TargetNotOwned(w) => {
            eprintln!(
                "syncplane-agent: --target {}: refused as not a compute target of this token's \
                 user (403 target_not_owned), {}: register it for the token's user \
                 (syncplane ingest create-target USER_ID {}) or pass a target the user owns",
                args.device.target,
                waited(w),
                args.device.target
            );
            exit::TARGET_NOT_OWNED
        }
        End::NotIngest(_) => {
            eprintln!(
                "syncplane-agent: --url {} is not the ingest function: GET {} and POST {} \
                 answered 404; under cargo lambda watch (bash scripts/local.sh) pass --url {WATCH_URL}",
                args.url,
                lane.transport().url(HELLO_PATH),
                lane.transport().url(SYNC_PATH)
            );
            exit::NOT_INGEST
        }
    }
}

/// `2 session(s) set aside: s1 (validation, retried from 2026-03-01T10:05:00Z), big (oversize,
/// retried by the next push); --retry-set-aside retries them now`
fn set_aside_line(set_aside: &[DeadLetter]) -> String {
    let mut named: Vec<String> = set_aside
        .iter()
        .take(NAMED)
        .map(|d| match d.retry_at_ms {
            Some(at) => format!(
                "{} ({}, retried from {})",
                d.session_id,
                d.reason,
                utc_text(at)
            ),
            None => format!("{} ({}, retried by the next push)", d.session_id, d.reason),
        })
        .collect();
    if set_aside.len() > NAMED {
        named.push(format!("and {} more", set_aside.len() - NAMED));
    }
    format!(
        "{} session(s) set aside: {}; push --retry-set-aside retries them now",
        set_aside.len(),
        named.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_reads_seconds_minutes_hours_and_milliseconds() {
        let d = |s| parse_duration(s).unwrap();
        assert_eq!(d("90s"), Duration::from_secs(90));
        assert_eq!(d("2m"), Duration::from_secs(120));
        assert_eq!(d("1h"), Duration::from_secs(3600));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("15"), Duration::from_secs(15));
        for bad in ["", "m", "2 weeks", "-1s", "1.5m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
