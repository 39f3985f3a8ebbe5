//! `bench-session-page`: issue 34's session page target. Prints figures; exits non-zero when a
//! correctness check fails. Not a test: CI never runs it.
//!
//! A `--mb` (50) MB transcript of realistic Claude Code lines (`syncplane_tests::transcript_corpus`),
//! uploaded through the real ingest handler in segments of 8 MiB, with the session's metadata.
//! `syncplane serve`'s router (the real one, on loopback) serves the console; headless Chromium
//! signs in with the org's read token and opens the session's page `--runs` (5) times, each a
//! fresh load: the time from navigation start to the first screen (the facts and the first turns
//! drawn), the page's JS heap then (`performance.memory.usedJSHeapSize`, Chromium's own figure),
//! and the turns drawn. Targets: first screen <= 1 s, heap <= 64 MB. Then the transcript's
//! export through the same server: its rate and the process's resident memory meanwhile.
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-session-page --
//! [--mb 50] [--runs 5]` (Chromium and chromedriver: `bash scripts/tools.sh --browser`).

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use shared::accounts::tokens;
use shared::ingest::{IngestState, handle};
use syncplane_tests::apigw::{reply, request};
use syncplane_tests::bench::{Row, pct, print_table};
use syncplane_tests::browser::Browser;
use syncplane_tests::db::TestDb;
use syncplane_tests::redaction_corpus::Rng;
use syncplane_tests::transcript_corpus::record;

const TARGET: &str = "laptop-1";
const SESSION: &str = "big-session";
const SEGMENT_BYTES: usize = 8 * 1024 * 1024;
const TARGET_FIRST_SCREEN: Duration = Duration::from_secs(1);
const TARGET_HEAP_MB: f64 = 64.0;

#[derive(Parser, Debug)]
#[command(about = "A large transcript's session page in headless Chromium")]
struct Args {
    #[arg(long, default_value_t = 50)]
    mb: usize,
    #[arg(long, default_value_t = 5)]
    runs: usize,
    #[arg(long, default_value_t = 34)]
    seed: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tokio::runtime::Runtime::new()
        .expect("tokio runtime")
        .block_on(bench(args))
}

async fn bench(args: Args) -> ExitCode {
    let db = TestDb::new().await;
    let dir = syncplane_tests::transcripts::temp_dir();
    let state = syncplane_tests::transcripts::direct_state(&db.pool, &dir);
    let (device, read) = provision_org(&db).await;
    let decoded = upload(&state, &device, &args).await;
    println!(
        "bench-session-page: a {:.1} MB transcript, {} loads of its page",
        decoded as f64 / 1e6,
        args.runs
    );
    let base = syncplane_tests::transcripts::serve_locally(db.url().expose(), &dir).await;

    let b = Browser::start().await;
    b.open(&format!("{base}/#/signin")).await;
    b.type_into("#sp-token", &read).await;
    b.click("form.signin button[type=submit]").await;
    b.wait_js("document.querySelector('main').dataset.ready")
        .await;
    let page = format!("{base}/#/sessions/{SESSION}?target={TARGET}");
    let mut times = Vec::new();
    let mut heaps = Vec::new();
    let mut turns = Vec::new();
    for _ in 0..args.runs {
        b.open("about:blank").await;
        b.open(&page).await;
        let seen = b.js(FIRST_SCREEN).await;
        times.push(Duration::from_secs_f64(
            seen["ms"].as_f64().unwrap_or(f64::MAX) / 1000.0,
        ));
        heaps.push(seen["heap"].as_f64().unwrap_or(f64::MAX) / 1e6);
        turns.push(seen["turns"].as_u64().unwrap_or(0));
    }
    b.close().await;
    // The same transcript exported, streamed by the server: its rate and the memory it takes.
    let exported = syncplane_tests::bench::download(
        &format!(
            "{base}/api/agent-sessions/transcripts/export?computeTargetId={TARGET}&sessionId={SESSION}"
        ),
        &read,
    )
    .await;
    times.sort();
    let worst_heap = heaps.iter().copied().fold(0.0, f64::max);
    let mut rows = vec![
        Row::info(
            "transcript (decoded)",
            format!("{:.1} MB", decoded as f64 / 1e6),
        ),
        Row::target(
            "first screen, p50",
            format!("{:.0} ms", pct(&times, 0.5).as_secs_f64() * 1000.0),
            "<= 1000 ms",
            pct(&times, 0.5) <= TARGET_FIRST_SCREEN,
        ),
        Row::target(
            "first screen, slowest",
            format!("{:.0} ms", pct(&times, 1.0).as_secs_f64() * 1000.0),
            "<= 1000 ms",
            pct(&times, 1.0) <= TARGET_FIRST_SCREEN,
        ),
        Row::target(
            "JS heap at the first screen, largest",
            format!("{worst_heap:.1} MB"),
            "<= 64 MB",
            worst_heap <= TARGET_HEAP_MB,
        ),
        Row::check(
            "turns on the first screen",
            format!("{turns:?}"),
            "> 0 each load",
            turns.iter().all(|t| *t > 0),
        ),
    ];
    rows.extend(exported.rows("the transcript's export"));
    rows.push(Row::check(
        "the export is the transcript",
        format!("{} bytes", exported.bytes),
        &format!("{decoded} bytes"),
        exported.bytes == decoded,
    ));
    if print_table("session page", &rows) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Resolves when the session page shows its facts and its first turns: the time since
/// navigation start, the JS heap then, and the turns drawn.
const FIRST_SCREEN: &str = "return new Promise((done) => { const check = () => { \
    const m = document.querySelector('main'); const n = m ? m.querySelectorAll('.turn').length : 0; \
    if (m && m.dataset.ready === 'sessions' && n > 0 && m.querySelector('dl.facts')) \
      done({ ms: performance.now(), heap: performance.memory ? performance.memory.usedJSHeapSize : null, turns: n }); \
    else requestAnimationFrame(check); }; check(); });";

/// Org `acme` with a user on [`TARGET`] and the session's metadata: a device token and the org's
/// read token.
async fn provision_org(db: &TestDb) -> (String, String) {
    let device = syncplane_tests::provisioned::device_on_target(&db.pool, TARGET).await;
    let org = device.org;
    sqlx::query(
        "INSERT INTO agent_sessions (org_id, compute_target_id, session_id, updated_at, agent,
            model, title, started_at, repository_remote_url, repository_branch, input_tokens,
            output_tokens, cost_usd, payload)
         VALUES ($1, $2, $3, now(), 'claude-code', 'claude-opus-4',
                 'Chase the flaky TLS handshake across the whole test suite', now() - interval '5 hours',
                 'git@github.com:acme/syncplane.git', 'main', 9000000, 400000, 41.5, '{}'::jsonb)",
    )
    .bind(org)
    .bind(TARGET)
    .bind(SESSION)
    .execute(&db.pool)
    .await
    .expect("session");
    let read = tokens::issue_read_token(&db.pool, org, None)
        .await
        .expect("read token")
        .token;
    (device.token, read)
}

/// `args.mb` MB of transcript lines uploaded as [`SESSION`]'s file; the bytes uploaded.
async fn upload(state: &IngestState, device: &str, args: &Args) -> u64 {
    let mut r = Rng(args.seed);
    let mut offset = 0u64;
    let mut seg = Vec::with_capacity(SEGMENT_BYTES);
    let mut i = 0usize;
    while offset + (seg.len() as u64) < (args.mb * 1_000_000) as u64 {
        let ts = format!("2026-11-02T10:{:02}:{:02}.000Z", (i / 60) % 60, i % 60);
        let mut line = record(&mut r, SESSION, i, &ts).to_string().into_bytes();
        line.push(b'\n');
        if seg.len() + line.len() > SEGMENT_BYTES {
            offset += send_segment(state, device, offset, &seg).await;
            seg.clear();
        }
        seg.extend_from_slice(&line);
        i += 1;
    }
    offset + send_segment(state, device, offset, &seg).await
}

/// Intent, direct PUT, complete of one segment at `offset`; its length.
async fn send_segment(state: &IngestState, device: &str, offset: u64, seg: &[u8]) -> u64 {
    let z = zstd::encode_all(seg, 3).expect("zstd");
    let intent = json!({"computeTargetId": TARGET, "sessionId": SESSION,
        "fileId": format!("{SESSION}.jsonl"), "generation": 1, "offset": offset,
        "sourceBytes": seg.len(), "decodedBytes": seg.len(), "compressedBytes": z.len(),
        "sha256": hex::encode(Sha256::digest(&z))});
    let r = send(
        state,
        device,
        "POST",
        "/api/agent-sessions/transcripts/intent",
        intent.to_string().as_bytes(),
    )
    .await;
    let id = r["data"]["uploadId"]
        .as_str()
        .expect("an upload id")
        .to_owned();
    send(
        state,
        device,
        "PUT",
        &format!("/api/agent-sessions/transcripts/uploads/{id}"),
        &z,
    )
    .await;
    let body = json!({"uploadId": id}).to_string();
    send(
        state,
        device,
        "POST",
        "/api/agent-sessions/transcripts/complete",
        body.as_bytes(),
    )
    .await;
    seg.len() as u64
}

async fn send(state: &IngestState, device: &str, method: &str, path: &str, body: &[u8]) -> Value {
    let auth = format!("Bearer {device}");
    let kind = if method == "PUT" {
        "application/octet-stream"
    } else {
        "application/json"
    };
    let headers = [("authorization", auth.as_str()), ("content-type", kind)];
    let r = reply(handle(state, request(method, path, &headers, Some(body))).await);
    assert_eq!(r.status, 200, "{method} {path}: {}", r.body);
    r.body
}
