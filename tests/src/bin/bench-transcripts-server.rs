//! `bench-transcripts-server`: the transcript lane's server side under concurrency, direct
//! transport (issue 20, "Targets": "Server: upload intent p99 <= 50 ms; a direct 4 MiB segment
//! stored p99 <= 300 ms, 8 concurrent clients"). Prints figures; exits non-zero when a hard
//! condition fails. Not a test: CI never runs it.
//!
//! The real `syncplane serve` router (`syncplane_cli::serve`: the API Gateway conversion, the
//! ingest handler, the filesystem store in a temporary directory) on loopback, one Postgres pool
//! of `--pool` connections. `--clients` clients (8), each its own compute target, run two phases
//! back to back:
//!
//! 1. intents: `--intents` upload intents each (a new file each time, so every intent creates its
//!    file row and its upload row), the latency as the client sees it;
//! 2. segments: `--segments` segments of about 4 MiB of incompressible bytes each (the contract's
//!    cap, compressed), one file per client, each intent → PUT → complete; the PUT (the segment
//!    stored: body through the gateway conversion, length and SHA-256 checked, synced to disk and
//!    linked create-only) and the complete (read back, SHA-256 again, bounded decode, one
//!    transaction) are timed apart.
//!
//! Hard conditions: every answer 200, every segment acknowledged in order, the stored objects
//! byte-identical to what was sent.
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-transcripts-server -- [--clients 8]
//! [--intents 200] [--segments 12] [--pool 10]`

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use rand::{RngCore, SeedableRng};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use shared::accounts::provision::{self, NewOrg};
use shared::accounts::tokens;
use shared::ingest::IngestState;
use shared::ingest::transcripts::TranscriptsState;
use syncplane_cli::serve::{Functions, router};
use syncplane_tests::bench::{Row, ms, pct, print_table};
use syncplane_tests::db::TestDb;

const TARGET_INTENT_P99: Duration = Duration::from_millis(50);
const TARGET_STORED_P99: Duration = Duration::from_millis(300);
/// Decoded bytes of a big segment: its zstd frame of random bytes stays under the 4 MiB cap.
const SEGMENT_DECODED: usize = 4 * 1024 * 1024 - 4096;

#[derive(Parser, Debug)]
#[command(about = "The transcript lane's direct transport under concurrent clients")]
struct Args {
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Upload intents per client in phase 1.
    #[arg(long, default_value_t = 200)]
    intents: usize,
    /// 4 MiB segments per client in phase 2.
    #[arg(long, default_value_t = 12)]
    segments: usize,
    /// The server's Postgres pool.
    #[arg(long, default_value_t = 10)]
    pool: u32,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tokio::runtime::Runtime::new()
        .expect("tokio runtime")
        .block_on(bench(args))
}

struct Client {
    target: String,
    token: String,
}

/// What one client measured.
#[derive(Default)]
struct Times {
    intents: Vec<Duration>,
    puts: Vec<Duration>,
    completes: Vec<Duration>,
    failures: Vec<String>,
}

async fn bench(args: Args) -> ExitCode {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "optimised"
    };
    println!(
        "bench-transcripts-server ({profile} build): {} clients; {} intents and {} segments of {} bytes each; pool {}",
        args.clients, args.intents, args.segments, SEGMENT_DECODED, args.pool
    );
    let db = TestDb::new().await;
    let clients = provision_clients(&db, args.clients).await;
    let dir = syncplane_tests::transcripts::temp_dir();
    let base = start_server(&db, &dir, args.pool).await;
    let http = reqwest::Client::new();

    let started = Instant::now();
    let runs = clients.iter().enumerate().map(|(i, c)| {
        let (http, base) = (http.clone(), base.clone());
        async move { intents(&http, &base, c, i, args.intents).await }
    });
    let phase1 = futures::future::join_all(runs).await;
    let phase1_secs = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let runs = clients.iter().enumerate().map(|(i, c)| {
        let (http, base, dir) = (http.clone(), base.clone(), dir.clone());
        async move { segments(&http, &base, &dir, c, i, args.segments).await }
    });
    let phase2 = futures::future::join_all(runs).await;
    let phase2_secs = started.elapsed().as_secs_f64();

    let mut all = Times::default();
    let mut loaded_intents = Vec::new();
    for t in phase1 {
        all.intents.extend(t.intents);
        all.failures.extend(t.failures);
    }
    for t in phase2 {
        loaded_intents.extend(t.intents);
        all.puts.extend(t.puts);
        all.completes.extend(t.completes);
        all.failures.extend(t.failures);
    }
    for v in [
        &mut all.intents,
        &mut all.puts,
        &mut all.completes,
        &mut loaded_intents,
    ] {
        v.sort();
    }
    let stored_mib = (all.puts.len() * SEGMENT_DECODED) as f64 / (1024.0 * 1024.0);
    let rows = vec![
        Row::check(
            "failures (non-200 answers, wrong state, bytes not as sent)",
            all.failures.len(),
            "0",
            all.failures.is_empty(),
        ),
        Row::info("intents timed (phase 1)", all.intents.len()),
        Row::info(
            "intent p50 (phase 1, ms)",
            format!("{:.1}", ms(pct(&all.intents, 0.5))),
        ),
        Row::target(
            "intent p99 (phase 1, ms)",
            format!("{:.1}", ms(pct(&all.intents, 0.99))),
            "<= 50",
            pct(&all.intents, 0.99) <= TARGET_INTENT_P99,
        ),
        Row::info(
            "intents per second (phase 1)",
            format!("{:.0}", (args.clients * args.intents) as f64 / phase1_secs),
        ),
        Row::info(
            "intent p99 beside 4 MiB uploads (phase 2, ms)",
            format!("{:.1}", ms(pct(&loaded_intents, 0.99))),
        ),
        Row::info("4 MiB segments stored", all.puts.len()),
        Row::info(
            "stored PUT p50 (ms)",
            format!("{:.1}", ms(pct(&all.puts, 0.5))),
        ),
        Row::target(
            "stored PUT p99 (ms)",
            format!("{:.1}", ms(pct(&all.puts, 0.99))),
            "<= 300",
            pct(&all.puts, 0.99) <= TARGET_STORED_P99,
        ),
        Row::info(
            "complete p50 / p99 (ms)",
            format!(
                "{:.1} / {:.1}",
                ms(pct(&all.completes, 0.5)),
                ms(pct(&all.completes, 0.99))
            ),
        ),
        Row::info(
            "segment MiB per second (phase 2, intent+PUT+complete)",
            format!("{:.1}", stored_mib / phase2_secs),
        ),
    ];
    for f in all.failures.iter().take(5) {
        println!("failure: {f}");
    }
    let ok = print_table("transcript lane, direct transport", &rows);
    let _ = std::fs::remove_dir_all(&dir);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// One org with sync on, one user, a compute target and a device token per client.
async fn provision_clients(db: &TestDb, n: usize) -> Vec<Client> {
    let org = provision::create_org(
        &db.pool,
        &NewOrg {
            name: "bench",
            sync_policy: Some(true),
            feature_gate: true,
            frustration_opt_in: false,
        },
    )
    .await
    .expect("org");
    let mut out = Vec::new();
    for i in 0..n {
        let user = provision::create_user(&db.pool, org, &format!("u{i}"))
            .await
            .expect("user");
        let target = format!("bench-target-{i}");
        provision::create_compute_target(&db.pool, user, &target)
            .await
            .expect("target");
        let token = tokens::issue_device_token(&db.pool, user, None)
            .await
            .expect("token")
            .token;
        out.push(Client { target, token });
    }
    out
}

/// `syncplane serve`'s router on a loopback port; its base URL.
async fn start_server(db: &TestDb, dir: &std::path::Path, pool_size: u32) -> String {
    let url = db.url().expose().to_owned();
    let config = shared::config::from_lookup(|k| (k == "DATABASE_URL").then(|| url.clone()))
        .expect("configuration");
    let app = shared::worker::app_state(&config, 2)
        .await
        .expect("app state");
    let pool = shared::db::connect(&db.url(), pool_size)
        .await
        .expect("server pool");
    let ingest = IngestState {
        pool,
        rate_limit_per_minute: 1_000_000,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: TranscriptsState {
            rate_limit_per_minute: 1_000_000,
            ..TranscriptsState::direct(dir)
        },
    };
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind a loopback port");
    let base = format!("http://{}", listener.local_addr().expect("local address"));
    let app = router(Arc::new(Functions::new(app, ingest)));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    base
}

fn intent_body(c: &Client, file: &str, offset: u64, decoded: usize, z: &[u8]) -> Value {
    json!({"computeTargetId": c.target, "sessionId": "bench-session", "fileId": file,
           "generation": 1, "offset": offset, "sourceBytes": decoded, "decodedBytes": decoded,
           "compressedBytes": z.len(), "sha256": hex::encode(Sha256::digest(z))})
}

async fn post(http: &reqwest::Client, url: &str, token: &str, body: &Value) -> (u16, Value) {
    match http.post(url).bearer_auth(token).json(body).send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.json().await.unwrap_or(Value::Null))
        }
        Err(e) => (0, json!({ "transport": e.to_string() })),
    }
}

/// Phase 1: intents for fresh files, back to back.
async fn intents(http: &reqwest::Client, base: &str, c: &Client, i: usize, n: usize) -> Times {
    let mut t = Times::default();
    let line = b"{\"type\":\"user\",\"text\":\"hello\"}\n";
    let z = zstd::encode_all(&line[..], 3).expect("zstd");
    let url = format!("{base}/api/agent-sessions/transcripts/intent");
    for k in 0..n {
        let body = intent_body(c, &format!("c{i}-f{k}.jsonl"), 0, line.len(), &z);
        let started = Instant::now();
        let (status, answer) = post(http, &url, &c.token, &body).await;
        t.intents.push(started.elapsed());
        if status != 200 {
            t.failures.push(format!("intent {status}: {answer}"));
        }
    }
    t
}

/// Phase 2: 4 MiB segments, one file, each intent → PUT → complete.
async fn segments(
    http: &reqwest::Client,
    base: &str,
    dir: &std::path::Path,
    c: &Client,
    i: usize,
    n: usize,
) -> Times {
    let mut t = Times::default();
    let mut rng = rand::rngs::StdRng::seed_from_u64(i as u64);
    let file = format!("big-{i}.jsonl");
    let mut offset = 0u64;
    for _ in 0..n {
        let mut decoded = vec![0u8; SEGMENT_DECODED];
        rng.fill_bytes(&mut decoded);
        decoded[SEGMENT_DECODED - 1] = b'\n';
        let z = zstd::encode_all(&decoded[..], 1).expect("zstd");
        let body = intent_body(c, &file, offset, decoded.len(), &z);
        let started = Instant::now();
        let (status, answer) = post(
            http,
            &format!("{base}/api/agent-sessions/transcripts/intent"),
            &c.token,
            &body,
        )
        .await;
        t.intents.push(started.elapsed());
        if status != 200 {
            t.failures.push(format!("intent {status}: {answer}"));
            return t;
        }
        let data = &answer["data"];
        let (id, url) = (
            data["uploadId"].as_str().unwrap_or_default().to_owned(),
            data["upload"]["url"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        let key = data["objectKey"].as_str().unwrap_or_default().to_owned();
        let started = Instant::now();
        let put = http
            .put(format!("{base}{url}"))
            .bearer_auth(&c.token)
            .header("content-type", "application/octet-stream")
            .body(z.clone())
            .send()
            .await;
        t.puts.push(started.elapsed());
        match put {
            Ok(r) if r.status() == 200 => {}
            Ok(r) => t.failures.push(format!("PUT {}", r.status())),
            Err(e) => t.failures.push(format!("PUT transport: {e}")),
        }
        if std::fs::read(dir.join(&key)).ok().as_deref() != Some(&z[..]) {
            t.failures.push(format!("{key}: not the bytes sent"));
        }
        let started = Instant::now();
        let (status, answer) = post(
            http,
            &format!("{base}/api/agent-sessions/transcripts/complete"),
            &c.token,
            &json!({ "uploadId": id }),
        )
        .await;
        t.completes.push(started.elapsed());
        offset += decoded.len() as u64;
        if status != 200 || answer["data"]["ackedOffset"] != json!(offset) {
            t.failures.push(format!("complete {status}: {answer}"));
            return t;
        }
    }
    t
}
