//! A loopback proxy that drops connections and stalls responses: a dropped connection is a
//! thrown transport error with a budget of 5 consecutive, then a transient dead letter that the
//! timed pass brings back after 5 minutes; a stalled response is abandoned at the client's
//! deadline and counts only while the device believes it is online; going offline hands the
//! timeout budget back.

use std::time::{Duration, Instant};

use syncplane_agent::dead_letter::FIRST_WINDOW;
use syncplane_agent::{Clock, Settings};
use syncplane_tests::agent_server::{Fault, FaultProxy};

use super::support::*;

fn six() -> Vec<syncplane_agent::LocalSession> {
    (0..6)
        .map(|i| session(&format!("s{i}"), i, "r1", 3))
        .collect()
}

#[tokio::test]
async fn dropped_connections_spend_a_budget_of_5_then_dead_letter_and_return_after_5_minutes() {
    let env = env().await;
    let proxy = FaultProxy::start(env.server.addr).await;
    let sessions = six();
    let mut b = lane_with(
        &env,
        store_of(sessions.clone()),
        &proxy.url(),
        Settings::default(),
        Duration::from_secs(2),
        "ada",
    );
    b.ticks(1).await;
    assert_eq!(b.lane.counts().get("synced"), Some(&3));
    proxy.set(Fault::Drop);
    // Thrown transport errors retry on the next tick, each one counted.
    for n in 1..=4 {
        b.ticks(1).await;
        assert_eq!(
            b.lane.state().budget_of("s3").unwrap(),
            Some((Some("transport_error".to_owned()), n))
        );
        assert!(b.lane.state().dead_letters().unwrap().is_empty());
    }
    let fifth = b.clock.now_ms();
    b.ticks(1).await;
    let dead = b.lane.state().dead_letters().unwrap();
    assert_eq!(dead.len(), 3, "{dead:?}");
    for d in &dead {
        assert_eq!(d.class, "transient");
        assert_eq!(d.retry_at_ms, Some(fifth + FIRST_WINDOW.as_millis() as i64));
    }
    assert_eq!(b.lane.counts().get("transport_error"), Some(&15));
    // Set aside until the window opens, even with the network healthy again.
    proxy.set(Fault::Pass);
    while b.clock.now_ms() < fifth + FIRST_WINDOW.as_millis() as i64 - 5_000 {
        b.ticks(1).await;
    }
    assert_eq!(session_count(&env).await, 3);
    // The timed recovery pass at 5 minutes returns them.
    while b.clock.now_ms() < fifth + FIRST_WINDOW.as_millis() as i64 {
        b.clock.advance(TICK);
    }
    b.ticks(1).await;
    assert!(b.lane.drained().unwrap());
    assert!(b.lane.state().dead_letters().unwrap().is_empty());
    assert_arrived(&env, &sessions).await;
    assert_acked_once(&env);
}

#[tokio::test]
async fn a_stalled_response_times_out_at_the_deadline_and_counts_only_while_online() {
    let env = env().await;
    let proxy = FaultProxy::start(env.server.addr).await;
    let sessions = six();
    let deadline = Duration::from_millis(600);
    let mut b = lane_with(
        &env,
        store_of(sessions.clone()),
        &proxy.url(),
        Settings::default(),
        deadline,
        "ada",
    );
    let network = b.lane.network();
    b.ticks(1).await;
    proxy.set(Fault::Stall);
    // Online: abandoned at the client's own deadline, and counted.
    let started = Instant::now();
    b.ticks(1).await;
    let took = started.elapsed();
    assert!(took >= deadline && took < deadline * 4, "{took:?}");
    b.ticks(1).await;
    assert_eq!(
        b.lane.state().budget_of("s3").unwrap(),
        Some((Some("transport_timeout".to_owned()), 2))
    );
    // The device learns it is offline: the budget spent is handed back.
    network.set_online(false);
    b.ticks(1).await;
    assert_eq!(b.lane.state().budget_of("s3").unwrap(), Some((None, 0)));
    // A timeout that ends while the device knows it is offline defers with its budget untouched.
    network.set_online(true);
    let n = network.clone();
    let (r, ()) = tokio::join!(b.lane.tick(), async move {
        tokio::time::sleep(deadline / 3).await;
        n.set_online(false);
    });
    r.unwrap();
    assert_eq!(b.lane.state().budget_of("s3").unwrap(), Some((None, 0)));
    network.set_online(true);
    proxy.set(Fault::Pass);
    b.clock.advance(TICK);
    b.lane.tick().await.unwrap();
    assert_eq!(session_count(&env).await, 3, "deferred 30 s");
    b.drain(10).await;
    assert_arrived(&env, &sessions).await;
    assert!(b.lane.state().dead_letters().unwrap().is_empty());
}

#[tokio::test]
async fn five_timeouts_on_a_healthy_connection_set_the_batch_aside() {
    let env = env().await;
    let proxy = FaultProxy::start(env.server.addr).await;
    let mut b = lane_with(
        &env,
        store_of(six()),
        &proxy.url(),
        Settings::default(),
        Duration::from_millis(300),
        "ada",
    );
    b.ticks(1).await;
    proxy.set(Fault::Stall);
    b.ticks(4).await;
    assert!(b.lane.state().dead_letters().unwrap().is_empty());
    b.ticks(1).await;
    assert_eq!(
        b.lane.state().dead_letters().unwrap().len(),
        3,
        "bounded, not retried forever"
    );
}
