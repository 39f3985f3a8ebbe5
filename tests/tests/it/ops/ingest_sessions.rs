//! Issue 21 point 16: `syncplane ingest sessions` shows what agent session ingest stored, per org,
//! newest first, without psql. Sessions arrive through the ingest function itself.

use std::process::ExitCode;

use serde_json::{Value, json};
use shared::accounts::provision::{self, NewOrg};
use shared::accounts::tokens;

use super::Env;

/// An org `name` with one user, target `target` and device token; the token.
async fn org_with_device(e: &Env, name: &str, target: &str) -> (i64, String) {
    let pool = &e.db.pool;
    let org = provision::create_org(
        pool,
        &NewOrg {
            name,
            sync_policy: Some(true),
            feature_gate: true,
            frustration_opt_in: false,
        },
    )
    .await
    .unwrap();
    let user = provision::create_user(pool, org, "ada").await.unwrap();
    provision::create_compute_target(pool, user, target)
        .await
        .unwrap();
    let issued = tokens::issue_device_token(pool, user, None).await.unwrap();
    (org, issued.token)
}

/// Post one batch of `sessions` from `target` to the ingest function.
async fn ingest(e: &Env, token: &str, target: &str, sessions: Vec<Value>) {
    let state = shared::ingest::IngestState {
        pool: e.db.pool.clone(),
        rate_limit_per_minute: 100,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };
    let batch = json!({
        "schemaVersion": 2, "batchId": "b1", "mode": "backfill", "computeTargetId": target,
        "sessionCount": sessions.len(), "sessions": sessions});
    let auth = format!("Bearer {token}");
    let req = syncplane_tests::apigw::request(
        "POST",
        "/api/agent-sessions/sync",
        &[("authorization", &auth)],
        Some(&serde_json::to_vec(&batch).unwrap()),
    );
    let r = syncplane_tests::apigw::reply(shared::ingest::handle(&state, req).await);
    assert_eq!(r.status, 200, "{}", r.body);
}

fn session(id: &str, updated_at: &str, title: &str) -> Value {
    json!({"sessionId": id, "updatedAt": updated_at, "dataRevision": "r1", "agent": "claude-code",
           "model": "opus", "title": title,
           "events": [{"seq": 0, "ts": updated_at, "kind": "user"},
                      {"seq": 1, "ts": updated_at, "kind": "tool", "toolName": "Bash"}]})
}

#[tokio::test]
async fn ingest_sessions_lists_each_orgs_sessions_newest_first_without_psql() {
    let e = Env::new().await;
    let (acme, token) = org_with_device(&e, "acme", "laptop-1").await;
    let (empty, _) = org_with_device(&e, "globex", "desk-9").await;
    ingest(
        &e,
        &token,
        "laptop-1",
        vec![
            session("s-old", "2026-01-01T09:00:00Z", "First try"),
            session("s-new", "2026-03-01T10:00:00Z", "Fix the build\u{1b}[2J"),
            session("s-mid", "2026-02-01T10:00:00Z", "Refactor"),
        ],
    )
    .await;

    let (code, out) = e.syncplane(&["ingest", "sessions"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            format!("org {acme} \"acme\": 3 session(s), newest first").as_str(),
            "  2026-03-01T10:00:00Z  laptop-1  s-new  claude-code/opus  2 events  \"Fix the build [2J\"",
            "  2026-02-01T10:00:00Z  laptop-1  s-mid  claude-code/opus  2 events  \"Refactor\"",
            "  2026-01-01T09:00:00Z  laptop-1  s-old  claude-code/opus  2 events  \"First try\"",
            format!("org {empty} \"globex\": no sessions ingested").as_str(),
        ],
        "newest first per org; a title's escape sequence cannot reach the terminal"
    );

    // One org, the newest two, as JSON.
    let org = acme.to_string();
    let (code, out) = e
        .syncplane(&[
            "ingest", "sessions", "--org", &org, "--limit", "2", "--json",
        ])
        .await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
    assert_eq!(listed[0]["orgId"], acme);
    assert_eq!(listed[0]["org"], "acme");
    assert_eq!(listed[0]["total"], 3);
    let ids: Vec<&str> = listed[0]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["s-new", "s-mid"]);
    let newest = &listed[0]["sessions"][0];
    assert_eq!(newest["computeTargetId"], "laptop-1");
    assert_eq!(newest["eventCount"], 2);
    assert_eq!(newest["updatedAt"], "2026-03-01T10:00:00Z");
    let (_, out) = e
        .syncplane(&["ingest", "sessions", "--org", &org, "--limit", "1"])
        .await;
    assert!(
        out.starts_with(&format!(
            "org {acme} \"acme\": the newest 1 of 3 sessions (--limit shows more)\n"
        )),
        "{out}"
    );

    // An org that does not exist is an error, not an empty listing.
    let (code, _) = e
        .syncplane(&["ingest", "sessions", "--org", "999999"])
        .await;
    assert_eq!(code, ExitCode::FAILURE);
}
