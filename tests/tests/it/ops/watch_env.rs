//! Issue 21 point 6: `cargo lambda watch` starts every function with
//! `AWS_LAMBDA_MAX_CONCURRENCY=1`. The functions start with `run_concurrent` (the runtime's
//! `concurrency-tokio` feature), which runs one invocation at a time at 1, so no start prints the
//! runtime's warning that the variable is set while the feature is off. (Not `migrate`, run once
//! per deploy, which keeps `run`: see its main.rs.)

use serde_json::json;
use syncplane_tests::processes;

use super::Env;

#[tokio::test]
async fn functions_started_as_cargo_lambda_watch_starts_them_print_no_concurrency_warning() {
    let e = Env::new().await;
    let mut vars = e.vars();
    for (k, v) in [
        ("AWS_LAMBDA_MAX_CONCURRENCY", "1"),
        ("SYNCPLANE_LOCAL", "1"),
        ("JOBS_BACKEND", "inline"),
        ("SYNC_SCHEDULER", "0"),
        ("SYNC_API_TOKEN", "watch-env-token"),
        ("GITHUB_WEBHOOK_SECRET", "watch-env-secret"),
    ] {
        vars.push((k.to_owned(), v.to_owned()));
    }
    let health = syncplane_tests::apigw::event("GET", "/api/health", &[], None);
    let tick: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(crate::deploy::repo_file("events/schedule-tick.json")).unwrap(),
    )
    .unwrap();
    for (function, event) in [
        ("sync-api", health.clone()),
        ("webhook", health.clone()),
        ("ingest", health),
        ("tick", tick),
        ("worker", json!({ "Records": [] })),
    ] {
        let inv = processes::invoke(function, &vars, &event).await;
        assert!(
            inv.response.is_some() || inv.error.is_some(),
            "{function} ran the invocation: {}",
            inv.output.stderr
        );
        assert!(
            !inv.output.stderr.contains("AWS_LAMBDA_MAX_CONCURRENCY"),
            "{function}: {}",
            inv.output.stderr
        );
    }
}
