//! `bench-read`: figures for the read API (issue 11 "Targets"; not a test, prints numbers).
//!
//! 100,000 generated markdown documents across 1,000 repositories (bodies of Zipf-distributed
//! words, log-normal sizes around 4 KB, a few headings each; a README and CODEOWNERS per
//! repository), bulk-inserted with `unnest`. Then, through the sync-api handler (routing, token,
//! SQL, JSON): search p50/p99 for 1- to 3-word queries, document fetch p99, the search plan
//! (`EXPLAIN ANALYZE`), and `GET /api/repos` paged over 10,000 repositories (first, middle and
//! last page). Needs Postgres at DATABASE_URL.
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-read -- [queries]`

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use shared::api::read::search::Tier;
use shared::app::AppState;
use sqlx::PgPool;
use syncplane_tests::apigw::{reply, request};
use syncplane_tests::db::TestDb;

const REPOS: usize = 1_000;
const DOCS_PER_REPO: usize = 100;
const LISTING_REPOS: usize = 10_000;
const VOCABULARY: usize = 6_000;
const TOKEN: &str = "bench-token";
/// Common English words the generator mixes in (the english configuration drops them).
const STOP: &[&str] = &[
    "the", "a", "to", "of", "and", "in", "is", "for", "it", "with", "on", "you", "this", "that",
    "be", "as", "by", "or", "are", "can",
];

/// Pronounceable words: syllables over a fixed seed, so every run builds the same corpus.
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
    let mut words: Vec<String> = words.into_iter().collect();
    // Shuffle so rank is independent of spelling.
    for i in (1..words.len()).rev() {
        words.swap(i, rng.random_range(0..=i));
    }
    words
}

/// Zipf(s = 1.0) sampler over ranks 0..n by inverse CDF on precomputed cumulative weights.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: usize) -> Self {
        let mut acc = 0.0;
        Self(
            (1..=n)
                .map(|k| {
                    acc += 1.0 / k as f64;
                    acc
                })
                .collect(),
        )
    }
    fn sample(&self, rng: &mut StdRng) -> usize {
        let total = *self.0.last().unwrap_or(&1.0);
        let x = rng.random::<f64>() * total;
        self.0.partition_point(|c| *c < x).min(self.0.len() - 1)
    }
}

struct Corpus {
    words: Vec<String>,
    zipf: Zipf,
}

impl Corpus {
    fn word(&self, rng: &mut StdRng) -> &str {
        if rng.random_bool(0.3) {
            STOP[rng.random_range(0..STOP.len())]
        } else {
            &self.words[self.zipf.sample(rng)]
        }
    }
    fn phrase(&self, rng: &mut StdRng, n: usize) -> String {
        (0..n).map(|_| self.word(rng)).collect::<Vec<_>>().join(" ")
    }
    /// Body size: log-normal, median about 4 KB, clamped to 300 B .. 120 KB.
    fn body(&self, rng: &mut StdRng) -> String {
        let normal: f64 = (0..12).map(|_| rng.random::<f64>()).sum::<f64>() - 6.0;
        let bytes = (4_000.0 * (0.9 * normal).exp()).clamp(300.0, 120_000.0) as usize;
        let mut s = String::with_capacity(bytes + 64);
        while s.len() < bytes {
            let n = rng.random_range(6..20);
            s.push_str(&self.phrase(rng, n));
            s.push_str(". ");
        }
        s
    }
}

struct Doc {
    path: String,
    title: String,
    headings: Value,
    body: String,
}

fn document(c: &Corpus, rng: &mut StdRng, i: usize) -> Doc {
    let words = rng.random_range(2..6);
    let title = c.phrase(rng, words);
    let headings: Vec<Value> = (0..rng.random_range(2..8))
        .map(|h| {
            let words = rng.random_range(2..5);
            let text = c.phrase(rng, words);
            json!({"level": 2, "text": text, "anchor": format!("{}-{h}", text.replace(' ', "-"))})
        })
        .collect();
    Doc {
        path: format!("docs/section-{}/page-{i:03}.md", i % 7),
        title,
        headings: Value::Array(headings),
        body: c.body(rng),
    }
}

fn blob_sha(rng: &mut StdRng) -> String {
    (0..40)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}

async fn insert_repos(pool: &PgPool, from: usize, to: usize, prefix: &str) -> Vec<i64> {
    let ids: Vec<i64> = (from..to).map(|i| 1_000_000 + i as i64).collect();
    let owners: Vec<String> = (from..to)
        .map(|i| format!("{prefix}{:02}", i % 50))
        .collect();
    let names: Vec<String> = (from..to).map(|i| format!("repo-{i:05}")).collect();
    sqlx::query_scalar(
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
    .expect("insert repositories")
}

async fn insert_docs(pool: &PgPool, repo_ids: &[i64], docs: Vec<Doc>, rng: &mut StdRng) {
    let n = docs.len();
    let shas: Vec<String> = (0..n).map(|_| blob_sha(rng)).collect();
    let sizes: Vec<i32> = docs.iter().map(|d| d.body.len() as i32).collect();
    let (mut paths, mut titles, mut headings, mut bodies) = (vec![], vec![], vec![], vec![]);
    for d in docs {
        paths.push(d.path);
        titles.push(d.title);
        headings.push(d.headings);
        bodies.push(d.body);
    }
    sqlx::query(
        "INSERT INTO documents (repo_id, path, blob_sha, size_bytes, title, headings, body)
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[],
                              $6::jsonb[], $7::text[])",
    )
    .bind(repo_ids)
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

async fn seed(pool: &PgPool, c: &Corpus, rng: &mut StdRng) -> Vec<(String, String)> {
    let start = Instant::now();
    let repo_ids = insert_repos(pool, 0, REPOS, "org").await;
    let mut fetchable = Vec::new();
    for chunk in repo_ids.chunks(10) {
        let mut ids = Vec::new();
        let mut docs = Vec::new();
        for id in chunk {
            for i in 0..DOCS_PER_REPO {
                ids.push(*id);
                docs.push(document(c, rng, i));
            }
        }
        fetchable.push((chunk[0], docs[0].path.clone()));
        insert_docs(pool, &ids, docs, rng).await;
    }
    sqlx::query(
        "INSERT INTO readmes (repo_id, path, blob_sha, size_bytes, title, body)
         SELECT id, 'README.md', repeat('b', 40), 100, name, 'Read me first: ' || name
         FROM repos",
    )
    .execute(pool)
    .await
    .expect("insert readmes");
    sqlx::query(
        "INSERT INTO code_owners (repo_id, line, pattern, owners)
         SELECT id, l, p, o FROM repos,
           (VALUES (1, '*', ARRAY['@acme/all']), (2, '/docs/section-1/', ARRAY['@acme/one']),
                   (3, '*.md', ARRAY['@acme/writers']), (4, '/docs/section-2/', ARRAY[]::text[]))
           AS r(l, p, o)",
    )
    .execute(pool)
    .await
    .expect("insert code owners");
    sqlx::query("ANALYZE").execute(pool).await.expect("analyze");
    println!(
        "seeded {} documents in {REPOS} repositories in {:.1} s",
        REPOS * DOCS_PER_REPO,
        start.elapsed().as_secs_f64()
    );
    let names: Vec<(i64, String, String)> =
        sqlx::query_as("SELECT id, owner, name FROM repos WHERE id = ANY($1)")
            .bind(fetchable.iter().map(|(id, _)| *id).collect::<Vec<_>>())
            .fetch_all(pool)
            .await
            .expect("names");
    fetchable
        .iter()
        .filter_map(|(id, path)| {
            let (_, o, n) = names.iter().find(|(i, _, _)| i == id)?;
            Some((format!("{o}/{n}"), path.clone()))
        })
        .collect()
}

/// The first document of every tenth repository, as `seed` returns them.
async fn fetchable(pool: &PgPool) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT o.owner || '/' || o.name, d.path
         FROM repos o
         JOIN LATERAL (SELECT path FROM documents WHERE repo_id = o.id ORDER BY id LIMIT 1) d ON true
         WHERE o.id % 10 = (SELECT min(id) FROM repos) % 10 AND o.owner LIKE 'org%'
         ORDER BY o.id",
    )
    .fetch_all(pool)
    .await
    .expect("fetchable documents")
}

fn state(db: &TestDb) -> AppState {
    syncplane_tests::bench::single_tenant_state(db, TOKEN)
}

async fn timed_get(st: &AppState, path: &str) -> (Duration, Value) {
    let auth = format!("Bearer {TOKEN}");
    let req = request("GET", path, &[("authorization", &auth)], None);
    let start = Instant::now();
    let resp = shared::api::handle(st, req).await;
    let took = start.elapsed();
    let r = reply(resp);
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    (took, r.body)
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let queries: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(500);
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "optimised"
    };
    println!("bench-read ({profile} build), {queries} queries");
    let mut rng = StdRng::seed_from_u64(11);
    let corpus = Corpus {
        words: vocabulary(&mut rng),
        zipf: Zipf::new(VOCABULARY),
    };
    // BENCH_READ_DB=name seeds that database once and reuses it on later runs.
    let (db, seeded) = match std::env::var("BENCH_READ_DB") {
        Ok(name) => TestDb::kept(&name).await,
        Err(_) => (TestDb::new().await, false),
    };
    let fetchable = if seeded {
        println!("reusing the seeded database {}", db.name);
        fetchable(&db.pool).await
    } else {
        seed(&db.pool, &corpus, &mut rng).await
    };
    // Queries draw from their own generator, so a reused database sees the same queries.
    let mut rng = StdRng::seed_from_u64(12);
    let st = state(&db);

    // Queries: 1 to 3 words drawn as they occur in the text (frequent words are asked more).
    let mut search_times = Vec::with_capacity(queries);
    let mut hits_total = 0;
    let mut worst: (Duration, String) = (Duration::ZERO, String::new());
    for i in 0..queries + 50 {
        let n = rng.random_range(1..=3);
        let q: Vec<&str> = (0..n)
            .map(|_| &corpus.words[corpus.zipf.sample(&mut rng)][..])
            .collect();
        let q = q.join(" ");
        let (took, body) = timed_get(&st, &format!("/api/search?q={}", q.replace(' ', "+"))).await;
        if i >= 50 {
            search_times.push(took);
            hits_total += body["data"]["hits"].as_array().map_or(0, Vec::len);
            if took > worst.0 {
                worst = (took, q);
            }
        }
    }
    search_times.sort();
    println!(
        "search (handler, 1-3 words, limit 20): p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms ({:?})  \
         mean hits/page {:.1}  [targets: p50 <= 15 ms, p99 <= 50 ms]",
        ms(pct(&search_times, 0.5)),
        ms(pct(&search_times, 0.99)),
        ms(worst.0),
        worst.1,
        hits_total as f64 / queries as f64
    );
    let common = &corpus.words[0];
    let (took, _) = timed_get(&st, &format!("/api/search?q={common}")).await;
    println!(
        "search for the most frequent word {common:?}: {:.2} ms",
        ms(took)
    );

    let mut fetch_times = Vec::new();
    for round in 0..5 {
        for (repo, path) in &fetchable {
            let (took, _) = timed_get(&st, &format!("/api/repos/{repo}/documents/{path}")).await;
            if round > 0 {
                fetch_times.push(took);
            }
        }
    }
    fetch_times.sort();
    println!(
        "document fetch (handler): p50 {:.2} ms  p99 {:.2} ms over {} fetches  [target: p99 <= 10 ms]",
        ms(pct(&fetch_times, 0.5)),
        ms(pct(&fetch_times, 0.99)),
        fetch_times.len()
    );

    for tier in [Tier::Head, Tier::Body] {
        explain(&db.pool, &corpus.words[40], tier).await;
    }
    listing(&db.pool, &st).await;
}

async fn explain(pool: &PgPool, word: &str, tier: Tier) {
    let plan = syncplane_tests::search_plan::explain_search(
        pool,
        "(ANALYZE, BUFFERS)",
        Default::default(),
        tier,
        false,
        word,
    )
    .await
    .expect("explain");
    println!("EXPLAIN ANALYZE of the search for {word:?}, {tier:?} tier:");
    for line in plan {
        println!("  {line}");
    }
}

async fn listing(pool: &PgPool, st: &AppState) {
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM repos")
        .fetch_one(pool)
        .await
        .expect("count repositories");
    if stored < LISTING_REPOS as i64 {
        insert_repos(pool, REPOS, LISTING_REPOS, "team").await;
    }
    sqlx::query("ANALYZE repos")
        .execute(pool)
        .await
        .expect("analyze");
    // Walk every page once to collect the cursors, then time the first, middle and last page.
    let mut urls = vec!["/api/repos?limit=100".to_owned()];
    loop {
        let (_, body) = timed_get(st, urls.last().map_or("", String::as_str)).await;
        match body["data"]["nextCursor"].as_str() {
            Some(c) => urls.push(format!("/api/repos?limit=100&cursor={c}")),
            None => break,
        }
    }
    let n = urls.len();
    let mut medians = Vec::new();
    for url in [&urls[0], &urls[n / 2], &urls[n - 1]] {
        let mut times = Vec::new();
        for _ in 0..21 {
            times.push(timed_get(st, url).await.0);
        }
        times.sort();
        medians.push(pct(&times, 0.5));
    }
    println!(
        "GET /api/repos over {LISTING_REPOS} repositories, {n} pages of 100 (median of 21): \
         first {:.2} ms  middle {:.2} ms  last {:.2} ms  (keyset on repos_listing_idx, no OFFSET)",
        ms(medians[0]),
        ms(medians[1]),
        ms(medians[2])
    );
}
