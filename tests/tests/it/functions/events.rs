//! Every events/ file of the HTTP functions runs through its handler with the configuration of
//! the README's local run with no App (issue 13 point 9): the demo webhook secret and sync API
//! token, no read-only token, the demo installation id and the demo repositories
//! (`fake_github::demo`). So each sample answers there as it answers here.

use serde_json::Value;
use shared::app::AppState;
use shared::config::Secret;
use syncplane_tests::fake_github::demo;

use super::support::{Reply, checked_reply, from_event, state_of, tenant};
use crate::engine::World;

fn event(name: &str) -> Value {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// Run `event` through `handle` and check the answer against openapi.json.
async fn checked<F, Fut>(event: Value, handle: F) -> Reply
where
    F: FnOnce(lambda_http::Request) -> Fut,
    Fut: std::future::Future<Output = lambda_http::Response<lambda_http::Body>>,
{
    let method = event["requestContext"]["http"]["method"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = event["rawPath"].as_str().unwrap().to_owned();
    checked_reply(&method, &path, handle(from_event(event)).await)
}

/// The local run's tenant: the demo secret, token and installation id (its client talks to the
/// world's installation, which holds the demo repositories).
async fn world() -> (World, AppState) {
    let w = World::new().await;
    let ids = demo::add_repos(&w.gh, w.installation);
    assert_eq!(
        ids[0], 700_000_000,
        "acme/handbook has the id the events name"
    );
    let mut local_run = tenant(
        &w,
        "default",
        &[demo::WEBHOOK_SECRET],
        demo::INSTALLATION_ID,
        w.config.clone(),
    );
    local_run.sync_api_token = Some(Secret::new(demo::SYNC_API_TOKEN));
    local_run.read.token = None;
    let st = state_of(&w, vec![local_run]);
    (w, st)
}

#[tokio::test]
async fn webhook_events_answer_as_documented() {
    let (w, st) = world().await;
    for (file, status) in [
        ("webhook-bad-signature.json", 401),
        ("webhook-ping.json", 200),
        ("webhook-push.json", 202),
    ] {
        let r = checked(event(file), |req| shared::webhook::handle(&st, req)).await;
        assert_eq!(r.status, status, "{file}: {}", r.body);
    }
    assert_eq!(w.doc_paths("acme/handbook").await, HANDBOOK_DOCS);
}

/// The demo handbook's documents once synced.
const HANDBOOK_DOCS: [&str; 3] = [
    "docs/api/reference.md",
    "docs/faq.mdx",
    "docs/getting-started.md",
];

#[tokio::test]
async fn sync_api_events_answer_as_documented() {
    let (w, st) = world().await;
    for (file, status) in [
        ("sync-api-sync-repo.json", 202),
        ("sync-api-sync-all.json", 202),
        ("sync-api-repos.json", 200),
        ("sync-api-runs.json", 200),
        // The read API, with the sync API token (the local run sets no read-only token).
        ("sync-api-search.json", 200),
        ("sync-api-repo.json", 200),
        ("sync-api-documents.json", 200),
        ("sync-api-document.json", 200),
        ("sync-api-readme.json", 200),
        ("sync-api-owners.json", 200),
        ("sync-api-openapi.json", 200),
    ] {
        let r = checked(event(file), |req| shared::api::handle(&st, req)).await;
        assert_eq!(r.status, status, "{file}: {}", r.body);
    }
    assert_eq!(w.doc_paths("acme/handbook").await, HANDBOOK_DOCS);
}
