//! Issue 21, points 8 to 10, on the lane's fake clock: a one-shot push ends what the lane would
//! wait through forever, and says each wait as it happens. A server unreachable from the start
//! ends it once hello has failed its budget of 5; a compute target the token's user does not own
//! ends it after `wait`; a 404 from hello and from the sync route names a URL that is not the
//! ingest function, while a 404 from hello alone is an older server that still takes batches;
//! and a fresh lane starts by trying, whatever hold a refused token or a policy turned off left.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use shared::accounts::provision;
use shared::accounts::tokens::{self, TokenKind};
use syncplane_agent::push::{self, End};
use syncplane_agent::{Clock, LaneStatus, Observer, Outcome, Request, Settings, Waiting};

use super::support::*;

#[derive(Clone, Default)]
struct Waits(Arc<Mutex<Vec<Waiting>>>);

impl Observer for Waits {
    fn waiting(&self, w: &Waiting) {
        self.0.lock().unwrap().push(w.clone());
    }
}

#[tokio::test]
async fn a_server_unreachable_from_the_start_ends_the_push_once_hello_has_failed_its_budget_of_5() {
    let env = env().await;
    let url = closed_url().await;
    let Built { lane, clock } = lane(
        &env,
        store_of([session("s1", 1, "r1", 1)]),
        &url,
        Settings::default(),
    );
    let waits = Waits::default();
    let mut b = Built {
        lane: lane.with_observer(Box::new(waits.clone())),
        clock,
    };
    let started = b.clock.now_ms();
    // A wait far longer than the budget: the budget is what ends it.
    let wait = Duration::from_secs(3600);
    let mut end = None;
    for _ in 0..200 {
        b.lane.tick().await.unwrap();
        end = push::ended(&b.lane, wait).unwrap();
        if end.is_some() {
            break;
        }
        b.clock.advance(TICK);
    }
    let Some(End::Unreachable(w)) = end else {
        panic!("not ended as unreachable: {end:?}");
    };
    assert_eq!(w.request, Request::Hello);
    assert_eq!(w.url, format!("{url}/api/agent-sessions/hello"));
    assert_eq!(
        (w.outcome, w.attempts, w.since_ms),
        (Outcome::TransportError, 5, started)
    );
    // Each attempt was said as it failed, with the next try 30 s on.
    let said = waits.0.lock().unwrap().clone();
    assert_eq!(said.len(), 5);
    for (n, w) in said.iter().enumerate() {
        let at = started + n as i64 * 30_000;
        assert_eq!(w.attempts as usize, n + 1);
        assert_eq!(w.next_try_ms, at + 30_000, "attempt {}", n + 1);
        assert!(w.to_string().contains("transport_error, attempt"), "{w}");
    }
    assert!(b.lane.counts().is_empty(), "no session was concerned");
}

#[tokio::test]
async fn a_target_the_users_token_does_not_own_ends_the_push_after_the_wait() {
    let env = env().await;
    let other = provision::create_user(&env.db.pool, env.org, "grace")
        .await
        .unwrap();
    provision::create_compute_target(&env.db.pool, other, "their-laptop")
        .await
        .unwrap();
    let clock = syncplane_agent::FakeClock::at(1_780_000_000_000);
    let mut lane = syncplane_agent::Lane::new(
        store_of([session("s1", 1, "r1", 1)]),
        syncplane_agent::State::open(&env.dir.0.join("s.db"), "ada", "their-laptop").unwrap(),
        syncplane_agent::Transport::new(
            &env.server.url(),
            syncplane_agent::TokenHandle::new(Some(env.token.clone())),
            Duration::from_secs(8),
        )
        .unwrap(),
        Arc::new(clock.clone()),
        Settings::default(),
        "their-laptop",
    )
    .unwrap();
    let wait = Duration::from_secs(120);
    let first = clock.now_ms();
    let end = loop {
        lane.tick().await.unwrap();
        if let Some(end) = push::ended(&lane, wait).unwrap() {
            break end;
        }
        assert!(clock.now_ms() - first < 130_000, "not ended after the wait");
        clock.advance(TICK);
    };
    let End::TargetNotOwned(w) = end else {
        panic!("{end:?}");
    };
    assert_eq!((w.request, w.status), (Request::Sync, Some(403)));
    assert_eq!(w.since_ms, first, "waiting since the first refusal");
    assert!(clock.now_ms() - w.since_ms >= 120_000);
    assert!(w.attempts >= 4, "asked again every 30 s: {}", w.attempts);
    assert_eq!(lane.status(), LaneStatus::Running, "never parks");
    assert!(lane.state().dead_letters().unwrap().is_empty());
}

#[tokio::test]
async fn a_404_from_hello_and_from_the_sync_route_ends_the_push_as_not_the_ingest_function() {
    let env = env().await;
    let (url, server) = not_found_server().await;
    let mut b = lane(
        &env,
        store_of([session("s1", 1, "r1", 1)]),
        &url,
        Settings::default(),
    );
    b.lane.tick().await.unwrap();
    let end = push::ended(&b.lane, Duration::from_secs(3600)).unwrap();
    let Some(End::NotIngest(w)) = end else {
        panic!("{end:?}");
    };
    assert_eq!(w.url, format!("{url}/api/agent-sessions/sync"));
    assert_eq!((w.status, w.attempts), (Some(404), 1), "at the first 404");
    server.abort();
}

#[tokio::test]
async fn a_404_from_hello_alone_is_an_older_server_and_the_push_delivers() {
    let env = env().await;
    env.server.without_hello(true);
    let sessions: Vec<_> = (0..4)
        .map(|i| session(&format!("s{i}"), i, "r1", 2))
        .collect();
    let url = env.server.url();
    let mut b = lane(&env, store_of(sessions.clone()), &url, Settings::default());
    let mut end = None;
    for _ in 0..10 {
        b.lane.tick().await.unwrap();
        end = push::ended(&b.lane, Duration::from_secs(3600)).unwrap();
        if end.is_some() {
            break;
        }
        b.clock.advance(TICK);
    }
    assert_eq!(end, Some(End::Delivered));
    assert!(b.lane.hello().is_some_and(|h| !h.answered));
    assert_arrived(&env, &sessions).await;
}

#[tokio::test]
async fn a_fresh_lane_sends_at_once_after_the_policy_that_parked_the_last_one_is_turned_back_on() {
    let env = env().await;
    provision::set_sync_policy(&env.db.pool, env.org, Some(false))
        .await
        .unwrap();
    let sessions: Vec<_> = (0..3)
        .map(|i| session(&format!("s{i}"), i, "r1", 2))
        .collect();
    let url = env.server.url();
    let mut b = lane(&env, store_of(sessions.clone()), &url, Settings::default());
    b.lane.tick().await.unwrap();
    assert_eq!(b.lane.status(), LaneStatus::Parked);
    provision::set_sync_policy(&env.db.pool, env.org, Some(true))
        .await
        .unwrap();
    // The same instant, a new process: the 30 s hold on the refused sessions is lifted.
    let store = b.lane.store().clone();
    let now = b.clock.now_ms();
    drop(b);
    let b = lane(&env, store, &url, Settings::default());
    b.clock
        .advance(Duration::from_millis((now - b.clock.now_ms()) as u64));
    let mut b = b;
    b.lane.tick().await.unwrap();
    assert_eq!(b.lane.status(), LaneStatus::Running);
    assert!(b.lane.drained().unwrap(), "sent at the first tick");
    assert_arrived(&env, &sessions).await;
}

#[tokio::test]
async fn a_fresh_lane_sends_at_once_after_the_token_refused_in_the_last_one_is_replaced() {
    let env = env().await;
    let sessions: Vec<_> = (0..6)
        .map(|i| session(&format!("s{i}"), i, "r1", 2))
        .collect();
    let url = env.server.url();
    let mut b = lane(&env, store_of(sessions.clone()), &url, Settings::default());
    b.lane.tick().await.unwrap();
    assert_eq!(b.lane.counts().get("synced"), Some(&3));
    tokens::revoke(&env.db.pool, TokenKind::Device, env.token_id)
        .await
        .unwrap();
    b.clock.advance(TICK);
    b.lane.tick().await.unwrap();
    assert_eq!(b.lane.status(), LaneStatus::Paused, "refused at the POST");
    let now = b.clock.now_ms();
    let store = b.lane.store().clone();
    drop(b);
    // A new token, a new process, the same instant.
    let fresh = tokens::issue_device_token(&env.db.pool, env.user, None)
        .await
        .unwrap();
    let mut env = env;
    env.token = fresh.token;
    let mut b = lane(&env, store, &url, Settings::default());
    b.clock
        .advance(Duration::from_millis((now - b.clock.now_ms()) as u64));
    b.lane.tick().await.unwrap();
    assert!(b.lane.drained().unwrap(), "sent at the first tick");
    assert_arrived(&env, &sessions).await;
}
