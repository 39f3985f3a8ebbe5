//! Backfill and steady state: every session arrives exactly once, equal to the source, with
//! gzip when the server advertises it and plain JSON when it does not; a large session as a
//! chunk sequence; the spec's pass sizes, and re-selection on the next pass of a session whose
//! data revision or artifact refs changed without a new update time.

use std::time::Duration;

use syncplane_agent::Settings;

use super::support::*;

const N: usize = 60;

async fn backfill_arrives_exactly_once(advertise_gzip: bool) {
    let env = env().await;
    env.server.advertise_gzip(advertise_gzip);
    let sessions: Vec<_> = (0..N)
        .map(|i| session(&format!("s{i:03}"), i as i64, "r1", (i % 40) as u64))
        .collect();
    let url = env.server.url();
    let mut b = lane(&env, store_of(sessions.clone()), &url, Settings::default());
    b.drain(100).await;
    assert_arrived(&env, &sessions).await;
    assert_acked_once(&env);
    assert_eq!(env.server.acked_items().len(), N, "each session once");
    let seen = env.server.seen();
    assert_eq!(seen[0].path, "/api/agent-sessions/hello", "hello first");
    let posts = env.server.posts();
    assert!(
        posts.iter().all(|p| p.gzip == advertise_gzip),
        "Content-Encoding follows the hello-ack"
    );
    // A gzip body is binary to API Gateway (passed through base64), plain JSON stays JSON.
    let content_type = if advertise_gzip {
        "application/octet-stream"
    } else {
        "application/json"
    };
    assert!(
        posts
            .iter()
            .all(|p| p.content_type.as_deref() == Some(content_type)),
        "{:?}",
        posts.first().map(|p| &p.content_type)
    );
    assert!(posts.iter().all(|p| p.status == 200));
    // The spec's backfill pass: 3 sessions.
    assert!(
        posts
            .iter()
            .all(|p| p.items.len() == 3 && p.mode.as_deref() == Some("backfill"))
    );
    assert_eq!(b.lane.counts().get("synced"), Some(&(N as u64)));
    // Nothing is sent again.
    b.ticks(10).await;
    assert_eq!(env.server.posts().len(), posts.len());
}

#[tokio::test]
async fn a_backfill_arrives_exactly_once_with_gzip_when_advertised() {
    backfill_arrives_exactly_once(true).await;
}

#[tokio::test]
async fn a_backfill_arrives_exactly_once_as_plain_json_when_the_server_does_not_advertise_gzip() {
    backfill_arrives_exactly_once(false).await;
}

#[tokio::test]
async fn a_session_of_50000_events_arrives_as_a_chunk_sequence_and_commits() {
    let env = env().await;
    let big = session("big", 1, "r1", 50_000);
    let small = session("small", 2, "r1", 3);
    let url = env.server.url();
    let mut b = lane(
        &env,
        store_of([big.clone(), small.clone()]),
        &url,
        Settings::default(),
    );
    b.drain(20).await;
    let chunks: Vec<_> = env
        .server
        .posts()
        .into_iter()
        .flat_map(|p| p.items)
        .filter(|(id, _, _)| id == "big")
        .collect();
    let total = chunks[0].2;
    assert!(total >= 2, "a chunk sequence: {chunks:?}");
    let indexes: Vec<u64> = chunks.iter().map(|c| c.1).collect();
    assert_eq!(
        indexes,
        (0..total).collect::<Vec<_>>(),
        "in order, each once"
    );
    assert_arrived(&env, &[big, small]).await;
}

#[tokio::test]
async fn incremental_passes_carry_10_at_most_every_30_s_and_a_changed_revision_is_reselected_on_the_next_pass()
 {
    let env = env().await;
    let store = store_of((0..3).map(|i| session(&format!("old{i}"), i, "r1", 2)));
    let url = env.server.url();
    let mut b = lane(&env, store.clone(), &url, Settings::default());
    b.drain(10).await;
    let after_backfill = env.server.posts().len();
    // 25 new sessions after the cursor.
    let fresh: Vec<_> = (0..25)
        .map(|i| session(&format!("new{i:02}"), 100 + i, "r1", 2))
        .collect();
    for s in &fresh {
        store.put(s.clone());
    }
    b.clock.advance(Duration::from_secs(30));
    b.lane.tick().await.unwrap();
    let first: Vec<_> = env.server.posts()[after_backfill..].to_vec();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].items.len(), 10);
    assert_eq!(first[0].mode.as_deref(), Some("incremental"));
    // Ticks inside the 30 s window send nothing.
    for _ in 0..5 {
        b.clock.advance(TICK);
        b.lane.tick().await.unwrap();
    }
    assert_eq!(env.server.posts().len(), after_backfill + 1);
    b.clock.advance(TICK);
    b.lane.tick().await.unwrap();
    assert_eq!(
        env.server.posts().len(),
        after_backfill + 2,
        "30 s after the last pass"
    );
    b.drain(40).await;
    // A re-parse under a new data revision, same update time: re-selected on the next pass.
    let reparsed = session("old1", 1, "r2", 5);
    assert_eq!(reparsed.updated_at, session("old1", 1, "r1", 2).updated_at);
    store.put(reparsed);
    let before = env.server.posts().len();
    b.clock.advance(Duration::from_secs(30));
    b.lane.tick().await.unwrap();
    let next: Vec<_> = env.server.posts()[before..].to_vec();
    assert_eq!(next.len(), 1, "the next incremental pass");
    assert_eq!(next[0].items, [("old1".to_owned(), 0, 1)]);
    assert_eq!(next[0].status, 200);
    let (committed, _, count) = stored(&env, "old1").await.unwrap();
    assert_eq!(committed.as_deref(), Some("r2"));
    assert_eq!(count, 5);
    assert!(b.lane.drained().unwrap());
}

async fn stored_refs(env: &Env, id: &str) -> serde_json::Value {
    sqlx::query_scalar(
        "SELECT payload->'artifactRefs' FROM agent_sessions
          WHERE compute_target_id = $1 AND session_id = $2",
    )
    .bind(TARGET)
    .bind(id)
    .fetch_one(&env.db.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_session_given_a_new_artifact_ref_is_reselected_on_the_next_pass_with_its_refs() {
    let env = env().await;
    let sessions: Vec<_> = (0..3)
        .map(|i| session(&format!("s{i}"), i, "r1", 2))
        .collect();
    let store = store_of(sessions.clone());
    let url = env.server.url();
    let mut b = lane(&env, store.clone(), &url, Settings::default());
    b.drain(5).await;
    // The first incremental pass finds nothing new.
    b.clock.advance(TICK);
    b.lane.tick().await.unwrap();
    let before = env.server.posts().len();
    // Only the refs change: same update time, same data revision.
    let mut linked = sessions[1].clone();
    linked.artifact_refs.get_or_insert_with(Vec::new).push(
        serde_json::from_value(serde_json::json!({"kind": "commit", "ref": "abc123"})).unwrap(),
    );
    store.put(linked.clone());
    for _ in 0..5 {
        b.clock.advance(TICK);
        b.lane.tick().await.unwrap();
    }
    assert_eq!(env.server.posts().len(), before, "inside the 30 s window");
    b.clock.advance(TICK);
    b.lane.tick().await.unwrap();
    let next: Vec<_> = env.server.posts()[before..].to_vec();
    assert_eq!(next.len(), 1, "the next incremental pass");
    assert_eq!(next[0].items, [("s1".to_owned(), 0, 1)]);
    assert_eq!(next[0].mode.as_deref(), Some("incremental"));
    assert_eq!(
        stored_refs(&env, "s1").await,
        serde_json::to_value(&linked.artifact_refs).unwrap()
    );
    // Acknowledged with the new refs: not sent again.
    b.ticks(12).await;
    assert_eq!(env.server.posts().len(), before + 1);
}

#[tokio::test]
async fn raised_pass_sizes_carry_up_to_the_cap_back_to_back() {
    let env = env().await;
    let sessions: Vec<_> = (0..450)
        .map(|i| session(&format!("s{i:03}"), i, "r1", 1))
        .collect();
    let url = env.server.url();
    let settings = Settings {
        raise_pass_sizes: true,
        ..Settings::default()
    };
    let mut b = lane(&env, store_of(sessions.clone()), &url, settings);
    let r = b.lane.tick().await.unwrap();
    assert!(r.more_due, "a full pass: the next follows at once");
    let sizes: Vec<usize> = env.server.posts().iter().map(|p| p.items.len()).collect();
    assert_eq!(sizes, [200]);
    b.drain(5).await;
    assert_arrived(&env, &sessions).await;
    assert_acked_once(&env);
}

/// The size: a 5,000-session backfill arrives exactly once, every session's stored
/// revision and events equal to the source, gzip or not. Pass sizes are raised to the caps (at
/// the spec's 3 per pass this is 1,667 passes of the lane's schedule: the same path, slower).
async fn a_5000_session_backfill_arrives_exactly_once(advertise_gzip: bool) {
    let env = env().await;
    env.server.advertise_gzip(advertise_gzip);
    let sessions: Vec<_> = (0..5_000)
        .map(|i| session(&format!("s{i:04}"), i as i64, "r1", (i % 12) as u64))
        .collect();
    let url = env.server.url();
    let settings = Settings {
        raise_pass_sizes: true,
        ..Settings::default()
    };
    let mut b = lane(&env, store_of(sessions.clone()), &url, settings);
    b.drain(60).await;
    assert_arrived(&env, &sessions).await;
    assert_acked_once(&env);
    assert_eq!(env.server.acked_items().len(), 5_000, "each session once");
    let posts = env.server.posts();
    assert!(
        posts
            .iter()
            .all(|p| p.gzip == advertise_gzip && p.status == 200)
    );
    assert_eq!(b.lane.counts().get("synced"), Some(&5_000));
}

#[tokio::test]
async fn a_5000_session_backfill_arrives_exactly_once_with_gzip() {
    a_5000_session_backfill_arrives_exactly_once(true).await;
}

#[tokio::test]
async fn a_5000_session_backfill_arrives_exactly_once_as_plain_json() {
    a_5000_session_backfill_arrives_exactly_once(false).await;
}
