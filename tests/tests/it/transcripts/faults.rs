//! Faults: an intent past its time, the policy or a gate switched off mid-upload, the store
//! unreachable.

use serde_json::json;

use super::support::*;

#[tokio::test]
async fn an_intent_past_its_time_that_was_never_completed_is_410_upload_expired() {
    let env = env().await;
    let seg = segment(&lines(8, "a"));
    let id = env.intent_ok(1, 0, &seg).await;
    env.exec("UPDATE transcript_uploads SET expires_at = now() - interval '1 second'")
        .await;
    let r = env.put(&id, &seg.compressed).await;
    assert_eq!(r.status, 410, "{}", r.body);
    assert_eq!(r.code(), Some("upload_expired"));
    assert!(env.stored_files().is_empty());
    let r = env.complete(&id).await;
    assert_eq!(r.status, 410, "{}", r.body);
    assert_eq!(r.code(), Some("upload_expired"));
    assert_eq!(env.segments().await, 0);
    // A fresh intent goes through.
    assert_eq!(env.upload(1, 0, &seg).await.status, 200);
}

#[tokio::test]
async fn switched_off_mid_upload_complete_is_403_and_nothing_recorded() {
    for (off, on, code) in [
        (
            "UPDATE org_sync_policies SET session_sync_enabled = false",
            "UPDATE org_sync_policies SET session_sync_enabled = true",
            "feature_disabled",
        ),
        (
            "UPDATE orgs SET transcript_gate = false",
            "UPDATE orgs SET transcript_gate = true",
            "transcripts_disabled",
        ),
        (
            "UPDATE feature_flags SET enabled = false WHERE name = 'agent_transcript_sync'",
            "UPDATE feature_flags SET enabled = true WHERE name = 'agent_transcript_sync'",
            "transcripts_disabled",
        ),
    ] {
        let env = env().await;
        let seg = segment(&lines(8, "a"));
        let id = env.intent_ok(1, 0, &seg).await;
        assert_eq!(env.put(&id, &seg.compressed).await.status, 200);
        env.exec(off).await;
        let r = env.complete(&id).await;
        assert_eq!(r.status, 403, "{off}: {}", r.body);
        assert_eq!(r.code(), Some(code), "{off}");
        assert_eq!(env.segments().await, 0, "{off}");
        assert_eq!(env.file_state().await["ackedOffset"], 0);
        // Switched on again, the same upload completes.
        env.exec(on).await;
        assert_eq!(env.complete(&id).await.status, 200, "{on}");
    }
}

#[tokio::test]
async fn a_missing_global_flag_row_is_off() {
    let env = env().await;
    env.exec("DELETE FROM feature_flags WHERE name = 'agent_transcript_sync'")
        .await;
    let r = env.intent(&intent_for(1, 0, &segment(b"{}\n"))).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.code(), Some("transcripts_disabled"));
}

#[tokio::test]
async fn a_store_that_does_not_answer_is_503_store_unavailable_and_the_metadata_lane_still_syncs() {
    let env = env().await;
    let seg = segment(&lines(8, "a"));
    // Intent while the store works; then the data directory goes away.
    let id = env.intent_ok(1, 0, &seg).await;
    std::fs::remove_dir_all(&env.dir).unwrap();
    let r = env.put(&id, &seg.compressed).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.code(), Some("store_unavailable"));
    let r = env.complete(&id).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.code(), Some("store_unavailable"));
    let r = env.intent(&intent_for(1, 0, &seg)).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.code(), Some("store_unavailable"));
    assert_eq!(env.segments().await, 0);
    assert_eq!(
        env.file_state().await,
        json!({"generation": 1, "ackedOffset": 0}),
        "the state route needs no store"
    );
    assert_eq!(
        env.metadata_sync().await,
        200,
        "the metadata lane is not affected"
    );
    // The store back: the same upload goes through.
    std::fs::create_dir_all(&env.dir).unwrap();
    assert_eq!(env.put(&id, &seg.compressed).await.status, 200);
    assert_eq!(env.complete(&id).await.status, 200);
}
