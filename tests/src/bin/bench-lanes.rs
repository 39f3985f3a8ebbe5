//! `bench-lanes`: the lane-isolation target of issue 20 (not a test, prints numbers).
//!
//! Spec: "Lane isolation: with every transcript request failing or stalling, the metadata lane
//! still delivers a 1,000-session backfill in the same time (± 10%) as with transcripts idle;
//! and the reverse."
//!
//! One process holds the real ingest handler (loopback, fresh Postgres database per run, direct
//! transport), a loopback proxy that fails (`500`) or stalls every request of one lane's routes
//! (`syncplane_tests::lane_proxy`), and both client lanes, each on its own task:
//!
//! 1. The measured lane runs to drained, its ticks back to back on a fake clock (its pace is its
//!    schedule, as in `bench-agent`); its wall time is the figure.
//! 2. The other lane runs meanwhile on the system clock with a short tick (100 ms) and a 1 s
//!    deadline, so it keeps knocking (a stress: the spec's ticks are 5 s and 1 s): with nothing
//!    to do (idle), or with every one of its requests failing or stalling. Each lane keeps its
//!    own SQLite state file (as the CLI does by default: `<store>/` and `<dir>/`).
//!
//! Metadata: 1,000 sessions of 40 events, spec pass sizes (3 per backfill pass); against 40
//! transcripts of 256 KiB. Transcripts: 40 files of 256 KiB (10 MiB, 64 KiB segments); against
//! the 1,000 sessions. Five runs per case, interleaved, the median; every run must deliver everything exactly
//! once (a hard check).
//!
//! `cargo build --profile perf -p syncplane-tests --features tools --bin bench-lanes &&
//!  target/perf/bench-lanes [sessions files]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use syncplane_agent::transcripts::Settings as TranscriptSettings;
use syncplane_agent::{
    FakeClock, Lane, LocalSession, MemorySource, MemoryStore, Settings, State, SystemClock,
    TokenHandle, TranscriptLane, TranscriptState, TranscriptTransport, Transport,
};
use syncplane_tests::agent_server::IngestServer;
use syncplane_tests::bench::{Row, print_table};
use syncplane_tests::db::TestDb;
use syncplane_tests::lane_proxy::{LaneFaultProxy, PathFault};

const TARGET: &str = "bench-laptop";
const RUNS: usize = 5;
const FILE_BYTES: usize = 256 * 1024;
const SEGMENT: usize = 64 * 1024;
/// The faulty lane's deadline and tick.
const DEADLINE: Duration = Duration::from_secs(1);
const FAST_TICK: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Measured {
    Metadata,
    Transcripts,
}

fn session(i: usize) -> LocalSession {
    let updated = chrono::DateTime::from_timestamp(1_772_000_000 + i as i64, 0)
        .unwrap_or_default()
        .to_rfc3339();
    serde_json::from_value(json!({
        "sessionId": format!("bench-{i:06}"), "updatedAt": updated, "dataRevision": "r1",
        "agent": "claude-code", "model": "opus", "title": format!("Session number {i}"),
        "usage": {"inputTokens": 12345 + i, "outputTokens": 6789},
        "events": (0..40u64).map(|seq| json!({
            "seq": seq, "ts": "2026-01-01T10:30:00Z",
            "kind": if seq % 3 == 0 { "tool_call" } else { "message" },
            "toolName": (["bash", "edit", "read", "grep"][seq as usize % 4]),
            "durationMs": (seq * 37) % 5000, "inputTokens": (seq * 13) % 900,
            "outputTokens": (seq * 7) % 400, "isError": seq % 17 == 0,
            "summary": "local text the lane never sends", "data": {"stdout": "local"}
        })).collect::<Vec<_>>(),
        "artifactRefs": [{"kind": "pr", "ref": format!("acme/app#{i}")}],
    }))
    .unwrap_or_else(|e| panic!("bench session: {e}"))
}

fn store(n: usize) -> MemoryStore {
    let store = MemoryStore::default();
    for i in 0..n {
        store.put(session(i));
    }
    store
}

fn transcript(seed: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(FILE_BYTES + 256);
    let mut turn = 0;
    while out.len() < FILE_BYTES {
        let line = format!(
            "{{\"type\":\"assistant\",\"turn\":{turn},\"text\":\"file {seed} turn {turn}: the function returns a value, the test passes, cargo builds the module\"}}\n"
        );
        out.extend_from_slice(line.as_bytes());
        turn += 1;
    }
    out
}

fn source(files: usize) -> (MemorySource, u64) {
    let src = MemorySource::default();
    let mut total = 0;
    for f in 0..files {
        let bytes = transcript(f);
        total += bytes.len() as u64;
        src.put(&format!("s-{f:04}"), &format!("s-{f:04}.jsonl"), bytes);
    }
    (src, total)
}

struct World {
    db: TestDb,
    token: String,
    state: std::path::PathBuf,
    _server: IngestServer,
    proxy: LaneFaultProxy,
}

async fn world(faulty: &str) -> World {
    let db = TestDb::new().await;
    let device = syncplane_tests::provisioned::device_on_target(&db.pool, TARGET).await;
    let dir = syncplane_tests::transcripts::temp_dir();
    let server =
        IngestServer::start(syncplane_tests::transcripts::direct_state(&db.pool, &dir)).await;
    let proxy = LaneFaultProxy::start(server.addr, faulty).await;
    World {
        db,
        token: device.token,
        state: dir.join("client-state.db"),
        _server: server,
        proxy,
    }
}

fn metadata_lane(
    w: &World,
    n: usize,
    clock: Arc<dyn syncplane_agent::Clock>,
    tick: Duration,
    deadline: Duration,
) -> Lane<MemoryStore> {
    let state = State::open(&w.state, "bench", TARGET).expect("state");
    let transport = Transport::new(
        &w.proxy.url(),
        TokenHandle::new(Some(w.token.clone())),
        deadline,
    )
    .expect("transport");
    let settings = Settings {
        tick,
        ..Settings::default()
    };
    Lane::new(store(n), state, transport, clock, settings, TARGET).expect("lane")
}

fn transcript_lane(
    w: &World,
    src: MemorySource,
    clock: Arc<dyn syncplane_agent::Clock>,
    tick: Duration,
    deadline: Duration,
) -> TranscriptLane<MemorySource> {
    let state = TranscriptState::open(&w.state.with_extension("transcripts.db"), "bench", TARGET)
        .expect("state");
    let transport = TranscriptTransport::new(
        &w.proxy.url(),
        TokenHandle::new(Some(w.token.clone())),
        deadline,
    )
    .expect("transport");
    let settings = TranscriptSettings {
        tick,
        target_segment_bytes: SEGMENT,
        ..TranscriptSettings::default()
    };
    TranscriptLane::new(src, state, transport, clock, settings, TARGET).expect("lane")
}

/// One run: the measured lane's wall time to drained, and whether everything arrived once.
async fn run(
    measured: Measured,
    fault: PathFault,
    sessions: usize,
    files: usize,
) -> (Duration, bool) {
    let faulty = match measured {
        Measured::Metadata => syncplane_contract::transcripts::path::FILES,
        Measured::Transcripts => syncplane_contract::path::SYNC,
    };
    let w = world(faulty).await;
    w.proxy.set(fault);
    // The other lane: idle (nothing to send) or knocking on the faulty routes, on its own task.
    let idle = fault == PathFault::Pass;
    let system: Arc<dyn syncplane_agent::Clock> = Arc::new(SystemClock);
    let other = match measured {
        Measured::Metadata => {
            let (src, _) = source(if idle { 0 } else { files });
            let mut lane = transcript_lane(&w, src, system, FAST_TICK, DEADLINE);
            tokio::spawn(async move {
                let _ = lane.run().await;
            })
        }
        Measured::Transcripts => {
            let mut lane = metadata_lane(
                &w,
                if idle { 0 } else { sessions },
                system,
                FAST_TICK,
                DEADLINE,
            );
            tokio::spawn(async move {
                let _ = lane.run().await;
            })
        }
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let clock = FakeClock::at(1_780_000_000_000);
    let fake: Arc<dyn syncplane_agent::Clock> = Arc::new(clock.clone());
    let deadline = Duration::from_secs(8);
    let t0 = Instant::now();
    let ok = match measured {
        Measured::Metadata => {
            let mut lane = metadata_lane(&w, sessions, fake, Settings::default().tick, deadline);
            loop {
                lane.tick().await.expect("tick");
                if lane.drained().expect("drained") {
                    break;
                }
                clock.advance(Settings::default().tick);
            }
            lane.counts().get("synced") == Some(&(sessions as u64)) && lane.counts().len() == 1
        }
        Measured::Transcripts => {
            let (src, total) = source(files);
            let mut lane = transcript_lane(&w, src, fake, Duration::from_secs(1), deadline);
            loop {
                lane.tick().await.expect("tick");
                if lane.drained().expect("drained") {
                    break;
                }
                clock.advance(Duration::from_secs(1));
            }
            lane.figures().failures.is_empty() && lane.figures().source_bytes == total
        }
    };
    let took = t0.elapsed();
    other.abort();
    let ok = ok && delivered_once(&w, measured, sessions, files).await;
    (took, ok)
}

/// The server's side: every session stored once at its revision / every file acknowledged whole,
/// each segment stored once.
async fn delivered_once(w: &World, measured: Measured, sessions: usize, files: usize) -> bool {
    let pool = &w.db.pool;
    match measured {
        Measured::Metadata => {
            let stored: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM agent_sessions WHERE committed_revision = 'r1' AND pending_revision IS NULL",
            )
            .fetch_one(pool)
            .await
            .unwrap_or(-1);
            stored == sessions as i64
        }
        Measured::Transcripts => {
            let whole: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM transcript_files WHERE generation = 1 AND acked_offset > 0",
            )
            .fetch_one(pool)
            .await
            .unwrap_or(-1);
            let dup: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM (SELECT 1 FROM transcript_segments
                  GROUP BY file_row, generation, start_offset HAVING count(*) > 1) d",
            )
            .fetch_one(pool)
            .await
            .unwrap_or(-1);
            whole == files as i64 && dup == 0
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

const CASES: [(PathFault, &str); 3] = [
    (PathFault::Pass, "idle"),
    (PathFault::Fail, "failing"),
    (PathFault::Stall, "stalling"),
];

/// Every case `RUNS` times, interleaved (idle, failing, stalling, idle, ...) so that load from
/// outside falls on all three alike; the median time of each case and whether all its runs
/// delivered everything exactly once.
async fn cases(measured: Measured, sessions: usize, files: usize) -> Vec<(Duration, bool)> {
    let mut times = vec![Vec::new(); CASES.len()];
    let mut ok = vec![true; CASES.len()];
    for _ in 0..RUNS {
        for (i, (fault, _)) in CASES.iter().enumerate() {
            let (t, o) = run(measured, *fault, sessions, files).await;
            times[i].push(t);
            ok[i] &= o;
        }
    }
    times.into_iter().map(median).zip(ok).collect()
}

fn ms(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1000.0)
}

async fn direction(measured: Measured, sessions: usize, files: usize) -> Vec<Row> {
    let (what, other) = match measured {
        Measured::Metadata => (
            format!("metadata backfill of {sessions} sessions"),
            "transcript",
        ),
        Measured::Transcripts => (format!("transcript upload of {files} files"), "metadata"),
    };
    let figures = cases(measured, sessions, files).await;
    let idle = figures[0].0;
    let mut rows = Vec::new();
    for ((fault, name), (t, ok)) in CASES.iter().zip(figures) {
        let label = match fault {
            PathFault::Pass => format!("{other} lane idle"),
            _ => format!("every {other} request {name}"),
        };
        rows.push(Row::info(
            &format!("{what}, {label} (median of {RUNS}, ms)"),
            ms(t),
        ));
        if *fault != PathFault::Pass {
            let ratio = t.as_secs_f64() / idle.as_secs_f64().max(f64::EPSILON);
            rows.push(Row::target(
                &format!("{what}: ratio {name} / idle"),
                format!("{ratio:.3}"),
                "0.90 to 1.10",
                (0.9..=1.1).contains(&ratio),
            ));
        }
        rows.push(Row::check(
            &format!("{what}: delivered exactly once, {label}"),
            ok,
            "true",
            ok,
        ));
    }
    rows
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sessions = args.first().copied().unwrap_or(1000);
    let files = args.get(1).copied().unwrap_or(40);
    let mut rows = direction(Measured::Metadata, sessions, files).await;
    rows.extend(direction(Measured::Transcripts, sessions, files).await);
    for r in rows
        .iter()
        .filter(|r| r.target.as_ref().is_some_and(|t| !r.hard && t.1))
    {
        println!("ok: {}", r.figure);
    }
    if !print_table("bench-lanes: lane isolation (issue 20)", &rows) {
        std::process::exit(1);
    }
}
