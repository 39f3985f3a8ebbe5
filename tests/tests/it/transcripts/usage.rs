//! Retention you can see (issue 34 point 5): what an org's transcript archive keeps and when its
//! oldest segment expires, through the read route, the CLI (`syncplane transcripts usage`) and
//! the `transcripts.expire` job's metrics; each org sees its own.

use std::sync::Arc;

use serde_json::{Value, json};
use shared::accounts::tokens;
use shared::config::{TenantConfig, TenantId};
use shared::ingest::handle;
use shared::metrics::capture;
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use shared::worker::expire::{self, TranscriptArchive};
use syncplane_tests::apigw::{Reply, checked_reply, request};

use super::support::{Env, env, lines, segment};

const RETENTION: &str = "/api/agent-sessions/transcripts/retention";

async fn usage_as(e: &Env, token: &str) -> Reply {
    let auth = format!("Bearer {token}");
    let req = request("GET", RETENTION, &[("authorization", auth.as_str())], None);
    checked_reply("GET", RETENTION, handle(&e.state, req).await)
}

/// Two segments of the env's file; their compressed and decoded bytes.
async fn fill(e: &Env) -> (i64, i64) {
    let (a, b) = (segment(&lines(20, "a")), segment(&lines(10, "b")));
    assert_eq!(e.upload(1, 0, &a).await.status, 200);
    assert_eq!(e.upload(1, a.decoded.len() as u64, &b).await.status, 200);
    shared::archive::search::index::drain(&e.db.pool, &e.state.transcripts.store, 10)
        .await
        .unwrap();
    (
        (a.compressed.len() + b.compressed.len()) as i64,
        (a.decoded.len() + b.decoded.len()) as i64,
    )
}

#[tokio::test]
async fn the_route_says_what_the_orgs_archive_keeps_and_when_its_oldest_segment_expires() {
    let e = env().await;
    let (compressed, decoded) = fill(&e).await;
    let token = tokens::issue_read_token(&e.db.pool, e.org, None)
        .await
        .unwrap()
        .token;
    let r = usage_as(&e, &token).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let d = r.data();
    assert_eq!(
        (
            d["org"].clone(),
            d["sessions"].clone(),
            d["files"].clone(),
            d["segments"].clone()
        ),
        (json!("acme"), json!(1), json!(1), json!(2))
    );
    assert_eq!(
        (d["compressedBytes"].as_i64(), d["decodedBytes"].as_i64()),
        (Some(compressed), Some(decoded))
    );
    assert_eq!(d["indexedLines"], 30);
    assert_eq!(
        (d["retentionDays"].clone(), d["oldestExpiresAt"].clone()),
        (Value::Null, Value::Null),
        "kept forever"
    );

    e.exec(&format!(
        "UPDATE orgs SET transcript_retention_days = 30 WHERE id = {}",
        e.org
    ))
    .await;
    e.exec("UPDATE transcript_segments SET created_at = '2026-11-01T00:00:00Z'")
        .await;
    let d = usage_as(&e, &token).await.data().clone();
    assert_eq!(d["retentionDays"], 30);
    let expires =
        chrono::DateTime::parse_from_rfc3339(d["oldestExpiresAt"].as_str().unwrap()).unwrap();
    assert_eq!(expires.to_rfc3339(), "2026-12-01T00:00:00+00:00");

    // Another org's token sees its own, empty archive; a device token is not a read token.
    let globex: i64 = e.count("SELECT id FROM orgs WHERE name = 'globex'").await;
    let other = tokens::issue_read_token(&e.db.pool, globex, None)
        .await
        .unwrap()
        .token;
    let d = usage_as(&e, &other).await.data().clone();
    assert_eq!(
        (
            d["org"].clone(),
            d["segments"].clone(),
            d["oldestSegmentAt"].clone()
        ),
        (json!("globex"), json!(0), Value::Null)
    );
    assert_eq!(usage_as(&e, &e.token).await.status, 401);
}

fn tenants_of(e: &Env) -> Arc<Tenants> {
    let config = TenantConfig {
        id: TenantId::parse("default").unwrap(),
        database_url: e.db.url(),
        github: None,
        webhook_secrets: Vec::new(),
        sync_api_token: None,
        read: Default::default(),
        sync: Default::default(),
    };
    Arc::new(Tenants::from_parts(
        vec![(config, e.db.pool.clone(), None)],
        RunOptions::default(),
    ))
}

#[tokio::test]
async fn the_expire_job_reports_each_orgs_archive_as_metrics_and_the_cli_prints_it() {
    let e = env().await;
    let (compressed, _) = fill(&e).await;
    let archive = TranscriptArchive {
        tenant: TenantId::parse("default").unwrap(),
        store: e.state.transcripts.store.clone(),
    };
    let tenants = tenants_of(&e);
    let (done, metrics) = capture(expire::expire(
        &tenants,
        Some(&archive),
        "default",
        chrono::Utc::now(),
    ))
    .await;
    done.unwrap();
    let acme: Vec<Value> = metrics
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["Org"] == "acme")
        .collect();
    assert_eq!(acme.len(), 1, "{metrics:?}");
    assert_eq!(
        acme[0]["TranscriptBytesStored"].as_f64(),
        Some(compressed as f64)
    );
    assert_eq!(acme[0]["TranscriptSegmentsKept"].as_f64(), Some(2.0));
    assert!(
        !metrics.iter().any(|l| l.contains("\"Org\":\"globex\"")),
        "an org with nothing archived is left out"
    );

    let vars = vec![("DATABASE_URL".to_owned(), e.db.url().expose().to_owned())];
    let (code, out) =
        syncplane_tests::cli::syncplane(&vars, &["transcripts", "usage", "--org", "acme"]).await;
    assert_eq!(code, std::process::ExitCode::SUCCESS, "{out}");
    let line: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (
            line["tenant"].clone(),
            line["org"].clone(),
            line["segments"].clone()
        ),
        (json!("default"), json!("acme"), json!(2))
    );
    let (code, _) =
        syncplane_tests::cli::syncplane(&vars, &["transcripts", "usage", "--org", "nobody"]).await;
    assert_eq!(
        code,
        std::process::ExitCode::FAILURE,
        "an unknown org is an error"
    );
}
