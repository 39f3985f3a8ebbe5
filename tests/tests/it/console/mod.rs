//! The web console (issue 22) over HTTP, on the real sync-api and ingest handlers: its files and
//! their security headers, `whoami`, a document as Markdown and as sanitized HTML, and the
//! sessions and insights routes the Sessions and Insights pages read. What a browser does with
//! them is `console_browser`.

mod documents;
mod sessions;

use http::HeaderMap;
use lambda_http::Body;
use serde_json::Value;

use crate::functions::support::{READ_TOKEN, TOKEN, apigw};
use crate::read::{get, synced};

/// A console file's answer: status, headers, text.
async fn fetch(st: &shared::app::AppState, method: &str, path: &str) -> (u16, HeaderMap, String) {
    let resp = shared::api::handle(st, apigw(method, path, &[], None)).await;
    let text = match resp.body() {
        Body::Text(t) => t.clone(),
        Body::Binary(b) => String::from_utf8_lossy(b).into_owned(),
        Body::Empty => String::new(),
        _ => String::new(),
    };
    (resp.status().as_u16(), resp.headers().clone(), text)
}

#[tokio::test]
async fn the_console_page_its_script_and_style_are_served_with_a_strict_policy_and_no_token() {
    let (_w, st) = synced(&[]).await;
    for (path, kind) in [
        ("/", "text/html"),
        ("/console/app.js", "text/javascript"),
        ("/console/app.css", "text/css"),
    ] {
        let (status, headers, text) = fetch(&st, "GET", path).await;
        assert_eq!(status, 200, "{path}");
        assert!(headers["content-type"].to_str().unwrap().starts_with(kind));
        let csp = headers["content-security-policy"].to_str().unwrap();
        for part in [
            "default-src 'none'",
            "script-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(part), "{path}: {csp}");
        }
        assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["referrer-policy"], "no-referrer");
        assert!(!text.is_empty());
    }
    let (_, _, page) = fetch(&st, "GET", "/").await;
    assert!(page.contains("/console/app.js") || page.contains("console/app.js"));
    let (status, _, body) = fetch(&st, "HEAD", "/").await;
    assert_eq!((status, body.as_str()), (200, ""));
    let (status, headers, _) = fetch(&st, "POST", "/").await;
    assert_eq!(status, 405);
    assert_eq!(headers["allow"], "GET, HEAD");
}

#[tokio::test]
async fn whoami_says_write_for_the_sync_api_token_read_for_the_read_token_and_401_otherwise() {
    let (_w, st) = synced(&[]).await;
    let r = get(&st, "/api/whoami", Some(TOKEN)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.data()["access"], "write");
    assert_eq!(r.data()["tenant"], "default");
    let r = get(&st, "/api/whoami", Some(READ_TOKEN)).await;
    assert_eq!(r.data()["access"], "read");
    let r = get(&st, "/api/whoami", Some("wrong")).await;
    assert_eq!((r.status, r.code()), (401, Some("unauthenticated")));
    let r = get(&st, "/api/whoami", None).await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn the_repository_list_shows_each_head_commit_and_runs_filter_to_those_that_covered_a_repository()
 {
    let files: &[(&str, &str)] = &[("docs/a.md", "# A\n")];
    let (w, st) = synced(&[("acme/one", files), ("acme/two", files)]).await;
    let r = get(&st, "/api/repos", Some(READ_TOKEN)).await;
    for repo in r.data()["repositories"].as_array().unwrap() {
        let name = repo["fullName"].as_str().unwrap();
        assert_eq!(
            repo["headCommitSha"].as_str(),
            w.gh.branch_head(name, "main").as_deref(),
            "{name}"
        );
    }
    for (scope, trigger) in [
        (Some("acme/one"), "manual"),
        (Some("acme/two"), "manual"),
        (None, "schedule"),
    ] {
        sqlx::query(
            "INSERT INTO sync_runs (trigger, scope, status, lock_key, finished_at)
             VALUES ($1, $2, 'success', 1, now())",
        )
        .bind(trigger)
        .bind(scope)
        .execute(&w.db.pool)
        .await
        .unwrap();
    }
    let r = get(&st, "/api/sync/runs?repo=ACME/one", Some(READ_TOKEN)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let scopes: Vec<&Value> = r.data()["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["scope"])
        .collect();
    assert!(
        scopes.iter().all(|s| s.is_null() || *s == "acme/one"),
        "{scopes:?}"
    );
    assert!(scopes.iter().any(|s| *s == "acme/one") && scopes.iter().any(|s| s.is_null()));
    let r = get(&st, "/api/sync/runs?repo=nope", Some(READ_TOKEN)).await;
    assert_eq!((r.status, r.code()), (400, Some("invalid_repository")));
}
