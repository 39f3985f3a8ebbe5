//! The ingest sample events (`events/ingest-*.json`, for `cargo lambda invoke`) run through the
//! ingest handler exactly as the function receives them. The files carry a test-only device
//! token, provisioned here by its hash like any issued token.

use lambda_http::Request;
use lambda_http::request::LambdaRequest;
use serde_json::Value;
use shared::ingest::auth::token_hash;
use shared::ingest::provision;
use shared::ingest::{IngestState, handle};
use syncplane_tests::db::TestDb;

use super::repo_file;

/// The documented test-only token of events/ingest-*.json (never issued by a real deployment:
/// issued tokens are `spd_` and 64 hex digits).
const FIXTURE_TOKEN: &str = "spd_events_fixture_test_only_0000000000000000000000000000000000000";
const FIXTURE_TARGET: &str = "laptop-1";

fn event(name: &str) -> (Value, Request) {
    let text = std::fs::read_to_string(repo_file(&format!("events/{name}"))).unwrap();
    let raw: Value = serde_json::from_str(&text).unwrap();
    let lambda: LambdaRequest = serde_json::from_str(&text).unwrap();
    (raw, lambda.into())
}

/// An org, a user owning the fixture's compute target, and the fixture's token.
async fn provisioned() -> (TestDb, IngestState) {
    let db = TestDb::new().await;
    let (org, user) = syncplane_tests::provisioned::acme_and_ada(&db.pool).await;
    provision::create_compute_target(&db.pool, user, FIXTURE_TARGET)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO device_tokens (token_hash, user_id, org_id, label) VALUES ($1, $2, $3, 'events fixture')",
    )
    .bind(token_hash(FIXTURE_TOKEN).as_slice())
    .bind(user)
    .bind(org)
    .execute(&db.pool)
    .await
    .unwrap();
    let state = IngestState {
        pool: db.pool.clone(),
        rate_limit_per_minute: 100,
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
    };
    for name in ["ingest-hello.json", "ingest-sync.json"] {
        let (_, req) = event(name);
        let (status, _) = answer(&state, req).await;
        assert_eq!(status, 401, "{name}");
    }
}
