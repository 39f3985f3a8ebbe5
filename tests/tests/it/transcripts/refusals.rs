//! The intent's checks in the contract's order, and the bad inputs of issue 20: ids that are
//! paths, caps, a zstd bomb, bytes that are not the intent's, another org's target or upload.

use serde_json::json;

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
        assert_eq!(r.status, 400, "{bad:?}: {}", r.body);
        assert_eq!(r.code(), None, "400 carries no code");
        let r = env.state_of(TARGET, &bad).await;
        assert_eq!(r.status, 400, "state {bad:?}: {}", r.body);
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
        assert_eq!(r.status, 413, "{field}: {}", r.body);
        assert_eq!(r.code(), None);
    }
    assert_eq!(
        env.count("SELECT count(*) FROM transcript_uploads").await,
        0
    );
    assert_eq!(env.count("SELECT count(*) FROM transcript_files").await, 0);
    // A body over the cap on the direct PUT.
    let id = env.intent_ok(1, 0, &seg).await;
    let r = env.put(&id, &vec![0u8; 4_194_305]).await;
    assert_eq!(r.status, 413, "{}", r.body);
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
    assert_eq!(r.status, 400, "{}", r.body);
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
    assert_eq!(r.status, 400, "{}", r.body);
    let r = env.put(&id, &seg.compressed[1..]).await;
    assert_eq!(r.status, 400, "{}", r.body);
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
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(!path.exists(), "the object is deleted");
    std::fs::write(&path, &seg.compressed[1..]).unwrap();
    assert_eq!(env.complete(&id).await.status, 400);
    assert!(!path.exists());
    // Decompressing to another length than decodedBytes.
    let mut body = intent_for(1, 0, &seg);
    body["decodedBytes"] = json!(seg.decoded.len() - 1);
    let r = env.intent(&body).await;
    let id = r.data()["uploadId"].as_str().unwrap().to_owned();
    assert_eq!(env.put(&id, &seg.compressed).await.status, 200);
    assert_eq!(env.complete(&id).await.status, 400);
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
