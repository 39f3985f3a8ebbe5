//! The intent's checks in the contract's order, and the bad inputs of issue 20: ids that are
//! paths, caps, a zstd bomb, bytes that are not the intent's, another org's target or upload.

use serde_json::json;
use syncplane_contract::transcripts::Refusal;
use syncplane_tests::apigw::Reply;

use super::support::*;

#[tokio::test]
async fn file_ids_are_names_never_paths() {
    let env = env().await;
    let seg = segment(&lines(2, "a"));
    for bad in [
        "a/b".to_owned(),
        "..".to_owned(),
        "../etc".to_owned(),
        "a\u{0}b".to_owned(),
        ".hidden".to_owned(),
        "a".repeat(257),
    ] {
        let mut body = intent_for(1, 0, &seg);
        body["fileId"] = json!(bad);
        let r = env.intent(&body).await;
        assert_eq!(
            (r.status, r.code()),
            (400, Some("invalid_file_id")),
            "{bad:?}: {}",
            r.body
        );
        let r = env.state_of(TARGET, &bad).await;
        assert_eq!(
            (r.status, r.code()),
            (400, Some("invalid_file_id")),
            "state {bad:?}: {}",
            r.body
        );
    }
    let mut body = intent_for(1, 0, &seg);
    body["fileId"] = json!("a".repeat(256));
    assert_eq!(env.intent(&body).await.status, 200, "256 bytes is a name");
    assert_eq!(
        env.count("SELECT count(*) FROM transcript_uploads").await,
        1
    );
}

#[tokio::test]
async fn segments_over_the_caps_are_413_before_anything_is_recorded() {
    let env = env().await;
    let seg = segment(&lines(2, "a"));
    for (field, over) in [
        ("compressedBytes", 4_194_305u64),
        ("decodedBytes", 16_777_217),
        ("sourceBytes", 16_777_217),
    ] {
        let mut body = intent_for(1, 0, &seg);
        body[field] = json!(over);
        let r = env.intent(&body).await;
        assert_eq!(
            (r.status, r.code()),
            (413, Some("segment_too_large")),
            "{field}: {}",
            r.body
        );
    }
    assert_eq!(
        env.count("SELECT count(*) FROM transcript_uploads").await,
        0
    );
    assert_eq!(env.count("SELECT count(*) FROM transcript_files").await, 0);
    // A body over the cap on the direct PUT.
    let id = env.intent_ok(1, 0, &seg).await;
    let r = env.put(&id, &vec![0u8; 4_194_305]).await;
    assert_eq!(
        (r.status, r.code()),
        (413, Some("segment_too_large")),
        "{}",
        r.body
    );
    assert!(env.stored_files().is_empty());
}

#[tokio::test]
async fn a_zstd_bomb_is_refused_at_complete_and_nothing_is_recorded() {
    let env = env().await;
    // 64 MiB of zeros in a few kilobytes, claimed as 100 decoded bytes.
    let zeros = vec![0u8; 64 << 20];
    let bomb = seg_of(b"x".repeat(100), zstd::encode_all(&zeros[..], 3).unwrap());
    assert!(bomb.compressed.len() < 64 * 1024);
    let id = env.intent_ok(1, 0, &bomb).await;
    assert_eq!(env.put(&id, &bomb.compressed).await.status, 200);
    let r = env.complete(&id).await;
    assert_eq!(
        (r.status, r.code()),
        (400, Some("decoded_length_mismatch")),
        "{}",
        r.body
    );
    assert_eq!(env.segments().await, 0);
    assert_eq!(env.file_state().await["ackedOffset"], 0);
    assert!(
        env.stored_files().is_empty(),
        "the rejected object is deleted"
    );
}

#[tokio::test]
async fn a_checksum_or_length_that_does_not_match_what_was_stored_is_400_and_nothing_recorded() {
    let env = env().await;
    let seg = segment(&lines(30, "a"));
    let id = env.intent_ok(1, 0, &seg).await;
    // The direct PUT checks the body against the intent before storing.
    let mut flipped = seg.compressed.clone();
    flipped[5] ^= 0xff;
    let r = env.put(&id, &flipped).await;
    assert_eq!(
        (r.status, r.code()),
        (400, Some("checksum_mismatch")),
        "{}",
        r.body
    );
    let r = env.put(&id, &seg.compressed[1..]).await;
    assert_eq!(
        (r.status, r.code()),
        (400, Some("length_mismatch")),
        "{}",
        r.body
    );
    assert!(env.stored_files().is_empty());

    // Bytes that reached the store some other way (an S3 server that does not enforce signed
    // checksums): complete reads them back, refuses and deletes them.
    let key: String = sqlx::query_scalar("SELECT object_key FROM transcript_uploads")
        .fetch_one(&env.db.pool)
        .await
        .unwrap();
    let path = env.dir.join(&key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &flipped).unwrap();
    let r = env.complete(&id).await;
    assert_eq!(
        (r.status, r.code()),
        (400, Some("checksum_mismatch")),
        "{}",
        r.body
    );
    assert!(!path.exists(), "the object is deleted");
    std::fs::write(&path, &seg.compressed[1..]).unwrap();
    assert_eq!(env.complete(&id).await.code(), Some("length_mismatch"));
    assert!(!path.exists());
    // Decompressing to another length than decodedBytes.
    let mut body = intent_for(1, 0, &seg);
    body["decodedBytes"] = json!(seg.decoded.len() - 1);
    let r = env.intent(&body).await;
    let id = r.data()["uploadId"].as_str().unwrap().to_owned();
    assert_eq!(env.put(&id, &seg.compressed).await.status, 200);
    assert_eq!(
        env.complete(&id).await.code(),
        Some("decoded_length_mismatch")
    );
    assert_eq!(env.segments().await, 0);
    assert_eq!(env.file_state().await["ackedOffset"], 0);
}

#[tokio::test]
async fn another_orgs_target_is_403_and_another_orgs_upload_404() {
    let env = env().await;
    let seg = segment(&lines(4, "a"));
    let mut body = intent_for(1, 0, &seg);
    body["computeTargetId"] = json!(OTHER_TARGET);
    let r = env.intent(&body).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.code(), Some("target_not_owned"));
    let r = env.state_of(OTHER_TARGET, FILE).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.code(), Some("target_not_owned"));

    let id = env.intent_ok(1, 0, &seg).await;
    let r = env.put_as(&env.other_token, &id, &seg.compressed).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.code(), Some("not_found"));
    assert!(env.stored_files().is_empty());
    assert_eq!(env.put(&id, &seg.compressed).await.status, 200);
    let r = env.complete_as(&env.other_token, &id).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(env.segments().await, 0);
    let r = env.complete_as("not-a-token", &id).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.code(), Some("unauthenticated"));
}

#[tokio::test]
async fn the_first_failing_check_decides_in_the_contracts_order() {
    let env = env().await;
    let seg = segment(&lines(4, "a"));
    // 401 before anything else.
    let r = env.intent_as("nope", &json!({"junk": true})).await;
    assert_eq!(r.status, 401);
    // Parse: 400 (a missing field, a duplicate key, a body over 4,096 bytes is 413).
    let mut body = intent_for(1, 0, &seg);
    body.as_object_mut().unwrap().remove("sha256");
    assert_eq!(env.intent(&body).await.status, 400);
    let dup = br#"{"computeTargetId":"laptop-1","computeTargetId":"laptop-1"}"#;
    let r = env
        .send_as(&env.token, "POST", INTENT, "application/json", dup)
        .await;
    assert_eq!(r.status, 400);
    let mut body = intent_for(1, 0, &seg);
    body["pad"] = json!("x".repeat(4_096));
    assert_eq!(env.intent(&body).await.status, 413);
    // Policy before the gate before ownership before caps before position.
    let mut body = intent_for(9, 9, &seg);
    body["computeTargetId"] = json!(OTHER_TARGET);
    body["compressedBytes"] = json!(4_194_305);
    assert_eq!(env.intent(&body).await.code(), Some("target_not_owned"));
    env.exec("UPDATE orgs SET transcript_gate = false").await;
    assert_eq!(env.intent(&body).await.code(), Some("transcripts_disabled"));
    env.exec("UPDATE org_sync_policies SET session_sync_enabled = false")
        .await;
    assert_eq!(env.intent(&body).await.code(), Some("feature_disabled"));
    env.exec("DELETE FROM org_sync_policies").await;
    assert_eq!(
        env.intent(&body).await.code(),
        Some("feature_disabled"),
        "no policy row is off (fail-closed)"
    );
}

#[tokio::test]
async fn intents_are_rate_limited_per_target_apart_from_the_metadata_lane() {
    let mut env = env().await;
    env.state.transcripts.rate_limit_per_minute = 2;
    env.state.rate_limit_per_minute = 1_000;
    // One calendar minute of the database's clock holds every counted intent (issue 21 point 21).
    let headroom = std::time::Duration::from_secs(20);
    syncplane_tests::db::inside_one_minute_window(&env.db.pool, headroom).await;
    let seg = segment(&lines(4, "a"));
    assert_eq!(env.intent(&intent_for(1, 0, &seg)).await.status, 200);
    assert_eq!(env.intent(&intent_for(1, 0, &seg)).await.status, 200);
    let r = env.intent(&intent_for(1, 0, &seg)).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.code(), Some("rate_limited"));
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    // The metadata lane counts apart and still syncs.
    assert_eq!(env.metadata_sync().await, 200);
    assert_eq!(
        env.count("SELECT coalesce(sum(batches), 0)::int8 FROM ingest_rate_limits")
            .await,
        1
    );
    assert_eq!(
        env.count("SELECT coalesce(sum(requests), 0)::int8 FROM transcript_rate_limits")
            .await,
        3
    );
}

/// Issue 31 point 4: every refusal of the device routes carries its stable code, one request
/// per code, and nothing is recorded for any of them. (The read routes' codes are pinned in
/// `transcripts_read`.)
#[tokio::test]
async fn every_refusal_of_the_device_routes_carries_its_code() {
    let env = env().await;
    let seg = segment(&lines(3, "a"));
    let with = |field: &str, value: serde_json::Value| {
        let mut body = intent_for(1, 0, &seg);
        body[field] = value;
        body
    };
    let raw = |bytes: &[u8]| bytes.to_vec();
    let mut cases: Vec<(&str, Reply)> = Vec::new();
    let send = async |body: Vec<u8>| {
        env.send_as(&env.token, "POST", INTENT, "application/json", &body)
            .await
    };
    cases.push(("invalid_json", send(raw(b"{\"computeTargetId\":")).await));
    cases.push(("invalid_json", send(raw(b"[1, 2]")).await));
    let mut missing = intent_for(1, 0, &seg);
    missing.as_object_mut().unwrap().remove("sha256");
    cases.push(("invalid_request", env.intent(&missing).await));
    cases.push((
        "invalid_request",
        env.intent(&with("offset", json!("0"))).await,
    ));
    cases.push((
        "invalid_compute_target_id",
        env.intent(&with("computeTargetId", json!(""))).await,
    ));
    cases.push((
        "invalid_session_id",
        env.intent(&with("sessionId", json!(""))).await,
    ));
    cases.push((
        "invalid_file_id",
        env.intent(&with("fileId", json!("a/b"))).await,
    ));
    cases.push((
        "invalid_generation",
        env.intent(&with("generation", json!(0))).await,
    ));
    cases.push((
        "invalid_offset",
        env.intent(&with("offset", json!(9_007_199_254_740_992u64)))
            .await,
    ));
    cases.push((
        "invalid_length",
        env.intent(&with("sourceBytes", json!(0))).await,
    ));
    cases.push((
        "invalid_sha256",
        env.intent(&with("sha256", json!("AB".repeat(32)))).await,
    ));
    cases.push(("body_too_large", send(vec![b' '; 4097]).await));
    cases.push((
        "segment_too_large",
        env.intent(&with("compressedBytes", json!(4_194_305))).await,
    ));
    cases.push((
        "invalid_compute_target_id",
        env.send_as(
            &env.token,
            "GET",
            &format!("{STATE}?sessionId=s&fileId=f"),
            "application/json",
            b"",
        )
        .await,
    ));
    cases.push((
        "invalid_session_id",
        env.send_as(
            &env.token,
            "GET",
            &format!("{STATE}?computeTargetId={TARGET}&fileId=f"),
            "application/json",
            b"",
        )
        .await,
    ));
    // Complete's own body.
    let complete =
        |body: &'static [u8]| env.send_as(&env.token, "POST", COMPLETE, "application/json", body);
    cases.push(("invalid_json", complete(b"{").await));
    cases.push(("invalid_request", complete(b"{\"upload\": \"x\"}").await));
    cases.push((
        "invalid_upload_id",
        complete(b"{\"uploadId\": \"nope\"}").await,
    ));
    cases.push((
        "body_too_large",
        env.send_as(
            &env.token,
            "POST",
            COMPLETE,
            "application/json",
            &[b' '; 4097],
        )
        .await,
    ));
    // The bytes: damaged on the way (direct PUT), or stored but not what the intent said.
    let id = env.intent_ok(1, 0, &seg).await;
    let mut flipped = seg.compressed.clone();
    flipped[3] ^= 1;
    cases.push(("checksum_mismatch", env.put(&id, &flipped).await));
    cases.push(("length_mismatch", env.put(&id, &seg.compressed[..2]).await));
    cases.push(("segment_too_large", env.put(&id, &vec![0; 4_194_305]).await));
    let junk = seg_of(b"abc\n".to_vec(), b"not a zstd frame".to_vec());
    let id = env.intent_ok(1, 0, &junk).await;
    assert_eq!(env.put(&id, &junk.compressed).await.status, 200);
    cases.push(("segment_not_zstd", env.complete(&id).await));
    let liar = seg_of(b"abcd\n".to_vec(), seg.compressed.clone());
    let id = env.intent_ok(1, 0, &liar).await;
    assert_eq!(env.put(&id, &liar.compressed).await.status, 200);
    cases.push(("decoded_length_mismatch", env.complete(&id).await));

    for (code, r) in &cases {
        let refusal = Refusal::from_code(code).expect("a contract code");
        assert_eq!(
            (r.status, r.code()),
            (refusal.status(), Some(*code)),
            "{code}: {}",
            r.body
        );
        assert!(!r.body["error"]["message"].as_str().unwrap_or("").is_empty());
    }
    let seen: std::collections::BTreeSet<&str> = cases.iter().map(|(c, _)| *c).collect();
    let device_codes: std::collections::BTreeSet<&str> = Refusal::ALL
        .iter()
        .map(|r| r.code())
        .filter(|c| !READ_ROUTE_CODES.contains(c))
        .collect();
    assert_eq!(seen, device_codes, "one case per code of the device routes");
    assert_eq!(env.segments().await, 0, "nothing recorded");
}

/// The codes only the read routes answer (pinned in `transcripts_read`).
/// The read routes' codes (`invalid_query`: the search's, `transcripts::search`;
/// `export_too_large`: the exports', `transcripts::export`).
const READ_ROUTE_CODES: [&str; 7] = [
    "invalid_parameter",
    "invalid_cursor",
    "invalid_query",
    "file_too_large",
    "line_too_large",
    "listing_too_large",
    "export_too_large",
];
