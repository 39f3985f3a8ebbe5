//! `bench-console`: the web console's search as a reader sees it (issue 22; not a test, prints
//! figures). 100,000 generated documents in 1,000 repositories are bulk-inserted; the whole
//! `syncplane serve` router answers on a loopback port; headless Chromium (chromedriver,
//! `syncplane_tests::browser`) signs in, opens the search page and types each query. The page
//! marks every keystroke (`sp:keystroke`) and, in the animation frame after the hits are in the
//! DOM, `sp:results`; the figure is the time from the last keystroke to that mark, debounce
//! included, read from the Performance API. Also: the page's weight (HTML + CSS + JS bytes) and
//! requests to other origins. Needs Postgres at DATABASE_URL (or the tests' default) and
//! `bash scripts/tools.sh --browser`.
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-console -- [queries]` (default 20)

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use shared::app::AppState;
use sqlx::PgPool;
use syncplane_cli::serve::{Functions, router};
use syncplane_tests::bench::{Row, ms, pct, print_table};
use syncplane_tests::browser::Browser;
use syncplane_tests::db::TestDb;

const REPOS: usize = 1_000;
const DOCS_PER_REPO: usize = 100;
const VOCABULARY: usize = 6_000;
const TOKEN: &str = "bench-token";
/// The target: last keystroke to first results painted, debounce included.
const TARGET_MS: f64 = 300.0;
/// The page's weight budget (HTML + CSS + JS, uncompressed).
const WEIGHT_BUDGET: usize = 100 * 1024;

/// Pronounceable words over a fixed seed: every run builds the same corpus.
fn vocabulary(rng: &mut StdRng) -> Vec<String> {
    const SYL: &[&str] = &[
        "ka", "lo", "mi", "ren", "tor", "sa", "vel", "qui", "dan", "po", "li", "ber", "ne", "sto",
        "gra", "fu", "mon", "ex", "cal", "pri", "zu", "ter", "vo", "sen", "ar", "ly", "in", "dex",
    ];
    let mut words = std::collections::BTreeSet::new();
    while words.len() < VOCABULARY {
        let n = rng.random_range(2..=4);
        let w: String = (0..n)
            .map(|_| SYL[rng.random_range(0..SYL.len())])
            .collect();
        words.insert(w);
    }
    words.into_iter().collect()
}

/// A word, skewed to the first of the vocabulary (a few common words, a long tail).
fn word<'a>(words: &'a [String], rng: &mut StdRng) -> &'a str {
    let x: f64 = rng.random();
    &words[((x * x * x) * words.len() as f64) as usize % words.len()]
}

fn phrase(words: &[String], rng: &mut StdRng, n: usize) -> String {
    (0..n)
        .map(|_| word(words, rng))
        .collect::<Vec<_>>()
        .join(" ")
}

async fn seed(pool: &PgPool, words: &[String], rng: &mut StdRng) {
    let started = Instant::now();
    let ids: Vec<i64> = (0..REPOS).map(|i| 1_000_000 + i as i64).collect();
    let owners: Vec<String> = (0..REPOS).map(|i| format!("org{:02}", i % 50)).collect();
    let names: Vec<String> = (0..REPOS).map(|i| format!("repo-{i:05}")).collect();
    let repo_ids: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO repos (github_id, owner, name, html_url, head_commit_sha, sync_status,
                            last_synced_at, codeowners_path)
         SELECT g, o, n, 'https://github.com/' || o || '/' || n, repeat('a', 40), 'ok', now(),
                '.github/CODEOWNERS'
         FROM unnest($1::bigint[], $2::text[], $3::text[]) AS t(g, o, n)
         RETURNING id",
    )
    .bind(&ids)
    .bind(&owners)
    .bind(&names)
    .fetch_all(pool)
    .await
    .expect("insert repositories");
    for chunk in repo_ids.chunks(10) {
        let (mut repo, mut paths, mut shas, mut sizes) = (vec![], vec![], vec![], vec![]);
        let (mut titles, mut headings, mut bodies) = (vec![], vec![], vec![]);
        for id in chunk {
            for i in 0..DOCS_PER_REPO {
                let mut body = String::new();
                let target = rng.random_range(600..6_000);
                while body.len() < target {
                    let n = rng.random_range(6..20);
                    body.push_str(&phrase(words, rng, n));
                    body.push_str(". ");
                }
                let hs: Vec<Value> = (0..rng.random_range(2..6))
                    .map(|h| {
                        let text = phrase(words, rng, 3);
                        json!({"level": 2, "text": text, "anchor": format!("{}-{h}", text.replace(' ', "-"))})
                    })
                    .collect();
                repo.push(*id);
                paths.push(format!("docs/section-{}/page-{i:03}.md", i % 7));
                shas.push(
                    (0..40)
                        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
                        .collect::<String>(),
                );
                sizes.push(body.len() as i32);
                let n = rng.random_range(2..6);
                titles.push(phrase(words, rng, n));
                headings.push(Value::Array(hs));
                bodies.push(body);
            }
        }
        sqlx::query(
            "INSERT INTO documents (repo_id, path, blob_sha, size_bytes, title, headings, body)
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[],
                                  $6::jsonb[], $7::text[])",
        )
        .bind(&repo)
        .bind(&paths)
        .bind(&shas)
        .bind(&sizes)
        .bind(&titles)
        .bind(&headings)
        .bind(&bodies)
        .execute(pool)
        .await
        .expect("insert documents");
    }
    sqlx::query(
        "INSERT INTO code_owners (repo_id, line, pattern, owners)
         SELECT id, 1, '*', ARRAY['@acme/all'] FROM repos",
    )
    .execute(pool)
    .await
    .expect("insert code owners");
    sqlx::query("ANALYZE").execute(pool).await.expect("analyze");
    println!(
        "seeded {} documents in {REPOS} repositories in {:.1} s",
        REPOS * DOCS_PER_REPO,
        started.elapsed().as_secs_f64()
    );
}

fn state(db: &TestDb) -> AppState {
    syncplane_tests::bench::single_tenant_state(db, TOKEN)
}

/// Type `query` into the empty search box; milliseconds from the last keystroke to the results
/// painted, and how many hits.
async fn one_query(b: &Browser, query: &str) -> (f64, u64) {
    b.js(
        "performance.clearMarks(); const q = document.getElementById('sp-q');
          q.value = ''; q.focus(); return true;",
    )
    .await;
    b.type_into("#sp-q", query).await;
    let q = serde_json::to_string(query).unwrap_or_default();
    let found = format!(
        "performance.getEntriesByName('sp:results').find((m) => m.detail && m.detail.q === {q})"
    );
    b.wait_js(&found).await;
    let v = b
        .js(&format!(
            "const r = {found};
             const keys = performance.getEntriesByName('sp:keystroke')
               .filter((m) => m.startTime <= r.startTime);
             return {{ ms: r.startTime - keys[keys.length - 1].startTime,
                       hits: document.querySelectorAll('#sp-results .hit').length }};"
        ))
        .await;
    (
        v["ms"].as_f64().unwrap_or(f64::NAN),
        v["hits"].as_u64().unwrap_or(0),
    )
}

#[tokio::main]
async fn main() {
    let queries: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let db = TestDb::new().await;
    let mut rng = StdRng::seed_from_u64(22);
    let words = vocabulary(&mut rng);
    seed(&db.pool, &words, &mut rng).await;

    let ingest = shared::ingest::IngestState {
        pool: db.pool.clone(),
        rate_limit_per_minute: 1_000,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("a loopback port");
    let base = format!("http://{}", listener.local_addr().expect("local address"));
    let app = router(Arc::new(Functions::new(state(&db), ingest)));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    // The page's weight, as served.
    let http = reqwest::Client::new();
    let mut weight = 0;
    for path in ["/", "/console/app.js", "/console/app.css"] {
        let bytes = http
            .get(format!("{base}{path}"))
            .send()
            .await
            .expect(path)
            .bytes()
            .await
            .expect(path);
        println!("{path}: {} bytes", bytes.len());
        weight += bytes.len();
    }

    let b = Browser::start().await;
    b.open(&format!("{base}/#/signin")).await;
    b.type_into("#sp-token", TOKEN).await;
    b.click("form.signin button[type=submit]").await;
    b.wait_js("document.querySelector('main').dataset.ready === 'search'")
        .await;
    let load = b.performance("navigation").await;
    let dcl = load
        .first()
        .and_then(|n| n["domContentLoadedEventEnd"].as_f64())
        .unwrap_or(f64::NAN);

    // Warm-up (connection, plan cache), then the measured queries: one to three words of the
    // vocabulary's common head and long tail.
    one_query(&b, &words[0]).await;
    let mut times = Vec::new();
    let mut hits = 0;
    for i in 0..queries {
        let n = 1 + i % 3;
        let query = phrase(&words, &mut rng, n);
        let (t, h) = one_query(&b, &query).await;
        hits += h;
        println!("  {query:<32} {t:>7.1} ms  {h} hits");
        times.push(Duration::from_secs_f64(t.max(0.0) / 1000.0));
    }
    times.sort();
    let other = b.other_origin_requests().await;
    let (p50, p95) = (ms(pct(&times, 0.5)), ms(pct(&times, 0.95)));
    b.close().await;

    let rows = [
        Row::info("documents", REPOS * DOCS_PER_REPO),
        Row::info("queries", queries),
        Row::info("hits shown (all queries)", hits),
        Row::info("search page DOMContentLoaded (ms)", format!("{dcl:.0}")),
        Row::info(
            "last keystroke to results painted, p50 (ms)",
            format!("{p50:.0}"),
        ),
        Row::target(
            "last keystroke to results painted, p95 (ms)",
            format!("{p95:.0}"),
            "<= 300 ms, debounce included",
            p95 <= TARGET_MS,
        ),
        Row::target(
            "page weight HTML+CSS+JS (bytes)",
            weight,
            "<= 100 KB",
            weight <= WEIGHT_BUDGET,
        ),
        Row::check(
            "requests to other origins",
            other.len(),
            "0",
            other.is_empty(),
        ),
    ];
    if !print_table("console search (headless Chromium)", &rows) {
        std::process::exit(1);
    }
}
