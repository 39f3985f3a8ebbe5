//! The happy path and the direct transport's answers (contract "Routes").

use serde_json::json;
use shared::metrics::capture;

use super::support::*;

#[tokio::test]
async fn an_unknown_file_is_generation_0_offset_0() {
    let env = env().await;
    assert_eq!(
        env.file_state().await,
        json!({"generation": 0, "ackedOffset": 0})
    );
}

#[tokio::test]
async fn the_server_verifies_what_was_stored_and_only_then_moves_the_acknowledged_offset() {
    let env = env().await;
    let seg = segment(&lines(100, "a"));
    let r = env.intent(&intent_for(1, 0, &seg)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.data()["uploadId"].as_str().unwrap().to_owned();
    let upload = &r.data()["upload"];
    assert_eq!(upload["method"], "PUT");
    assert_eq!(
        upload["url"],
        format!("/api/agent-sessions/transcripts/uploads/{id}")
    );
    assert_eq!(
        upload["headers"],
        json!({"content-length": seg.compressed.len().to_string(),
               "content-type": "application/octet-stream"})
    );
    assert!(
        chrono::DateTime::parse_from_rfc3339(upload["expiresAt"].as_str().unwrap()).is_ok(),
        "{upload}"
    );
    let key = r.data()["objectKey"].as_str().unwrap().to_owned();
    let target_key = shared::archive::key::target_key(TARGET, SESSION);
    assert_eq!(
        key,
        format!(
            "transcripts/{}/{target_key}/{FILE}/1/00000000000000000000-{}.zst",
            env.org, seg.sha256
        )
    );
    // Stored is not acknowledged.
    let put = env.put(&id, &seg.compressed).await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(put.body, json!({"success": true, "data": {"stored": true}}));
    assert_eq!(std::fs::read(env.dir.join(&key)).unwrap(), seg.compressed);
    assert_eq!(env.segments().await, 0);
    assert_eq!(env.file_state().await["ackedOffset"], 0);

    let (done, metrics) = capture(env.complete(&id)).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let acked = seg.decoded.len() as u64;
    assert_eq!(
        done.body,
        json!({"success": true, "data": {"generation": 1, "ackedOffset": acked}})
    );
    assert_eq!(
        env.file_state().await,
        json!({"generation": 1, "ackedOffset": acked})
    );
    let row: (i64, i64, i64, i64, String) = sqlx::query_as(
        "SELECT start_offset, source_bytes, decoded_bytes, compressed_bytes, object_key
           FROM transcript_segments",
    )
    .fetch_one(&env.db.pool)
    .await
    .unwrap();
    assert_eq!(
        row,
        (
            0,
            acked as i64,
            acked as i64,
            seg.compressed.len() as i64,
            key.clone()
        )
    );
    let metrics = metrics.join("\n");
    for name in [
        "\"TranscriptSegments\":1",
        &format!("\"TranscriptSegmentBytes\":{}", seg.compressed.len()),
        &format!("\"TranscriptDecodedBytes\":{acked}"),
    ] {
        assert!(metrics.contains(name), "{name} not in {metrics}");
    }

    // The next segment continues at the acknowledged offset.
    let next = segment(&lines(10, "b"));
    let r = env.upload(1, acked, &next).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.data()["ackedOffset"], acked + next.decoded.len() as u64);
    let decoded: i64 = env
        .count("SELECT decoded_bytes FROM transcript_files")
        .await;
    assert_eq!(decoded as usize, seg.decoded.len() + next.decoded.len());
}

#[tokio::test]
async fn the_direct_url_keeps_the_requests_stage_in_front_of_the_route() {
    let env = env().await;
    let seg = segment(&lines(3, "a"));
    let mut event = syncplane_tests::apigw::event(
        "POST",
        "/prod/api/agent-sessions/transcripts/intent",
        &[
            ("authorization", &format!("Bearer {}", env.token)),
            ("content-type", "application/json"),
        ],
        Some(&serde_json::to_vec(&intent_for(1, 0, &seg)).unwrap()),
    );
    event["requestContext"]["stage"] = json!("prod");
    let req = syncplane_tests::apigw::from_event(event);
    let r = syncplane_tests::apigw::reply(shared::ingest::handle(&env.state, req).await);
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.data()["uploadId"].as_str().unwrap();
    assert_eq!(
        r.data()["upload"]["url"],
        format!("/prod/api/agent-sessions/transcripts/uploads/{id}")
    );
}

#[tokio::test]
async fn a_replayed_upload_is_harmless_complete_answers_the_same_and_a_put_after_it_stores_nothing_new()
 {
    let env = env().await;
    let seg = segment(&lines(20, "a"));
    let id = env.intent_ok(1, 0, &seg).await;
    assert_eq!(env.put(&id, &seg.compressed).await.status, 200);
    // A retried PUT: the object is already there, success.
    assert_eq!(env.put(&id, &seg.compressed).await.status, 200);
    let first = env.complete(&id).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let again = env.complete(&id).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body, first.body, "idempotent");
    let put = env.put(&id, &seg.compressed).await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(env.segments().await, 1);
    assert_eq!(
        env.stored_files().len(),
        1,
        "one object, no temporary left: {:?}",
        env.stored_files()
    );
    // The same bytes under a fresh intent at the old offset: the file moved on.
    let r = env.intent(&intent_for(1, 0, &seg)).await;
    assert_offset_mismatch(&r, 1, seg.decoded.len() as u64);
}

#[tokio::test]
async fn complete_before_the_bytes_are_stored_is_409_upload_missing() {
    let env = env().await;
    let seg = segment(&lines(5, "a"));
    let id = env.intent_ok(1, 0, &seg).await;
    let r = env.complete(&id).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.code(), Some("upload_missing"));
    assert_eq!(env.segments().await, 0);
    // Then stored and completed.
    assert_eq!(env.put(&id, &seg.compressed).await.status, 200);
    assert_eq!(env.complete(&id).await.status, 200);
}

#[tokio::test]
async fn a_wrong_method_on_a_lane_route_is_405_with_allow_and_an_unknown_lane_path_404() {
    let env = env().await;
    for (method, path, allow) in [
        ("GET", INTENT, "POST"),
        ("POST", STATE, "GET"),
        ("GET", COMPLETE, "POST"),
        ("POST", "/api/agent-sessions/transcripts/uploads/x", "PUT"),
        ("POST", "/api/agent-sessions/transcripts", "GET"),
    ] {
        let r = env
            .send_as(&env.token, method, path, "application/json", b"")
            .await;
        assert_eq!(r.status, 405, "{method} {path}");
        assert_eq!(r.code(), Some("method_not_allowed"));
        assert_eq!(r.headers["allow"], allow);
    }
    let r = env
        .send_as(
            &env.token,
            "GET",
            "/api/agent-sessions/transcripts/nope",
            "application/json",
            b"",
        )
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), Some("not_found"));
    let r = env.put(&uuid::Uuid::new_v4().to_string(), b"x").await;
    assert_eq!(r.status, 404, "an upload that does not exist");
}
