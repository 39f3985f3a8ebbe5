//! The sync API: bearer token, POST /api/sync (202 started/coalesced, 404 not selected,
//! 409 busy without a row, 400, 401), and the shapes of GET /api/repos and /api/sync/runs.

use serde_json::{Value, json};
use shared::app::AppState;
use shared::config::SyncConfig;
use shared::sync::lock::{HeldLock, repo_key};

use super::support::{Reply, TOKEN, apigw, checked_reply, count, state, state_of, tenant};
use crate::engine::World;

const DOCS: &[(&str, &str)] = &[
    ("docs/intro.md", "# Intro\n\nHello.\n"),
    ("docs/guide.md", "# Guide\n\nSteps.\n"),
];

async fn call(
    st: &AppState,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
) -> Reply {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(a) = auth.as_deref() {
        headers.push(("authorization", a));
    }
    checked_reply(
        method,
        path,
        shared::api::handle(st, apigw(method, path, &headers, body)).await,
    )
}

async fn post_sync(st: &AppState, body: &Value) -> Reply {
    let body = serde_json::to_vec(body).unwrap();
    call(st, "POST", "/api/sync", Some(TOKEN), Some(&body)).await
}

#[tokio::test]
async fn a_repository_request_starts_a_manual_run() {
    let w = World::new().await;
    w.repo("acme/handbook", DOCS);
    let st = state(&w);
    let r = post_sync(&st, &json!({"repository": "acme/handbook"})).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.data()["status"], "started");
    let run_id = r.data()["runId"].as_i64().unwrap();
    let (trigger, scope, status): (String, Option<String>, String) =
        sqlx::query_as("SELECT trigger, scope, status FROM sync_runs WHERE id = $1")
            .bind(run_id)
            .fetch_one(&w.db.pool)
            .await
            .unwrap();
    assert_eq!(
        (trigger.as_str(), scope.as_deref(), status.as_str()),
        ("manual", Some("acme/handbook"), "success")
    );
    assert_eq!(w.doc_paths("acme/handbook").await.len(), 2);
}

#[tokio::test]
async fn an_empty_request_syncs_everything() {
    let w = World::new().await;
    w.repo("acme/handbook", DOCS);
    w.repo("acme/widgets", &[("docs/a.md", "# A\n")]);
    let st = state(&w);
    let r = post_sync(&st, &json!({})).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.data()["status"], "started");
    let scope: Option<String> = sqlx::query_scalar("SELECT scope FROM sync_runs WHERE id = $1")
        .bind(r.data()["runId"].as_i64().unwrap())
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(scope, None, "a full run has no scope");
    assert_eq!(count(&w, "SELECT count(*) FROM repos").await, 2);
    // An empty body means the same.
    let r = call(&st, "POST", "/api/sync", Some(TOKEN), None).await;
    assert_eq!(r.status, 202);
}

#[tokio::test]
async fn a_repository_the_config_does_not_select_is_404() {
    let w = World::new().await;
    w.repo("acme/handbook", DOCS);
    w.repo("acme/old", DOCS);
    w.gh.set_archived("acme/old", true);
    let sync = SyncConfig {
        exclude: vec![shared::config::RepoPattern::parse("acme/secret-plans").unwrap()],
        ..SyncConfig::default()
    };
    let st = state_of(&w, vec![tenant(&w, "default", &[], w.installation, sync)]);
    w.gh.reset_log();
    let r = post_sync(&st, &json!({"repository": "acme/secret-plans"})).await;
    assert_eq!((r.status, r.code()), (404, Some("repository_not_selected")));
    assert_eq!(w.gh.total_requests(), 0, "decided from configuration alone");
    let r = post_sync(&st, &json!({"repository": "acme/old"})).await;
    assert_eq!(
        (r.status, r.code()),
        (404, Some("repository_not_selected")),
        "archived repositories are never selected"
    );
    let r = post_sync(&st, &json!({"repository": "acme/missing"})).await;
    assert_eq!((r.status, r.code()), (404, Some("repository_not_found")));
    assert_eq!(count(&w, "SELECT count(*) FROM sync_runs").await, 0);
}

#[tokio::test]
async fn a_busy_repository_without_a_row_is_409() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    let st = state(&w);
    let held = HeldLock::try_acquire(&w.db.pool, repo_key(id as i64))
        .await
        .unwrap()
        .unwrap();
    let r = post_sync(&st, &json!({"repository": "acme/handbook"})).await;
    assert_eq!((r.status, r.code()), (409, Some("repository_busy")));
    held.release().await;
    assert_eq!(count(&w, "SELECT count(*) FROM sync_runs").await, 0);
}

#[tokio::test]
async fn a_busy_repository_with_a_row_is_coalesced() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    w.sync("acme/handbook").await.unwrap();
    let st = state(&w);
    let held = HeldLock::try_acquire(&w.db.pool, repo_key(id as i64))
        .await
        .unwrap()
        .unwrap();
    let r = post_sync(&st, &json!({"repository": "acme/handbook"})).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.data()["status"], "coalesced");
    held.release().await;
    assert!(w.marker(id).await, "the rerun marker stays for the holder");
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_401() {
    let w = World::new().await;
    let st = state(&w);
    for token in [None, Some("wrong"), Some("")] {
        let r = call(&st, "POST", "/api/sync", token, Some(b"{}")).await;
        assert_eq!(
            (r.status, r.code()),
            (401, Some("unauthenticated")),
            "{token:?}"
        );
        let r = call(&st, "GET", "/api/repos", token, None).await;
        assert_eq!(r.status, 401);
    }
    assert_eq!(count(&w, "SELECT count(*) FROM sync_runs").await, 0);
}

#[tokio::test]
async fn bad_json_is_400() {
    let w = World::new().await;
    let st = state(&w);
    let r = call(&st, "POST", "/api/sync", Some(TOKEN), Some(b"{nope")).await;
    assert_eq!((r.status, r.code()), (400, Some("invalid_json")));
    let r = call(
        &st,
        "POST",
        "/api/sync",
        Some(TOKEN),
        Some(br#"{"repository":"nope"}"#),
    )
    .await;
    assert_eq!((r.status, r.code()), (400, Some("invalid_request")));
}

#[tokio::test]
async fn repos_list_each_repository_with_its_sync_state() {
    let w = World::new().await;
    let id = w.repo(
        "acme/handbook",
        &[
            ("docs/intro.md", "# Intro\n"),
            ("docs/pic.png", "not markdown"),
        ],
    );
    w.sync("acme/handbook").await.unwrap();
    let r = call(&state(&w), "GET", "/api/repos", Some(TOKEN), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let repos = r.data()["repositories"].as_array().unwrap();
    assert_eq!(repos.len(), 1);
    let repo = &repos[0];
    assert_eq!(repo["fullName"], "acme/handbook");
    assert_eq!(repo["githubId"], id);
    assert_eq!(repo["syncStatus"], "ok");
    assert_eq!(repo["syncError"], Value::Null);
    assert_eq!(repo["documentCount"], 1);
    assert!(repo["lastSyncedAt"].is_string());
    assert!(repo["warnings"].is_array());
}

#[tokio::test]
async fn runs_are_listed_newest_first_and_read_by_id() {
    let w = World::new().await;
    w.repo("acme/handbook", DOCS);
    let st = state(&w);
    let first = post_sync(&st, &json!({"repository": "acme/handbook"})).await;
    let second = post_sync(&st, &json!({})).await;
    let (first, second) = (
        first.data()["runId"].as_i64().unwrap(),
        second.data()["runId"].as_i64().unwrap(),
    );
    let r = call(&st, "GET", "/api/sync/runs", Some(TOKEN), None).await;
    assert_eq!(r.status, 200);
    let ids: Vec<i64> = r.data()["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![second, first]);

    let r = call(
        &st,
        "GET",
        &format!("/api/sync/runs/{first}"),
        Some(TOKEN),
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    let run = r.data();
    assert_eq!(run["trigger"], "manual");
    assert_eq!(run["scope"], "acme/handbook");
    assert_eq!(run["status"], "success");
    assert_eq!(run["error"], Value::Null);
    assert!(run["startedAt"].is_string() && run["finishedAt"].is_string());
    assert_eq!(run["counts"]["docsAdded"], 2);
    assert_eq!(run["counts"]["reposSynced"], 1);
    assert_eq!(
        run["counts"]["githubGraphqlRequests"], 0,
        "one repository: REST only"
    );
    assert_eq!(
        run["counts"]["githubRestRequests"],
        run["counts"]["githubRequests"]
    );

    // Issue 10, Build 5: the full run reports requests by kind and rate-limit units. The
    // repository is unchanged: the listing (REST) and one batched head check (GraphQL).
    let r = call(
        &st,
        "GET",
        &format!("/api/sync/runs/{second}"),
        Some(TOKEN),
        None,
    )
    .await;
    let counts = &r.data()["counts"];
    assert_eq!(counts["reposUnchanged"], 1);
    assert_eq!(counts["githubRequests"], 2);
    assert_eq!(counts["githubRestRequests"], 1);
    assert_eq!(counts["githubGraphqlRequests"], 1);
    assert_eq!(counts["githubRestUnits"], 1);
    assert_eq!(counts["githubGraphqlPoints"], 1);

    for missing in ["999999", "abc", "-1"] {
        let r = call(
            &st,
            "GET",
            &format!("/api/sync/runs/{missing}"),
            Some(TOKEN),
            None,
        )
        .await;
        assert_eq!(
            (r.status, r.code()),
            (404, Some("run_not_found")),
            "{missing}"
        );
    }
}

#[tokio::test]
async fn unknown_routes_404_wrong_methods_405_unknown_tenant_404() {
    let w = World::new().await;
    let st = state(&w);
    let r = call(&st, "GET", "/api/nothing", Some(TOKEN), None).await;
    assert_eq!((r.status, r.code()), (404, Some("not_found")));
    let r = call(&st, "GET", "/api/sync", Some(TOKEN), None).await;
    assert_eq!((r.status, r.code()), (405, Some("method_not_allowed")));
    assert_eq!(r.headers["allow"], "POST");
    let r = call(&st, "DELETE", "/api/repos", Some(TOKEN), None).await;
    assert_eq!(r.status, 405);
    assert_eq!(r.headers["allow"], "GET");
    let r = call(&st, "GET", "/api/repos?tenant=nope", Some(TOKEN), None).await;
    assert_eq!((r.status, r.code()), (404, Some("unknown_tenant")));
    let r = call(&st, "GET", "/api/repos?tenant=default", Some(TOKEN), None).await;
    assert_eq!(r.status, 200);
}

/// With the SQS backend the 409 is decided before anything is queued: a repository with no row
/// whose lock is held is refused at once.
#[tokio::test]
async fn with_the_queue_a_busy_repository_without_a_row_is_refused_before_queueing() {
    let w = World::new().await;
    let id = w.repo("acme/handbook", DOCS);
    let mut st = state(&w);
    let config = shared::config::from_lookup(|k| match k {
        "DATABASE_URL" => Some("postgres://postgres@127.0.0.1:5432/unused".to_owned()),
        "JOBS_BACKEND" => Some("sqs".to_owned()),
        // Nothing listens here: a job that reached the queue would fail with 503.
        "SQS_QUEUE_URL" => Some("http://127.0.0.1:9/000000000000/jobs".to_owned()),
        "AWS_ENDPOINT_URL_SQS" => Some("http://127.0.0.1:9".to_owned()),
        _ => None,
    })
    .unwrap();
    st.jobs = shared::app::jobs_adapter(&config, st.tenants.clone(), None)
        .await
        .unwrap();
    let held = HeldLock::try_acquire(&w.db.pool, repo_key(id as i64))
        .await
        .unwrap()
        .unwrap();
    let r = post_sync(&st, &json!({"repository": "acme/handbook"})).await;
    assert_eq!((r.status, r.code()), (409, Some("repository_busy")));
    held.release().await;
    assert_eq!(count(&w, "SELECT count(*) FROM sync_runs").await, 0);
}

#[tokio::test]
async fn a_tenant_without_a_github_app_answers_503_after_the_configuration_check() {
    let w = World::new().await;
    let mut config = tenant(&w, "default", &[], w.installation, SyncConfig::default());
    config.github = None;
    config.sync.exclude = vec![shared::config::RepoPattern::parse("acme/*").unwrap()];
    let tenants = std::sync::Arc::new(shared::tenants::Tenants::from_parts(
        vec![(config.clone(), w.db.pool.clone(), None)],
        shared::sync::workspace::RunOptions::default(),
    ));
    let st = AppState {
        jobs: shared::worker::inline(tenants.clone()),
        tenants,
        default_tenant: config.id.clone(),
    };
    let r = post_sync(&st, &json!({"repository": "acme/handbook"})).await;
    assert_eq!((r.status, r.code()), (404, Some("repository_not_selected")));
    let r = post_sync(&st, &json!({"repository": "other/handbook"})).await;
    assert_eq!((r.status, r.code()), (503, Some("github_not_configured")));
    let r = post_sync(&st, &json!({})).await;
    assert_eq!((r.status, r.code()), (503, Some("github_not_configured")));
    // Reads need no GitHub App.
    let r = call(&st, "GET", "/api/repos", Some(TOKEN), None).await;
    assert_eq!(r.status, 200);
}
