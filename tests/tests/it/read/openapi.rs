//! The OpenAPI 3.1 document (issue 11 "OpenAPI"): served as committed, in step with template.yaml
//! both ways, every documented path routed by its function, and the ingest schemas in agreement
//! with the v2 contract (a valid batch validates, each refused shape does not, and the function
//! refuses the same shapes).

use std::collections::BTreeSet;

use serde_json::{Value, json};
use syncplane_tests::openapi::{document, is_valid};

use super::synced;
use crate::functions::support::{apigw, reply};
use crate::ingest::support::{batch, env, event, session};

fn repo_file(path: &str) -> String {
    format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test]
async fn the_served_document_is_the_committed_file_byte_for_byte() {
    let (_w, st) = synced(&[]).await;
    let resp = shared::api::handle(&st, apigw("GET", "/api/openapi.json", &[], None)).await;
    assert_eq!(resp.status(), 200);
    let lambda_http::Body::Text(served) = resp.body() else {
        panic!("the document is text");
    };
    let file = std::fs::read_to_string(repo_file("openapi.json")).unwrap();
    assert_eq!(*served, file);
    let doc: Value = serde_json::from_str(&file).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let r = reply(shared::api::handle(&st, apigw("POST", "/api/openapi.json", &[], None)).await);
    assert_eq!((r.status, r.code()), (405, Some("method_not_allowed")));
}

/// (method, path) of every HttpApi event in template.yaml, `{path+}` written `{path}` as OpenAPI
/// spells a greedy parameter.
fn template_routes() -> BTreeSet<(String, String)> {
    let text = std::fs::read_to_string(repo_file("template.yaml")).unwrap();
    let t: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    let mut routes = BTreeSet::new();
    for (_, r) in t["Resources"].as_mapping().unwrap() {
        let Some(events) = r["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for e in events.values().filter(|e| e["Type"] == "HttpApi") {
            let p = &e["Properties"];
            routes.insert((
                p["Method"].as_str().unwrap().to_ascii_lowercase(),
                p["Path"].as_str().unwrap().replace("{path+}", "{path}"),
            ));
        }
    }
    routes
}

fn document_routes() -> BTreeSet<(String, String)> {
    let mut routes = BTreeSet::new();
    for (path, item) in document()["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            routes.insert((method.clone(), path.clone()));
        }
    }
    routes
}

#[test]
fn every_route_of_template_yaml_is_in_the_document_and_every_documented_route_is_deployed() {
    assert_eq!(template_routes(), document_routes());
}

/// A concrete request path for a template (parameters filled with plausible values).
fn concrete(template: &str) -> String {
    template
        .replace("{tenant}", "default")
        .replace("{owner}", "acme")
        .replace("{name}", "handbook")
        .replace("{path}", "docs/intro.md")
        .replace("{id}", "1")
}

/// Each documented route reaches a handler that knows it: never the router's own 404
/// `not_found` or a 405 for its documented method.
#[tokio::test]
async fn every_path_in_the_document_is_routed_by_its_function() {
    let (w, st) = synced(&[]).await;
    let ingest = shared::ingest::IngestState {
        pool: w.db.pool.clone(),
        rate_limit_per_minute: 10,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };
    for (method, template) in document_routes() {
        let path = concrete(&template);
        let req = apigw(&method.to_ascii_uppercase(), &path, &[], Some(b"{}"));
        if template == "/" || template.starts_with("/console/") {
            // The web console's files: not the JSON envelope.
            let resp = shared::api::handle(&st, req).await;
            assert_eq!(resp.status(), 200, "{method} {template}");
            continue;
        }
        let resp = if template.starts_with("/github/") {
            shared::webhook::handle(&st, req).await
        } else if template.starts_with("/api/agent-sessions/") {
            shared::ingest::handle(&ingest, req).await
        } else {
            shared::api::handle(&st, req).await
        };
        let r = reply(resp);
        assert!(
            r.code() != Some("not_found") && r.status != 405,
            "{method} {template} is not routed: {} {}",
            r.status,
            r.body
        );
    }
}

const BATCH: &str = "/components/schemas/IngestBatch";
const T: &str = "2026-01-01T00:00:00Z";

/// The contract's valid batch: every optional field of a session present.
fn full_batch() -> Value {
    let mut s = session("s1", "r1", T);
    s["chunk"] = json!({"index": 0, "total": 1});
    s["model"] = json!("opus");
    s["title"] = json!("Fix the build");
    s["status"] = json!("done");
    s["startedAt"] = json!(T);
    s["endedAt"] = json!(T);
    s["repository"] =
        json!({"remoteUrl": "git@github.com:acme/x.git", "branch": "main", "commitSha": "abc"});
    s["usage"] = json!({"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 3, "cacheWriteTokens": 4, "costUsd": 0.5});
    s["events"] = json!([event(0), event(1)]);
    s["tokenEvents"] = json!([{"ts": T, "inputTokens": 1, "outputTokens": 2}]);
    s["artifactRefs"] = json!([{"kind": "file", "ref": "a.rs"}]);
    s["tokenSeries"] = json!([1, 2, 3]);
    s["frustration"] = json!({"score": 0.2, "signals": ["retry"]});
    let mut b = batch(vec![s]);
    b["encoding"] = json!("gzip");
    b["futureField"] = json!("ignored");
    b
}

/// Shapes the contract refuses at step 5 (each one edit of the valid batch).
fn refused_shapes() -> Vec<(&'static str, Value)> {
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut b = full_batch();
        f(&mut b);
        b
    };
    vec![
        ("schemaVersion 3", edit(&|b| b["schemaVersion"] = json!(3))),
        (
            "schemaVersion string",
            edit(&|b| b["schemaVersion"] = json!("2")),
        ),
        ("batchId empty", edit(&|b| b["batchId"] = json!(""))),
        (
            "batchId 129",
            edit(&|b| b["batchId"] = json!("b".repeat(129))),
        ),
        ("mode", edit(&|b| b["mode"] = json!("full"))),
        (
            "no sessions",
            edit(&|b| {
                b["sessions"] = json!([]);
                b["sessionCount"] = json!(0);
            }),
        ),
        (
            "201 sessions",
            edit(&|b| {
                let s = b["sessions"][0].clone();
                let many: Vec<Value> = (0..201)
                    .map(|i| {
                        let mut s = s.clone();
                        s["sessionId"] = json!(format!("s{i}"));
                        s
                    })
                    .collect();
                b["sessions"] = json!(many);
                b["sessionCount"] = json!(201);
            }),
        ),
        (
            "sessionCount string",
            edit(&|b| b["sessionCount"] = json!("1")),
        ),
        (
            "no batchId",
            edit(&|b| {
                b.as_object_mut().unwrap().remove("batchId");
            }),
        ),
        (
            "agent 65",
            edit(&|b| b["sessions"][0]["agent"] = json!("a".repeat(65))),
        ),
        (
            "sessionId empty",
            edit(&|b| b["sessions"][0]["sessionId"] = json!("")),
        ),
        (
            "updatedAt not RFC 3339",
            edit(&|b| b["sessions"][0]["updatedAt"] = json!("yesterday")),
        ),
        (
            "chunk total 1001",
            edit(&|b| b["sessions"][0]["chunk"] = json!({"index": 0, "total": 1001})),
        ),
        (
            "negative seq",
            edit(&|b| b["sessions"][0]["events"][0]["seq"] = json!(-1)),
        ),
        (
            "event kind empty",
            edit(&|b| b["sessions"][0]["events"][0]["kind"] = json!("")),
        ),
        (
            "negative usage",
            edit(&|b| b["sessions"][0]["usage"]["inputTokens"] = json!(-5)),
        ),
        (
            "negative cost",
            edit(&|b| b["sessions"][0]["usage"]["costUsd"] = json!(-0.1)),
        ),
        (
            "frustration score 2",
            edit(&|b| b["sessions"][0]["frustration"]["score"] = json!(2)),
        ),
        (
            "101 frustration signals",
            edit(&|b| b["sessions"][0]["frustration"]["signals"] = json!(vec!["retry"; 101])),
        ),
    ]
}

#[tokio::test]
async fn the_ingest_schema_accepts_the_contracts_valid_batch_and_refuses_each_refused_shape() {
    let env = env().await;
    let valid = full_batch();
    assert!(is_valid(BATCH, &valid), "the valid batch validates");
    let r = env.post(&valid).await;
    assert_eq!(r.status, 200, "and the function stores it: {}", r.body);
    for (what, doc) in refused_shapes() {
        assert!(!is_valid(BATCH, &doc), "the schema refuses: {what}");
        let r = env.post(&doc).await;
        assert_eq!(
            r.status, 400,
            "the function refuses too: {what}: {}",
            r.body
        );
    }
}
