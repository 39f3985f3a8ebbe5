//! Routes, the hello-ack, and contract steps 1, 3, 4, 6 and 7 (who may sync, how often).

use serde_json::json;
use shared::accounts::provision::{self, NewOrg};
use shared::accounts::tokens::{self, TokenKind};

use super::support::*;

const T: &str = "2026-01-01T00:00:00Z";

fn one() -> serde_json::Value {
    batch(vec![session("s1", "r1", T)])
}

fn org(name: &str, sync_policy: Option<bool>, feature_gate: bool) -> NewOrg<'_> {
    NewOrg {
        name,
        sync_policy,
        feature_gate,
        frustration_opt_in: false,
    }
}

#[tokio::test]
async fn hello_ack_body_is_exactly_the_contract() {
    let env = env().await;
    let auth = env.bearer();
    let r = send(
        &env,
        apigw(
            "GET",
            "/api/agent-sessions/hello",
            &[("authorization", &auth)],
            b"",
        ),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        json!({"success": true, "data": {"schemaVersion": 2,
            "capabilities": {"agentSessionSyncCompression": true, "agentTranscriptUpload": "direct"},
            "limits": {"maxSessionsPerBatch": 200, "maxWireBytes": 262144, "maxDecodedBytes": 4194304,
                       "maxSegmentBytes": 4194304, "maxSegmentDecodedBytes": 16777216}}})
    );
    let r = send(&env, apigw("GET", "/api/agent-sessions/hello", &[], b"")).await;
    assert_eq!(r.status, 401, "hello needs the device token too");
}

#[tokio::test]
async fn success_body_is_exactly_synced_true() {
    let env = env().await;
    let r = env.post(&one()).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, json!({"success": true, "data": {"synced": true}}));
}

#[tokio::test]
async fn unknown_route_is_404_and_wrong_method_405_in_the_envelope() {
    let env = env().await;
    let auth = env.bearer();
    let r = send(
        &env,
        apigw("GET", "/api/nope", &[("authorization", &auth)], b""),
    )
    .await;
    assert_eq!((r.status, r.body["success"].clone()), (404, json!(false)));
    let r = send(
        &env,
        apigw(
            "GET",
            "/api/agent-sessions/sync",
            &[("authorization", &auth)],
            b"",
        ),
    )
    .await;
    assert_eq!(r.status, 405);
    assert_eq!(r.headers["allow"], "POST");
    let r = send(
        &env,
        apigw(
            "POST",
            "/api/agent-sessions/hello",
            &[("authorization", &auth)],
            b"",
        ),
    )
    .await;
    assert_eq!(r.status, 405);
}

#[tokio::test]
async fn missing_unknown_or_revoked_token_is_401() {
    let env = env().await;
    let body = serde_json::to_vec(&one()).unwrap();
    let path = "/api/agent-sessions/sync";
    let r = send(&env, apigw("POST", path, &[], &body)).await;
    assert_eq!(r.status, 401);
    let r = send(
        &env,
        apigw(
            "POST",
            path,
            &[("authorization", "Bearer spd_unknown")],
            &body,
        ),
    )
    .await;
    assert_eq!(r.status, 401);
    let r = send(
        &env,
        apigw(
            "POST",
            path,
            &[("authorization", &format!("Basic {}", env.token))],
            &body,
        ),
    )
    .await;
    assert_eq!(r.status, 401);
    // The scheme is case-insensitive.
    let r = send(
        &env,
        apigw(
            "POST",
            path,
            &[("authorization", &format!("bEaReR {}", env.token))],
            &body,
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);

    assert!(
        tokens::revoke(&env.db.pool, TokenKind::Device, env.token_id)
            .await
            .unwrap()
    );
    let (sessions, _) = env.written().await;
    let mut doc = one();
    doc["sessions"][0]["sessionId"] = json!("s2");
    let r = env.post(&doc).await;
    assert_eq!(r.status, 401);
    assert_eq!(
        env.written().await.0,
        sessions,
        "nothing written after revocation"
    );
}

#[tokio::test]
async fn only_the_sha256_of_a_token_is_stored() {
    let env = env().await;
    let stored: Vec<u8> = sqlx::query_scalar("SELECT token_hash FROM device_tokens WHERE id = $1")
        .bind(env.token_id)
        .fetch_one(&env.db.pool)
        .await
        .unwrap();
    assert_eq!(
        stored,
        shared::accounts::tokens::token_hash(&env.token).to_vec()
    );
    let dump: String = sqlx::query_scalar("SELECT string_agg(t::text, '') FROM device_tokens t")
        .fetch_one(&env.db.pool)
        .await
        .unwrap();
    assert!(
        !dump.contains(&env.token[4..]),
        "the token itself is nowhere"
    );
}

#[tokio::test]
async fn another_users_target_is_403_target_not_owned_and_not_counted() {
    let env = env().await;
    let other = provision::create_user(&env.db.pool, env.org, "bob")
        .await
        .unwrap();
    provision::create_compute_target(&env.db.pool, other, "bobs-box")
        .await
        .unwrap();
    let mut doc = one();
    doc["computeTargetId"] = json!("bobs-box");
    for _ in 0..3 {
        let r = env.post(&doc).await;
        assert_eq!((r.status, r.code()), (403, Some("target_not_owned")));
    }
    doc["computeTargetId"] = json!("nobody-has-this");
    let r = env.post(&doc).await;
    assert_eq!((r.status, r.code()), (403, Some("target_not_owned")));
    // A NUL character can be in no stored id: not owned, not a database failure.
    doc["computeTargetId"] = json!("bobs\u{0}box");
    let r = env.post(&doc).await;
    assert_eq!((r.status, r.code()), (403, Some("target_not_owned")));
    assert_eq!(
        env.counted("bobs-box").await,
        0,
        "refusals at step 3 are not counted"
    );
    assert_eq!(env.written().await, (0, 0));
}

/// Time a rate-limit test needs inside one calendar minute: the counted batches all fall in one
/// window (issue 21 point 21: the minute used to turn mid-test under load).
const WINDOW_HEADROOM: std::time::Duration = std::time::Duration::from_secs(20);

#[tokio::test]
async fn rate_limit_is_429_with_retry_after_after_n_batches_per_target() {
    let env = env_with(org("acme", Some(true), true), 3).await;
    syncplane_tests::db::inside_one_minute_window(&env.db.pool, WINDOW_HEADROOM).await;
    // A batch refused at step 5 still counts: it reached step 4.
    let mut bad = one();
    bad["schemaVersion"] = json!(1);
    assert_eq!(env.post(&bad).await.status, 400);
    for i in 0..2 {
        let r = env
            .post(&batch(vec![session(&format!("s{i}"), "r", T)]))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let r = env.post(&batch(vec![session("s9", "r", T)])).await;
    assert_eq!((r.status, r.code()), (429, Some("rate_limited")));
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(env.counted(TARGET).await, 4);
    assert_eq!(env.written().await.0, 2, "the refused batch wrote nothing");
    // Unauthenticated requests are not counted either.
    let body = serde_json::to_vec(&one()).unwrap();
    send(&env, apigw("POST", "/api/agent-sessions/sync", &[], &body)).await;
    assert_eq!(env.counted(TARGET).await, 4);
}

#[tokio::test]
async fn the_rate_limit_state_is_shared_by_every_instance() {
    // Two handler states over one database stand for two Lambda execution environments.
    let env = env_with(org("acme", Some(true), true), 2).await;
    syncplane_tests::db::inside_one_minute_window(&env.db.pool, WINDOW_HEADROOM).await;
    let other_instance = shared::ingest::IngestState {
        pool: sqlx::PgPool::connect(env.db.url().expose()).await.unwrap(),
        rate_limit_per_minute: 2,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };
    assert_eq!(env.post(&one()).await.status, 200);
    let auth = env.bearer();
    let req = apigw(
        "POST",
        "/api/agent-sessions/sync",
        &[("authorization", &auth)],
        &serde_json::to_vec(&one()).unwrap(),
    );
    assert_eq!(
        shared::ingest::handle(&other_instance, req).await.status(),
        200
    );
    assert_eq!(env.post(&one()).await.status, 429);
}

#[tokio::test]
async fn an_org_with_no_sync_policy_is_403_feature_disabled() {
    let env = env_with(org("acme", None, true), 100).await;
    let r = env.post(&one()).await;
    assert_eq!((r.status, r.code()), (403, Some("feature_disabled")));
    assert_eq!(env.written().await, (0, 0));
    // The policy is checked after the schema parse.
    let mut bad = one();
    bad["sessionCount"] = json!(5);
    assert_eq!(env.post(&bad).await.status, 400);
}

#[tokio::test]
async fn an_org_whose_policy_is_off_is_403_feature_disabled() {
    let env = env_with(org("acme", Some(false), true), 100).await;
    let r = env.post(&one()).await;
    assert_eq!((r.status, r.code()), (403, Some("feature_disabled")));
    assert_eq!(env.written().await, (0, 0));
}

#[tokio::test]
async fn the_org_feature_gate_off_is_403_feature_disabled() {
    let env = env_with(org("acme", Some(true), false), 100).await;
    let r = env.post(&one()).await;
    assert_eq!((r.status, r.code()), (403, Some("feature_disabled")));
    assert_eq!(env.written().await, (0, 0));
}

#[tokio::test]
async fn the_global_feature_gate_off_is_403_feature_disabled() {
    let env = env().await;
    provision::set_global_feature(&env.db.pool, provision::GlobalFeature::Sessions, false)
        .await
        .unwrap();
    let r = env.post(&one()).await;
    assert_eq!((r.status, r.code()), (403, Some("feature_disabled")));
    assert_eq!(env.written().await, (0, 0));
    provision::set_global_feature(&env.db.pool, provision::GlobalFeature::Sessions, true)
        .await
        .unwrap();
    assert_eq!(env.post(&one()).await.status, 200);
}

#[tokio::test]
async fn api_gateway_named_stage_prefix_still_routes() {
    let env = env().await;
    let auth = env.bearer();
    let mut req = apigw(
        "GET",
        "/prod/api/agent-sessions/hello",
        &[("authorization", &auth)],
        b"",
    );
    // Rebuild with a named stage, as API Gateway sends it.
    if let Some(lambda_http::request::RequestContext::ApiGatewayV2(ctx)) =
        req.extensions_mut()
            .get_mut::<lambda_http::request::RequestContext>()
    {
        ctx.stage = Some("prod".into());
    }
    assert_eq!(send(&env, req).await.status, 200);
}

/// A server at its limit of batches in flight (`INGEST_MAX_IN_FLIGHT`) answers the next batch
/// `429 server_busy` with `Retry-After: 1` after a short wait: nothing read, counted or written.
/// Once a slot frees up the same batch goes in.
#[tokio::test]
async fn a_batch_past_the_in_flight_limit_is_429_server_busy_and_nothing_is_counted() {
    let mut env = env_with(org("acme", Some(true), true), 100).await;
    let admission = shared::ingest::Admission::limited(1);
    env.state.admission = admission.clone();
    let held = admission.enter().await.expect("the only slot");
    let r = env.post(&one()).await;
    assert_eq!((r.status, r.code()), (429, Some("server_busy")));
    assert_eq!(r.headers["retry-after"].to_str().unwrap(), "1");
    assert_eq!(
        env.counted(TARGET).await,
        0,
        "not counted by the rate limit"
    );
    assert_eq!(env.written().await.0, 0, "nothing written");
    // Hello is not a batch: it never waits for a slot.
    let hello = send(
        &env,
        apigw(
            "GET",
            "/api/agent-sessions/hello",
            &[("authorization", &env.bearer())],
            b"",
        ),
    )
    .await;
    assert_eq!(hello.status, 200);
    drop(held);
    let r = env.post(&one()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(env.written().await.0, 1);
}
