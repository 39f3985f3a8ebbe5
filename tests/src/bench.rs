//! What the load benchmarks share: percentiles, a figures table with verdicts, and watchers on
//! the Postgres server (connections of one database sampled on a timer, its deadlock counter).
//! The watchers connect to the admin database, so they never count themselves.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection};

/// The `p` quantile (0..=1) of sorted durations; zero when there are none.
pub fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One row of a figures table: what, the figure, and the target it is held to (if any).
pub struct Row {
    pub figure: String,
    pub value: String,
    /// `Some((target, met))` for a figure with a target.
    pub target: Option<(String, bool)>,
    /// A hard (correctness) condition fails the run when missed; a speed target is reported.
    pub hard: bool,
}

impl Row {
    pub fn info(figure: &str, value: impl ToString) -> Self {
        Self {
            figure: figure.to_owned(),
            value: value.to_string(),
            target: None,
            hard: false,
        }
    }
    /// A correctness condition: missing it fails the run.
    pub fn check(figure: &str, value: impl ToString, target: &str, met: bool) -> Self {
        Self {
            figure: figure.to_owned(),
            value: value.to_string(),
            target: Some((target.to_owned(), met)),
            hard: true,
        }
    }
    /// A speed or size target: reported as met or missed.
    /// The same row, its figure prefixed `"<prefix>: "` (one table of several runs).
    pub fn prefixed(self, prefix: &str) -> Self {
        Self {
            figure: format!("{prefix}: {}", self.figure),
            ..self
        }
    }

    pub fn target(figure: &str, value: impl ToString, target: &str, met: bool) -> Self {
        Self {
            hard: false,
            ..Self::check(figure, value, target, met)
        }
    }
}

/// Print the rows as an aligned table; returns whether every hard condition held.
pub fn print_table(title: &str, rows: &[Row]) -> bool {
    let w0 = rows.iter().map(|r| r.figure.len()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r.value.len()).max().unwrap_or(0);
    println!("\n== {title}");
    let mut all_met = true;
    for r in rows {
        let verdict = match &r.target {
            Some((target, met)) => {
                all_met &= *met || !r.hard;
                let word = match (met, r.hard) {
                    (true, _) => "ok  ",
                    (false, true) => "FAIL",
                    (false, false) => "MISS",
                };
                format!("{word}  (target {target})")
            }
            None => String::new(),
        };
        println!("  {:<w0$}  {:>w1$}  {verdict}", r.figure, r.value);
    }
    all_met
}

async fn admin() -> Result<PgConnection, sqlx::Error> {
    PgConnection::connect(&crate::db::admin_url()).await
}

/// `pg_stat_database.deadlocks` of one database (a server-wide counter kept per database).
pub async fn deadlocks(database: &str) -> Result<i64, sqlx::Error> {
    let mut conn = admin().await?;
    let n = sqlx::query_scalar("SELECT deadlocks FROM pg_stat_database WHERE datname = $1")
        .bind(database)
        .fetch_one(&mut conn)
        .await?;
    let _ = conn.close().await;
    Ok(n)
}

/// Samples `pg_stat_activity` for one database on a timer, keeping the largest count seen.
pub struct ConnectionSampler {
    stop: Arc<AtomicBool>,
    max: Arc<AtomicU64>,
    samples: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

/// What the sampler saw.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionSamples {
    pub max: u64,
    pub samples: u64,
}

impl ConnectionSampler {
    pub async fn start(database: &str, every: Duration) -> Result<Self, sqlx::Error> {
        let mut conn = admin().await?;
        let (stop, max, samples) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
        );
        let (s, m, n, database) = (
            stop.clone(),
            max.clone(),
            samples.clone(),
            database.to_owned(),
        );
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            while !s.load(Ordering::Relaxed) {
                tick.tick().await;
                let count: Result<i64, _> =
                    sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = $1")
                        .bind(&database)
                        .fetch_one(&mut conn)
                        .await;
                if let Ok(count) = count {
                    m.fetch_max(count as u64, Ordering::Relaxed);
                    n.fetch_add(1, Ordering::Relaxed);
                }
            }
            let _ = conn.close().await;
        });
        Ok(Self {
            stop,
            max,
            samples,
            task,
        })
    }

    pub async fn stop(self) -> ConnectionSamples {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
        ConnectionSamples {
            max: self.max.load(Ordering::Relaxed),
            samples: self.samples.load(Ordering::Relaxed),
        }
    }
}

/// The Postgres server's log files (Debian keeps them in /var/log/postgresql), read from a mark:
/// what the server wrote during a benchmark's window.
pub struct PgLog {
    /// Each file and its length at the mark.
    marks: Vec<(std::path::PathBuf, u64)>,
}

impl PgLog {
    pub const DIR: &'static str = "/var/log/postgresql";

    /// Remember where every log file ends now; `None` when the folder cannot be read.
    pub fn mark() -> Option<Self> {
        let marks = std::fs::read_dir(Self::DIR)
            .ok()?
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .map(|e| {
                let len = e.metadata().map(|m| m.len()).unwrap_or(0);
                (e.path(), len)
            })
            .collect::<Vec<_>>();
        (!marks.is_empty()).then_some(Self { marks })
    }

    /// Lines written since the mark that contain `needle` and name `database` (the default
    /// `log_line_prefix` carries `user@database`). `None` when a file cannot be read.
    pub fn lines_since(&self, needle: &str, database: &str) -> Option<Vec<String>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut found = Vec::new();
        for (path, from) in &self.marks {
            let mut file = std::fs::File::open(path).ok()?;
            file.seek(SeekFrom::Start(*from)).ok()?;
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).ok()?;
            let text = String::from_utf8_lossy(&bytes);
            found.extend(
                text.lines()
                    .filter(|l| l.contains(needle) && l.contains(database))
                    .map(str::to_owned),
            );
        }
        Some(found)
    }
}

/// The sync API's state over one tenant ("bench") in `db`, its sync API token `token`, no GitHub
/// App: what the read benches serve.
pub fn single_tenant_state(db: &crate::db::TestDb, token: &str) -> shared::app::AppState {
    use shared::config::{ReadConfig, Secret, SyncConfig, TenantConfig, TenantId};
    let tenant = TenantConfig {
        id: TenantId::parse("bench").expect("tenant id"),
        database_url: db.url(),
        github: None,
        webhook_secrets: vec![],
        sync_api_token: Some(Secret::new(token)),
        sync: SyncConfig::default(),
        read: ReadConfig::default(),
    };
    let id = tenant.id.clone();
    let tenants = Arc::new(shared::tenants::Tenants::from_parts(
        vec![(tenant, db.pool.clone(), None)],
        shared::sync::workspace::RunOptions::default(),
    ));
    shared::app::AppState {
        jobs: shared::worker::inline(tenants.clone()),
        tenants,
        default_tenant: id,
    }
}

/// A queue of the bench's own on the SQS emulator.
pub async fn bench_queue(label: &str) -> shared::jobs::sqs::SqsAdapter {
    let endpoint = std::env::var("AWS_ENDPOINT_URL_SQS")
        .unwrap_or_else(|_| "http://127.0.0.1:4566".to_owned());
    let client = shared::jobs::sqs::emulator_client(&endpoint);
    let name = format!("syncplane-bench-{label}-{}", std::process::id());
    let created = client
        .create_queue()
        .queue_name(&name)
        .send()
        .await
        .expect("the SQS emulator answers (scripts/services.sh starts it)");
    shared::jobs::sqs::SqsAdapter::new(client, created.queue_url().unwrap_or_default())
}

/// `sync.repo` messages and other messages waiting in the queue (received and deleted).
pub async fn repo_messages(queue: &shared::jobs::sqs::SqsAdapter) -> (usize, usize) {
    let (mut repo, mut other) = (0, 0);
    loop {
        let got = queue
            .client()
            .receive_message()
            .queue_url(queue.queue_url())
            .max_number_of_messages(10)
            .send()
            .await
            .expect("receive");
        let messages = got.messages();
        if messages.is_empty() {
            return (repo, other);
        }
        for m in messages {
            if m.body().unwrap_or_default().contains("\"sync.repo\"") {
                repo += 1;
            } else {
                other += 1;
            }
            if let Some(handle) = m.receipt_handle() {
                let _ = queue
                    .client()
                    .delete_message()
                    .queue_url(queue.queue_url())
                    .receipt_handle(handle)
                    .send()
                    .await;
            }
        }
    }
}

/// GitHub requests that are about one repository (head checks, trees, blobs, lookups).
pub fn per_repository_requests(gh: &crate::fake_github::FakeGithub) -> usize {
    [
        crate::fake_github::Endpoint::Branch,
        crate::fake_github::Endpoint::Commits,
        crate::fake_github::Endpoint::Tree,
        crate::fake_github::Endpoint::Blob,
        crate::fake_github::Endpoint::Repo,
    ]
    .iter()
    .map(|e| gh.count(*e))
    .sum()
}

/// Delete the bench's queue (best effort).
pub async fn drop_queue(queue: &shared::jobs::sqs::SqsAdapter) {
    let _ = queue
        .client()
        .delete_queue()
        .queue_url(queue.queue_url())
        .send()
        .await;
}

/// What [`download`] read, how fast, and this process's resident memory meanwhile.
pub struct Download {
    pub bytes: u64,
    pub lines: u64,
    pub elapsed: Duration,
    pub rss_before_kib: u64,
    pub rss_peak_kib: u64,
}

impl Download {
    pub fn mb_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.elapsed.as_secs_f64()
    }

    /// Its figures as table rows, each named `"<what>: ..."`.
    pub fn rows(&self, what: &str) -> Vec<Row> {
        vec![
            Row::info(
                &format!("{what}: bytes, time"),
                format!(
                    "{:.1} MB in {:.2} s",
                    self.bytes as f64 / 1e6,
                    self.elapsed.as_secs_f64()
                ),
            ),
            Row::info(&format!("{what}: rate"), format!("{:.0} MB/s", self.mb_s())),
            Row::info(
                &format!("{what}: resident memory before, peak (growth)"),
                format!(
                    "{:.1} MB, {:.1} MB (+{:.1} MB)",
                    self.rss_before_kib as f64 / 1024.0,
                    self.rss_peak_kib as f64 / 1024.0,
                    self.rss_peak_kib.saturating_sub(self.rss_before_kib) as f64 / 1024.0
                ),
            ),
        ]
    }
}

/// GET `url` with `token`, reading the body as it streams: bytes and lines counted, none kept;
/// this process's resident memory (VmRSS) sampled every 10 ms meanwhile.
pub async fn download(url: &str, token: &str) -> Download {
    let rss_before_kib = rss_kib();
    let peak = Arc::new(AtomicU64::new(rss_before_kib));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let started = Instant::now();
    let resp = reqwest::Client::new()
        .get(url)
        .header("authorization", format!("Bearer {token}"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(resp.status(), 200, "{url}");
    let (mut bytes, mut lines) = (0u64, 0u64);
    let mut resp = resp;
    while let Some(chunk) = resp.chunk().await.expect("export body") {
        bytes += chunk.len() as u64;
        lines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
    }
    let elapsed = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    Download {
        bytes,
        lines,
        elapsed,
        rss_before_kib,
        rss_peak_kib: peak.load(Ordering::Relaxed),
    }
}

/// This process's resident memory (VmRSS), KiB.
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
