//! How a dead letter comes back depends on why it failed: 3 consecutive validation rejections
//! set a session aside for the transient window (5 minutes, then retried by the timed recovery
//! pass); a session still oversize after chunking is a deterministic dead letter that the timed
//! pass never returns and a cold restart re-admits; a session whose `updatedAt` cannot be read
//! is reported and set aside, never silently dropped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use syncplane_agent::dead_letter::{Class, FIRST_WINDOW};
use syncplane_agent::{Clock, LocalSession, Observer, Settings};

use super::support::*;

/// A session the server refuses by validation (`agent` is 1 to 64 characters).
fn refused(id: &str) -> LocalSession {
    let mut s = session(id, 1, "r1", 2);
    s.agent = "a".repeat(65);
    s
}

fn posts_of(env: &Env, id: &str) -> Vec<(u16, usize)> {
    env.server
        .posts()
        .iter()
        .enumerate()
        .filter(|(_, p)| p.items.iter().any(|(i, _, _)| i == id))
        .map(|(n, p)| (p.status, n))
        .collect()
}

#[tokio::test]
async fn three_consecutive_validation_rejections_dead_letter_a_session_until_the_5_minute_window_opens()
 {
    let env = env().await;
    let url = env.server.url();
    let mut b = lane(&env, store_of([refused("bad")]), &url, Settings::default());
    let mut third_at = None;
    for _ in 0..30 {
        let now = b.clock.now_ms();
        b.ticks(1).await;
        if !b.lane.state().dead_letters().unwrap().is_empty() {
            third_at = Some(now);
            break;
        }
    }
    let third_at = third_at.expect("dead-lettered within 30 ticks");
    let attempts = posts_of(&env, "bad");
    assert_eq!(attempts.len(), 3, "{attempts:?}");
    assert!(attempts.iter().all(|(status, _)| *status == 400));
    assert_eq!(b.lane.counts().get("validation"), Some(&3));
    let dead = b.lane.state().dead_letters().unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].class.as_str(), dead[0].reason.as_str()),
        ("transient", "validation")
    );
    let window_opens = third_at + FIRST_WINDOW.as_millis() as i64;
    assert_eq!(dead[0].retry_at_ms, Some(window_opens));
    // Set aside until the window opens ...
    while b.clock.now_ms() < window_opens {
        b.ticks(1).await;
    }
    assert_eq!(posts_of(&env, "bad").len(), 3, "nothing inside the window");
    // ... and the timed recovery pass returns it when it does.
    b.ticks(1).await;
    let attempts = posts_of(&env, "bad");
    assert_eq!(attempts.len(), 4, "retried at 5 minutes");
    assert!(b.lane.state().dead_letters().unwrap().is_empty());
}

#[tokio::test]
async fn a_session_still_oversize_after_chunking_is_never_returned_by_the_timed_pass_and_a_cold_restart_readmits_it()
 {
    let env = env().await;
    // Plain JSON: the 256 KiB wire cap binds, and a header alone cannot be chunked.
    env.server.advertise_gzip(false);
    let mut big = session("big", 1, "r1", 0);
    big.title = Some("x".repeat(300_000));
    let ok = session("ok", 2, "r1", 2);
    let url = env.server.url();
    let mut b = lane(
        &env,
        store_of([big.clone(), ok.clone()]),
        &url,
        Settings::default(),
    );
    b.drain(5).await;
    let dead = b.lane.state().dead_letters().unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].session_id, "big");
    assert_eq!(
        (
            dead[0].class.as_str(),
            dead[0].reason.as_str(),
            dead[0].retry_at_ms
        ),
        ("deterministic", "oversize", None)
    );
    assert_eq!(b.lane.counts().get("oversize"), Some(&1));
    // Past every window of the ladder, up to its 24 hour cap: the timed pass never returns it.
    for wait in [
        FIRST_WINDOW,
        Duration::from_secs(3600),
        Duration::from_secs(25 * 3600),
    ] {
        b.clock.advance(wait);
        b.ticks(2).await;
    }
    assert_eq!(
        b.lane.counts().get("oversize"),
        Some(&1),
        "never re-planned"
    );
    assert_eq!(b.lane.state().dead_letters().unwrap().len(), 1);
    assert!(posts_of(&env, "big").is_empty());
    // The server now takes gzip; a cold restart over the same state looks at it again.
    env.server.advertise_gzip(true);
    let store = b.lane.store().clone();
    drop(b);
    let mut b = lane(&env, store, &url, Settings::default());
    assert!(
        b.lane.state().dead_letters().unwrap().is_empty(),
        "re-admitted"
    );
    assert_eq!(b.lane.state().pending_count().unwrap(), 1);
    b.drain(5).await;
    assert_eq!(posts_of(&env, "big").len(), 1);
    assert_arrived(&env, &[big, ok]).await;
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(String, Class)>>>);

impl Observer for Recorder {
    fn dead_lettered(&self, session_id: &str, class: Class) {
        if let Ok(mut v) = self.0.lock() {
            v.push((session_id.to_owned(), class));
        }
    }
}

#[tokio::test]
async fn a_session_whose_updated_at_cannot_be_read_is_reported_and_set_aside_not_dropped() {
    let env = env().await;
    let good: Vec<_> = (0..3)
        .map(|i| session(&format!("s{i}"), i, "r1", 2))
        .collect();
    let mut bad = session("bad", 5, "r1", 2);
    bad.updated_at = "last tuesday".into();
    let store = store_of(good.iter().cloned().chain([bad.clone()]));
    let url = env.server.url();
    let Built { lane: l, clock } = lane(&env, store.clone(), &url, Settings::default());
    let recorder = Recorder::default();
    let mut b = Built {
        lane: l.with_observer(Box::new(recorder.clone())),
        clock,
    };
    b.drain(5).await;
    assert_arrived(&env, &good).await;
    assert!(posts_of(&env, "bad").is_empty(), "never sent");
    assert_eq!(b.lane.counts().get("serialization_failed"), Some(&1));
    assert_eq!(
        *recorder.0.lock().unwrap(),
        [("bad".to_owned(), Class::Deterministic)]
    );
    let dead = b.lane.state().dead_letters().unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (
            dead[0].session_id.as_str(),
            dead[0].reason.as_str(),
            dead[0].retry_at_ms
        ),
        ("bad", "serialization_failed", None)
    );
    // Reported once, not on every pass.
    b.ticks(20).await;
    assert_eq!(b.lane.counts().get("serialization_failed"), Some(&1));
    // Repaired by the app: it goes out on the next pass.
    bad.updated_at = session("bad", 50, "r1", 2).updated_at;
    store.put(bad.clone());
    b.clock.advance(Duration::from_secs(30));
    b.ticks(1).await;
    assert!(b.lane.state().dead_letters().unwrap().is_empty());
    assert_eq!(posts_of(&env, "bad").len(), 1);
    let mut all = good;
    all.push(bad);
    assert_arrived(&env, &all).await;
}
