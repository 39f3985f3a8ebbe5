//! Issue 13 §5, `GET /api/health` on sync-api: version, schema version, database reachable; no
//! token; 200, or 503 with a code and the report; served before the schema check. Every answer is
//! checked against openapi.json.

use std::time::{Duration, Instant};

use serde_json::json;
use shared::app::AppState;
use shared::schema::SchemaGuard;
use syncplane_tests::apigw::{Reply, checked_reply, reply, request};
use syncplane_tests::db::TestDb;

async fn state(database_url: &str) -> AppState {
    let config = shared::config::from_lookup(|k| match k {
        "DATABASE_URL" => Some(database_url.to_owned()),
        "SYNC_API_TOKEN" => Some("health-test-token".to_owned()),
        _ => None,
    })
    .unwrap();
    shared::worker::app_state(&config, 2).await.unwrap()
}

/// `GET /api/health` as the function serves it (health first, then the schema check).
async fn health(st: &AppState) -> Reply {
    let guard = SchemaGuard::default();
    let resp = shared::api::serve(st, &guard, request("GET", "/api/health", &[], None)).await;
    checked_reply("GET", "/api/health", resp)
}

fn build_version() -> i64 {
    shared::schema::check::build_version()
}

#[tokio::test]
async fn health_answers_200_with_the_version_and_schema_version_without_a_token() {
    let db = TestDb::new().await;
    let st = state(db.url().expose()).await;
    let r = health(&st).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["data"],
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "databaseReachable": true,
            "schema": {"database": build_version(), "build": build_version(), "current": true}
        })
    );
    let text = r.body.to_string();
    assert!(
        !text.contains("127.0.0.1") && !text.contains(&db.name),
        "no host, no database name: {text}"
    );
    let post = request("POST", "/api/health", &[], None);
    let r = checked_reply("POST", "/api/health", shared::api::handle(&st, post).await);
    assert_eq!((r.status, r.code()), (405, Some("method_not_allowed")));
}

#[tokio::test]
async fn health_answers_503_schema_behind_while_migrations_have_not_run() {
    let db = TestDb::empty().await;
    let st = state(db.url().expose()).await;
    let r = health(&st).await;
    assert_eq!(
        (r.status, r.code()),
        (503, Some("schema_behind")),
        "{}",
        r.body
    );
    assert_eq!(
        r.body["data"]["schema"],
        json!({"database": 0, "build": build_version(), "current": false})
    );
    assert_eq!(r.body["data"]["databaseReachable"], true);
    // Every other route is behind the schema check.
    let guard = SchemaGuard::default();
    let other = request("GET", "/api/sync/runs", &[], None);
    let r = reply(shared::api::serve(&st, &guard, other).await);
    assert_eq!(r.code(), Some("schema_behind"));

    shared::db::migrate(&db.pool).await.unwrap();
    assert_eq!(health(&st).await.status, 200, "healthy once migrated");
}

#[tokio::test]
async fn health_answers_503_database_unreachable_quickly_when_the_database_does_not_answer() {
    // A port nothing listens on: the pool would retry for its whole acquire timeout.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let st = state(&format!("postgres://app:pw-not-shown@127.0.0.1:{port}/x")).await;
    let started = Instant::now();
    let r = health(&st).await;
    assert!(
        started.elapsed() < shared::api::health::CHECK_TIMEOUT + Duration::from_secs(1),
        "bounded by the health timeout: {:?}",
        started.elapsed()
    );
    assert_eq!(
        (r.status, r.code()),
        (503, Some("database_unreachable")),
        "{}",
        r.body
    );
    assert_eq!(
        r.body["data"],
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "databaseReachable": false,
            "schema": {"database": null, "build": build_version(), "current": false}
        })
    );
    assert!(!r.body.to_string().contains("pw-not-shown"));
}
