//! `bench-agent`: figures for the desktop agent client (issue 14; not a test, prints numbers).
//!
//! The client runs in a child process of its own (this binary again, `client` mode), so its CPU
//! time (getrusage) and peak resident memory (VmHWM) are the client's alone; the parent serves
//! the real ingest handler on loopback over a fresh Postgres database. The child's store
//! synthesizes each session when the lane loads it (a typical session: 40 events with local
//! text, token events, refs), as an app's SQLite store would hydrate it.
//!
//! 1. Spec defaults (3 sessions per backfill pass): the lane's pace is its schedule, so the ticks
//!    run back to back on a fake clock that moves 5 s per tick; figures: CPU per session sent
//!    (target <= 1 ms) and peak RSS for the whole backfill (target <= 64 MB at 10,000 sessions).
//! 2. Pass sizes raised to the caps (the setting off by default), real time: sessions per second
//!    end to end through the local server (target >= 1,000/s at 10,000 sessions).
//!
//! `cargo run -p syncplane-tests --features tools --bin bench-agent [--profile perf] -- [sessions]`

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use shared::ingest::IngestState;
use syncplane_agent::session::{ArtifactRef, SessionMeta};
use syncplane_agent::store::StoreError;
use syncplane_agent::{
    FakeClock, Lane, LocalSession, SessionStore, Settings, State, SystemClock, TokenHandle,
    Transport,
};
use syncplane_tests::agent_server::IngestServer;
use syncplane_tests::bench::{Row, print_table};
use syncplane_tests::db::TestDb;

const TARGET: &str = "bench-laptop";
const EVENTS: u64 = 40;

/// Sessions made on demand from their number: nothing held but the count.
struct Synthetic(usize);

fn updated(i: usize) -> DateTime<Utc> {
    DateTime::from_timestamp(1_772_000_000 + i as i64, 0).unwrap_or_default()
}

fn typical(i: usize) -> LocalSession {
    let doc = json!({
        "sessionId": format!("bench-{i:06}"), "updatedAt": updated(i).to_rfc3339(),
        "dataRevision": "r1", "agent": "claude-code", "model": "opus",
        "title": format!("Session number {i}"), "status": "completed",
        "startedAt": "2026-01-01T10:00:00Z", "endedAt": "2026-01-01T11:00:00Z",
        "repository": {"remoteUrl": "git@github.com:acme/app.git", "branch": "main",
                       "commitSha": format!("{:040x}", i * 7919)},
        "usage": {"inputTokens": 12345 + i, "outputTokens": 6789, "costUsd": 1.25},
        "events": (0..EVENTS).map(|seq| json!({
            "seq": seq, "ts": "2026-01-01T10:30:00Z",
            "kind": if seq % 3 == 0 { "tool_call" } else { "message" },
            "toolName": (["bash", "edit", "read", "grep"][seq as usize % 4]),
            "durationMs": (seq * 37) % 5000, "inputTokens": (seq * 13) % 900,
            "outputTokens": (seq * 7) % 400, "isError": seq % 17 == 0,
            "summary": "a line of local per-turn text the lane never sends",
            "data": {"stdout": "local tool output"}
        })).collect::<Vec<_>>(),
        "tokenEvents": [{"ts": "2026-01-01T10:05:00Z", "inputTokens": 10, "outputTokens": 5}],
        "tokenSeries": [[1, 2], [3, 4]],
        "artifactRefs": [{"kind": "pr", "ref": format!("acme/app#{i}")}],
    });
    serde_json::from_value(doc).unwrap_or_else(|e| panic!("bench session: {e}"))
}

impl SessionStore for Synthetic {
    fn list_updated_after(
        &self,
        after: Option<DateTime<Utc>>,
    ) -> Result<Vec<SessionMeta>, StoreError> {
        Ok((0..self.0)
            .filter(|i| after.is_none_or(|a| updated(*i) > a))
            .map(|i| SessionMeta {
                session_id: format!("bench-{i:06}"),
                updated_at: updated(i),
                data_revision: "r1".into(),
                refs_fingerprint: syncplane_agent::session::refs_fingerprint(Some(&[
                    ArtifactRef {
                        kind: "pr".into(),
                        reference: format!("acme/app#{i}"),
                    },
                ])),
            })
            .collect())
    }

    fn load(&self, session_id: &str) -> Result<Option<LocalSession>, StoreError> {
        Ok(session_id
            .strip_prefix("bench-")
            .and_then(|n| n.parse().ok())
            .map(typical))
    }
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_SELF is always valid.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Child mode: run one backfill and print its figures as JSON.
async fn client(url: &str, token: &str, n: usize, raised: bool, state_path: &str) -> Value {
    let state = State::open(std::path::Path::new(state_path), "bench", TARGET).expect("state");
    let transport = Transport::new(
        url,
        TokenHandle::new(Some(token.to_owned())),
        Duration::from_secs(8),
    )
    .expect("transport");
    let settings = Settings {
        raise_pass_sizes: raised,
        ..Settings::default()
    };
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    let mut ticks = 0u64;
    let counts = if raised {
        let mut lane = Lane::new(
            Synthetic(n),
            state,
            transport,
            Arc::new(SystemClock),
            settings,
            TARGET,
        )
        .expect("lane");
        loop {
            ticks += 1;
            let r = lane.tick().await.expect("tick");
            if lane.drained().expect("drained") {
                break;
            }
            if !r.more_due {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        lane.counts()
    } else {
        let clock = FakeClock::at(1_780_000_000_000);
        let mut lane = Lane::new(
            Synthetic(n),
            state,
            transport,
            Arc::new(clock.clone()),
            settings,
            TARGET,
        )
        .expect("lane");
        loop {
            ticks += 1;
            lane.tick().await.expect("tick");
            if lane.drained().expect("drained") {
                break;
            }
            clock.advance(Duration::from_secs(5));
        }
        lane.counts()
    };
    json!({
        "wall_s": t0.elapsed().as_secs_f64(),
        "cpu_s": (cpu_time() - cpu0).as_secs_f64(),
        "hwm_kib": status_kib("VmHWM:"),
        "ticks": ticks,
        "synced": counts.get("synced").copied().unwrap_or(0),
        "counts": counts,
    })
}

fn run_child(url: &str, token: &str, n: usize, raised: bool, state: &str) -> Value {
    let out = Command::new(std::env::current_exe().expect("own path"))
        .args([
            "client",
            url,
            token,
            &n.to_string(),
            if raised { "1" } else { "0" },
            state,
        ])
        .output()
        .expect("run the client");
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("client figures")
}

async fn start_server() -> (TestDb, IngestServer, String) {
    let db = TestDb::new().await;
    let token = syncplane_tests::provisioned::device_on_target(&db.pool, TARGET)
        .await
        .token;
    let server = IngestServer::start(IngestState {
        pool: db.pool.clone(),
        rate_limit_per_minute: 1_000_000,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    })
    .await;
    (db, server, token)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("client") {
        let n = args[4].parse().expect("sessions");
        let figures = client(&args[2], &args[3], n, args[5] == "1", &args[6]).await;
        println!("{figures}");
        return;
    }
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "optimised"
    };
    println!("bench-agent ({profile} build), {n} sessions of {EVENTS} events");
    let dir = std::env::temp_dir().join(format!("bench-agent-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let state = |name: &str| dir.join(name).to_string_lossy().into_owned();

    let (db, server, token) = start_server().await;
    let url = server.url();
    let d = tokio::task::spawn_blocking({
        let (url, token, s) = (url.clone(), token.clone(), state("defaults.db"));
        move || run_child(&url, &token, n, false, &s)
    })
    .await
    .expect("defaults run");
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM agent_sessions")
        .fetch_one(&db.pool)
        .await
        .expect("count");
    drop((server, db));

    let (db, server, token) = start_server().await;
    let url = server.url();
    let r = tokio::task::spawn_blocking({
        let (url, token, s) = (url.clone(), token.clone(), state("raised.db"));
        move || run_child(&url, &token, n, true, &s)
    })
    .await
    .expect("raised run");
    let stored_raised: i64 = sqlx::query_scalar("SELECT count(*) FROM agent_sessions")
        .fetch_one(&db.pool)
        .await
        .expect("count");
    drop((server, db));
    let _ = std::fs::remove_dir_all(&dir);

    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(0.0);
    let cpu_ms_per = f(&d, "cpu_s") * 1000.0 / n as f64;
    let rss_mb = f(&d, "hwm_kib") / 1024.0;
    let per_s = n as f64 / f(&r, "wall_s");
    let rows = [
        Row::check(
            "defaults: sessions stored",
            stored,
            &n.to_string(),
            stored == n as i64,
        ),
        Row::info(
            "defaults: ticks (3 sessions per backfill pass)",
            d["ticks"].to_string(),
        ),
        Row::info(
            "defaults: client CPU total (s)",
            format!("{:.2}", f(&d, "cpu_s")),
        ),
        Row::target(
            "defaults: client CPU per session (ms)",
            format!("{cpu_ms_per:.3}"),
            "<= 1 ms",
            cpu_ms_per <= 1.0,
        ),
        Row::target(
            "defaults: client peak RSS (MB)",
            format!("{rss_mb:.1}"),
            "<= 64 MB",
            rss_mb <= 64.0,
        ),
        Row::check(
            "raised: sessions stored",
            stored_raised,
            &n.to_string(),
            stored_raised == n as i64,
        ),
        Row::info("raised: wall (s)", format!("{:.2}", f(&r, "wall_s"))),
        Row::target(
            "raised: sessions/s end to end",
            format!("{per_s:.0}"),
            ">= 1000/s",
            per_s >= 1000.0,
        ),
        Row::info(
            "raised: client CPU per session (ms)",
            format!("{:.3}", f(&r, "cpu_s") * 1000.0 / n as f64),
        ),
        Row::info(
            "raised: client peak RSS (MB)",
            format!("{:.1}", f(&r, "hwm_kib") / 1024.0),
        ),
    ];
    if !print_table(&format!("bench-agent ({profile})"), &rows) {
        std::process::exit(1);
    }
}
