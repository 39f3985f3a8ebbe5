//! Contract "Chunks": delete-and-replace on chunk 0 of a differing revision, commit on the last.

use serde_json::{Value, json};

use super::support::*;

const T: &str = "2026-01-01T00:00:00Z";

fn chunk(id: &str, rev: &str, index: u32, total: u32, seqs: std::ops::Range<u64>) -> Value {
    let mut s = session(id, rev, T);
    s["chunk"] = json!({"index": index, "total": total});
    s["events"] = events(seqs);
    s
}

async fn revisions(env: &Env, id: &str) -> (Value, Value) {
    let row = env.session_row(id).await;
    (
        row["committed_revision"].clone(),
        row["pending_revision"].clone(),
    )
}

#[tokio::test]
async fn a_chunk_sequence_across_batches_commits_on_the_last_chunk() {
    let env = env().await;
    assert_eq!(
        env.post(&batch(vec![chunk("s1", "A", 0, 3, 0..10)]))
            .await
            .status,
        200
    );
    assert_eq!(revisions(&env, "s1").await, (Value::Null, json!("A")));
    assert_eq!(
        env.post(&batch(vec![chunk("s1", "A", 1, 3, 10..20)]))
            .await
            .status,
        200
    );
    assert_eq!(revisions(&env, "s1").await, (Value::Null, json!("A")));
    assert_eq!(
        env.post(&batch(vec![chunk("s1", "A", 2, 3, 20..25)]))
            .await
            .status,
        200
    );
    assert_eq!(revisions(&env, "s1").await, (json!("A"), Value::Null));
    assert_eq!(env.event_seqs("s1").await, (0..25).collect::<Vec<i64>>());
    assert_eq!(env.session_row("s1").await["event_count"], 25);
}

#[tokio::test]
async fn several_chunks_of_one_session_in_one_batch_apply_in_index_order() {
    let env = env().await;
    let doc = batch(vec![
        chunk("s1", "A", 1, 2, 5..9),
        chunk("s1", "A", 0, 2, 0..5),
    ]);
    let r = env.post(&doc).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(revisions(&env, "s1").await, (json!("A"), Value::Null));
    assert_eq!(env.event_seqs("s1").await, (0..9).collect::<Vec<i64>>());
}

#[tokio::test]
async fn an_interrupted_sequence_keeps_the_prior_revision_and_a_resync_repairs_it() {
    let env = env().await;
    assert_eq!(
        env.post(&batch(vec![chunk("s1", "A", 0, 1, 0..4)]))
            .await
            .status,
        200
    );
    // Revision B starts, then the device goes away after chunk 0 of 3.
    assert_eq!(
        env.post(&batch(vec![chunk("s1", "B", 0, 3, 100..102)]))
            .await
            .status,
        200
    );
    assert_eq!(revisions(&env, "s1").await, (json!("A"), json!("B")));
    // The resync of revision C: its chunk 0 still sees a differing revision and repairs.
    let doc = batch(vec![
        chunk("s1", "C", 0, 2, 200..203),
        chunk("s1", "C", 1, 2, 203..205),
    ]);
    assert_eq!(env.post(&doc).await.status, 200);
    assert_eq!(revisions(&env, "s1").await, (json!("C"), Value::Null));
    assert_eq!(env.event_seqs("s1").await, (200..205).collect::<Vec<i64>>());
    assert_eq!(env.session_row("s1").await["event_count"], 5);
}

#[tokio::test]
async fn chunk_0_without_events_deletes_nothing_but_the_revision_becomes_pending() {
    let env = env().await;
    assert_eq!(
        env.post(&batch(vec![chunk("s1", "A", 0, 1, 0..3)]))
            .await
            .status,
        200
    );
    let mut s = session("s1", "B", T);
    s["chunk"] = json!({"index": 0, "total": 2});
    assert_eq!(env.post(&batch(vec![s])).await.status, 200);
    assert_eq!(revisions(&env, "s1").await, (json!("A"), json!("B")));
    assert_eq!(env.event_seqs("s1").await, vec![0, 1, 2]);
}

#[tokio::test]
async fn chunk_0_of_the_committed_revision_is_a_replay_that_deletes_nothing() {
    let env = env().await;
    assert_eq!(
        env.post(&batch(vec![
            chunk("s1", "A", 0, 2, 0..3),
            chunk("s1", "A", 1, 2, 3..6)
        ]))
        .await
        .status,
        200
    );
    assert_eq!(
        env.post(&batch(vec![chunk("s1", "A", 0, 2, 0..2)]))
            .await
            .status,
        200
    );
    assert_eq!(revisions(&env, "s1").await, (json!("A"), Value::Null));
    assert_eq!(env.event_seqs("s1").await, (0..6).collect::<Vec<i64>>());
}

#[tokio::test]
async fn a_later_chunk_of_an_unknown_revision_is_409_and_nothing_is_written() {
    let env = env().await;
    // A new session whose first chunk we never saw; another valid session rides in the batch.
    let doc = batch(vec![session("ok", "r", T), chunk("s1", "X", 1, 2, 0..3)]);
    let r = env.post(&doc).await;
    assert_eq!((r.status, r.code()), (409, Some("chunk_out_of_sequence")));
    assert_eq!(env.written().await, (0, 0), "the whole batch is rejected");
    // An existing session: a later chunk of a revision neither pending nor committed.
    assert_eq!(
        env.post(&batch(vec![chunk("s1", "A", 0, 1, 0..2)]))
            .await
            .status,
        200
    );
    let before = env.session_row("s1").await;
    let r = env.post(&batch(vec![chunk("s1", "B", 2, 3, 5..9)])).await;
    assert_eq!((r.status, r.code()), (409, Some("chunk_out_of_sequence")));
    assert_eq!(env.session_row("s1").await, before);
    assert_eq!(env.event_seqs("s1").await, vec![0, 1]);
}

#[tokio::test]
async fn a_retried_last_chunk_after_a_lost_ack_is_harmless() {
    let env = env().await;
    assert_eq!(
        env.post(&batch(vec![chunk("s1", "A", 0, 2, 0..3)]))
            .await
            .status,
        200
    );
    let last = batch(vec![chunk("s1", "A", 1, 2, 3..5)]);
    assert_eq!(env.post(&last).await.status, 200);
    let row = env.session_row("s1").await;
    let r = env.post(&last).await;
    assert_eq!(r.body, json!({"success": true, "data": {"synced": true}}));
    assert_eq!(env.session_row("s1").await, row);
    assert_eq!(env.event_seqs("s1").await, (0..5).collect::<Vec<i64>>());
}
