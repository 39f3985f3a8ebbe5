//! `bench-sync-load`: sync under concurrency (issue 12 §6; spec "Serialization and locks",
//! docs/deploy.md "The connection budget"). Prints figures; exits non-zero when a hard condition
//! fails. Not a test: CI never runs it.
//!
//! Worker PROCESSES (this binary again, in `worker` mode) drain `sync.repo` jobs from a queue of
//! their own on the SQS emulator, against the fake GitHub (hosted by this process) and a
//! database of their own. Each worker is the worker function's code path: configuration from the
//! environment, `Tenants::from_config` with the function's pool size, the SQS jobs adapter,
//! `Worker::handle` on batches of up to 10 received messages, then what the Lambda event source
//! mapping does: delete every message the batch response does not name.
//!
//! Jobs come in blocks of a few repositories, each repository several times, so copies of one
//! repository's job reach several workers at once. Hard conditions:
//! - no repository synced twice at once: Postgres itself records every advisory lock taken and
//!   released in the bench database (the bench puts logging wrappers of `pg_try_advisory_lock`
//!   and `pg_advisory_unlock` first on the database's `search_path`; the engine's SQL is
//!   unchanged). Every `sync_runs` row of a repository must start inside an interval in which
//!   that repository's lock was held, and no two rows inside the same interval; the lock
//!   intervals of one key never overlap; no row is left `running`. (The rows themselves may
//!   overlap by a few milliseconds: a run records its end after its last pass released the
//!   lock, and a waiting request may take the lock meanwhile; that overlap is printed.)
//! - every job acknowledged (deleted) or dead-lettered: the queue is empty at the end and
//!   distinct messages deleted + dead-lettered = sent (SQS delivers at least once: a message
//!   whose batch outlives its visibility timeout is received, run and deleted twice);
//! - Postgres connections of the database, sampled every 50 ms, never above the template's
//!   budget formula (`WorkerReservedConcurrency` = budget / pool size, so the budget of N
//!   workers is N x `shared::db::DEFAULT_POOL_SIZE`).
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-sync-load -- [--jobs 1000]
//! [--repos 250] [--workers 4] [--latency-ms 5]`

use std::io::{BufRead, Read};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::QueueAttributeName;
use chrono::{DateTime, Utc};
use clap::Parser;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use shared::config::TenantId;
use shared::jobs::{Job, RepoRef};
use shared::sync::runs::Trigger;
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use shared::worker::Worker;
use syncplane_tests::bench::{ConnectionSampler, Row, print_table};
use syncplane_tests::db::TestDb;
use syncplane_tests::fake_github::FakeGithub;
use syncplane_tests::sqs::Queue;

/// Above any one batch's run time here; a job refused as busy comes back after it.
const VISIBILITY_SECS: u32 = 15;
/// As the template's queue (`maxReceiveCount`).
const MAX_RECEIVE: u32 = 5;
/// Repositories per block of jobs: each block holds every copy of its repositories, shuffled.
const BLOCK_REPOS: usize = 5;
const SAMPLE_EVERY: Duration = Duration::from_millis(50);
const DRAIN_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Parser, Debug)]
#[command(about = "Sync under concurrency: worker processes draining sync.repo jobs from SQS")]
struct Args {
    /// `worker` (internal): run as one worker process, configured from the environment.
    mode: Option<String>,
    #[arg(long, default_value_t = 1000)]
    jobs: usize,
    #[arg(long, default_value_t = 250)]
    repos: usize,
    #[arg(long, default_value_t = 4)]
    workers: u32,
    /// Latency of every fake GitHub request.
    #[arg(long, default_value_t = 5)]
    latency_ms: u64,
}

/// What one worker process did, printed as JSON on its stdout when it exits.
#[derive(Debug, Default, Serialize, Deserialize)]
struct WorkerReport {
    batches: u64,
    received: u64,
    deleted: Vec<String>,
    left: u64,
    delete_errors: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    match args.mode.as_deref() {
        Some("worker") => runtime.block_on(worker()),
        None => runtime.block_on(bench(args)),
        Some(other) => {
            eprintln!("unknown mode '{other}' (the only mode is 'worker')");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Worker mode: the worker function's code path, fed by an event source mapping of our own.

async fn worker() -> ExitCode {
    shared::telemetry::init(false);
    let config = match shared::config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("worker: {e}");
            return ExitCode::FAILURE;
        }
    };
    shared::metrics::install(&config);
    let tenants = match Tenants::from_config(
        &config,
        shared::db::DEFAULT_POOL_SIZE,
        RunOptions::default(),
    ) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            eprintln!("worker: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runner = shared::worker::runner();
    let jobs = shared::app::jobs_adapter(&config, tenants.clone(), Some(&runner))
        .await
        .expect("jobs adapter");
    let worker = Worker::new(tenants, jobs);
    let queue_url = std::env::var("SQS_QUEUE_URL").unwrap_or_default();
    let queue = Queue::open(&queue_url);

    // The parent closes our stdin when the queue is empty: finish the batch in hand, then exit.
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        flag.store(true, Ordering::Relaxed);
    });

    let mut report = WorkerReport::default();
    while !stop.load(Ordering::Relaxed) {
        let event = queue.receive_event(1).await;
        if event.records.is_empty() {
            continue;
        }
        let response = worker.handle(event.clone()).await;
        let settled = queue.settle_counting(&event, &response).await;
        report.batches += 1;
        report.received += event.records.len() as u64;
        report.deleted.extend(settled.deleted);
        report.left += settled.left;
        report.delete_errors += settled.delete_errors;
    }
    println!(
        "{}",
        serde_json::to_string(&report).expect("a report serializes")
    );
    ExitCode::SUCCESS
}

// ---------------------------------------------------------------------------------------------
// Bench mode.

async fn bench(args: Args) -> ExitCode {
    println!(
        "bench-sync-load: {} sync.repo jobs over {} repositories, {} worker processes, {} ms per GitHub request",
        args.jobs, args.repos, args.workers, args.latency_ms
    );
    let db = TestDb::new().await;
    let gh = FakeGithub::start().await;
    let installation = gh.add_installation("bench");
    gh.set_rate_limit(1_000_000, 1_000_000, Duration::from_secs(3600));
    let names = add_repositories(&gh, installation, args.repos);
    gh.set_latency(Duration::from_millis(args.latency_ms));

    let (queue, dlq) =
        Queue::named_with_dlq("syncplane-bench-load", VISIBILITY_SECS, MAX_RECEIVE).await;
    let jobs = job_list(&names, args.jobs);
    let sent = queue.adapter.send_many(&jobs).await.expect("jobs queued");
    println!(
        "queue {} (DLQ after {MAX_RECEIVE} receives): {sent} jobs sent",
        queue.url
    );

    install_lock_log(&db).await;
    // Nothing of this process may hold a connection to the database while the workers run.
    db.pool.close().await;
    let sampler = ConnectionSampler::start(&db.name, SAMPLE_EVERY)
        .await
        .expect("connection sampler");
    let started = Instant::now();
    let mut children: Vec<Child> = (0..args.workers)
        .map(|i| spawn_worker(i, &db, &gh, installation, &queue.url))
        .collect();

    let drained = wait_until_drained(&queue, &mut children).await;
    let wall = started.elapsed();
    let reports: Vec<Option<WorkerReport>> = children.into_iter().map(finish_worker).collect();
    let connections = sampler.stop().await;

    let dead = dlq
        .count(QueueAttributeName::ApproximateNumberOfMessages)
        .await;
    let outstanding = queue.outstanding().await;
    let runs = RunsSeen::read(&db, &names).await;

    let workers_ok = reports.iter().all(Option::is_some);
    let total = reports
        .iter()
        .flatten()
        .fold(WorkerReport::default(), |mut t, r| {
            t.batches += r.batches;
            t.received += r.received;
            t.deleted.extend(r.deleted.iter().cloned());
            t.left += r.left;
            t.delete_errors += r.delete_errors;
            t
        });
    let acknowledged = total
        .deleted
        .iter()
        .collect::<std::collections::HashSet<_>>()
        .len() as u64;
    let pool = u64::from(shared::db::DEFAULT_POOL_SIZE);
    let budget = u64::from(args.workers) * pool;
    let rows = vec![
        Row::info("jobs sent", sent),
        Row::info("wall time to drain", format!("{:.1} s", wall.as_secs_f64())),
        Row::info(
            "throughput",
            format!("{:.0} jobs/s", sent as f64 / wall.as_secs_f64()),
        ),
        Row::check(
            "worker processes exited cleanly",
            format!("{}/{}", reports.iter().flatten().count(), reports.len()),
            "all",
            workers_ok,
        ),
        Row::info(
            "receives (redeliveries included)",
            format!("{} in {} batches", total.received, total.batches),
        ),
        Row::info("left for redelivery (busy, failed)", total.left),
        Row::info("stale receipt handles on delete", total.delete_errors),
        Row::check(
            "queue empty at the end",
            outstanding,
            "0 visible, in flight or delayed",
            drained && outstanding == 0,
        ),
        Row::check(
            "acknowledged + dead-lettered",
            format!("{acknowledged} + {dead} = {}", acknowledged + dead),
            &format!("= {sent} sent"),
            acknowledged + dead == sent as u64,
        ),
        Row::info(
            "deleted twice (received again while in flight)",
            total.deleted.len() as u64 - acknowledged,
        ),
        Row::info("dead-lettered", dead),
        Row::info(
            "sync_runs rows (one per call that took the lock)",
            runs.rows,
        ),
        Row::info(
            "repositories synced / expected",
            format!("{} / {}", runs.repos_stored, args.repos.min(args.jobs)),
        ),
        Row::info("most runs at once (all repositories)", runs.most_at_once),
        Row::info(
            "repository lock intervals (from Postgres's lock log)",
            runs.lock_intervals,
        ),
        Row::check(
            "lock intervals of one key overlapping",
            runs.lock_overlaps,
            "0",
            runs.lock_overlaps == 0,
        ),
        Row::check(
            "runs started without their repository's lock",
            runs.unlocked_runs,
            "0",
            runs.unlocked_runs == 0,
        ),
        Row::check(
            "runs sharing one lock interval (synced twice at once)",
            runs.shared_intervals,
            "0",
            runs.shared_intervals == 0,
        ),
        Row::info(
            "run rows of one repository overlapping (end recorded after the release)",
            format!(
                "{} (longest {:.1} ms)",
                runs.overlaps.len(),
                runs.longest_overlap_ms
            ),
        ),
        Row::check("runs left 'running'", runs.running, "0", runs.running == 0),
        Row::info("pool size per worker (shared::db::DEFAULT_POOL_SIZE)", pool),
        Row::info(
            "budget: workers x pool size (template WorkerReservedConcurrency = budget / pool size)",
            format!("{} x {pool} = {budget}", args.workers),
        ),
        Row::check(
            "Postgres connections, most seen",
            format!(
                "{} ({} samples every 50 ms)",
                connections.max, connections.samples
            ),
            &format!("<= {budget}"),
            connections.max <= budget && connections.samples > 0,
        ),
    ];
    if print_table("sync under concurrency", &rows) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

const DOC: &str =
    "---\ntitle: Guide\n---\n# Guide\n\nSome text with a [link](https://example.com).\n";

fn add_repositories(gh: &FakeGithub, installation: u64, n: usize) -> Vec<(i64, String)> {
    (0..n)
        .map(|i| {
            let name = format!("repo-{i:04}");
            let id = gh.add_repo(
                installation,
                &format!("bench/{name}"),
                &[
                    ("README.md", format!("# Repo {i}\n").as_bytes()),
                    ("docs/guide.md", DOC.as_bytes()),
                    ("docs/api.md", format!("# API {i}\n").as_bytes()),
                    ("docs/faq.md", b"# FAQ\n".as_slice()),
                    (".github/CODEOWNERS", b"* @bench/core\n".as_slice()),
                ],
            );
            (id as i64, name)
        })
        .collect()
}

/// `jobs` jobs: blocks of [`BLOCK_REPOS`] repositories, each block holding every copy of its
/// repositories' jobs in a shuffled order (fixed seed), so copies are received together.
fn job_list(repos: &[(i64, String)], jobs: usize) -> Vec<Job> {
    let tenant = TenantId::parse(shared::config::DEFAULT_TENANT).expect("the default tenant");
    let job = |(id, name): &(i64, String)| Job::SyncRepo {
        tenant: tenant.clone(),
        repository: RepoRef {
            github_id: Some(*id),
            owner: "bench".into(),
            name: name.clone(),
        },
        trigger: Trigger::Manual,
    };
    let copies = jobs.div_ceil(repos.len().max(1));
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    let mut out = Vec::with_capacity(jobs);
    for block in repos.chunks(BLOCK_REPOS) {
        let mut b: Vec<Job> = block
            .iter()
            .flat_map(|r| std::iter::repeat_n(job(r), copies))
            .collect();
        b.shuffle(&mut rng);
        out.extend(b);
    }
    // Trim whole copies from the end so exactly `jobs` remain.
    out.truncate(jobs);
    out
}

fn spawn_worker(
    index: u32,
    db: &TestDb,
    gh: &FakeGithub,
    installation: u64,
    queue_url: &str,
) -> Child {
    let exe = std::env::current_exe().expect("this binary's path");
    Command::new(exe)
        .arg("worker")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUST_LOG", "error")
        .env("DATABASE_URL", db.url().expose())
        .env("GITHUB_API_URL", gh.url())
        .env("GITHUB_APP_ID", gh.app_id().to_string())
        .env("GITHUB_APP_PRIVATE_KEY", gh.private_key_pem())
        .env("GITHUB_INSTALLATION_ID", installation.to_string())
        .env("JOBS_BACKEND", "sqs")
        .env("SQS_QUEUE_URL", queue_url)
        .env("AWS_ENDPOINT_URL_SQS", syncplane_tests::sqs::endpoint())
        .env("BENCH_WORKER_INDEX", index.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn a worker process")
}

/// Wait until nothing is visible, in flight or delayed on the queue (twice in a row, as the
/// counts are approximate), or a worker died, or the timeout passed. Returns whether drained.
async fn wait_until_drained(queue: &Queue, children: &mut [Child]) -> bool {
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    let mut empty_in_a_row = 0;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if children
            .iter_mut()
            .any(|c| matches!(c.try_wait(), Ok(Some(_))))
        {
            eprintln!("a worker process exited early");
            return false;
        }
        if queue.outstanding().await == 0 {
            empty_in_a_row += 1;
            if empty_in_a_row == 2 {
                return true;
            }
        } else {
            empty_in_a_row = 0;
        }
    }
    eprintln!("the queue was not drained in {} s", DRAIN_TIMEOUT.as_secs());
    false
}

/// Close the worker's stdin (its signal to stop), wait for it, and read its report.
fn finish_worker(mut child: Child) -> Option<WorkerReport> {
    drop(child.stdin.take());
    let stdout = child.stdout.take()?;
    let lines: Vec<String> = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .collect();
    let status = child.wait().ok()?;
    // Anything before the report is the worker's log output.
    let (report, log) = lines.split_last()?;
    for line in log {
        eprintln!("worker: {line}");
    }
    if !status.success() {
        eprintln!("a worker exited with {status}");
        return None;
    }
    serde_json::from_str(report).ok()
}

/// One `sync_runs` row: (id, scope, started_at, finished_at).
type RunRow = (i64, Option<String>, DateTime<Utc>, Option<DateTime<Utc>>);

/// One entry of the lock log: (at, backend pid, key, "lock" or "unlock", result).
type LockEvent = (DateTime<Utc>, i32, i64, String, bool);

/// Logging wrappers of the two advisory lock functions the engine calls, first on the bench
/// database's search_path: Postgres records each lock taken (after it is granted) and each
/// release (before it happens), so a logged interval lies inside the real one.
const LOCK_LOG_SQL: &str = r#"
CREATE SCHEMA bench_probe;
CREATE TABLE bench_probe.lock_log (
    id bigint generated always as identity primary key,
    at timestamptz not null, pid integer not null, key bigint not null, op text not null,
    ok boolean not null);
CREATE FUNCTION bench_probe.pg_try_advisory_lock(key bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE got boolean;
BEGIN
    got := pg_catalog.pg_try_advisory_lock(key);
    INSERT INTO bench_probe.lock_log (at, pid, key, op, ok)
        VALUES (clock_timestamp(), pg_backend_pid(), key, 'lock', got);
    RETURN got;
END $$;
CREATE FUNCTION bench_probe.pg_advisory_unlock(key bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE at timestamptz := clock_timestamp(); got boolean;
BEGIN
    got := pg_catalog.pg_advisory_unlock(key);
    INSERT INTO bench_probe.lock_log (at, pid, key, op, ok)
        VALUES (at, pg_backend_pid(), key, 'unlock', got);
    RETURN got;
END $$;
"#;

async fn install_lock_log(db: &TestDb) {
    sqlx::raw_sql(LOCK_LOG_SQL)
        .execute(&db.pool)
        .await
        .expect("lock log");
    // The database name is generated by TestDb, never input.
    let alter = format!(
        r#"ALTER DATABASE "{}" SET search_path = bench_probe, pg_catalog, public"#,
        db.name
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(alter))
        .execute(&db.pool)
        .await
        .expect("search_path");
}

/// What `sync_runs`, `repos` and the lock log say after the drain.
struct RunsSeen {
    rows: usize,
    running: usize,
    repos_stored: i64,
    most_at_once: usize,
    lock_intervals: usize,
    lock_overlaps: usize,
    unlocked_runs: usize,
    shared_intervals: usize,
    /// (scope, run a, run b) pairs of one repository whose rows overlap in time.
    overlaps: Vec<(String, i64, i64)>,
    longest_overlap_ms: f64,
}

impl RunsSeen {
    async fn read(db: &TestDb, names: &[(i64, String)]) -> Self {
        let pool = shared::db::connect(&db.url(), 2)
            .await
            .expect("reconnect to the bench database");
        let runs: Vec<RunRow> = sqlx::query_as(
            "SELECT id, scope, started_at, finished_at FROM sync_runs ORDER BY scope, started_at",
        )
        .fetch_all(&pool)
        .await
        .expect("sync_runs");
        let log: Vec<LockEvent> =
            sqlx::query_as("SELECT at, pid, key, op, ok FROM bench_probe.lock_log ORDER BY at, id")
                .fetch_all(&pool)
                .await
                .expect("lock log");
        let repos_stored: i64 = sqlx::query_scalar("SELECT count(*) FROM repos")
            .fetch_one(&pool)
            .await
            .expect("repos");
        pool.close().await;

        let keys: std::collections::HashMap<String, i64> = names
            .iter()
            .map(|(id, name)| (format!("bench/{name}"), shared::sync::lock::repo_key(*id)))
            .collect();
        let intervals = lock_intervals(&log);
        let lock_overlaps = intervals
            .values()
            .map(|v| v.windows(2).filter(|w| w[1].0 < w[0].1).count())
            .sum();
        let mut claimed: std::collections::HashMap<(i64, usize), usize> = Default::default();
        let mut unlocked_runs = 0;
        for (_, scope, start, _) in &runs {
            let key = scope.as_ref().and_then(|s| keys.get(s));
            let inside = key.and_then(|k| {
                let list = intervals.get(k)?;
                let i = list.iter().position(|(a, b)| a <= start && start <= b)?;
                Some((*k, i))
            });
            match inside {
                Some(slot) => *claimed.entry(slot).or_default() += 1,
                None => unlocked_runs += 1,
            }
        }
        let (overlaps, longest_overlap_ms) = row_overlaps(&runs);
        Self {
            rows: runs.len(),
            running: runs.iter().filter(|r| r.3.is_none()).count(),
            repos_stored,
            most_at_once: most_at_once(&runs),
            lock_intervals: keys
                .values()
                .map(|k| intervals.get(k).map_or(0, Vec::len))
                .sum(),
            lock_overlaps,
            unlocked_runs,
            shared_intervals: claimed.values().filter(|n| **n > 1).count(),
            overlaps,
            longest_overlap_ms,
        }
    }
}

type Interval = (DateTime<Utc>, DateTime<Utc>);

/// Held intervals per key, in order. A lock whose connection closed without an unlock is
/// taken to end when another backend next takes the key (or never).
fn lock_intervals(log: &[LockEvent]) -> std::collections::HashMap<i64, Vec<Interval>> {
    let far = DateTime::<Utc>::MAX_UTC;
    let mut open: std::collections::HashMap<i64, (i32, DateTime<Utc>)> = Default::default();
    let mut out: std::collections::HashMap<i64, Vec<Interval>> = Default::default();
    for (at, pid, key, op, ok) in log {
        match (op.as_str(), ok) {
            ("lock", true) => {
                if let Some((_, start)) = open.insert(*key, (*pid, *at)) {
                    out.entry(*key).or_default().push((start, *at));
                }
            }
            ("unlock", true) if open.get(key).is_some_and(|(p, _)| p == pid) => {
                let (_, start) = open.remove(key).unwrap_or((*pid, *at));
                out.entry(*key).or_default().push((start, *at));
            }
            _ => {}
        }
    }
    for (key, (_, start)) in open {
        out.entry(key).or_default().push((start, far));
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

/// Pairs of rows of one repository overlapping in time, and the longest overlap in ms.
fn row_overlaps(runs: &[RunRow]) -> (Vec<(String, i64, i64)>, f64) {
    let far = DateTime::<Utc>::MAX_UTC;
    let mut overlaps = Vec::new();
    let mut longest = 0f64;
    // Sorted by scope then start: a row overlaps an earlier one of its repository when it
    // starts before the latest end seen so far in that scope.
    let mut latest: Option<(&Option<String>, i64, DateTime<Utc>)> = None;
    for (id, scope, start, end) in runs {
        let end = end.unwrap_or(far);
        match latest {
            Some((s, prev, until)) if s == scope => {
                if *start < until {
                    overlaps.push((scope.clone().unwrap_or_default(), prev, *id));
                    let ms = (until.min(end) - *start).num_microseconds().unwrap_or(0) as f64;
                    longest = longest.max(ms / 1000.0);
                }
                if end > until {
                    latest = Some((scope, *id, end));
                }
            }
            _ => latest = Some((scope, *id, end)),
        }
    }
    (overlaps, longest)
}

/// Most rows running at once over every repository: a sweep over starts and ends.
fn most_at_once(runs: &[RunRow]) -> usize {
    let far = DateTime::<Utc>::MAX_UTC;
    let mut edges: Vec<(DateTime<Utc>, i32)> = runs
        .iter()
        .flat_map(|r| [(r.2, 1), (r.3.unwrap_or(far), -1)])
        .collect();
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    most as usize
}
