//! The shared installation token across processes (prints figures; not a test).
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-token`
//!
//! Target: an unchanged repository synced twice, within one token's life, by two processes: one
//! GitHub request each, a 304, no rate-limit unit, no row written.
//!
//! This process hosts the fake GitHub (20 ms per request) and a Postgres database of its own, and
//! runs itself as a child process for each sync (`--child`). A child is configured through
//! environment variables and builds its client exactly as the CLI and the functions do
//! (`Tenants::from_config`: the token is shared through the tenant's database). Child 1 syncs the
//! repository first (and mints the token); children 2 and 3 sync it unchanged. A last child with
//! a token of its own (no shared store) shows what every process paid before. For each child:
//! GitHub requests by endpoint and status, rate-limit units spent, and rows written, counted two
//! ways: changed row versions (xmin) of the sync tables and the token table, and the inserts,
//! updates and deletes `pg_stat_user_tables` counted.

use shared::worker::TenantWorkspace;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shared::config::SyncConfig;
use shared::github::{GithubClient, RepoInfo};
use shared::sync::sync_repository;
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use syncplane_tests::db::TestDb;
use syncplane_tests::fake_github::{Endpoint, FakeGithub};
use syncplane_tests::rows::{changed, row_versions};

const REPO_ENV: &str = "BENCH_TOKEN_REPO";
const OWN_TOKEN_ENV: &str = "BENCH_TOKEN_OWN";

#[tokio::main]
async fn main() {
    if std::env::args().nth(1).as_deref() == Some("--child") {
        child().await;
    } else {
        parent().await;
    }
}

// ---- the child: one sync, as a separate process ----

async fn child() {
    let config = shared::config::from_env().expect("child configuration");
    shared::metrics::install(&config);
    let repo = repo_from_env();
    let (pool, client) = if std::env::var(OWN_TOKEN_ENV).is_ok() {
        let tenant = &config.tenants[0];
        let gh = tenant.github.as_ref().expect("GitHub App configured");
        let pool = shared::db::connect(&tenant.database_url, 2)
            .await
            .expect("database");
        (pool, GithubClient::new(gh).expect("client"))
    } else {
        let tenants = Tenants::from_config(&config, 2, RunOptions::default()).expect("tenants");
        let id = tenants.ids().next().expect("one tenant").to_owned();
        let ws = tenants.workspace(&id).expect("workspace");
        (ws.pool, ws.client)
    };
    let started = Instant::now();
    let outcome = sync_repository(&pool, &client, &SyncConfig::default(), &repo)
        .await
        .expect("sync");
    println!(
        "{}",
        json!({
            "outcome": format!("{outcome:?}").split(['(', ' ']).next().unwrap_or_default(),
            "requests": client.requests_made(),
            "ms": started.elapsed().as_secs_f64() * 1000.0,
        })
    );
    pool.close().await;
}

fn repo_from_env() -> RepoInfo {
    let raw = std::env::var(REPO_ENV).expect("repository from the parent");
    let v: Value = serde_json::from_str(&raw).expect("repository JSON");
    let text = |k: &str| v[k].as_str().map(str::to_owned);
    RepoInfo {
        github_id: v["github_id"].as_i64().expect("id"),
        node_id: text("node_id"),
        owner: text("owner").expect("owner"),
        name: text("name").expect("name"),
        private: v["private"].as_bool().unwrap_or(false),
        archived: v["archived"].as_bool().unwrap_or(false),
        default_branch: text("default_branch"),
        html_url: text("html_url"),
        description: text("description"),
    }
}

// ---- the parent: the fake GitHub, the database, the figures ----

struct Bench {
    db: TestDb,
    gh: FakeGithub,
    installation: u64,
    repo: RepoInfo,
}

async fn parent() {
    let db = TestDb::new().await;
    let gh = FakeGithub::start().await;
    let installation = gh.add_installation("bench");
    let docs: Vec<(String, Vec<u8>)> = (0..20)
        .map(|i| {
            (
                format!("docs/page-{i:02}.md"),
                format!("# Page {i}\n\nText.\n"),
            )
        })
        .chain([("README.md".to_owned(), "# Bench\n".to_owned())])
        .map(|(p, c)| (p, c.into_bytes()))
        .collect();
    gh.add_repo_owned(installation, "bench/docs", &docs);
    // The repository as a webhook or the listing would describe it (read with a token of the
    // parent's own, which is not the shared one).
    let lookup = GithubClient::new(&gh.app_config(installation)).expect("client");
    let repo = lookup.repo("bench", "docs").await.expect("repository");
    gh.set_latency(Duration::from_millis(20));
    let bench = Bench {
        db,
        gh,
        installation,
        repo,
    };

    println!(
        "== an unchanged repository synced by separate processes within one token's life (20 ms per GitHub request)"
    );
    bench
        .run("process 1, first sync (mints and stores the token)", false)
        .await;
    bench.run("process 2, unchanged", false).await;
    bench.run("process 3, unchanged", false).await;
    bench
        .run(
            "process 4, unchanged, with a token of its own (before this change)",
            true,
        )
        .await;
}

impl Bench {
    fn env(&self, own_token: bool) -> BTreeMap<&'static str, String> {
        let repo = &self.repo;
        let mut env = BTreeMap::from_iter(self.gh.app_env(self.installation));
        env.extend([
            ("DATABASE_URL", self.db.url().expose().to_owned()),
            ("GITHUB_RATE_LIMIT_WAIT_BUDGET_SECONDS", "0".to_owned()),
            (
                REPO_ENV,
                json!({
                    "github_id": repo.github_id, "node_id": repo.node_id,
                    "owner": repo.owner, "name": repo.name,
                    "private": repo.private, "archived": repo.archived,
                    "default_branch": repo.default_branch, "html_url": repo.html_url,
                    "description": repo.description,
                })
                .to_string(),
            ),
        ]);
        if own_token {
            env.insert(OWN_TOKEN_ENV, "1".to_owned());
        }
        env
    }

    async fn run(&self, label: &str, own_token: bool) {
        let versions = row_versions(&self.db.pool).await;
        let tuples = tuples_written(&self.db).await;
        let remaining = self.gh.rate_limit_remaining();
        self.gh.reset_log();

        let env = self.env(own_token);
        let exe = std::env::current_exe().expect("own path");
        let output = tokio::task::spawn_blocking(move || {
            Command::new(exe)
                .arg("--child")
                .env_clear()
                .envs(env)
                .output()
        })
        .await
        .expect("child joined")
        .expect("child started");
        assert!(
            output.status.success(),
            "{label}: child failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report: Value =
            serde_json::from_slice(&output.stdout).expect("child prints one JSON line");

        // A closed connection's statistics reach pg_stat shortly after the process exits.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let requests = self.gh.requests();
        let by_kind = requests
            .iter()
            .fold(BTreeMap::<String, usize>::new(), |mut m, r| {
                *m.entry(format!("{} {}", endpoint_name(r.endpoint), r.status))
                    .or_default() += 1;
                m
            })
            .into_iter()
            .map(|(k, n)| if n > 1 { format!("{k} x{n}") } else { k })
            .collect::<Vec<_>>()
            .join(", ");
        println!(
            "{label}: {}, {} GitHub request(s) [{by_kind}], {} token exchange(s), {} rate-limit unit(s), rows written: {} row version(s) changed, {} tuple(s) inserted/updated/deleted; {:.0} ms in the sync",
            report["outcome"].as_str().unwrap_or("?"),
            requests.len(),
            self.gh.count(Endpoint::AccessToken),
            remaining.saturating_sub(self.gh.rate_limit_remaining()),
            changed(&versions, &row_versions(&self.db.pool).await),
            tuples_written(&self.db).await - tuples,
            report["ms"].as_f64().unwrap_or(0.0),
        );
    }
}

fn endpoint_name(endpoint: Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Installation => "installation",
        Endpoint::AccessToken => "access_token",
        Endpoint::InstallationRepos => "listing",
        Endpoint::Repo => "repository",
        Endpoint::Branch => "branch",
        Endpoint::Commits => "commits",
        Endpoint::Tree => "tree",
        Endpoint::Blob => "blob",
        Endpoint::Graphql => "graphql",
        Endpoint::Other => "other",
    }
}

/// Inserts, updates and deletes Postgres counted in this database's tables so far.
async fn tuples_written(db: &TestDb) -> i64 {
    let mut conn = db.pool.acquire().await.expect("connection");
    // A fresh snapshot of the statistics, not the one cached in this transaction.
    sqlx::query("SELECT pg_stat_clear_snapshot()")
        .execute(&mut *conn)
        .await
        .expect("clear snapshot");
    sqlx::query_scalar(
        "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint FROM pg_stat_user_tables",
    )
    .fetch_one(&mut *conn)
    .await
    .expect("table statistics")
}
