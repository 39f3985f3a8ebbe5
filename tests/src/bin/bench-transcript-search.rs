//! `bench-transcript-search`: issue 34's targets for searching the transcript archive. Prints
//! figures; exits non-zero when a target is missed. Not a test: CI never runs it.
//!
//! `--lines` (1,000,000) realistic Claude Code lines (`syncplane_tests::transcript_corpus`: long
//! tool outputs, code, logs) across `--orgs` (10) organizations, 3 compute targets each, sessions
//! of `--session-lines` lines over 90 days, uploaded through the real ingest handler (intent,
//! direct PUT, complete) in segments of at most `--segment-kib` decoded. Then:
//!
//! 1. indexing: the queue drained (`syncplane_archive::search::index::drain`), MB/s of decoded
//!    transcript; the index's size per MB of transcript; and, timed apart in the upload phase,
//!    the indexer's row preparation alone on one core (the share that is not Postgres's);
//! 2. searchable after complete: a segment with a unique token, uploaded while `syncplane
//!    serve`'s indexer runs, until the search route finds it (`--probes` times);
//! 3. the complete route's latency, timed in the upload phase (the search work it adds is one
//!    queued row: compare with `bench-transcripts-server` before and after);
//! 4. search through the route (read token, rate limit, parameters, query, JSON), `--queries`
//!    per class, each by a random org: the most frequent word, other words, code tokens, and a
//!    filtered search (one target, one week).
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-transcript-search --
//! [--lines 1000000] [--orgs 10]`

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use shared::accounts::provision::{self, NewOrg};
use shared::accounts::tokens;
use shared::archive::search::index;
use shared::ingest::{IngestState, handle};
use syncplane_tests::apigw::{reply, request};
use syncplane_tests::bench::{Row, ms, pct, print_table};
use syncplane_tests::db::TestDb;
use syncplane_tests::redaction_corpus::Rng;
use syncplane_tests::transcript_corpus::{CODE, WORDS, record};

const TARGET_P50: Duration = Duration::from_millis(15);
const TARGET_P99: Duration = Duration::from_millis(50);
const TARGET_SEARCHABLE: Duration = Duration::from_secs(2);
const TARGET_INDEX_MB_S: f64 = 20.0;
const TARGETS_PER_ORG: usize = 3;

#[derive(Parser, Debug)]
#[command(about = "Searching the transcript archive: indexing, latency, size")]
struct Args {
    #[arg(long, default_value_t = 1_000_000)]
    lines: usize,
    #[arg(long, default_value_t = 10)]
    orgs: usize,
    #[arg(long, default_value_t = 2_000)]
    session_lines: usize,
    #[arg(long, default_value_t = 4096)]
    segment_kib: usize,
    #[arg(long, default_value_t = 200)]
    queries: usize,
    #[arg(long, default_value_t = 10)]
    probes: usize,
    #[arg(long, default_value_t = 34)]
    seed: u64,
    /// Drains run at once while indexing (each takes its own segments: `SKIP LOCKED`).
    #[arg(long, default_value_t = 2)]
    drainers: usize,
}

struct Org {
    read: String,
    device: String,
    targets: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tokio::runtime::Runtime::new()
        .expect("tokio runtime")
        .block_on(bench(args))
}

async fn bench(args: Args) -> ExitCode {
    println!(
        "bench-transcript-search: {} lines, {} orgs, sessions of {} lines, segments up to {} KiB",
        args.lines, args.orgs, args.session_lines, args.segment_kib
    );
    let db = TestDb::new().await;
    let dir = syncplane_tests::transcripts::temp_dir();
    let mut state = syncplane_tests::transcripts::direct_state(&db.pool, &dir);
    state.transcripts.rate_limit_per_minute = u32::MAX;
    state.transcripts.search_rate_limit_per_minute = u32::MAX;
    let orgs = provision_orgs(&db, args.orgs).await;

    let started = Instant::now();
    let Uploaded {
        decoded,
        completes,
        prepare,
    } = upload_all(&state, &orgs, &args).await;
    println!(
        "uploaded {:.0} MB in {:.0} s",
        mb(decoded),
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let drains = (0..args.drainers.max(1))
        .map(|_| index::drain(&db.pool, &state.transcripts.store, u64::MAX));
    let drained: u64 = futures::future::join_all(drains)
        .await
        .into_iter()
        .map(|d| d.expect("drain").lines)
        .sum();
    let index_secs = started.elapsed().as_secs_f64();
    sqlx::query("ANALYZE transcript_line_groups")
        .execute(&db.pool)
        .await
        .expect("analyze");
    let index_bytes: i64 =
        sqlx::query_scalar("SELECT pg_total_relation_size('transcript_line_groups')")
            .fetch_one(&db.pool)
            .await
            .expect("size");
    let searchable = probe_searchable(&state, &orgs[0], &args).await;
    let searches = run_searches(&state, &orgs, &args).await;

    let mut rows = vec![
        Row::info("lines indexed (rows)", drained),
        Row::info("drains at once", args.drainers),
        Row::info("transcript decoded (MB)", format!("{:.0}", mb(decoded))),
        Row::target(
            "indexing (MB of transcript per second)",
            format!("{:.1}", mb(decoded) / index_secs),
            ">= 20",
            mb(decoded) / index_secs >= TARGET_INDEX_MB_S,
        ),
        Row::info(
            "rows prepared alone, one core (MB of transcript per second)",
            format!("{:.1}", mb(decoded) / prepare.as_secs_f64()),
        ),
        Row::info(
            "index size per MB of transcript (MB)",
            format!("{:.2}", mb(index_bytes as u64) / mb(decoded)),
        ),
        Row::info(
            "complete p50 / p99 (ms)",
            format!(
                "{:.1} / {:.1}",
                ms(pct(&completes, 0.5)),
                ms(pct(&completes, 0.99))
            ),
        ),
        Row::target(
            "searchable after complete, worst of probes (ms)",
            format!("{:.0}", ms(*searchable.last().unwrap_or(&Duration::MAX))),
            "<= 2000",
            searchable.last().is_some_and(|d| *d <= TARGET_SEARCHABLE),
        ),
    ];
    for (name, times) in &searches {
        let p50 = format!("{:.1}", ms(pct(times, 0.5)));
        rows.push(if name.starts_with("filtered") {
            Row::info(&format!("{name}: p50 (ms)"), p50)
        } else {
            Row::target(
                &format!("{name}: p50 (ms)"),
                p50,
                "<= 15",
                pct(times, 0.5) <= TARGET_P50,
            )
        });
        rows.push(Row::target(
            &format!("{name}: p99 (ms)"),
            format!("{:.1}", ms(pct(times, 0.99))),
            "<= 50",
            pct(times, 0.99) <= TARGET_P99,
        ));
    }
    let ok = print_table("transcript search", &rows);
    let _ = std::fs::remove_dir_all(&dir);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_000_000.0
}

async fn provision_orgs(db: &TestDb, n: usize) -> Vec<Org> {
    let mut out = Vec::new();
    for i in 0..n {
        let name = format!("org-{i}");
        let new = NewOrg {
            name: &name,
            sync_policy: Some(true),
            feature_gate: true,
            frustration_opt_in: false,
        };
        let org = provision::create_org(&db.pool, &new).await.expect("org");
        let user = provision::create_user(&db.pool, org, "dev")
            .await
            .expect("user");
        let targets: Vec<String> = (0..TARGETS_PER_ORG)
            .map(|t| format!("o{i}-laptop-{t}"))
            .collect();
        for t in &targets {
            provision::create_compute_target(&db.pool, user, t)
                .await
                .expect("target");
        }
        let device = tokens::issue_device_token(&db.pool, user, None)
            .await
            .expect("device")
            .token;
        let read = tokens::issue_read_token(&db.pool, org, None)
            .await
            .expect("read")
            .token;
        out.push(Org {
            read,
            device,
            targets,
        });
    }
    out
}

/// What [`upload_all`] sent.
struct Uploaded {
    decoded: u64,
    completes: Vec<Duration>,
    /// The indexer's row preparation (text, words, code tokens, vectors) of every file, on this
    /// thread alone: the share of indexing that is not Postgres's.
    prepare: Duration,
}

/// Every org's sessions, uploaded; the decoded bytes, each complete's latency (sorted) and the
/// time the rows' preparation took.
async fn upload_all(state: &IngestState, orgs: &[Org], args: &Args) -> Uploaded {
    let mut r = Rng(args.seed);
    let sessions = args.lines.div_ceil(args.session_lines);
    let (mut decoded, mut completes) = (0u64, Vec::new());
    let mut prepare = Duration::ZERO;
    for s in 0..sessions {
        let org = &orgs[s % orgs.len()];
        let target = &org.targets[(s / orgs.len()) % TARGETS_PER_ORG];
        let session = format!("s-{s}");
        let start = chrono::Utc::now() - chrono::Duration::days(90)
            + chrono::Duration::minutes(r.below(90 * 24 * 60) as i64);
        let n = args.session_lines.min(args.lines - s * args.session_lines);
        let mut text = String::new();
        for i in 0..n {
            let ts = (start + chrono::Duration::seconds(20 * i as i64)).to_rfc3339();
            text.push_str(&record(&mut r, &session, i, &ts).to_string());
            text.push('\n');
        }
        decoded += text.len() as u64;
        let started = Instant::now();
        std::hint::black_box(index::prepare(text.as_bytes()));
        prepare += started.elapsed();
        let file = File {
            org,
            target,
            session: &session,
        };
        completes.extend(
            file.upload(state, text.as_bytes(), args.segment_kib * 1024)
                .await,
        );
    }
    completes.sort();
    Uploaded {
        decoded,
        completes,
        prepare,
    }
}

struct File<'a> {
    org: &'a Org,
    target: &'a str,
    session: &'a str,
}

impl File<'_> {
    /// Upload `text` in segments of whole lines up to `max` bytes; each complete's latency.
    async fn upload(&self, state: &IngestState, text: &[u8], max: usize) -> Vec<Duration> {
        let mut times = Vec::new();
        let mut offset = 0;
        while offset < text.len() {
            let mut end = (offset + max).min(text.len());
            if end < text.len() {
                end = offset
                    + text[offset..end]
                        .iter()
                        .rposition(|b| *b == b'\n')
                        .expect("a line fits")
                    + 1;
            }
            times.push(self.segment(state, offset, &text[offset..end]).await);
            offset = end;
        }
        times
    }

    async fn segment(&self, state: &IngestState, offset: usize, seg: &[u8]) -> Duration {
        let z = zstd::encode_all(seg, 3).expect("zstd");
        let intent = json!({"computeTargetId": self.target, "sessionId": self.session,
            "fileId": format!("{}.jsonl", self.session), "generation": 1, "offset": offset,
            "sourceBytes": seg.len(), "decodedBytes": seg.len(), "compressedBytes": z.len(),
            "sha256": hex::encode(Sha256::digest(&z))});
        let r = self
            .send(
                state,
                "POST",
                "/api/agent-sessions/transcripts/intent",
                &intent.to_string().into_bytes(),
            )
            .await;
        let id = r["data"]["uploadId"]
            .as_str()
            .expect("an upload id")
            .to_owned();
        self.send(
            state,
            "PUT",
            &format!("/api/agent-sessions/transcripts/uploads/{id}"),
            &z,
        )
        .await;
        let body = json!({"uploadId": id}).to_string().into_bytes();
        let started = Instant::now();
        self.send(
            state,
            "POST",
            "/api/agent-sessions/transcripts/complete",
            &body,
        )
        .await;
        started.elapsed()
    }

    async fn send(&self, state: &IngestState, method: &str, path: &str, body: &[u8]) -> Value {
        let auth = format!("Bearer {}", self.org.device);
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
}

/// Time from each probe's complete until the route finds its unique token, with `syncplane
/// serve`'s indexer running (sorted).
async fn probe_searchable(state: &IngestState, org: &Org, args: &Args) -> Vec<Duration> {
    let indexer =
        syncplane_cli::serve::spawn_indexer(state.pool.clone(), state.transcripts.store.clone());
    let mut times = Vec::new();
    for p in 0..args.probes {
        let token = format!("probe_token_{p}_{}", args.seed);
        let line = json!({"type": "user", "message": {"role": "user", "content": format!("look for {token}")}});
        let session = format!("probe-{p}");
        let file = File {
            org,
            target: &org.targets[0],
            session: &session,
        };
        file.upload(state, format!("{line}\n").as_bytes(), 1 << 20)
            .await;
        let completed = Instant::now();
        while search(state, &org.read, &[("q", &token)]).await.0 == 0 {
            if completed.elapsed() > Duration::from_secs(10) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        times.push(completed.elapsed());
    }
    indexer.abort();
    times.sort();
    times
}

/// One search through the route: its hit count and latency.
async fn search(state: &IngestState, token: &str, query: &[(&str, &str)]) -> (usize, Duration) {
    let qs: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(query)
        .finish();
    let path = format!("/api/agent-sessions/transcripts/search?{qs}");
    let auth = format!("Bearer {token}");
    let started = Instant::now();
    let r = reply(
        handle(
            state,
            request("GET", &path, &[("authorization", auth.as_str())], None),
        )
        .await,
    );
    let took = started.elapsed();
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    (r.body["data"]["hits"].as_array().map_or(0, Vec::len), took)
}

/// Makes one query's parameters.
type MakeQuery<'a> = dyn Fn(&mut Rng) -> Vec<(String, String)> + 'a;

/// Each class of query, `--queries` times by random orgs: name and sorted latencies.
async fn run_searches(
    state: &IngestState,
    orgs: &[Org],
    args: &Args,
) -> Vec<(String, Vec<Duration>)> {
    let mut r = Rng(args.seed ^ 0x5eed);
    let week_from = (chrono::Utc::now() - chrono::Duration::days(30)).to_rfc3339();
    let week_to = (chrono::Utc::now() - chrono::Duration::days(23)).to_rfc3339();
    let classes: Vec<(&str, Box<MakeQuery<'_>>)> = vec![
        (
            "most frequent word",
            Box::new(|_| vec![("q".into(), WORDS[0].into())]),
        ),
        (
            "words",
            Box::new(|r| {
                vec![(
                    "q".into(),
                    format!("{} {}", WORDS[r.below(WORDS.len())], WORDS[r.below(40)]),
                )]
            }),
        ),
        (
            "code tokens",
            Box::new(|r| vec![("q".into(), CODE[r.below(CODE.len())].into())]),
        ),
        (
            "filtered (one target, one week)",
            Box::new(|r| {
                vec![
                    ("q".into(), WORDS[r.below(WORDS.len())].into()),
                    ("computeTargetId".into(), String::new()),
                    ("since".into(), week_from.clone()),
                    ("until".into(), week_to.clone()),
                ]
            }),
        ),
    ];
    let mut out = Vec::new();
    for (name, make) in &classes {
        let mut times = Vec::new();
        let mut slowest: Option<(Duration, String)> = None;
        for _ in 0..args.queries {
            let org = &orgs[r.below(orgs.len())];
            let mut q = make(&mut r);
            for (k, v) in &mut q {
                if k == "computeTargetId" {
                    *v = org.targets[r.below(TARGETS_PER_ORG)].clone();
                }
            }
            let pairs: Vec<(&str, &str)> =
                q.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let took = search(state, &org.read, &pairs).await.1;
            if slowest.as_ref().is_none_or(|(t, _)| took > *t) {
                slowest = Some((took, format!("{pairs:?}")));
            }
            times.push(took);
        }
        if let Some((t, q)) = slowest {
            println!("{name}: slowest {:.1} ms: {q}", ms(t));
        }
        times.sort();
        out.push(((*name).to_owned(), times));
    }
    out
}
