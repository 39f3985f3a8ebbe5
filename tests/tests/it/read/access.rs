//! Read API access (issue 11 "Auth and tenancy"): the sync API token or the read-only token on
//! every read route; the read-only token never requests a sync; `?tenant=` as elsewhere.

use super::{get, synced};
use crate::functions::support::{READ_TOKEN, TOKEN, apigw, checked_reply};

const ROUTES: &[&str] = &[
    "/api/search?q=intro",
    "/api/repos",
    "/api/repos/acme/handbook",
    "/api/repos/acme/handbook/documents",
    "/api/repos/acme/handbook/documents/docs/intro.md",
    "/api/repos/acme/handbook/readme",
    "/api/repos/acme/handbook/owners?path=docs/intro.md",
    "/api/sync/runs",
];

#[tokio::test]
async fn read_routes_take_the_sync_token_or_the_read_token_and_nothing_else() {
    let (_w, st) = synced(&[(
        "acme/handbook",
        &[
            ("README.md", "# Handbook\n"),
            ("docs/intro.md", "# Intro\n"),
        ],
    )])
    .await;
    for route in ROUTES {
        for token in [TOKEN, READ_TOKEN] {
            let r = get(&st, route, Some(token)).await;
            assert_eq!(r.status, 200, "{route} with {token}: {}", r.body);
        }
        for token in [None, Some("wrong"), Some("events-read-toke")] {
            let r = get(&st, route, token).await;
            assert_eq!(
                (r.status, r.code()),
                (401, Some("unauthenticated")),
                "{route}"
            );
        }
        let r = get(&st, &with_tenant(route, "nope"), Some(READ_TOKEN)).await;
        assert_eq!(
            (r.status, r.code()),
            (404, Some("unknown_tenant")),
            "{route}"
        );
        let r = get(&st, &with_tenant(route, "default"), Some(READ_TOKEN)).await;
        assert_eq!(r.status, 200, "{route}: {}", r.body);
    }
}

fn with_tenant(route: &str, tenant: &str) -> String {
    let sep = if route.contains('?') { '&' } else { '?' };
    format!("{route}{sep}tenant={tenant}")
}

#[tokio::test]
async fn the_read_token_cannot_request_a_sync() {
    let (w, st) = synced(&[("acme/handbook", &[("docs/intro.md", "# Intro\n")])]).await;
    let runs_before: i64 = sqlx::query_scalar("SELECT count(*) FROM sync_runs")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    let auth = format!("Bearer {READ_TOKEN}");
    for body in [&b"{}"[..], br#"{"repository":"acme/handbook"}"#] {
        let req = apigw(
            "POST",
            "/api/sync",
            &[
                ("authorization", &auth),
                ("content-type", "application/json"),
            ],
            Some(body),
        );
        let r = checked_reply("POST", "/api/sync", shared::api::handle(&st, req).await);
        assert_eq!((r.status, r.code()), (403, Some("read_only_token")));
    }
    let runs_after: i64 = sqlx::query_scalar("SELECT count(*) FROM sync_runs")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(runs_after, runs_before, "no sync ran");
}
