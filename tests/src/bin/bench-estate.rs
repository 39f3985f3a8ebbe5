//! `bench-estate`: a 100,000-repository estate at GitHub's cost floor (issue 23, Build 4). Prints
//! figures; not a test (CI never runs it).
//!
//! The fake GitHub (hosted by this process) holds `--installations` installations (default 100)
//! of `--repos` repositories each (default 1,000), each repository a README and one document.
//! Every installation is a tenant with a database of its own, seeded as a previous full run left
//! it: each repository's row with its head, root tree and selection fingerprint, its metadata
//! from the installation's GraphQL listing (the same mapping a run stores).
//!
//! The measured no-op full runs run in a CHILD process (this binary in `run` mode), so its peak
//! resident memory is the run's alone: every tenant's `sync_all`, `--concurrency` tenants at once
//! (default 4), each with a pool of `shared::db::DEFAULT_POOL_SIZE` connections, closed when its
//! run ends. Twice: the first hour (a new process: one token per installation, and each
//! installation's listing count confirmed over REST once), then the steady state (tokens shared
//! through each tenant's database, counts confirmed). A third child fans the full runs out
//! through the SQS adapter (moto at `AWS_ENDPOINT_URL_SQS`, default 127.0.0.1:4566, a queue of
//! its own) and the `sync.repo` messages are counted.
//!
//! Figures: wall time, time per repository, peak resident memory of the child, GitHub requests
//! by kind and per 100 repositories, REST units, rows written, the most Postgres connections
//! to the bench's databases at once (sampled every 50 ms) against the budget of `--concurrency`
//! pools, and `sync.repo` messages. Then one webhook push outside the docs of a repository
//! synced for real: requests and bytes on the wire.
//!
//! `cargo build --profile perf --workspace --bins --locked && target/perf/bench-estate
//! [--installations 100] [--repos 1000] [--concurrency 4]` (Postgres and, for the fan-out,
//! `bash scripts/services.sh`).

use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use shared::config::{GithubAppConfig, Secret, SyncConfig, TenantId};
use shared::github::{ClientOptions, GithubClient};
use shared::sync::coalescing::{NoRowBusy, request_sync};
use shared::sync::full::sync_all;
use shared::sync::runs::Trigger;
use shared::sync::workspace::{RunOptions, Workspace};
use shared::worker::fan_out::fan_out_full;
use sqlx::postgres::PgPoolOptions;
use syncplane_tests::bench::{
    Row, bench_queue, drop_queue, per_repository_requests, print_table, repo_messages,
};
use syncplane_tests::db::TestDb;
use syncplane_tests::fake_github::{Change, Endpoint, FakeGithub};

#[derive(Parser)]
struct Args {
    /// `run` or `fanout`: the child's modes (the plan file follows).
    mode: Option<String>,
    plan: Option<String>,
    #[arg(long, default_value_t = 100)]
    installations: usize,
    #[arg(long, default_value_t = 1000)]
    repos: usize,
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
}

/// What the child needs: the fake's App and every tenant.
#[derive(Serialize, Deserialize)]
struct Plan {
    api_url: String,
    app_id: u64,
    key_pem: String,
    concurrency: usize,
    tenants: Vec<(String, u64)>,
}

/// What a child reports.
#[derive(Serialize, Deserialize, Default)]
struct Report {
    wall_ms: f64,
    unchanged: u64,
    synced: u64,
    failed: u64,
    rest_units: u64,
    sync_repo_messages: usize,
    peak_rss_kb: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    match (args.mode.as_deref(), args.plan.as_deref()) {
        (Some(mode @ ("run" | "fanout")), Some(plan)) => {
            let report = runtime.block_on(child(mode == "fanout", plan));
            println!("{}", serde_json::to_string(&report).expect("report"));
            ExitCode::SUCCESS
        }
        (None, _) => runtime.block_on(parent(args)),
        _ => {
            eprintln!("usage: bench-estate [--installations N] [--repos N] [--concurrency N]");
            ExitCode::FAILURE
        }
    }
}

// ---- The child: the process whose run is measured ----

async fn child(fan_out: bool, plan: &str) -> Report {
    let plan: Plan = serde_json::from_slice(&std::fs::read(plan).expect("plan")).expect("plan");
    let queue = if fan_out {
        Some(Arc::new(bench_queue("estate").await))
    } else {
        None
    };
    let started = Instant::now();
    let plan = Arc::new(plan);
    let reports: Vec<_> = futures::stream::iter(0..plan.tenants.len())
        .map(|i| {
            let (plan, queue) = (plan.clone(), queue.clone());
            async move { tenant_run(&plan, i, queue.as_deref()).await }
        })
        .buffer_unordered(plan.concurrency)
        .collect()
        .await;
    let mut report = Report {
        wall_ms: started.elapsed().as_secs_f64() * 1000.0,
        ..Report::default()
    };
    for c in reports {
        report.unchanged += u64::from(c.repos_unchanged);
        report.synced += u64::from(c.repos_synced);
        report.failed += u64::from(c.repos_failed);
        report.rest_units += c.github_rest_units;
    }
    if let Some(queue) = queue {
        report.sync_repo_messages = repo_messages(&queue).await.0;
        drop_queue(&queue).await;
    }
    report.peak_rss_kb = peak_rss_kb();
    report
}

async fn tenant_run(
    plan: &Plan,
    i: usize,
    queue: Option<&shared::jobs::sqs::SqsAdapter>,
) -> shared::sync::runs::RunCounts {
    let (url, installation) = &plan.tenants[i];
    let pool = PgPoolOptions::new()
        .max_connections(shared::db::DEFAULT_POOL_SIZE)
        .connect_lazy(url)
        .expect("tenant database url");
    let gh = GithubAppConfig {
        api_url: plan.api_url.parse().expect("api url"),
        graphql_url: None,
        app_id: plan.app_id,
        private_key_pem: Secret::new(plan.key_pem.clone()),
        installation_id: *installation,
        rate_limit_wait_budget_secs: 0,
    };
    let client = GithubClient::with_token_store(&gh, ClientOptions::default(), pool.clone())
        .expect("client");
    let ws = Workspace {
        tenant: TenantId::parse(&format!("t{i}")).expect("tenant"),
        pool: pool.clone(),
        client,
        config: SyncConfig::default(),
        options: RunOptions::default(),
    };
    let counts = match queue {
        Some(queue) => {
            fan_out_full(&ws, Trigger::Manual, queue)
                .await
                .expect("fan-out")
                .expect("not skipped")
                .report
                .counts
        }
        None => sync_all(&ws, Trigger::Schedule).await.expect("run").counts,
    };
    pool.close().await;
    counts
}

/// The process's peak resident set (`VmHWM`), in kB.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

// ---- The parent: the estate, the children, the figures ----

async fn parent(args: Args) -> ExitCode {
    let gh = FakeGithub::start().await;
    let started = Instant::now();
    let mut tenants = Vec::new();
    let mut dbs = Vec::new();
    for i in 0..args.installations {
        let installation = gh.add_installation(&format!("org{i:03}"));
        for r in 0..args.repos {
            gh.add_repo(
                installation,
                &format!("org{i:03}/r{r:04}"),
                &[("README.md", b"# R\n"), ("docs/a.md", b"# A\n")],
            );
        }
        let db = TestDb::new().await;
        seed(&db, &gh, installation).await;
        db.pool.close().await;
        tenants.push((db.url().expose().to_owned(), installation));
        dbs.push(db);
    }
    let repos = args.installations * args.repos;
    println!(
        "setup: {} installations x {} repositories, seeded in {:.1} s",
        args.installations,
        args.repos,
        started.elapsed().as_secs_f64()
    );
    let plan_path = std::env::temp_dir().join(format!("bench-estate-{}.json", std::process::id()));
    let plan = Plan {
        api_url: gh.url(),
        app_id: gh.app_id(),
        key_pem: gh.private_key_pem(),
        concurrency: args.concurrency,
        tenants,
    };
    std::fs::write(&plan_path, serde_json::to_vec(&plan).expect("plan")).expect("plan file");
    let budget = args.concurrency as i64 * i64::from(shared::db::DEFAULT_POOL_SIZE);
    let mut ok = true;
    for (label, mode) in [
        ("first hour (new tokens, counts confirmed)", "run"),
        ("steady state", "run"),
        ("SQS fan-out", "fanout"),
    ] {
        gh.reset_log();
        let (report, peak_connections) = measured(mode, &plan_path).await;
        ok &= print_run(label, &gh, repos, &report, peak_connections, budget, &args);
    }
    let _ = std::fs::remove_file(&plan_path);
    drop(dbs);
    ok &= push_outside_the_docs(&gh).await;
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Each repository's row as a complete no-op-ready plan left it.
async fn seed(db: &TestDb, gh: &FakeGithub, installation: u64) {
    let client = GithubClient::with_options(&gh.app_config(installation), ClientOptions::default())
        .expect("client");
    let listing = client.viewer_listing().await.expect("listing");
    let config = SyncConfig::default();
    let mut rows = (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for listed in &listing.repos {
        let info = &listed.info;
        let full_name = info.full_name();
        rows.0.push(info.github_id);
        rows.1.push(info.owner.clone());
        rows.2.push(info.name.clone());
        rows.3.push(info.html_url.clone());
        rows.4.push(gh.branch_head(&full_name, "main"));
        rows.5.push(gh.head_tree(&full_name));
        rows.6.push(shared::sync::fingerprint::for_repository(
            &config, &full_name,
        ));
    }
    sqlx::query(
        "INSERT INTO repos (github_id, owner, name, default_branch, private, html_url, node_id,
                            docs_path, head_commit_sha, tree_sha, selection_fingerprint,
                            sync_status, last_synced_at)
         SELECT g, o, n, 'main', true, u, 'R_fake' || g, 'docs', h, t, f, 'ok', now()
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                     $7::text[]) AS x(g, o, n, u, h, t, f)",
    )
    .bind(&rows.0)
    .bind(&rows.1)
    .bind(&rows.2)
    .bind(&rows.3)
    .bind(&rows.4)
    .bind(&rows.5)
    .bind(&rows.6)
    .execute(&db.pool)
    .await
    .expect("seed");
}

/// Run a child, sampling the Postgres connections to this bench's databases meanwhile.
async fn measured(mode: &str, plan: &std::path::Path) -> (Report, i64) {
    let prefix = format!("syncplane_test_{}_%", std::process::id());
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect(
            &std::env::var("DATABASE_URL")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned()),
        )
        .await
        .expect("admin connection");
    let (stop, peak) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicI64::new(0)),
    );
    let sampler = {
        let (stop, peak, admin) = (stop.clone(), peak.clone(), admin.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let n: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname LIKE $1",
                )
                .bind(&prefix)
                .fetch_one(&admin)
                .await
                .unwrap_or(0);
                peak.fetch_max(n, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let exe = std::env::current_exe().expect("own path");
    let plan = plan.to_owned();
    let mode = mode.to_owned();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(exe)
            .args([mode.as_str(), plan.to_str().unwrap_or_default()])
            .stderr(Stdio::inherit())
            .output()
            .expect("child runs")
    })
    .await
    .expect("child joined");
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    admin.close().await;
    let line = String::from_utf8_lossy(&output.stdout);
    let report: Report = serde_json::from_str(line.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| panic!("child report: {line}"));
    (report, peak.load(Ordering::Relaxed))
}

fn print_run(
    label: &str,
    gh: &FakeGithub,
    repos: usize,
    r: &Report,
    peak_connections: i64,
    budget: i64,
    args: &Args,
) -> bool {
    let per_repository = per_repository_requests(gh);
    let tokens = gh.count(Endpoint::AccessToken);
    let listing = gh.count(Endpoint::Graphql) + gh.count(Endpoint::InstallationRepos);
    let per_100 = listing as f64 * 100.0 / repos as f64;
    let steady = !label.starts_with("first hour");
    let rows = [
        Row::target(
            "wall time",
            format!("{:.1} s", r.wall_ms / 1000.0),
            "<= 60 s",
            r.wall_ms <= 60_000.0,
        ),
        Row::info(
            "time per repository",
            format!("{:.1} us", r.wall_ms * 1000.0 / repos as f64),
        ),
        Row::target(
            "peak resident (the run's process)",
            format!("{:.0} MB", r.peak_rss_kb as f64 / 1024.0),
            "<= 256 MB",
            r.peak_rss_kb <= 256 * 1024,
        ),
        Row::target(
            "GitHub requests per 100 repositories (tokens apart)",
            format!(
                "{per_100:.3} ({} GraphQL, {} REST listing/count)",
                gh.count(Endpoint::Graphql),
                gh.count(Endpoint::InstallationRepos)
            ),
            "<= 1.05",
            !steady || per_100 <= 1.05,
        ),
        Row::target(
            "installation tokens",
            format!("{tokens} for {} installations", args.installations),
            "<= 1 per installation per hour",
            tokens <= args.installations,
        ),
        Row::target(
            "per-repository requests",
            per_repository,
            "0",
            per_repository == 0,
        ),
        Row::target(
            "REST rate-limit units",
            r.rest_units,
            "0 (steady)",
            !steady || r.rest_units == 0,
        ),
        Row::target(
            "repositories unchanged / synced / failed",
            format!("{} / {} / {}", r.unchanged, r.synced, r.failed),
            "all unchanged",
            r.unchanged as usize == repos,
        ),
        Row::target(
            "Postgres connections at once",
            peak_connections,
            &format!("<= {budget} ({} pools of 5)", args.concurrency),
            peak_connections <= budget,
        ),
        Row::target(
            "sync.repo messages",
            r.sync_repo_messages,
            "0",
            r.sync_repo_messages == 0,
        ),
    ];
    print_table(&format!("{repos} repositories, no-op: {label}"), &rows)
}

/// One webhook push outside the docs of a repository synced for real.
async fn push_outside_the_docs(gh: &FakeGithub) -> bool {
    let installation = gh.add_installation("pushers");
    gh.add_repo(
        installation,
        "pushers/app",
        &[("README.md", b"# App\n"), ("docs/a.md", b"# A\n")],
    );
    let db = TestDb::new().await;
    let ws = Workspace {
        tenant: TenantId::parse("push").expect("tenant"),
        pool: db.pool.clone(),
        client: GithubClient::with_options(&gh.app_config(installation), ClientOptions::default())
            .expect("client"),
        config: SyncConfig::default(),
        options: RunOptions::default(),
    };
    sync_all(&ws, Trigger::Manual).await.expect("first sync");
    let info = ws.client.repo("pushers", "app").await.expect("repo");
    gh.push(
        "pushers/app",
        &[Change::Put(
            "src/main.rs".into(),
            b"fn main() {}\n".to_vec(),
        )],
    );
    gh.reset_log();
    request_sync(&ws, &info, Trigger::Webhook, NoRowBusy::RetryWithBackoff)
        .await
        .expect("push");
    let requests = gh.requests();
    let wire: u64 = requests.iter().map(|r| r.wire_bytes).sum();
    let rows = [
        Row::target(
            "requests to GitHub",
            requests.len(),
            "1",
            requests.len() == 1,
        ),
        Row::target("response bytes on the wire", wire, "<= 2048", wire <= 2048),
    ];
    print_table("a webhook push outside the docs", &rows)
}
