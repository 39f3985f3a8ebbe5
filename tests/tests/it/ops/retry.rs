//! §5: a run stopped by a rate limit records when to retry (`sync_runs.retry_after`), shown by
//! the CLI summary and `GET /api/sync/runs/{id}`; after a COMMIT whose reply was lost, the next
//! run says the content was already current.

use std::process::ExitCode;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use shared::config::{SyncConfig, TenantId};
use shared::sync::SyncError;
use shared::sync::coalescing::{NoRowBusy, request_sync};
use shared::sync::runs::Trigger;
use shared::sync::workspace::{RunOptions, Workspace};
use syncplane_tests::apigw;
use syncplane_tests::db::admin_url;
use syncplane_tests::fake_github::{Endpoint, Fault};
use syncplane_tests::pg_proxy::PgProxy;

use super::Env;
use crate::engine::client_for;

const TOKEN: &str = "retry-test-token";

/// `GET /api/sync/runs/{id}` through the sync API's handler, as the function serves it.
async fn api_run(e: &Env, id: i64) -> Value {
    let mut vars = e.vars();
    vars.push(("SYNC_API_TOKEN".to_owned(), TOKEN.to_owned()));
    let config =
        shared::config::from_lookup(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
            .unwrap();
    let state = shared::worker::app_state(&config, 2).await.unwrap();
    let bearer = format!("Bearer {TOKEN}");
    let req = apigw::request(
        "GET",
        &format!("/api/sync/runs/{id}"),
        &[("authorization", &bearer)],
        None,
    );
    let reply = apigw::reply(shared::api::handle(&state, req).await);
    assert_eq!(reply.status, 200);
    reply.data().clone()
}

fn instant(v: &Value) -> DateTime<Utc> {
    v.as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .unwrap_or_else(|| panic!("an RFC 3339 instant, got {v}"))
        .with_timezone(&Utc)
}

#[tokio::test]
async fn a_run_stopped_by_the_rate_limit_records_when_to_retry() {
    let e = Env::new().await;
    let (code, _) = e.syncplane(&["sync"]).await;
    assert_eq!(code, ExitCode::SUCCESS);
    // A request waits; the drain that `sync` runs before exiting would meet the same limit.
    sqlx::query("UPDATE repos SET sync_requested_at = now() WHERE name = 'widgets'")
        .execute(&e.db.pool)
        .await
        .unwrap();
    let reset_in = Duration::from_secs(3600);
    // The listing is GraphQL's (issue 23): its points budget is spent.
    e.gh.set_graphql_rate_limit(5000, 0, reset_in);
    let before = Utc::now();
    let (code, out) = e.syncplane(&["sync", "--json"]).await;
    assert_eq!(code, ExitCode::FAILURE, "{out}");
    let json: Value = serde_json::from_str(&out).unwrap();
    let report = &json[0]["report"];
    assert_eq!(report["status"], "failed");
    assert_eq!(report["error"], "rate_limited");
    let retry = instant(&report["retryAfter"]);
    let expected = before + chrono::Duration::from_std(reset_in).unwrap();
    assert!(
        (retry - expected).num_seconds().abs() <= 5,
        "retry after {retry}, GitHub's reset about {expected}"
    );

    assert_eq!(
        json.as_array().unwrap().len(),
        2,
        "the run and the reap, no drain: {out}"
    );
    assert!(
        e.marker_set("acme/widgets").await,
        "the request waits for the retry time"
    );

    // Recorded in the run's row (a column, not text) and shown by the API.
    let run_id = report["runId"].as_i64().unwrap();
    let stored: Option<DateTime<Utc>> =
        sqlx::query_scalar("SELECT retry_after FROM sync_runs WHERE id = $1")
            .bind(run_id)
            .fetch_one(&e.db.pool)
            .await
            .unwrap();
    assert_eq!(stored.map(|t| t.timestamp()), Some(retry.timestamp()));
    let shown = api_run(&e, run_id).await;
    assert_eq!(shown["error"], "rate_limited");
    assert_eq!(instant(&shown["retryAfter"]).timestamp(), retry.timestamp());

    // The text summary says it too.
    let (_, out) = e.syncplane(&["sync"]).await;
    assert!(out.contains("failed (rate_limited; retry after "), "{out}");
}

#[tokio::test]
async fn a_repository_sync_stopped_by_the_rate_limit_says_when_to_retry() {
    let e = Env::new().await;
    e.gh.fault(
        Endpoint::Branch,
        Fault::PrimaryRateLimit {
            reset_in: Duration::from_secs(600),
        },
        None,
    );
    let (code, out) = e
        .syncplane(&["sync", "--repo", "acme/handbook", "--json"])
        .await;
    assert_eq!(code, ExitCode::FAILURE, "{out}");
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json[0]["result"], "stopped", "{out}");
    assert_eq!(json[0]["error"], "rate_limited");
    let retry = instant(&json[0]["retryAfter"]);
    assert!(
        retry > Utc::now() + chrono::Duration::seconds(500),
        "{retry}"
    );
    let (status, stored): (String, Option<DateTime<Utc>>) = sqlx::query_as(
        "SELECT status, retry_after FROM sync_runs WHERE scope = 'acme/handbook' ORDER BY id LIMIT 1",
    )
    .fetch_one(&e.db.pool)
    .await
    .unwrap();
    assert_eq!(status, "failed");
    assert_eq!(stored.map(|t| t.timestamp()), Some(retry.timestamp()));
}

#[tokio::test]
async fn after_a_lost_commit_reply_the_next_run_says_the_content_was_already_current() {
    let e = Env::new().await;
    let proxy = PgProxy::start(&admin_url()).await;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(6)
        .connect(&proxy.url(e.db.url().expose()))
        .await
        .unwrap();
    let ws = Workspace {
        tenant: TenantId::parse("default").unwrap(),
        pool,
        client: client_for(&e.gh, e.installation, 0),
        config: SyncConfig::default(),
        options: RunOptions::default(),
    };
    let info = ws.client.repo("acme", "handbook").await.unwrap();

    proxy.lose_next_commit_reply();
    let result = request_sync(&ws, &info, Trigger::Manual, NoRowBusy::Refuse).await;
    assert!(
        matches!(result, Err(SyncError::Database(_))),
        "the write's COMMIT reply never came: {result:?}"
    );
    assert_eq!(proxy.commit_replies_lost(), 1);
    let (status, error, synced): (String, Option<String>, i32) =
        sqlx::query_as("SELECT status, error, repos_synced FROM sync_runs")
            .fetch_one(&e.db.pool)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), error.as_deref(), synced),
        ("failed", Some("database_error"), 0)
    );
    let documents: i64 = sqlx::query_scalar("SELECT count(*) FROM documents")
        .fetch_one(&e.db.pool)
        .await
        .unwrap();
    assert_eq!(documents, 1, "the COMMIT itself went through");

    // The next run finds the content current and says so.
    let (code, out) = e
        .syncplane(&["sync", "--repo", "acme/handbook", "--json"])
        .await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    let json: Value = serde_json::from_str(&out).unwrap();
    let counts = &json[0]["counts"];
    assert_eq!(json[0]["outcome"]["status"], "success", "{out}");
    assert_eq!(counts["reposUnchanged"], 1, "{out}");
    assert_eq!(counts["reposAlreadyCurrent"], 1, "{out}");
    let run_id = json[0]["outcome"]["runId"].as_i64().unwrap();
    assert_eq!(
        api_run(&e, run_id).await["counts"]["reposAlreadyCurrent"],
        1,
        "the API shows the note"
    );

    // Said once: the run after that is a plain unchanged one.
    let (_, out) = e.syncplane(&["sync", "--repo", "acme/handbook"]).await;
    assert!(out.contains("0 synced, 1 unchanged"), "{out}");
    assert!(!out.contains("already current"), "{out}");
}
