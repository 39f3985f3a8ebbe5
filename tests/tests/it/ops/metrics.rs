//! Issue 13 §5, metrics: runs and ingest batches report themselves in CloudWatch Embedded Metric
//! Format. Every line is checked against the format's rules (`shared::metrics::validate`: each
//! metric named in `_aws` has a numeric member, each dimension a string member, a namespace, a
//! millisecond timestamp, at most 100 metrics per directive, CloudWatch units).

use serde_json::{Value, json};
use shared::metrics::{capture, validate};
use shared::sync::full::sync_all;
use shared::sync::runs::Trigger;
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use shared::worker::TenantWorkspace;
use syncplane_tests::{apigw, processes};

use super::Env;
use crate::ingest::support::{batch, env as ingest_env, gzip, session};

/// The one valid document of `lines` that defines metric `name`.
fn document_with<'a>(docs: &'a [Value], name: &str) -> &'a Value {
    let found: Vec<&Value> = docs
        .iter()
        .filter(|d| {
            d["_aws"]["CloudWatchMetrics"][0]["Metrics"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["Name"] == name))
        })
        .collect();
    assert_eq!(found.len(), 1, "one document defines {name}: {docs:?}");
    found[0]
}

fn valid(lines: &[String]) -> Vec<Value> {
    assert!(!lines.is_empty(), "no EMF line");
    lines
        .iter()
        .map(|l| validate(l).unwrap_or_else(|why| panic!("not EMF ({why}): {l}")))
        .collect()
}

fn dimensions(doc: &Value) -> Value {
    doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"].clone()
}

#[tokio::test]
async fn a_finished_run_emits_its_status_and_repository_counts_as_emf() {
    let e = Env::new().await;
    let vars = e.vars();
    let config =
        shared::config::from_lookup(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
            .unwrap();
    let tenants = Tenants::from_config(&config, 5, RunOptions::default()).unwrap();
    let ws = tenants.workspace("default").unwrap();
    let (report, lines) = capture(sync_all(&ws, Trigger::Manual)).await;
    let report = report.unwrap();
    let docs = valid(&lines);

    let runs = document_with(&docs, "Runs");
    assert_eq!(dimensions(runs), json!([["Tenant", "Status", "Trigger"]]));
    assert_eq!(
        (
            &runs["Tenant"],
            &runs["Status"],
            &runs["Trigger"],
            &runs["Runs"]
        ),
        (
            &json!("default"),
            &json!("success"),
            &json!("manual"),
            &json!(1.0)
        )
    );
    assert_eq!(
        runs["_aws"]["CloudWatchMetrics"][0]["Namespace"],
        "syncplane"
    );

    let counts = document_with(&docs, "ReposSynced");
    assert_eq!(dimensions(counts), json!([["Tenant"]]));
    assert_eq!(counts["ReposSynced"], json!(2.0));
    assert_eq!(counts["ReposUnchanged"], json!(0.0));
    assert_eq!(counts["ReposFailed"], json!(0.0));
    let c = &report.counts;
    assert_eq!(counts["GithubRequests"], json!(c.github_requests as f64));
    assert_eq!(
        counts["GithubRestRequests"],
        json!(c.github_rest_requests as f64)
    );
    assert_eq!(
        counts["GithubGraphqlRequests"],
        json!(c.github_graphql_requests as f64)
    );
    assert!(c.github_requests > 0, "the run called GitHub");

    let limit = document_with(&docs, "GithubRateLimitRemaining");
    assert!(limit["GithubRateLimitRemaining"].as_f64().unwrap() > 0.0);
    assert!(limit["Resource"].is_string());

    // A second run finds both unchanged: the counts follow.
    let (_, lines) = capture(sync_all(&ws, Trigger::Schedule)).await;
    let docs = valid(&lines);
    assert_eq!(
        document_with(&docs, "ReposUnchanged")["ReposUnchanged"],
        2.0
    );
    assert_eq!(document_with(&docs, "Runs")["Trigger"], "schedule");
}

#[tokio::test]
async fn an_ingest_batch_emits_batches_sessions_bytes_and_refusals_by_code_as_emf() {
    let env = ingest_env().await;
    let json_bytes = serde_json::to_vec(&batch(vec![
        session("s1", "r1", "2026-01-01T00:00:00Z"),
        session("s2", "r1", "2026-01-01T00:00:00Z"),
    ]))
    .unwrap();
    let wire = gzip(&json_bytes);
    let (reply, lines) = capture(env.post_raw(&[("content-encoding", "gzip")], &wire)).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let docs = valid(&lines);
    let batches = document_with(&docs, "IngestBatches");
    assert_eq!(dimensions(batches), json!([["Tenant", "Outcome"]]));
    assert_eq!(batches["Outcome"], "accepted");
    let sizes = document_with(&docs, "IngestWireBytes");
    assert_eq!(sizes["IngestWireBytes"], json!(wire.len() as f64));
    assert_eq!(sizes["IngestInflatedBytes"], json!(json_bytes.len() as f64));
    assert_eq!(sizes["IngestSessions"], json!(2.0));
    assert!(
        !docs.iter().any(|d| d.get("IngestRefusals").is_some()),
        "no refusal"
    );

    // Refused: counted under its code (and the statuses without a code under a name of theirs).
    let (reply, lines) = capture(env.post_raw(&[("content-encoding", "br")], &wire)).await;
    assert_eq!(reply.status, 415);
    let docs = valid(&lines);
    assert_eq!(document_with(&docs, "IngestBatches")["Outcome"], "refused");
    let refusal = document_with(&docs, "IngestRefusals");
    assert_eq!(dimensions(refusal), json!([["Tenant", "Code"]]));
    assert_eq!(refusal["Code"], "unsupported_encoding");
    let (reply, lines) = capture(env.post_raw(&[], b"{not json")).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        document_with(&valid(&lines), "IngestRefusals")["Code"],
        "bad_request"
    );
}

#[tokio::test]
async fn the_ingest_function_writes_emf_lines_to_stdout_and_its_logs_to_stderr() {
    let env = ingest_env().await;
    let body = gzip(
        &serde_json::to_vec(&batch(vec![session("s1", "r1", "2026-01-01T00:00:00Z")])).unwrap(),
    );
    let auth = env.bearer();
    let event = apigw::event(
        "POST",
        "/api/agent-sessions/sync",
        &[
            ("authorization", &auth),
            ("content-type", "application/octet-stream"),
            ("content-encoding", "gzip"),
        ],
        Some(&body),
    );
    let vars = vec![
        ("DATABASE_URL".to_owned(), env.db.url().expose().to_owned()),
        (
            "SYNC_METRICS_NAMESPACE".to_owned(),
            "acme/syncplane".to_owned(),
        ),
    ];
    let inv = processes::invoke("ingest", &vars, &event).await;
    let answer: Value = serde_json::from_slice(inv.response.as_deref().expect("answered")).unwrap();
    assert_eq!(answer["statusCode"], 200, "{answer} {}", inv.output.stderr);
    // Every stdout line stands alone as an EMF document: nothing else shares stdout.
    let lines: Vec<String> = inv.output.stdout.lines().map(str::to_owned).collect();
    let docs = valid(&lines);
    for d in &docs {
        assert_eq!(
            d["_aws"]["CloudWatchMetrics"][0]["Namespace"],
            "acme/syncplane"
        );
        let ts = d["_aws"]["Timestamp"].as_i64().unwrap();
        let now = chrono::Utc::now().timestamp_millis();
        assert!(
            (now - 60_000..=now).contains(&ts),
            "a millisecond timestamp: {ts}"
        );
    }
    assert_eq!(
        document_with(&docs, "IngestSessions")["IngestSessions"],
        1.0
    );
    assert!(!inv.output.stderr.contains("_aws"), "no metric on stderr");
    assert!(
        inv.output.stderr.contains("ingest ok"),
        "logs stay on stderr"
    );
}

#[tokio::test]
async fn metrics_are_off_in_the_cli_so_its_stdout_stays_its_result() {
    let e = Env::new().await;
    let out = processes::run("syncplane", &["sync", "--json"], &e.vars()).await;
    assert_eq!(out.status.and_then(|s| s.code()), Some(0), "{}", out.stderr);
    assert!(!out.stdout.contains("_aws"), "{}", out.stdout);
    serde_json::from_str::<Value>(&out.stdout).expect("stdout is the JSON result alone");
}
