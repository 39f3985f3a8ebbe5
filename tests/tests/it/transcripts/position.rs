//! Contract "Identity and offsets": contiguous segments, generations that never go backwards, a
//! transcript rewritten in place.

use serde_json::json;

use super::support::*;

#[tokio::test]
async fn segments_of_one_generation_are_contiguous_without_gap_or_overlap() {
    let env = env().await;
    let first = segment(&lines(10, "a"));
    assert_eq!(env.upload(1, 0, &first).await.status, 200);
    let acked = first.decoded.len() as u64;
    let next = segment(&lines(5, "b"));
    // A gap.
    let r = env.intent(&intent_for(1, acked + 7, &next)).await;
    assert_offset_mismatch(&r, 1, acked);
    // An overlap.
    let r = env.intent(&intent_for(1, acked - 7, &next)).await;
    assert_offset_mismatch(&r, 1, acked);
    assert_eq!(env.segments().await, 1);
    assert_eq!(
        env.count("SELECT count(*) FROM transcript_uploads").await,
        1,
        "a refused intent records nothing"
    );
}

#[tokio::test]
async fn a_file_that_moved_between_intent_and_complete_is_409_and_nothing_recorded() {
    let env = env().await;
    let seg = segment(&lines(10, "a"));
    // Two intents for the same place (a retry after a lost answer); the first one completes.
    let a = env.intent_ok(1, 0, &seg).await;
    let other = segment(&lines(11, "z"));
    let b = env.intent_ok(1, 0, &other).await;
    assert_eq!(env.put(&a, &seg.compressed).await.status, 200);
    assert_eq!(env.put(&b, &other.compressed).await.status, 200);
    assert_eq!(env.complete(&a).await.status, 200);
    let r = env.complete(&b).await;
    assert_offset_mismatch(&r, 1, seg.decoded.len() as u64);
    assert_eq!(env.segments().await, 1);
}

#[tokio::test]
async fn a_generation_never_goes_backwards() {
    let env = env().await;
    let one = segment(&lines(10, "a"));
    assert_eq!(env.upload(2, 0, &one).await.status, 200);
    let r = env.intent(&intent_for(1, 0, &one)).await;
    assert_offset_mismatch(&r, 2, one.decoded.len() as u64);
    // A new generation starts at 0, nowhere else.
    let r = env.intent(&intent_for(3, 5, &one)).await;
    assert_offset_mismatch(&r, 2, one.decoded.len() as u64);
}

#[tokio::test]
async fn a_transcript_rewritten_in_place_starts_a_new_generation_at_0_and_the_old_one_is_no_longer_current()
 {
    let env = env().await;
    let old = segment(&lines(50, "old"));
    assert_eq!(env.upload(1, 0, &old).await.status, 200);
    let more = segment(&lines(5, "more"));
    assert_eq!(
        env.upload(1, old.decoded.len() as u64, &more).await.status,
        200
    );
    let rewritten = segment(&lines(3, "new"));
    let r = env.upload(2, 0, &rewritten).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let acked = rewritten.decoded.len() as u64;
    assert_eq!(
        env.file_state().await,
        json!({"generation": 2, "ackedOffset": acked})
    );
    let (generation, decoded): (i32, i64) =
        sqlx::query_as("SELECT generation, decoded_bytes FROM transcript_files")
            .fetch_one(&env.db.pool)
            .await
            .unwrap();
    assert_eq!(
        (generation, decoded as u64),
        (2, acked),
        "the current generation's bytes only"
    );
    // The old generation is over: its next offset is refused.
    let late = segment(&lines(1, "late"));
    let r = env
        .intent(&intent_for(
            1,
            (old.decoded.len() + more.decoded.len()) as u64,
            &late,
        ))
        .await;
    assert_offset_mismatch(&r, 2, acked);
}

#[tokio::test]
async fn concurrent_intents_and_completes_of_one_segment_record_it_once() {
    let env = env().await;
    let seg = segment(&lines(40, "a"));
    // First intents of a new file at once: each gets its upload (one file row).
    let body = intent_for(1, 0, &seg);
    let answers = futures::future::join_all((0..6).map(|_| env.intent(&body))).await;
    for r in &answers {
        assert_eq!(r.status, 200, "{}", r.body);
    }
    assert_eq!(env.count("SELECT count(*) FROM transcript_files").await, 1);
    let id = answers[0].data()["uploadId"].as_str().unwrap().to_owned();
    let puts = futures::future::join_all((0..4).map(|_| env.put(&id, &seg.compressed))).await;
    assert!(puts.iter().all(|r| r.status == 200));
    // The route and the worker (or a retry) completing one upload at once: one answer for all.
    let done = futures::future::join_all((0..4).map(|_| env.complete(&id))).await;
    for r in &done {
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            r.data(),
            &json!({"generation": 1, "ackedOffset": seg.decoded.len()})
        );
    }
    assert_eq!(env.segments().await, 1);
}
