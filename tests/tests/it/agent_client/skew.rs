//! Deploy skew in both directions: a server older than hello (404) gets plain JSON; a server
//! rolled back to a build without gzip answers 415, and the lane asks hello again before the
//! answer counts against any session, once per such answer.

use syncplane_agent::Settings;

use super::support::*;

fn sessions(n: i64) -> Vec<syncplane_agent::LocalSession> {
    (0..n)
        .map(|i| session(&format!("s{i:02}"), i, "r1", 3))
        .collect()
}

#[tokio::test]
async fn a_hello_answered_404_by_an_older_server_makes_the_client_post_plain_json() {
    let env = env().await;
    env.server.without_hello(true);
    let sessions = sessions(6);
    let url = env.server.url();
    let mut b = lane(&env, store_of(sessions.clone()), &url, Settings::default());
    b.drain(10).await;
    let seen = env.server.seen();
    assert_eq!(seen[0].path, "/api/agent-sessions/hello");
    assert_eq!(seen[0].status, 404);
    assert_eq!(env.server.hellos(), 1, "a 404 is an answer, not a failure");
    let posts = env.server.posts();
    assert!(!posts.is_empty());
    for p in &posts {
        assert!(!p.gzip, "no Content-Encoding for an older server");
        assert_eq!(p.content_type.as_deref(), Some("application/json"));
        assert_eq!(p.status, 200);
    }
    assert_arrived(&env, &sessions).await;
}

#[tokio::test]
async fn a_server_rolled_back_without_gzip_is_asked_hello_again_and_its_415_spends_no_budget() {
    let env = env().await;
    let sessions = sessions(9);
    let url = env.server.url();
    let mut b = lane(&env, store_of(sessions.clone()), &url, Settings::default());
    b.ticks(1).await;
    assert!(env.server.posts()[0].gzip);
    // The rollback: hello no longer advertises gzip and the route refuses it.
    env.server.advertise_gzip(false);
    env.server.refuse_gzip(true);
    b.ticks(1).await;
    let refused = env.server.posts().last().cloned().unwrap();
    assert_eq!((refused.status, refused.gzip), (415, true));
    assert_eq!(env.server.hellos(), 2, "asked again at once");
    for (id, _, _) in &refused.items {
        assert_eq!(
            b.lane.state().budget_of(id).unwrap(),
            Some((None, 0)),
            "the stale hello failed, not {id}"
        );
    }
    // Re-planned as plain JSON on the very next tick, not held 30 s.
    b.ticks(1).await;
    let resent = env.server.posts().last().cloned().unwrap();
    assert_eq!((resent.status, resent.gzip), (200, false));
    assert_eq!(resent.items, refused.items);
    b.drain(10).await;
    assert_eq!(
        env.server
            .posts()
            .iter()
            .filter(|p| p.status == 415)
            .count(),
        1
    );
    assert_eq!(env.server.hellos(), 2);
    assert!(b.lane.state().dead_letters().unwrap().is_empty());
    assert_arrived(&env, &sessions).await;
}

#[tokio::test]
async fn a_415_under_an_unchanged_hello_asks_hello_once_per_answer_and_spends_the_budget() {
    let env = env().await;
    // A misdeploy: hello still advertises gzip, the route refuses it.
    env.server.refuse_gzip(true);
    let url = env.server.url();
    let mut b = lane(&env, store_of(sessions(3)), &url, Settings::default());
    for _ in 0..60 {
        b.ticks(1).await;
        if !b.lane.state().dead_letters().unwrap().is_empty() {
            break;
        }
    }
    let refusals = env
        .server
        .posts()
        .iter()
        .filter(|p| p.status == 415)
        .count();
    assert_eq!(refusals, 5, "the ingestion-failure budget of 5");
    assert_eq!(
        env.server.hellos(),
        1 + refusals,
        "one hello per 415, never a loop"
    );
    let dead = b.lane.state().dead_letters().unwrap();
    assert_eq!(dead.len(), 3);
    assert!(
        dead.iter()
            .all(|d| d.class == "transient" && d.reason == "ingestion_failed")
    );
}
