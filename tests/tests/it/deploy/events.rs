//! The ingest sample events (`events/ingest-*.json`, for `cargo lambda invoke`) run through the
//! ingest handler exactly as the function receives them. The files carry the public demo device
//! token, provisioned here as the local run provisions it (`syncplane ingest demo`).

use lambda_http::Request;
use lambda_http::request::LambdaRequest;
use serde_json::Value;
use shared::accounts::provision;
use shared::ingest::{IngestState, handle};
use syncplane_tests::db::TestDb;

use super::repo_file;

/// The public demo token of events/ingest-*.json (never issued by a real deployment: issued
/// tokens are `spd_` and 64 hex digits; `ingest demo` refuses to run outside a local run).
const FIXTURE_TOKEN: &str = provision::DEMO_DEVICE_TOKEN;
const FIXTURE_TARGET: &str = provision::DEMO_COMPUTE_TARGET;

fn event(name: &str) -> (Value, Request) {
    let text = std::fs::read_to_string(repo_file(&format!("events/{name}"))).unwrap();
    let raw: Value = serde_json::from_str(&text).unwrap();
    let lambda: LambdaRequest = serde_json::from_str(&text).unwrap();
    (raw, lambda.into())
}

/// What the local demo provisions (`syncplane ingest demo`, run by `scripts/local.sh`): the
/// samples' token and compute target, so each sample answers there as here.
async fn provisioned() -> (TestDb, IngestState) {
    let db = TestDb::new().await;
    assert!(provision::demo(&db.pool).await.unwrap(), "provisioned");
    assert!(!provision::demo(&db.pool).await.unwrap(), "idempotent");
    let state = IngestState {
        pool: db.pool.clone(),
        rate_limit_per_minute: 100,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };
    (db, state)
}

async fn answer(state: &IngestState, req: Request) -> (u16, Value) {
    let resp = handle(state, req).await;
    let status = resp.status().as_u16();
    let body = match resp.body() {
        lambda_http::Body::Text(s) => serde_json::from_str(s).unwrap(),
        lambda_http::Body::Binary(b) => serde_json::from_slice(b).unwrap(),
        _ => Value::Null,
    };
    (status, body)
}

#[tokio::test]
async fn the_hello_event_answers_the_compression_capability() {
    let (_db, state) = provisioned().await;
    let (raw, req) = event("ingest-hello.json");
    assert_eq!(
        raw["headers"]["authorization"],
        format!("Bearer {FIXTURE_TOKEN}")
    );
    let (status, body) = answer(&state, req).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["capabilities"]["agentSessionSyncCompression"],
        true
    );
}

#[tokio::test]
async fn the_sync_event_is_a_gzip_batch_that_stores_its_session() {
    let (db, state) = provisioned().await;
    let (raw, req) = event("ingest-sync.json");
    assert_eq!(raw["isBase64Encoded"], true);
    assert_eq!(raw["headers"]["content-encoding"], "gzip");
    let (status, body) = answer(&state, req).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["synced"], true);
    let (sessions, events): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM agent_sessions WHERE compute_target_id = $1),
                (SELECT count(*) FROM agent_session_events)",
    )
    .bind(FIXTURE_TARGET)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((sessions, events), (1, 2));
}

#[tokio::test]
async fn the_events_are_refused_without_their_provisioned_token() {
    let db = TestDb::new().await;
    let state = IngestState {
        pool: db.pool.clone(),
        rate_limit_per_minute: 100,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };
    for name in ["ingest-hello.json", "ingest-sync.json"] {
        let (_, req) = event(name);
        let (status, _) = answer(&state, req).await;
        assert_eq!(status, 401, "{name}");
    }
}

#[tokio::test]
async fn ingest_demo_refuses_outside_a_local_run() {
    let db = TestDb::new().await;
    let vars = vec![("DATABASE_URL".to_owned(), db.url().expose().to_owned())];
    let out = syncplane_tests::processes::run("syncplane", &["ingest", "demo"], &vars).await;
    assert_ne!(out.status.and_then(|s| s.code()), Some(0), "{out:?}");
    assert!(out.stderr.contains("SYNCPLANE_LOCAL"), "{}", out.stderr);
    let tokens: i64 = sqlx::query_scalar("SELECT count(*) FROM device_tokens")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(tokens, 0);
    let mut local = vars.clone();
    local.push(("SYNCPLANE_LOCAL".to_owned(), "1".to_owned()));
    let out = syncplane_tests::processes::run("syncplane", &["ingest", "demo"], &local).await;
    assert_eq!(out.status.and_then(|s| s.code()), Some(0), "{out:?}");
    let tokens: i64 = sqlx::query_scalar("SELECT count(*) FROM device_tokens")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(tokens, 1);
}
