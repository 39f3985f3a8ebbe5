//! `bench-transcripts`: figures for the transcript lane's client (issue 20; not a test, prints
//! numbers).
//!
//! The parent generates a deterministic corpus (500 JSON Lines transcripts, ≥ 200 MB, one of
//! them ≥ 50 MB, ordinary text with a planted secret now and then) and serves the real ingest
//! handler on loopback over a fresh Postgres database, once per transport (issue 20: "arrives
//! exactly once ... through each transport"):
//! - **direct**: the intent answers an upload URL on the ingest handler itself, stored in a
//!   filesystem store;
//! - **presigned**: the store is a bucket of its own on the S3 emulator (moto on loopback,
//!   `scripts/services.sh`), the intent answers a presigned PUT and the client sends the bytes
//!   straight to the bucket; `complete` verifies the stored object's size and checksum.
//!
//! Each transport starts from a fresh database and a fresh client state. The client is the
//! `syncplane-agent` CLI, run as a child process (built with the same profile as this binary:
//! `cargo build --profile perf -p syncplane-agent`), so its CPU time and peak RSS (getrusage of
//! the waited children) are the client's alone.
//!
//! 1. Backfill: `transcripts push` over the corpus; every file arrives exactly once (one upload
//!    per recorded segment, acked offset = file length) and byte-identical to the client's
//!    redacted staging (the segments' SHA-256s are those of the client's own staging, which the
//!    server verified against what it stored); client CPU per MB (target ≤ 20 ms) and peak RSS
//!    (target ≤ 64 MB).
//! 2. Append 10 lines to the 50 MB file and call the terminal hook: one segment from the old end,
//!    its compressed bytes ≤ 2× the zstd size of those lines alone (plus the request overhead).
//! 3. SIGKILL: a copy of the 50 MB file pushed, the client killed after its first segments, then
//!    pushed again: segments sent twice ≤ 1.
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-transcripts [-- files total_mb big_mb]
//! [--transport direct|presigned|both]` (default both).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shared::archive::store::Store;
use shared::ingest::IngestState;
use syncplane_agent::redact::Redactor;
use syncplane_agent::transcripts::segment::{Caps, stage};
use syncplane_agent::{JsonlDirSource, MemorySource, TranscriptSource};
use syncplane_tests::agent_server::IngestServer;
use syncplane_tests::bench::{Row, print_table};
use syncplane_tests::db::TestDb;

const TARGET: &str = "bench-laptop";
const WORDS: &[&str] = &[
    "the", "function", "returns", "a", "value", "error", "file", "line", "test", "passes", "build",
    "cargo", "refactor", "module", "import", "struct", "field", "query", "index", "commit",
    "branch", "review", "change", "output", "input", "token", "segment", "offset",
];

/// A deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One transcript line: a turn with ordinary text, a secret every 50th line.
fn line(rng: &mut Rng, turn: u64) -> String {
    let n = 20 + rng.next() % 60;
    let mut text = String::new();
    for _ in 0..n {
        text.push_str(WORDS[(rng.next() % WORDS.len() as u64) as usize]);
        text.push(' ');
    }
    if turn.is_multiple_of(50) {
        text.push_str(&format!("ghp_{:036x}", rng.next() as u128 * 7919));
    }
    let kind = ["user", "assistant", "tool_use", "tool_result"][(turn % 4) as usize];
    format!(
        "{{\"type\":\"{kind}\",\"turn\":{turn},\"ts\":\"2026-03-01T10:{:02}:{:02}Z\",\"text\":\"{text}\"}}\n",
        turn / 60 % 60,
        turn % 60
    )
}

/// Write a transcript of about `bytes` bytes; returns its length.
fn write_transcript(path: &Path, seed: u64, bytes: u64) -> u64 {
    use std::io::Write;
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let f = std::fs::File::create(path).expect("create transcript");
    let mut w = std::io::BufWriter::new(f);
    let (mut len, mut turn) = (0u64, 0u64);
    while len < bytes {
        let l = line(&mut rng, turn);
        w.write_all(l.as_bytes()).expect("write transcript");
        len += l.len() as u64;
        turn += 1;
    }
    w.flush().expect("flush transcript");
    len
}

/// The corpus: `files` transcripts of `total_mb` MB in all, `big.jsonl` of `big_mb` MB among them.
fn corpus(dir: &Path, files: u64, total_mb: u64, big_mb: u64) -> u64 {
    let mb = 1024 * 1024;
    let big = write_transcript(&dir.join("big.jsonl"), 1, big_mb * mb);
    let each = (total_mb * mb).saturating_sub(big) / (files - 1).max(1);
    let mut total = big;
    for i in 1..files {
        // Sizes spread around the mean (0.5× to 1.5×).
        let size = each / 2 + (i * 7919 % 1000) * each / 1000;
        total += write_transcript(&dir.join(format!("s-{i:04}.jsonl")), i + 1, size);
    }
    total
}

fn usage(who: i32) -> (Duration, u64) {
    // SAFETY: getrusage writes into the zeroed struct we own; `who` is RUSAGE_SELF or
    // RUSAGE_CHILDREN.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut u);
        u
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(u.ru_utime) + tv(u.ru_stime), u.ru_maxrss as u64)
}

/// Redaction plus compression alone, in this process: the big file staged segment by segment.
fn staging_only(dir: &Path) -> Vec<Row> {
    let big = dir.join("big.jsonl");
    let len = std::fs::metadata(&big).map(|m| m.len()).unwrap_or(0);
    let (cpu0, _) = usage(libc::RUSAGE_SELF);
    let segments = staged(&big, "big").len();
    let (cpu1, _) = usage(libc::RUSAGE_SELF);
    let mb = len as f64 / (1024.0 * 1024.0);
    let per_mb = (cpu1 - cpu0).as_secs_f64() * 1000.0 / mb;
    vec![
        Row::info(
            "staging only: big file (MB) / segments",
            format!("{mb:.1} / {segments}"),
        ),
        Row::target(
            "staging only: CPU per MB, redaction + zstd (ms)",
            format!("{per_mb:.2}"),
            "<= 20 ms",
            per_mb <= 20.0,
        ),
    ]
}

fn children_usage() -> (Duration, u64) {
    usage(libc::RUSAGE_CHILDREN)
}

fn agent(url: &str, token: &str, args: &[&str]) -> Command {
    // Beside this binary: target/<profile>/syncplane-agent.
    let bin = std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.join("syncplane-agent")))
        .expect("own path");
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .args(["--url", url, "--target", TARGET, "--tick-ms", "20"])
        .env_clear()
        .env("SYNCPLANE_AGENT_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

async fn run(cmd: Command) -> std::process::Output {
    let mut cmd = cmd;
    tokio::task::spawn_blocking(move || cmd.output().expect("run syncplane-agent"))
        .await
        .expect("join")
}

struct Archive<'a>(&'a TestDb);

impl Archive<'_> {
    /// (generation, acked offset) of a file.
    async fn file(&self, session: &str, file_id: &str) -> Option<(i32, i64)> {
        sqlx::query_as(
            "SELECT generation, acked_offset FROM transcript_files
              WHERE compute_target_id = $1 AND session_id = $2 AND file_id = $3",
        )
        .bind(TARGET)
        .bind(session)
        .bind(file_id)
        .fetch_optional(&self.0.pool)
        .await
        .expect("transcript_files")
    }

    /// The segments of a file: (offset, compressed bytes, sha256 hex), in order.
    async fn segments(&self, session: &str, file_id: &str) -> Vec<(i64, i64, String)> {
        let rows: Vec<(i64, i64, Vec<u8>)> = sqlx::query_as(
            "SELECT s.start_offset, s.compressed_bytes, s.sha256 FROM transcript_segments s
               JOIN transcript_files f ON f.id = s.file_row AND s.generation = f.generation
              WHERE f.compute_target_id = $1 AND f.session_id = $2 AND f.file_id = $3
              ORDER BY s.start_offset",
        )
        .bind(TARGET)
        .bind(session)
        .bind(file_id)
        .fetch_all(&self.0.pool)
        .await
        .expect("transcript_segments");
        rows.into_iter()
            .map(|(o, c, s)| (o, c, hex::encode(s)))
            .collect()
    }

    /// Upload intents granted for a file (each a segment sent).
    async fn intents(&self, session: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT count(*) FROM transcript_uploads u JOIN transcript_files f ON f.id = u.file_row
              WHERE f.compute_target_id = $1 AND f.session_id = $2",
        )
        .bind(TARGET)
        .bind(session)
        .fetch_one(&self.0.pool)
        .await
        .expect("transcript_uploads")
    }

    async fn segment_count(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM transcript_segments")
            .fetch_one(&self.0.pool)
            .await
            .expect("count")
    }
}

/// The SHA-256s the client stages for a file from 0, read in windows as the lane does.
fn staged(path: &Path, session: &str) -> Vec<(i64, String)> {
    let file = JsonlDirSource::file(session, path).expect("transcript");
    let src = JsonlDirSource::new(path.parent().unwrap_or(Path::new(".")));
    let redactor = Redactor::new();
    let (mut at, mut out) = (0u64, Vec::new());
    while let Some(seg) = stage(&src, &file, at, &Caps::default(), &redactor).expect("stage") {
        out.push((seg.offset as i64, seg.sha256.clone()));
        at = seg.end();
    }
    out
}

/// The zstd size of `bytes` (complete lines) redacted, as one segment.
fn zstd_size(bytes: &[u8]) -> u64 {
    let src = MemorySource::default();
    src.put("z", "z", bytes.to_vec());
    let file = src.file("z", "z").expect("file");
    stage(&src, &file, 0, &Caps::default(), &Redactor::new())
        .ok()
        .flatten()
        .map_or(0, |s| s.compressed.len() as u64)
}

/// The two transports of the lane (docs/transcript-wire-contract.md "`POST .../intent`").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Direct,
    Presigned,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Presigned => "presigned",
        }
    }
}

/// The ingest handler on a fresh database with `transport`; the temporary directory of a
/// direct store (removed by the caller).
async fn start_server(transport: Transport) -> (TestDb, IngestServer, String, Option<PathBuf>) {
    let db = TestDb::new().await;
    let token = syncplane_tests::provisioned::device_on_target(&db.pool, TARGET)
        .await
        .token;
    let store_dir = syncplane_tests::transcripts::temp_dir();
    let mut state: IngestState = syncplane_tests::transcripts::direct_state(&db.pool, &store_dir);
    let store_dir = match transport {
        Transport::Direct => Some(store_dir),
        Transport::Presigned => {
            let _ = std::fs::remove_dir_all(&store_dir);
            state.transcripts.store = Store::S3(syncplane_tests::s3::bucket().await);
            None
        }
    };
    // The bench measures the lane, not the server's per-target intent limit.
    state.transcripts.rate_limit_per_minute = 1_000_000;
    let server = IngestServer::start(state).await;
    (db, server, token, store_dir)
}

/// Segments sent: bodies the handler stored (direct), or presigned URLs handed out (each one
/// PUT straight to the bucket; the handler never sees it).
fn uploads(server: &IngestServer) -> usize {
    let presigned = server.seen().iter().all(|s| s.method != "PUT");
    server
        .seen()
        .iter()
        .filter(|s| {
            if presigned {
                s.method == "POST" && s.path.ends_with("/transcripts/intent") && s.status == 200
            } else {
                s.method == "PUT" && s.status == 200
            }
        })
        .count()
}

/// Backfill figures: (rows, source bytes, wall, client CPU, every-file check).
async fn backfill(
    dir: &Path,
    total: u64,
    db: &TestDb,
    server: &IngestServer,
    token: &str,
) -> Vec<Row> {
    let d = dir.to_string_lossy().into_owned();
    let (cpu0, _) = children_usage();
    let t0 = Instant::now();
    let out = run(agent(
        &server.url(),
        token,
        &["transcripts", "push", "--dir", &d],
    ))
    .await;
    let wall = t0.elapsed();
    let (cpu1, maxrss_kib) = children_usage();
    let cpu = cpu1 - cpu0;
    let a = Archive(db);
    let files = JsonlDirSource::new(dir).discover().expect("discover");
    let (mut arrived, mut identical) = (0, 0);
    for f in &files {
        if a.file(&f.session_id, &f.file_id).await == Some((1, f.len as i64)) {
            arrived += 1;
        }
        let stored: Vec<(i64, String)> = a
            .segments(&f.session_id, &f.file_id)
            .await
            .into_iter()
            .map(|(o, _, s)| (o, s))
            .collect();
        if stored == staged(&f.path, &f.session_id) {
            identical += 1;
        }
    }
    let segments = a.segment_count().await;
    let mb = total as f64 / (1024.0 * 1024.0);
    let cpu_per_mb = cpu.as_secs_f64() * 1000.0 / mb;
    let rss_mb = maxrss_kib as f64 / 1024.0;
    let n = files.len();
    vec![
        Row::check(
            "backfill: push exit code",
            out.status.code().unwrap_or(-1),
            "0",
            out.status.success(),
        ),
        Row::info("backfill: transcripts / MB", format!("{n} / {mb:.1}")),
        Row::check(
            "backfill: files acked at their length",
            arrived,
            &n.to_string(),
            arrived == n,
        ),
        Row::check(
            "backfill: files byte-identical to the client's staging",
            identical,
            &n.to_string(),
            identical == n,
        ),
        Row::check(
            "backfill: uploads = segments (exactly once)",
            uploads(server),
            &segments.to_string(),
            uploads(server) as i64 == segments,
        ),
        Row::info("backfill: wall (s)", format!("{:.2}", wall.as_secs_f64())),
        Row::info(
            "backfill: MB/s end to end",
            format!("{:.1}", mb / wall.as_secs_f64()),
        ),
        Row::target(
            "backfill: client CPU per MB (ms)",
            format!("{cpu_per_mb:.2}"),
            "<= 20 ms",
            cpu_per_mb <= 20.0,
        ),
        Row::target(
            "backfill: client peak RSS (MB)",
            format!("{rss_mb:.1}"),
            "<= 64 MB",
            rss_mb <= 64.0,
        ),
    ]
}

/// Append 10 lines to the big file and call the terminal hook.
async fn append(dir: &Path, db: &TestDb, server: &IngestServer, token: &str) -> Vec<Row> {
    use std::io::Write;
    let big = dir.join("big.jsonl");
    let old = std::fs::metadata(&big).map(|m| m.len()).unwrap_or(0);
    let mut rng = Rng(42);
    let lines: String = (0..10).map(|k| line(&mut rng, 10_000_000 + k)).collect();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&big)
        .expect("open big");
    f.write_all(lines.as_bytes()).expect("append");
    drop(f);
    let before = uploads(server);
    let (d, file) = (
        dir.to_string_lossy().into_owned(),
        big.to_string_lossy().into_owned(),
    );
    let out = run(agent(
        &server.url(),
        token,
        &[
            "hook",
            "stop",
            "--session",
            "big",
            "--file",
            &file,
            "--dir",
            &d,
        ],
    ))
    .await;
    let sent = uploads(server) - before;
    let segs = Archive(db).segments("big", "big.jsonl").await;
    let last = segs.last().cloned().unwrap_or_default();
    let z = zstd_size(lines.as_bytes());
    let from_old = last.0 == old as i64;
    vec![
        Row::check(
            "append: hook exit code",
            out.status.code().unwrap_or(-1),
            "0",
            out.status.success(),
        ),
        Row::check("append: segments uploaded", sent, "1", sent == 1),
        Row::check(
            "append: the segment starts at the old end",
            last.0,
            &old.to_string(),
            from_old,
        ),
        Row::info("append: zstd size of the 10 lines (B)", z),
        Row::target(
            "append: segment compressed bytes (B)",
            last.1,
            "<= 2x zstd",
            last.1 as u64 <= 2 * z,
        ),
        Row::info(
            "append: request overhead",
            "intent + PUT + complete (3 requests, < 2 KiB of JSON and headers)",
        ),
    ]
}

/// A copy of the big file pushed, SIGKILLed after its first segments, pushed again.
async fn sigkill(dir: &Path, db: &TestDb, server: &IngestServer, token: &str) -> Vec<Row> {
    let kdir = dir.with_extension("kill");
    std::fs::create_dir_all(&kdir).expect("kill dir");
    let len = write_transcript(&kdir.join("k.jsonl"), 99, 48 * 1024 * 1024);
    let d = kdir.to_string_lossy().into_owned();
    let mut cmd = agent(&server.url(), token, &["transcripts", "push", "--dir", &d]);
    let mut child = cmd.spawn().expect("spawn");
    let a = Archive(db);
    let t0 = Instant::now();
    while a.segments("k", "k.jsonl").await.len() < 3
        && t0.elapsed() < Duration::from_secs(120)
        && matches!(child.try_wait(), Ok(None))
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    let at_kill = a.segments("k", "k.jsonl").await.len();
    let out = run(agent(
        &server.url(),
        token,
        &["transcripts", "push", "--dir", &d],
    ))
    .await;
    let segs = a.segments("k", "k.jsonl").await.len() as i64;
    let intents = a.intents("k").await;
    let resent = intents - segs;
    let acked = a.file("k", "k.jsonl").await;
    vec![
        Row::info("sigkill: segments acked at the kill", at_kill),
        Row::check(
            "sigkill: second push exit code",
            out.status.code().unwrap_or(-1),
            "0",
            out.status.success(),
        ),
        Row::check(
            "sigkill: file acked at its length",
            format!("{acked:?}"),
            &format!("Some((1, {len}))"),
            acked == Some((1, len as i64)),
        ),
        Row::check("sigkill: segments sent again", resent, "<= 1", resent <= 1),
    ]
}

/// The transports asked for (`--transport direct|presigned|both`, default both).
fn transports(args: &[String]) -> Vec<Transport> {
    let asked = args
        .iter()
        .position(|a| a == "--transport")
        .and_then(|i| args.get(i + 1))
        .map_or("both", String::as_str);
    match asked {
        "direct" => vec![Transport::Direct],
        "presigned" => vec![Transport::Presigned],
        "both" => vec![Transport::Direct, Transport::Presigned],
        other => {
            eprintln!("--transport {other}: expected direct, presigned or both");
            std::process::exit(2);
        }
    }
}

/// Forget what the client acknowledged (its state databases), so the next transport starts
/// from nothing; the SIGKILL step's copy is written again.
fn fresh_client(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with(".syncplane-agent.db")
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let _ = std::fs::remove_dir_all(dir.with_extension("kill"));
}

/// Backfill, append and SIGKILL through one transport, its rows named after it.
async fn through(transport: Transport, dir: &Path) -> Vec<Row> {
    fresh_client(dir);
    let total = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    let (db, server, token, store_dir) = start_server(transport).await;
    let mut rows = backfill(dir, total, &db, &server, &token).await;
    rows.extend(append(dir, &db, &server, &token).await);
    rows.extend(sigkill(dir, &db, &server, &token).await);
    drop((server, db));
    if let Some(d) = store_dir {
        let _ = std::fs::remove_dir_all(d);
    }
    rows.into_iter()
        .map(|r| r.prefixed(transport.name()))
        .collect()
}

#[tokio::main]
async fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<u64> = raw.iter().filter_map(|a| a.parse().ok()).collect();
    let transports = transports(&raw);
    let files = args.first().copied().unwrap_or(500);
    let total_mb = args.get(1).copied().unwrap_or(210);
    let big_mb = args.get(2).copied().unwrap_or(55);
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "optimised"
    };
    println!(
        "bench-transcripts ({profile} build): {files} transcripts, {total_mb} MB, one of {big_mb} MB"
    );
    let root: PathBuf =
        std::env::temp_dir().join(format!("bench-transcripts-{}", uuid::Uuid::new_v4()));
    let dir = root.join("corpus");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let t0 = Instant::now();
    corpus(&dir, files, total_mb, big_mb);
    println!("corpus generated in {:.1} s", t0.elapsed().as_secs_f64());
    let mut rows = staging_only(&dir);
    for transport in transports {
        rows.extend(through(transport, &dir).await);
    }
    let _ = std::fs::remove_dir_all(&root);
    if !print_table(&format!("bench-transcripts ({profile})"), &rows) {
        std::process::exit(1);
    }
}
