//! The refusals that are not payload problems: a revoked token pauses the lane with budgets
//! intact, a policy turned off parks it, a target that is not the user's does neither, and a
//! rate limit's Retry-After is waited out.

use std::time::Duration;

use shared::accounts::provision;
use shared::accounts::tokens::{self, TokenKind};
use syncplane_agent::{LaneStatus, Settings};

use super::support::*;

#[tokio::test]
async fn a_token_revoked_mid_run_pauses_the_lane_without_dead_lettering() {
    let env = env().await;
    let sessions: Vec<_> = (0..30)
        .map(|i| session(&format!("s{i:02}"), i, "r1", 4))
        .collect();
    let url = env.server.url();
    let mut b = lane(&env, store_of(sessions.clone()), &url, Settings::default());
    b.ticks(3).await;
    assert_eq!(b.lane.counts().get("synced"), Some(&9));
    tokens::revoke(&env.db.pool, TokenKind::Device, env.token_id)
        .await
        .unwrap();
    // Long enough for every budget to run out many times over, were it counted.
    b.ticks(40).await;
    assert_eq!(b.lane.status(), LaneStatus::Paused);
    assert!(
        b.lane
            .counts()
            .get("unauthenticated")
            .is_some_and(|n| *n > 0)
    );
    assert!(
        b.lane.state().dead_letters().unwrap().is_empty(),
        "never dead-letters"
    );
    for s in &sessions[9..] {
        assert_eq!(
            b.lane.state().budget_of(&s.session_id).unwrap(),
            Some((None, 0)),
            "budgets intact"
        );
    }
    // While paused the lane only asks hello, at most every 30 s.
    let posts = env.server.posts().len();
    b.ticks(12).await;
    assert_eq!(env.server.posts().len(), posts);
    // A new token resumes it and everything arrives once.
    let fresh = tokens::issue_device_token(&env.db.pool, env.user, None)
        .await
        .unwrap();
    b.lane.transport().token().set(Some(fresh.token));
    b.drain(60).await;
    assert_eq!(b.lane.status(), LaneStatus::Running);
    assert_arrived(&env, &sessions).await;
    assert_acked_once(&env);
}

#[tokio::test]
async fn a_policy_turned_off_parks_the_lane_as_capability_off() {
    let env = env().await;
    provision::set_sync_policy(&env.db.pool, env.org, Some(false))
        .await
        .unwrap();
    let sessions: Vec<_> = (0..6)
        .map(|i| session(&format!("s{i}"), i, "r1", 2))
        .collect();
    let url = env.server.url();
    let mut b = lane(&env, store_of(sessions.clone()), &url, Settings::default());
    b.ticks(1).await;
    assert_eq!(b.lane.status(), LaneStatus::Parked);
    assert_eq!(b.lane.counts().get("feature_disabled"), Some(&3));
    // Parked: nothing is sent for the probe interval, nothing is dead-lettered.
    b.ticks(50).await;
    assert_eq!(env.server.posts().len(), 1);
    assert!(b.lane.state().dead_letters().unwrap().is_empty());
    provision::set_sync_policy(&env.db.pool, env.org, Some(true))
        .await
        .unwrap();
    b.clock.advance(Duration::from_secs(5 * 60));
    b.drain(20).await;
    assert_eq!(b.lane.status(), LaneStatus::Running);
    assert_arrived(&env, &sessions).await;
}

#[tokio::test]
async fn a_target_that_is_not_the_users_defers_and_never_parks() {
    let env = env().await;
    // The target belongs to someone else.
    let other = provision::create_user(&env.db.pool, env.org, "grace")
        .await
        .unwrap();
    provision::create_compute_target(&env.db.pool, other, "their-laptop")
        .await
        .unwrap();
    let url = env.server.url();
    let clock = syncplane_agent::FakeClock::at(1_780_000_000_000);
    let state =
        syncplane_agent::State::open(&env.dir.0.join("s.db"), "ada", "their-laptop").unwrap();
    let transport = syncplane_agent::Transport::new(
        &url,
        syncplane_agent::TokenHandle::new(Some(env.token.clone())),
        Duration::from_secs(8),
    )
    .unwrap();
    let mut lane = syncplane_agent::Lane::new(
        store_of([session("s1", 1, "r1", 1)]),
        state,
        transport,
        std::sync::Arc::new(clock.clone()),
        Settings::default(),
        "their-laptop",
    )
    .unwrap();
    for _ in 0..40 {
        lane.tick().await.unwrap();
        clock.advance(TICK);
    }
    assert_eq!(lane.status(), LaneStatus::Running, "never parks");
    assert!(
        lane.counts()
            .get("target_not_owned")
            .is_some_and(|n| *n >= 5)
    );
    assert!(
        lane.state().dead_letters().unwrap().is_empty(),
        "never budgeted"
    );
    // Deferred 30 s each time: at most one attempt per 30 s over 200 s of ticks.
    let posts = env.server.posts().len();
    assert!((6..=8).contains(&posts), "{posts} attempts");
}

#[tokio::test]
async fn a_rate_limit_is_honoured_until_retry_after() {
    // Two batches a minute for this target.
    let env = env_with(2).await;
    let sessions: Vec<_> = (0..30)
        .map(|i| session(&format!("s{i:02}"), i, "r1", 1))
        .collect();
    let url = env.server.url();
    let mut b = lane(&env, store_of(sessions), &url, Settings::default());
    // Tick until refused (a real minute boundary may let a third or fourth batch through).
    let mut refused_at = None;
    for _ in 0..6 {
        let now = syncplane_agent::Clock::now_ms(&b.clock);
        b.lane.tick().await.unwrap();
        b.clock.advance(TICK);
        if env.server.posts().last().is_some_and(|p| p.status == 429) {
            refused_at = Some(now);
            break;
        }
    }
    let refused_at = refused_at.expect("a 429 within 6 batches at 2 a minute");
    let retry_after = env
        .server
        .posts()
        .last()
        .unwrap()
        .retry_after
        .expect("Retry-After");
    assert!((1..=60).contains(&retry_after));
    assert_eq!(b.lane.counts().get("rate_limited"), Some(&3));
    // Ticking every 5 s: nothing is sent before Retry-After has passed ...
    let before = env.server.posts().len();
    let deadline = refused_at + retry_after as i64 * 1000;
    while syncplane_agent::Clock::now_ms(&b.clock) < deadline {
        b.lane.tick().await.unwrap();
        assert_eq!(
            env.server.posts().len(),
            before,
            "a request inside Retry-After"
        );
        b.clock.advance(TICK);
    }
    // ... and the lane sends again once it has.
    b.lane.tick().await.unwrap();
    assert!(
        env.server.posts().len() > before,
        "sending again after Retry-After"
    );
    assert!(
        b.lane.state().dead_letters().unwrap().is_empty(),
        "5 rate-limit rejections before a dead letter"
    );
}
