//! `bench-images`: the console's image route (issue 31 point 6; not a test, prints figures): time
//! to first byte of a kept image over HTTP, through the whole `syncplane serve` router on a
//! loopback port (routing, token, one query joining the kept reference to its bytes, the answer),
//! for a 40 KB PNG and a 1 MiB one, and the same with `If-None-Match` (a `304`). Seeded straight
//! into Postgres as a first view leaves it (the fetch from GitHub is not what is measured). Needs
//! Postgres at DATABASE_URL (or the tests' default).
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-images -- [requests]` (default 2000)

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use syncplane_cli::serve::{Functions, router};
use syncplane_tests::bench::{Row, ms, pct, print_table};
use syncplane_tests::db::TestDb;

const TOKEN: &str = "bench-token";
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
/// The target a reader notices: an image as quick as the page's own JSON.
const TARGET_P99_MS: f64 = 20.0;

/// A document referencing `images` (name, bytes), each kept as a first view leaves it.
async fn seed(pool: &PgPool, images: &[(&str, Vec<u8>)]) {
    let repo: i64 = sqlx::query_scalar(
        "INSERT INTO repos (github_id, owner, name, html_url, head_commit_sha, sync_status)
         VALUES (1, 'acme', 'gallery', 'https://github.com/acme/gallery', $1, 'ok') RETURNING id",
    )
    .bind(COMMIT)
    .fetch_one(pool)
    .await
    .expect("a repository");
    let source: String = images
        .iter()
        .map(|(name, _)| format!("![{name}](img/{name})\n\n"))
        .collect();
    sqlx::query(
        "INSERT INTO documents (repo_id, path, title, headings, body, blob_sha, size_bytes, source)
         VALUES ($1, 'docs/gallery.md', 'Gallery', '[]', '', $2, $3, $4)",
    )
    .bind(repo)
    .bind(COMMIT)
    .bind(source.len() as i32)
    .bind(&source)
    .execute(pool)
    .await
    .expect("a document");
    for (i, (name, bytes)) in images.iter().enumerate() {
        let sha = format!("{:040x}", i + 1);
        sqlx::query(
            "INSERT INTO image_blobs (blob_sha, content_type, bytes, size_bytes)
             VALUES ($1, 'image/png', $2, $3)",
        )
        .bind(&sha)
        .bind(bytes)
        .bind(bytes.len() as i32)
        .execute(pool)
        .await
        .expect("a kept image");
        sqlx::query(
            "INSERT INTO document_images
                (repo_id, commit_sha, doc_path, src, image_path, outcome, blob_sha)
             VALUES ($1, $2, 'docs/gallery.md', $3, $4, 'found', $5)",
        )
        .bind(repo)
        .bind(COMMIT)
        .bind(format!("img/{name}"))
        .bind(format!("docs/img/{name}"))
        .bind(&sha)
        .execute(pool)
        .await
        .expect("a kept reference");
    }
}

/// Time to the answer's headers (first byte), then the whole body read.
async fn ttfb(http: &reqwest::Client, url: &str, etag: Option<&str>) -> (Duration, u16, usize) {
    let mut req = http.get(url).bearer_auth(TOKEN);
    if let Some(tag) = etag {
        req = req.header("if-none-match", tag);
    }
    let t = Instant::now();
    let resp = req.send().await.expect("an answer");
    let first = t.elapsed();
    let status = resp.status().as_u16();
    let len = resp.bytes().await.map_or(0, |b| b.len());
    (first, status, len)
}

#[tokio::main]
async fn main() {
    let requests: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000);
    let db = TestDb::new().await;
    let small = syncplane_tests::images::png(120, 90, [200, 30, 30]);
    let small = {
        let mut s = small;
        s.resize(40 * 1024, 0);
        s
    };
    let large = syncplane_tests::images::oversized_png(1024 * 1024);
    seed(
        &db.pool,
        &[("small.png", small.clone()), ("large.png", large.clone())],
    )
    .await;
    let ingest = shared::ingest::IngestState {
        pool: db.pool.clone(),
        rate_limit_per_minute: 1_000,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };
    let state = syncplane_tests::bench::single_tenant_state(&db, TOKEN);
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("a loopback port");
    let base = format!("http://{}", listener.local_addr().expect("local address"));
    let app = router(Arc::new(Functions::new(state, ingest)));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let http = reqwest::Client::new();
    let url = |name: &str| {
        format!("{base}/api/repos/acme/gallery/images?path=docs/gallery.md&src=img/{name}")
    };
    let mut rows = vec![Row::info("requests per case", requests)];
    for (name, bytes, etag) in [
        ("small.png", small.len(), None),
        ("large.png", large.len(), None),
        ("small.png", 0, Some(format!("\"{:040x}\"", 1))),
    ] {
        // Warm the pool and the connection first.
        for _ in 0..20 {
            ttfb(&http, &url(name), etag.as_deref()).await;
        }
        let mut times = Vec::with_capacity(requests);
        for _ in 0..requests {
            let (t, status, len) = ttfb(&http, &url(name), etag.as_deref()).await;
            let want = if etag.is_some() { 304 } else { 200 };
            assert_eq!((status, len), (want, bytes), "{name}");
            times.push(t);
        }
        times.sort();
        let label = match &etag {
            Some(_) => "kept 40 KB PNG, If-None-Match (304)".to_owned(),
            None => format!("kept {} KB PNG", bytes / 1024),
        };
        rows.push(Row::info(
            &format!("{label}: time to first byte p50, ms"),
            format!("{:.2}", ms(pct(&times, 0.50))),
        ));
        let p99 = ms(pct(&times, 0.99));
        rows.push(Row::target(
            &format!("{label}: time to first byte p99, ms"),
            format!("{p99:.2}"),
            "<= 20",
            p99 <= TARGET_P99_MS,
        ));
    }
    if !print_table("bench-images (loopback HTTP, one client)", &rows) {
        std::process::exit(1);
    }
}
