//! The webhook endpoint: tenant first, signature over the raw body (rotation), installation
//! check, one webhook.dispatch job run inline, and each routed event's effect on the database.

use serde_json::{Value, json};
use shared::sync::runs::Trigger;
use syncplane_tests::fake_github::{Change, sign_webhook};

use super::support::{Reply, SECRET, apigw, count, reply, state, state_of, tenant};
use crate::engine::World;

const DOCS: &[(&str, &str)] = &[
    ("docs/intro.md", "# Intro\n\nHello.\n"),
    ("docs/guide.md", "# Guide\n\nSteps.\n"),
    ("README.md", "# Handbook\n"),
];

fn repository(full_name: &str) -> Value {
    let (owner, name) = full_name.split_once('/').unwrap();
    json!({
        "name": name,
        "full_name": full_name,
        "owner": {"login": owner},
        "private": true,
        "archived": false,
        "default_branch": "main",
    })
}

fn with_id(mut repo: Value, id: u64) -> Value {
    repo["id"] = json!(id);
    repo
}

fn push(w: &World, full_name: &str, id: u64, git_ref: &str) -> Value {
    json!({
        "ref": git_ref,
        "repository": with_id(repository(full_name), id),
        "installation": {"id": w.installation},
    })
}

async fn deliver_to(
    state: &shared::app::AppState,
    path: &str,
    event: &str,
    payload: &Value,
    signature: Option<String>,
) -> Reply {
    let body = serde_json::to_vec(payload).unwrap();
    let mut headers = vec![
        ("content-type", "application/json".to_owned()),
        ("x-github-event", event.to_owned()),
        (
            "x-github-delivery",
            "72d3162e-cc78-11e3-81ab-4c9367dc0958".to_owned(),
        ),
    ];
    if let Some(sig) = signature {
        headers.push(("x-hub-signature-256", sig));
    }
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    reply(shared::webhook::handle(state, apigw("POST", path, &headers, Some(&body))).await)
}

/// A delivery to the default tenant, signed with the events secret.
async fn deliver(w: &World, event: &str, payload: &Value) -> Reply {
    let sig = sign_webhook(SECRET, &serde_json::to_vec(payload).unwrap());
    deliver_to(&state(w), "/github/webhook", event, payload, Some(sig)).await
}

async fn runs(w: &World) -> i64 {
    count(w, "SELECT count(*) FROM sync_runs").await
}

#[tokio::test]
async fn a_signed_push_to_the_default_branch_syncs_the_documents() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    let r = deliver(
        &w,
        "push",
        &push(&w, "acme/handbook", id, "refs/heads/main"),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.data()["status"], "processed");
    assert_eq!(
        w.doc_paths("acme/handbook").await,
        vec!["docs/guide.md", "docs/intro.md"]
    );
    // The tenant's own path reaches the same tenant.
    let sig = sign_webhook(
        SECRET,
        &serde_json::to_vec(&push(&w, "acme/handbook", id, "refs/heads/main")).unwrap(),
    );
    let r = deliver_to(
        &state(&w),
        "/github/webhook/default",
        "push",
        &push(&w, "acme/handbook", id, "refs/heads/main"),
        Some(sig),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let triggers: Vec<String> = sqlx::query_scalar("SELECT trigger FROM sync_runs")
        .fetch_all(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(triggers, vec![Trigger::Webhook.as_str(); 2]);
}

#[tokio::test]
async fn a_push_to_another_branch_does_nothing() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    let r = deliver(
        &w,
        "push",
        &push(&w, "acme/handbook", id, "refs/heads/feature"),
    )
    .await;
    assert_eq!(r.status, 202);
    assert_eq!(count(&w, "SELECT count(*) FROM repos").await, 0);
    assert_eq!(runs(&w).await, 0);
}

#[tokio::test]
async fn a_redelivery_is_not_deduplicated() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    let payload = push(&w, "acme/handbook", id, "refs/heads/main");
    assert_eq!(deliver(&w, "push", &payload).await.status, 202);
    w.gh.push(
        "acme/handbook",
        &[Change::Put("docs/new.md".into(), b"# New\n".to_vec())],
    );
    // Same delivery id, same body: it syncs again and picks up the new commit.
    assert_eq!(deliver(&w, "push", &payload).await.status, 202);
    assert_eq!(runs(&w).await, 2);
    assert!(
        w.doc_paths("acme/handbook")
            .await
            .contains(&"docs/new.md".to_owned())
    );
}

#[tokio::test]
async fn a_bad_signature_is_refused_and_nothing_is_dispatched() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    let payload = push(&w, "acme/handbook", id, "refs/heads/main");
    let st = state(&w);
    w.gh.reset_log();
    let wrong = sign_webhook("another-secret", &serde_json::to_vec(&payload).unwrap());
    let r = deliver_to(&st, "/github/webhook", "push", &payload, Some(wrong)).await;
    assert_eq!((r.status, r.code()), (401, Some("invalid_signature")));
    // The signature covers the raw bytes: the same JSON re-serialized differently fails too.
    let pretty = serde_json::to_vec_pretty(&payload).unwrap();
    let of_pretty = sign_webhook(SECRET, &pretty);
    let r = deliver_to(&st, "/github/webhook", "push", &payload, Some(of_pretty)).await;
    assert_eq!(r.status, 401);
    assert_eq!(runs(&w).await, 0);
    assert_eq!(w.gh.total_requests(), 0, "GitHub was never called");
}

#[tokio::test]
async fn a_missing_signature_is_refused() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    let payload = push(&w, "acme/handbook", id, "refs/heads/main");
    let r = deliver_to(&state(&w), "/github/webhook", "push", &payload, None).await;
    assert_eq!((r.status, r.code()), (401, Some("missing_signature")));
    assert_eq!(r.body["success"], false);
    assert_eq!(runs(&w).await, 0);
}

#[tokio::test]
async fn during_a_rotation_either_secret_is_accepted() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    let st = state_of(
        &w,
        vec![tenant(
            &w,
            "default",
            &["new-secret", "old-secret"],
            w.installation,
            w.config.clone(),
        )],
    );
    let payload = push(&w, "acme/handbook", id, "refs/heads/main");
    let body = serde_json::to_vec(&payload).unwrap();
    for secret in ["old-secret", "new-secret"] {
        let r = deliver_to(
            &st,
            "/github/webhook",
            "push",
            &payload,
            Some(sign_webhook(secret, &body)),
        )
        .await;
        assert_eq!(r.status, 202, "signed with {secret}");
    }
    let r = deliver_to(
        &st,
        "/github/webhook",
        "push",
        &payload,
        Some(sign_webhook(SECRET, &body)),
    )
    .await;
    assert_eq!(r.status, 401, "a secret not configured is refused");
    assert_eq!(runs(&w).await, 2);
}

#[tokio::test]
async fn a_tenant_without_a_secret_refuses_every_delivery() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    let st = state_of(
        &w,
        vec![tenant(&w, "default", &[], w.installation, w.config.clone())],
    );
    let payload = push(&w, "acme/handbook", id, "refs/heads/main");
    let sig = sign_webhook("", &serde_json::to_vec(&payload).unwrap());
    let r = deliver_to(&st, "/github/webhook", "push", &payload, Some(sig)).await;
    assert_eq!(r.status, 401);
    assert_eq!(runs(&w).await, 0);
}

#[tokio::test]
async fn the_tenant_is_resolved_from_the_path_first() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    let st = state_of(
        &w,
        vec![
            tenant(&w, "default", &[SECRET], w.installation, w.config.clone()),
            tenant(
                &w,
                "beta",
                &["beta-secret"],
                w.installation,
                w.config.clone(),
            ),
        ],
    );
    let payload = push(&w, "acme/handbook", id, "refs/heads/main");
    let body = serde_json::to_vec(&payload).unwrap();
    let r = deliver_to(
        &st,
        "/github/webhook/nope",
        "push",
        &payload,
        Some(sign_webhook(SECRET, &body)),
    )
    .await;
    assert_eq!((r.status, r.code()), (404, Some("unknown_tenant")));
    // Beta's own secret is the one that counts on beta's path.
    let r = deliver_to(
        &st,
        "/github/webhook/beta",
        "push",
        &payload,
        Some(sign_webhook(SECRET, &body)),
    )
    .await;
    assert_eq!(r.status, 401);
    let r = deliver_to(
        &st,
        "/github/webhook/beta",
        "push",
        &payload,
        Some(sign_webhook("beta-secret", &body)),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(runs(&w).await, 1);
}

#[tokio::test]
async fn a_delivery_for_another_installation_is_not_dispatched() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    let mut payload = push(&w, "acme/handbook", id, "refs/heads/main");
    payload["installation"]["id"] = json!(w.installation + 1);
    let r = deliver(&w, "push", &payload).await;
    assert_eq!((r.status, r.code()), (403, Some("installation_mismatch")));
    // An event naming no installation concerns no repository: acknowledged, never dispatched.
    payload.as_object_mut().unwrap().remove("installation");
    let r = deliver(&w, "push", &payload).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.data()["status"], "ignored");
    assert_eq!(runs(&w).await, 0);
    assert_eq!(count(&w, "SELECT count(*) FROM repos").await, 0);
}

#[tokio::test]
async fn a_ping_is_answered_200_after_verification() {
    let w = World::new().await;
    let ping = json!({"zen": "Design for failure.", "hook_id": 1, "hook": {"type": "App"}});
    let r = deliver(&w, "ping", &ping).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = deliver_to(&state(&w), "/github/webhook", "ping", &ping, None).await;
    assert_eq!(r.status, 401, "a ping is verified too");
}

#[tokio::test]
async fn wrong_method_and_unknown_path_and_bad_json() {
    let w = World::new().await;
    let st = state(&w);
    let r = reply(shared::webhook::handle(&st, apigw("GET", "/github/webhook", &[], None)).await);
    assert_eq!((r.status, r.code()), (405, Some("method_not_allowed")));
    assert_eq!(r.headers["allow"], "POST");
    let r =
        reply(shared::webhook::handle(&st, apigw("POST", "/github/other", &[], Some(b"{}"))).await);
    assert_eq!(r.status, 404);
    let body = b"{not json";
    let sig = sign_webhook(SECRET, body);
    let headers = [
        ("x-github-event", "push"),
        ("x-hub-signature-256", sig.as_str()),
    ];
    let r = reply(
        shared::webhook::handle(&st, apigw("POST", "/github/webhook", &headers, Some(body))).await,
    );
    assert_eq!((r.status, r.code()), (400, Some("invalid_json")));
}

#[tokio::test]
async fn repository_archived_removes_the_row() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    w.sync("acme/handbook").await.unwrap();
    w.gh.set_archived("acme/handbook", true);
    let mut repo = with_id(repository("acme/handbook"), id);
    repo["archived"] = json!(true);
    let payload =
        json!({"action": "archived", "repository": repo, "installation": {"id": w.installation}});
    let r = deliver(&w, "repository", &payload).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(count(&w, "SELECT count(*) FROM repos").await, 0);
    assert_eq!(count(&w, "SELECT count(*) FROM documents").await, 0);
}

#[tokio::test]
async fn repository_renamed_updates_owner_and_name_keeping_documents() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    w.sync("acme/handbook").await.unwrap();
    let before = w.contents().await;
    w.gh.rename_repo("acme/handbook", "acme/manual");
    let payload = json!({
        "action": "renamed",
        "changes": {"repository": {"name": {"from": "handbook"}}},
        "repository": with_id(repository("acme/manual"), id),
        "installation": {"id": w.installation},
    });
    let r = deliver(&w, "repository", &payload).await;
    assert_eq!(r.status, 202, "{}", r.body);
    let (owner, name): (String, String) =
        sqlx::query_as("SELECT owner, name FROM repos WHERE github_id = $1")
            .bind(id as i64)
            .fetch_one(&w.db.pool)
            .await
            .unwrap();
    assert_eq!((owner.as_str(), name.as_str()), ("acme", "manual"));
    assert_eq!(w.contents().await, before, "documents kept");
    assert_eq!(count(&w, "SELECT count(*) FROM repos").await, 1);
}

#[tokio::test]
async fn installation_suspend_marks_every_repository_error_and_keeps_content() {
    let w = World::new().await;
    w.repo("acme/handbook", DOCS);
    w.repo("acme/widgets", &[("docs/a.md", "# A\n")]);
    w.sync("acme/handbook").await.unwrap();
    w.sync("acme/widgets").await.unwrap();
    let before = w.contents().await;
    w.gh.set_suspended(w.installation, true);
    let payload = json!({"action": "suspend", "installation": {"id": w.installation}});
    let r = deliver(&w, "installation", &payload).await;
    assert_eq!(r.status, 202, "{}", r.body);
    let statuses: Vec<String> = sqlx::query_scalar("SELECT sync_status FROM repos")
        .fetch_all(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(statuses, vec!["error", "error"]);
    assert_eq!(w.contents().await, before, "content kept");
}

#[tokio::test]
async fn installation_repositories_removed_removes_the_row() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    w.repo("acme/widgets", &[("docs/a.md", "# A\n")]);
    w.sync("acme/handbook").await.unwrap();
    w.sync("acme/widgets").await.unwrap();
    w.gh.remove_from_installation("acme/handbook");
    let payload = json!({
        "action": "removed",
        "repository_selection": "selected",
        "repositories_added": [],
        "repositories_removed": [{"id": id, "name": "handbook", "full_name": "acme/handbook"}],
        "installation": {"id": w.installation},
    });
    let r = deliver(&w, "installation_repositories", &payload).await;
    assert_eq!(r.status, 202, "{}", r.body);
    let left: Vec<String> = sqlx::query_scalar("SELECT owner || '/' || name FROM repos")
        .fetch_all(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(left, vec!["acme/widgets"]);
}
