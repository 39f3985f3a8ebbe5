//! Issue 21 point 4: a database that does not answer is 503 `database_unreachable` (with
//! `Retry-After`) within seconds on every HTTP surface, as `GET /api/health` already said, never
//! a 500 after the pool's long wait. Both places that can meet it: the schema check (the first
//! request of a function) and a handler's own query (once the schema was found current). The
//! pools are the functions' own (`shared::db`, bounded by `ACQUIRE_TIMEOUT`), pointed at a
//! loopback port nothing listens on. Every answer is checked against openapi.json.

use std::time::{Duration, Instant};

use shared::app::AppState;
use shared::config::Secret;
use shared::ingest::IngestState;
use shared::schema::SchemaGuard;
use syncplane_tests::apigw::{Reply, checked_reply, request};

const PASSWORD: &str = "pw-not-shown";

/// A Postgres URL on a loopback port nothing listens on.
fn closed_port_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("postgres://app:{PASSWORD}@127.0.0.1:{port}/x")
}

/// "Within a few seconds": the pool's acquire timeout and a margin for a loaded machine.
fn few_seconds() -> Duration {
    shared::db::ACQUIRE_TIMEOUT + Duration::from_secs(2)
}

async fn app_state(url: &str) -> AppState {
    let config = shared::config::from_lookup(|k| match k {
        "DATABASE_URL" => Some(url.to_owned()),
        "SYNC_API_TOKEN" => Some("unreachable-test-token".to_owned()),
        "GITHUB_WEBHOOK_SECRET" => Some("unreachable-test-secret".to_owned()),
        _ => None,
    })
    .unwrap();
    shared::worker::app_state(&config, shared::db::DEFAULT_POOL_SIZE)
        .await
        .unwrap()
}

fn ingest_state(url: &str) -> IngestState {
    IngestState {
        pool: shared::db::lazy_pool(&Secret::new(url), shared::db::DEFAULT_POOL_SIZE).unwrap(),
        rate_limit_per_minute: 1000,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    }
}

/// The answer was 503 `database_unreachable` with `Retry-After`, within a few seconds of
/// `started`, and names no secret.
fn assert_unreachable(what: &str, r: &Reply, started: Instant) {
    let took = started.elapsed();
    assert!(took < few_seconds(), "{what}: answered after {took:?}");
    assert_eq!(
        (r.status, r.code()),
        (503, Some("database_unreachable")),
        "{what}: {}",
        r.body
    );
    assert_eq!(
        r.headers.get("retry-after").and_then(|v| v.to_str().ok()),
        Some("5"),
        "{what}"
    );
    assert!(!r.body.to_string().contains(PASSWORD), "{what}: {}", r.body);
}

#[tokio::test]
async fn the_sync_api_answers_503_database_unreachable_within_seconds_when_the_database_does_not_answer()
 {
    let st = app_state(&closed_port_url()).await;
    let repos = || {
        request(
            "GET",
            "/api/repos",
            &[("authorization", "Bearer unreachable-test-token")],
            None,
        )
    };
    // The function's first request: the schema check meets the database first.
    let started = Instant::now();
    let guard = SchemaGuard::default();
    let resp = shared::api::serve(&st, &guard, repos()).await;
    assert_unreachable(
        "schema check",
        &checked_reply("GET", "/api/repos", resp),
        started,
    );
    // Later (the schema found current before the outage): the handler's own query meets it.
    let started = Instant::now();
    let resp = shared::api::handle(&st, repos()).await;
    assert_unreachable(
        "handler",
        &checked_reply("GET", "/api/repos", resp),
        started,
    );
}

#[tokio::test]
async fn the_agent_hello_answers_503_database_unreachable_within_seconds_when_the_database_does_not_answer()
 {
    let state = ingest_state(&closed_port_url());
    let hello = || {
        request(
            "GET",
            "/api/agent-sessions/hello",
            &[("authorization", "Bearer spd_any-device-token")],
            None,
        )
    };
    let started = Instant::now();
    let guard = SchemaGuard::default();
    let resp = shared::ingest::serve(&state, &guard, hello()).await;
    assert_unreachable(
        "schema check",
        &checked_reply("GET", "/api/agent-sessions/hello", resp),
        started,
    );
    let started = Instant::now();
    let resp = shared::ingest::handle(&state, hello()).await;
    assert_unreachable(
        "handler",
        &checked_reply("GET", "/api/agent-sessions/hello", resp),
        started,
    );
}

#[tokio::test]
async fn the_webhook_answers_503_database_unreachable_within_seconds_when_the_database_does_not_answer()
 {
    let st = app_state(&closed_port_url()).await;
    let started = Instant::now();
    let ping = request(
        "POST",
        "/github/webhook",
        &[
            ("x-github-event", "ping"),
            ("content-type", "application/json"),
        ],
        Some(b"{}"),
    );
    let resp = shared::webhook::serve(&st, &SchemaGuard::default(), ping).await;
    assert_unreachable(
        "schema check",
        &checked_reply("POST", "/github/webhook", resp),
        started,
    );
}
