//! `bench-ingest-load`: ingest under concurrency (issue 12 §6; contract
//! `agent-session-sync-v2`). Prints figures; exits non-zero when a hard condition fails. Not a
//! test: CI never runs it.
//!
//! ONE local HTTP server on loopback serves the real ingest handler (`shared::ingest::handle`,
//! each request converted to the API Gateway v2 event the function receives, and back), with one
//! pool of `--pool` connections. Eight clients, each its own compute target (two targets per
//! user, four users in one org), post gzip batches of 200 sessions back to back for `--secs`
//! seconds. Each batch mixes new sessions with updates of sessions the client sent before (a
//! new data revision: the session grew, so its earlier events come again unchanged with up to
//! 20 more, as a client's append-only event log does; `--rewrite-share` of the updates, 0.1 by
//! default, rewrite every event's values instead, the update path), carries a few sessions as two
//! chunks, and every tenth batch is the previous one again (the retry after a lost ack). The two
//! clients of a user send the same session ids (identity is target + session id, so they must
//! stay apart), and some events carry the retired `summary`/`data` text of a stale client.
//!
//! Hard conditions: no answer but 200 and the designed 409/429 (and no transport error), no
//! deadlock in the bench database (`pg_stat_database.deadlocks` before and after; the server log
//! is searched too), and every session a 200 acknowledged stored once under its own target.
//! Targets: p99 <= 250 ms as the client sees it, for the batches the server accepts; the server
//! works on `--max-in-flight` batches at once (`INGEST_MAX_IN_FLIGHT`) and answers the rest
//! `429 server_busy` after a short wait (`ingest::admission`), so the share refused and the p99
//! of every answer are printed beside it; `--max-in-flight 0` removes the limit. Throughput
//! printed.
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-ingest-load -- [--secs 60]
//! [--clients 8] [--pool 10] [--rate-limit 1000000]`

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use flate2::Compression;
use flate2::write::GzEncoder;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use shared::accounts::provision::{self, NewOrg};
use shared::accounts::tokens;
use shared::ingest::{IngestState, MAX_WIRE_BYTES, handle};
use syncplane_tests::bench::{ConnectionSampler, PgLog, Row, ms, pct, print_table};
use syncplane_tests::db::TestDb;

const SESSIONS_PER_BATCH: usize = 200;
/// Of each batch, sessions sent before, now at a new data revision.
const UPDATES_PER_BATCH: usize = 80;
/// Of each batch, sessions sent as two chunks (both in the batch, in index order).
const CHUNKED_PER_BATCH: usize = 4;
/// Every this many batches, the previous body is sent again.
const REPLAY_EVERY: u64 = 10;
const TARGET_P99: Duration = Duration::from_millis(250);

#[derive(Parser, Debug)]
#[command(about = "Ingest under concurrency: clients posting 200-session batches to one server")]
struct Args {
    /// How long the clients post.
    #[arg(long, default_value_t = 60)]
    secs: u64,
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// The server's Postgres pool (one process serving every client).
    #[arg(long, default_value_t = 10)]
    pool: u32,
    /// `INGEST_RATE_LIMIT_PER_MINUTE` of the server (per compute target); 120 is the default of a
    /// deployment, which these clients exceed (429 with Retry-After, which they honour).
    #[arg(long, default_value_t = 1_000_000)]
    rate_limit: u32,
    /// The server's `INGEST_MAX_IN_FLIGHT` (0: no limit); its default, one per CPU.
    #[arg(long, default_value_t = shared::config::default_ingest_max_in_flight())]
    max_in_flight: u32,
    /// Batches each client builds before the window (a client that runs out builds more in the
    /// window, competing with the server for the CPU).
    #[arg(long, default_value_t = 200)]
    prebuilt: usize,
    /// Of updated sessions, the share whose new revision rewrites every event's values (a client
    /// that re-derived its metrics); the others grew, resending their events unchanged.
    #[arg(long, default_value_t = 0.1)]
    rewrite_share: f64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tokio::runtime::Runtime::new()
        .expect("tokio runtime")
        .block_on(bench(args))
}

async fn bench(args: Args) -> ExitCode {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "optimised"
    };
    println!(
        "bench-ingest-load ({profile} build): {} clients x {SESSIONS_PER_BATCH}-session batches for {} s; server pool {}, rate limit {}/min per target, max in flight {}, rewrite share {}",
        args.clients, args.secs, args.pool, args.rate_limit, args.max_in_flight, args.rewrite_share
    );
    let db = TestDb::new().await;
    let clients = provision_clients(&db, args.clients).await;
    let pool = shared::db::connect(&db.url(), args.pool)
        .await
        .expect("server pool");
    let server = Server::start(IngestState {
        pool,
        rate_limit_per_minute: args.rate_limit,
        admission: if args.max_in_flight == 0 {
            shared::ingest::Admission::unlimited()
        } else {
            shared::ingest::Admission::limited(args.max_in_flight)
        },
        transcripts: syncplane_tests::transcripts::temp_state(),
    })
    .await;
    let sample = Generator::new(clients[0].target.clone(), 0, 0, args.rewrite_share).next_body();
    println!(
        "batch: {} bytes decoded, {} bytes gzip (wire cap {MAX_WIRE_BYTES})",
        sample.decoded,
        sample.gzip.len()
    );

    // Batches are built before the window, so the clients' JSON and gzip work does not compete
    // with the server for the CPU; a client that runs out builds more as it goes.
    let t = Instant::now();
    // One thread per client: building is CPU work the window must not pay for.
    let clients: Vec<Client> = std::thread::scope(|scope| {
        let handles: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                let (prebuilt, share) = (args.prebuilt, args.rewrite_share);
                scope.spawn(move || {
                    let mut generator = Generator::new(c.target.clone(), c.pair, i as u64, share);
                    c.ready = (0..prebuilt).map(|_| generator.next_body()).collect();
                    c.generator = Some(generator);
                    c
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("batch builder"))
            .collect()
    });
    println!(
        "{} batches per client built in {:.1} s",
        args.prebuilt,
        t.elapsed().as_secs_f64()
    );

    let deadlocks_before = syncplane_tests::bench::deadlocks(&db.name)
        .await
        .expect("pg_stat_database");
    let log = PgLog::mark();
    let sampler = ConnectionSampler::start(&db.name, Duration::from_millis(50))
        .await
        .expect("connection sampler");
    let started = Instant::now();
    let until = started + Duration::from_secs(args.secs);
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|c| tokio::spawn(run_client(c, server.url.clone(), until)))
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.expect("client task"));
    }
    let wall = started.elapsed();
    let connections = sampler.stop().await;
    let deadlocks_after = syncplane_tests::bench::deadlocks(&db.name)
        .await
        .expect("pg_stat_database");
    let logged = log
        .as_ref()
        .and_then(|l| l.lines_since("deadlock detected", &db.name));
    let seen = Seen {
        wall,
        deadlocks: deadlocks_after - deadlocks_before,
        logged,
        stored: stored_sessions(&db).await,
        handler_times: server.handler_times(),
        max_connections: connections.max,
    };
    report(&args, &results, &seen)
}

// ---------------------------------------------------------------------------------------------
// The server: the ingest handler behind axum, as API Gateway would hand it requests.

struct Server {
    url: String,
    handler_times: Arc<Mutex<Vec<Duration>>>,
}

impl Server {
    async fn start(state: IngestState) -> Self {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("bind a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let handler_times = Arc::new(Mutex::new(Vec::new()));
        let (state, times) = (Arc::new(state), handler_times.clone());
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let (state, times) = (state.clone(), times.clone());
            async move { serve_one(&state, &times, req).await }
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { url, handler_times }
    }

    fn handler_times(&self) -> Vec<Duration> {
        let mut t = self.handler_times.lock().expect("times").clone();
        t.sort();
        t
    }
}

/// API Gateway's payload limit: the handler's own wire cap applies below it.
const GATEWAY_MAX_BODY: usize = 10 * 1024 * 1024;

async fn serve_one(
    state: &IngestState,
    times: &Mutex<Vec<Duration>>,
    req: axum::extract::Request,
) -> axum::response::Response {
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, GATEWAY_MAX_BODY).await else {
        return status_only(http::StatusCode::PAYLOAD_TOO_LARGE);
    };
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let event =
        syncplane_tests::apigw::request(parts.method.as_str(), &path, &headers, Some(&bytes));
    let t = Instant::now();
    let resp = handle(state, event).await;
    times.lock().expect("times").push(t.elapsed());
    let (parts, body) = resp.into_parts();
    let bytes = match body {
        lambda_http::Body::Text(s) => s.into_bytes(),
        lambda_http::Body::Binary(b) => b,
        _ => Vec::new(),
    };
    axum::response::Response::from_parts(parts, axum::body::Body::from(bytes))
}

fn status_only(status: http::StatusCode) -> axum::response::Response {
    let mut r = axum::response::Response::new(axum::body::Body::empty());
    *r.status_mut() = status;
    r
}

// ---------------------------------------------------------------------------------------------
// Clients.

struct Client {
    target: String,
    token: String,
    /// The user's index: both clients of a user send the same session ids.
    pair: usize,
    ready: std::collections::VecDeque<Body>,
    generator: Option<Generator>,
}

/// One org with sync on; a user (and device token) per two clients; a target per client.
async fn provision_clients(db: &TestDb, n: usize) -> Vec<Client> {
    let org = provision::create_org(
        &db.pool,
        &NewOrg {
            name: "load",
            sync_policy: Some(true),
            feature_gate: true,
            frustration_opt_in: true,
        },
    )
    .await
    .expect("org");
    let mut clients = Vec::with_capacity(n);
    for pair in 0..n.div_ceil(2) {
        let user = provision::create_user(&db.pool, org, &format!("user-{pair}"))
            .await
            .expect("user");
        let token = tokens::issue_device_token(&db.pool, user, None)
            .await
            .expect("token")
            .token;
        for i in (2 * pair)..(2 * pair + 2).min(n) {
            let target = format!("load-target-{i}");
            provision::create_compute_target(&db.pool, user, &target)
                .await
                .expect("target");
            clients.push(Client {
                target,
                token: token.clone(),
                pair,
                ready: Default::default(),
                generator: None,
            });
        }
    }
    clients
}

/// What one client saw.
#[derive(Default)]
struct ClientResult {
    target: String,
    latencies: Vec<Duration>,
    /// Latencies of the 200 answers alone.
    accepted: Vec<Duration>,
    by_status: BTreeMap<u16, u64>,
    transport_errors: u64,
    /// First few unexpected answers, for the report.
    unexpected: Vec<String>,
    /// Session ids of every batch answered 200.
    acknowledged: HashSet<String>,
    sessions_ok: u64,
    events_ok: u64,
    generate: Duration,
}

async fn run_client(mut client: Client, url: String, until: Instant) -> ClientResult {
    let http = reqwest::Client::builder()
        .no_gzip()
        .build()
        .expect("HTTP client");
    let endpoint = format!("{url}{}", shared::ingest::handler::SYNC_PATH);
    let mut generator = client
        .generator
        .take()
        .unwrap_or_else(|| Generator::new(client.target.clone(), client.pair, 0, 0.1));
    let mut result = ClientResult {
        target: client.target.clone(),
        ..ClientResult::default()
    };
    let auth = format!("Bearer {}", client.token);
    let mut previous: Option<Arc<Body>> = None;
    let mut n = 0u64;
    while Instant::now() < until {
        n += 1;
        let body = match previous.clone() {
            Some(p) if n.is_multiple_of(REPLAY_EVERY) => p,
            _ => match client.ready.pop_front() {
                Some(body) => Arc::new(body),
                None => {
                    let t = Instant::now();
                    let body = tokio::task::block_in_place(|| generator.next_body());
                    result.generate += t.elapsed();
                    Arc::new(body)
                }
            },
        };
        let t = Instant::now();
        let sent = http
            .post(&endpoint)
            .header("authorization", &auth)
            .header("content-type", "application/octet-stream")
            .header("content-encoding", "gzip")
            .body(body.gzip.clone())
            .send()
            .await;
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                result.transport_errors += 1;
                note(&mut result.unexpected, format!("transport: {e}"));
                continue;
            }
        };
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        let text = resp.text().await.unwrap_or_default();
        result.latencies.push(t.elapsed());
        *result.by_status.entry(status).or_default() += 1;
        match status {
            200 => {
                result.accepted.push(t.elapsed());
                result.sessions_ok += body.session_ids.len() as u64;
                result.events_ok += body.events;
                result.acknowledged.extend(body.session_ids.iter().cloned());
            }
            429 => {
                let wait = Duration::from_secs(retry_after.unwrap_or(1).max(1));
                tokio::time::sleep(wait.min(until.saturating_duration_since(Instant::now()))).await;
            }
            409 => {}
            _ => note(&mut result.unexpected, format!("{status}: {text}")),
        }
        previous = Some(body);
    }
    result
}

fn note(notes: &mut Vec<String>, line: String) {
    if notes.len() < 5 {
        notes.push(line);
    }
}

// ---------------------------------------------------------------------------------------------
// Batches.

struct Body {
    gzip: Vec<u8>,
    decoded: usize,
    /// Distinct session ids in the batch.
    session_ids: Vec<String>,
    events: u64,
}

/// One client's sessions: ids shared with the other client of its user, revisions of its own.
struct Generator {
    target: String,
    pair: usize,
    /// Of updated sessions, the share whose events' values are rewritten.
    rewrite_share: f64,
    rng: StdRng,
    /// Sessions sent so far.
    known: Vec<Known>,
    next_new: u64,
    batch: u64,
}

/// A session sent before: what its next revision builds on.
#[derive(Clone, Copy)]
struct Known {
    number: u64,
    revision: u32,
    /// Events of the last revision sent.
    events: usize,
    /// Bumped when a revision rewrites its events' values.
    variant: u64,
}

/// Most events a session grows by per revision, and most it grows to.
const GROWTH: usize = 20;
const MAX_SESSION_EVENTS: usize = 400;

const TOOLS: [&str; 6] = ["bash", "edit", "read", "grep", "write", "web_fetch"];
const KINDS: [&str; 4] = [
    "user_message",
    "assistant_message",
    "tool_call",
    "tool_result",
];
const AGENTS: [&str; 3] = ["claude-code", "codex", "cursor"];

impl Generator {
    fn new(target: String, pair: usize, seed: u64, rewrite_share: f64) -> Self {
        Self {
            target,
            pair,
            rewrite_share,
            rng: StdRng::seed_from_u64(seed),
            known: Vec::new(),
            next_new: 0,
            batch: 0,
        }
    }

    fn next_body(&mut self) -> Body {
        self.batch += 1;
        let updates = UPDATES_PER_BATCH.min(self.known.len());
        let mut picked: Vec<usize> = (0..self.known.len()).collect();
        picked.shuffle_partial(&mut self.rng, updates);
        let mut chosen: Vec<Known> = Vec::with_capacity(SESSIONS_PER_BATCH);
        for &i in &picked[..updates] {
            let grow = self.rng.random_range(0..=GROWTH);
            let rewrite = self.rng.random_bool(self.rewrite_share);
            let k = &mut self.known[i];
            k.revision += 1;
            k.events = (k.events + grow).min(MAX_SESSION_EVENTS);
            if rewrite {
                k.variant += 1;
            }
            chosen.push(*k);
        }
        while chosen.len() < SESSIONS_PER_BATCH - CHUNKED_PER_BATCH {
            let k = Known {
                number: self.next_new,
                revision: 1,
                events: self.event_count(),
                variant: 0,
            };
            self.known.push(k);
            chosen.push(k);
            self.next_new += 1;
        }
        let mut sessions = Vec::with_capacity(SESSIONS_PER_BATCH);
        let mut events = 0u64;
        let mut ids = Vec::with_capacity(chosen.len());
        for (i, k) in chosen.iter().enumerate() {
            let id = format!("pair{}-session-{:06}", self.pair, k.number);
            let n_events = k.events;
            let stale = self.rng.random_bool(0.1);
            // The last few sessions go as two chunks, both in this batch.
            if i >= chosen.len() - CHUNKED_PER_BATCH {
                let half = n_events / 2;
                sessions.push(self.session(&id, k, 0..half, Some((0, 2)), stale));
                sessions.push(self.session(&id, k, half..n_events, Some((1, 2)), stale));
            } else {
                sessions.push(self.session(&id, k, 0..n_events, None, stale));
            }
            events += n_events as u64;
            ids.push(id);
        }
        let envelope = json!({
            "schemaVersion": 2, "batchId": format!("{}-{}", self.target, self.batch),
            "mode": if self.batch < 5 { "backfill" } else { "incremental" },
            "computeTargetId": self.target, "encoding": "gzip",
            "sessionCount": sessions.len(), "sessions": sessions,
        });
        let decoded = serde_json::to_vec(&envelope).expect("JSON");
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&decoded).expect("gzip");
        let gzip = gz.finish().expect("gzip");
        // A real client splits a batch over the wire cap; these are sized to stay under it.
        assert!(
            gzip.len() <= MAX_WIRE_BYTES,
            "a bench batch ({} bytes gzip) is over the wire cap",
            gzip.len()
        );
        Body {
            decoded: decoded.len(),
            gzip,
            session_ids: ids,
            events,
        }
    }

    /// Most sessions are short, a few are long (a skewed distribution, mean about 35).
    fn event_count(&mut self) -> usize {
        match self.rng.random_range(0..100) {
            0..50 => self.rng.random_range(0..15),
            50..85 => self.rng.random_range(15..60),
            85..97 => self.rng.random_range(60..150),
            _ => self.rng.random_range(150..250),
        }
    }

    fn session(
        &mut self,
        id: &str,
        k: &Known,
        seqs: std::ops::Range<usize>,
        chunk: Option<(u32, u32)>,
        stale: bool,
    ) -> Value {
        // Later batches carry later update times, so an update is never a regression.
        let updated = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH
            + chrono::Duration::seconds(1_795_000_000 + self.batch as i64);
        // An event's values follow from (session, seq, variant): a revision that only grew
        // sends its earlier events unchanged, as a real client does.
        let events: Vec<Value> = seqs
            .map(|seq| {
                let kind = KINDS[seq % KINDS.len()];
                let mut h = Mix(k.number ^ ((self.pair as u64) << 48) ^ (k.variant << 32) ^ seq as u64);
                let mut e = json!({
                    "seq": seq, "ts": format!("2026-11-30T10:{:02}:{:02}Z", (seq / 60) % 60, seq % 60),
                    "kind": kind, "durationMs": 5 + h.next() % 20_000,
                    "inputTokens": h.next() % 4000, "outputTokens": h.next() % 1500,
                    "isError": h.next() % 100 < 3,
                });
                if kind.starts_with("tool") {
                    e["toolName"] = json!(TOOLS[(h.next() % TOOLS.len() as u64) as usize]);
                }
                if stale {
                    e["summary"] = json!("retired per-turn text a stale client still sends");
                    e["data"] = json!({"args": ["--all"], "exit": 0});
                }
                e
            })
            .collect();
        let mut s = json!({
            "sessionId": id,
            "updatedAt": updated.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "dataRevision": format!("rev-{}", k.revision),
            "agent": AGENTS.choose(&mut self.rng),
            "model": "opus-4", "title": format!("Fix the flaky test in {id}"), "status": "completed",
            "startedAt": "2026-11-30T10:00:00Z", "endedAt": "2026-11-30T10:45:00Z",
            "repository": {"remoteUrl": "git@github.com:acme/app.git", "branch": "main",
                           "commitSha": format!("{:040x}", self.rng.random::<u64>())},
            "usage": {"inputTokens": self.rng.random_range(0..2_000_000), "outputTokens": self.rng.random_range(0..200_000),
                      "cacheReadTokens": 1000, "cacheWriteTokens": 200, "costUsd": 1.25},
            "events": events,
            "tokenEvents": [{"ts": "2026-11-30T10:05:00Z", "inputTokens": 10, "outputTokens": 5}],
            "artifactRefs": [{"kind": "pr", "ref": format!("acme/app#{}", k.revision)}],
            "frustration": {"score": 0.2, "signals": ["retry"]},
        });
        if let Some((index, total)) = chunk {
            s["chunk"] = json!({"index": index, "total": total});
        }
        if stale {
            s["tokenSeries"] = json!([[1, 2], [3, 4]]);
        }
        s
    }
}

/// splitmix64: a cheap deterministic stream of values from one seed.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Pick `k` random elements into the front of the slice (a partial Fisher-Yates shuffle).
trait ShufflePartial {
    fn shuffle_partial(&mut self, rng: &mut StdRng, k: usize);
}

impl ShufflePartial for Vec<usize> {
    fn shuffle_partial(&mut self, rng: &mut StdRng, k: usize) {
        for i in 0..k.min(self.len()) {
            let j = rng.random_range(i..self.len());
            self.swap(i, j);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checks and figures.

/// Session ids stored per compute target.
async fn stored_sessions(db: &TestDb) -> BTreeMap<String, HashSet<String>> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT compute_target_id, session_id FROM agent_sessions")
            .fetch_all(&db.pool)
            .await
            .expect("agent_sessions");
    let mut out: BTreeMap<String, HashSet<String>> = BTreeMap::new();
    for (target, id) in rows {
        out.entry(target).or_default().insert(id);
    }
    out
}

/// What the server side saw during the window.
struct Seen {
    wall: Duration,
    /// Deadlocks counted for the bench database during the window.
    deadlocks: i64,
    /// The server log's "deadlock detected" lines naming the bench database (None: unreadable).
    logged: Option<Vec<String>>,
    stored: BTreeMap<String, HashSet<String>>,
    handler_times: Vec<Duration>,
    max_connections: u64,
}

fn report(args: &Args, results: &[ClientResult], seen: &Seen) -> ExitCode {
    let Seen {
        wall,
        deadlocks,
        logged,
        stored,
        handler_times,
        max_connections,
    } = seen;
    let (wall, deadlocks) = (*wall, *deadlocks);
    let mut latencies: Vec<Duration> = results
        .iter()
        .flat_map(|r| r.latencies.iter().copied())
        .collect();
    latencies.sort();
    let mut accepted: Vec<Duration> = results
        .iter()
        .flat_map(|r| r.accepted.iter().copied())
        .collect();
    accepted.sort();
    let mut by_status: BTreeMap<u16, u64> = BTreeMap::new();
    for r in results {
        for (s, n) in &r.by_status {
            *by_status.entry(*s).or_default() += n;
        }
    }
    let count = |s: u16| by_status.get(&s).copied().unwrap_or(0);
    let unexpected: u64 = by_status
        .iter()
        .filter(|(s, _)| ![200, 409, 429].contains(*s))
        .map(|(_, n)| n)
        .sum::<u64>()
        + results.iter().map(|r| r.transport_errors).sum::<u64>();
    let sessions: u64 = results.iter().map(|r| r.sessions_ok).sum();
    let events: u64 = results.iter().map(|r| r.events_ok).sum();
    let secs = wall.as_secs_f64();
    let missing: usize = results
        .iter()
        .map(|r| {
            let have = stored.get(&r.target);
            r.acknowledged
                .iter()
                .filter(|id| !have.is_some_and(|h| h.contains(*id)))
                .count()
        })
        .sum();
    let stored_total: usize = stored.values().map(HashSet::len).sum();
    let acknowledged_total: usize = results.iter().map(|r| r.acknowledged.len()).sum();
    let generate: Duration = results.iter().map(|r| r.generate).sum();
    for r in results {
        for u in &r.unexpected {
            println!("{}: {u}", r.target);
        }
    }
    let logged_value = match logged {
        Some(lines) => lines.len().to_string(),
        None => format!("unreadable ({})", PgLog::DIR),
    };
    let rows = vec![
        Row::info("clients (distinct compute targets)", args.clients),
        Row::info("window", format!("{secs:.1} s")),
        Row::info("requests", latencies.len()),
        Row::info(
            "answers 200 / 409 / 429",
            format!("{} / {} / {}", count(200), count(409), count(429)),
        ),
        Row::check(
            "other answers and transport errors",
            unexpected,
            "0",
            unexpected == 0,
        ),
        Row::check(
            "deadlocks in the bench database (pg_stat_database)",
            deadlocks,
            "0",
            deadlocks == 0,
        ),
        Row::check(
            "'deadlock detected' lines for it in the server log",
            logged_value,
            "0",
            logged.as_ref().is_none_or(|l| l.is_empty()),
        ),
        Row::target(
            "latency p99 of accepted batches (client: send to 200)",
            format!("{:.1} ms", ms(pct(&accepted, 0.99))),
            &format!("<= {} ms", TARGET_P99.as_millis()),
            !accepted.is_empty() && pct(&accepted, 0.99) <= TARGET_P99,
        ),
        Row::info(
            "latency p99 of every answer, 429s included",
            format!("{:.1} ms", ms(pct(&latencies, 0.99))),
        ),
        Row::info(
            "batches refused 429 (resent after Retry-After)",
            format!(
                "{:.1}%",
                100.0 * count(429) as f64 / latencies.len().max(1) as f64
            ),
        ),
        Row::info(
            "latency p50 / p90 / max (client)",
            format!(
                "{:.1} / {:.1} / {:.1} ms",
                ms(pct(&latencies, 0.5)),
                ms(pct(&latencies, 0.9)),
                ms(pct(&latencies, 1.0))
            ),
        ),
        Row::info(
            "handler time p50 / p99 (server)",
            format!(
                "{:.1} / {:.1} ms",
                ms(pct(handler_times, 0.5)),
                ms(pct(handler_times, 0.99))
            ),
        ),
        Row::info(
            "throughput (answered 200)",
            format!(
                "{:.1} batches/s, {:.0} sessions/s, {:.0} events/s",
                count(200) as f64 / secs,
                sessions as f64 / secs,
                events as f64 / secs
            ),
        ),
        Row::info(
            "time building batches in the window (all clients)",
            format!("{:.1} s", generate.as_secs_f64()),
        ),
        Row::check(
            "acknowledged sessions missing from their target",
            missing,
            "0",
            missing == 0,
        ),
        Row::check(
            "sessions stored / distinct acknowledged",
            format!("{stored_total} / {acknowledged_total}"),
            "equal",
            stored_total == acknowledged_total,
        ),
        Row::info("Postgres connections, most seen", max_connections),
    ];
    if print_table("ingest under concurrency", &rows) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
