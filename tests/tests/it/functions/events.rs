//! Every events/ file of the HTTP functions runs through its handler with a state whose webhook
//! secret (`events-secret`), sync API token (`events-token`), read-only token (`events-read-token`)
//! and installation id (12345678)
//! match the files.

use serde_json::Value;
use shared::app::AppState;

use super::support::{Reply, SECRET, checked_reply, from_event, state_of, tenant};
use crate::engine::World;

/// The installation id the events/ files name.
const EVENTS_INSTALLATION: u64 = 12_345_678;

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

/// The tenant's configuration names the events' installation; its client talks to the fake's
/// installation (the fake numbers installations itself).
async fn world() -> (World, AppState) {
    let w = World::new().await;
    let id = w.repo(
        "acme/handbook",
        &[
            ("docs/intro.md", "# Intro\n"),
            ("README.md", "# Handbook\n"),
        ],
    );
    assert_eq!(
        id, 700_000_000,
        "the first repository of the fake has the events' id"
    );
    let st = state_of(
        &w,
        vec![tenant(
            &w,
            "default",
            &[SECRET],
            EVENTS_INSTALLATION,
            w.config.clone(),
        )],
    );
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
    assert_eq!(w.doc_paths("acme/handbook").await, vec!["docs/intro.md"]);
}

#[tokio::test]
async fn sync_api_events_answer_as_documented() {
    let (w, st) = world().await;
    for (file, status) in [
        ("sync-api-sync-repo.json", 202),
        ("sync-api-sync-all.json", 202),
        ("sync-api-repos.json", 200),
        ("sync-api-runs.json", 200),
        // The read API, with the read-only token (`events-read-token`).
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
    assert_eq!(w.doc_paths("acme/handbook").await, vec!["docs/intro.md"]);
}
