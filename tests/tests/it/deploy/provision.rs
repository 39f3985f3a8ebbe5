//! The migrate function's `provision` action (issue 21 point 15): the first org, user, compute
//! target and device token of a database only the VPC reaches, by `aws lambda invoke`. Its
//! handler called in-process as the function's main wires it, against real Postgres; the device
//! token then opens the ingest handler's hello; the real migrate binary, at `RUST_LOG=trace`,
//! returns the token in its response and nowhere in its output; bad input answers a clear error
//! and creates nothing.

use std::time::{Duration, SystemTime};

use migrate::MigrateFunctionError;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use shared::accounts::admin::ProvisionError;
use shared::config::{Config, ConfigError};
use shared::http::HttpError;
use shared::schema::invoke;
use shared::schema::migrate_summary;
use syncplane_tests::apigw;
use syncplane_tests::db::TestDb;
use syncplane_tests::processes;

fn config_for(db: &TestDb) -> Result<Config, ConfigError> {
    let url = db.url().expose().to_owned();
    shared::config::from_lookup(move |k| (k == "DATABASE_URL").then(|| url.clone()))
}

/// One invocation of the migrate function's handler, as its main wires it.
async fn invoke(db: &TestDb, event: Value) -> Result<Value, MigrateFunctionError> {
    let http = reqwest::Client::new();
    let answer_by = invoke::answer_by(SystemTime::now() + Duration::from_secs(60));
    let config = config_for(db);
    let again = config_for(db);
    migrate::handle(
        event,
        &http,
        answer_by,
        |until| migrate_summary(config, until),
        || async move { again },
    )
    .await
}

/// The provision refusal of an invocation that must fail.
async fn refused(db: &TestDb, event: Value) -> ProvisionError {
    match invoke(db, event.clone()).await {
        Err(MigrateFunctionError::Provision(e)) => e,
        other => panic!("{event}: expected a provision refusal, got {other:?}"),
    }
}

/// How many orgs, users, compute targets and device tokens the database holds.
async fn counts(db: &TestDb) -> [i64; 4] {
    let row: (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM orgs), (SELECT count(*) FROM users),
                (SELECT count(*) FROM compute_targets), (SELECT count(*) FROM device_tokens)",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    [row.0, row.1, row.2, row.3]
}

/// The ingest function's answer to `GET /api/agent-sessions/hello` with `token`.
async fn hello(db: &TestDb, token: &str) -> apigw::Reply {
    let state = syncplane_tests::transcripts::direct_state(
        &db.pool,
        &syncplane_tests::transcripts::temp_dir(),
    );
    let bearer = format!("Bearer {token}");
    let path = "/api/agent-sessions/hello";
    let req = apigw::request("GET", path, &[("authorization", &bearer)], None);
    apigw::checked_reply("GET", path, shared::ingest::handle(&state, req).await)
}

#[tokio::test]
async fn the_provision_action_creates_an_org_a_user_a_target_and_a_device_token_that_opens_hello() {
    let db = TestDb::new().await;
    let out = invoke(
        &db,
        json!({"action": "provision", "org": "acme", "user": "ada",
               "compute_target": "ada-laptop", "token_label": "first laptop"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out["created"],
        json!(["org", "user", "compute_target", "device_token"])
    );
    let token = out["token"].as_str().expect("the token in the response");
    assert!(token.starts_with("spd_") && token.len() == 68, "{token}");
    let (org, user) = (
        out["org_id"].as_i64().unwrap(),
        out["user_id"].as_i64().unwrap(),
    );

    // The CLI's defaults for a new org: sync policy on, gate on, frustration off.
    let (name, gate, frustration): (String, bool, bool) = sqlx::query_as(
        "SELECT name, session_sync_gate, frustration_opt_in FROM orgs WHERE id = $1",
    )
    .bind(org)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((name.as_str(), gate, frustration), ("acme", true, false));
    let policy: bool =
        sqlx::query_scalar("SELECT session_sync_enabled FROM org_sync_policies WHERE org_id = $1")
            .bind(org)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert!(policy);
    let owner: (i64, i64) =
        sqlx::query_as("SELECT user_id, org_id FROM compute_targets WHERE id = 'ada-laptop'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(owner, (user, org));

    // Stored as its SHA-256 only, under the id the response gives.
    let (id, hash, label): (i64, Vec<u8>, String) =
        sqlx::query_as("SELECT id, token_hash, label FROM device_tokens WHERE user_id = $1")
            .bind(user)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(json!(id), out["token_id"]);
    assert_eq!(hash, Sha256::digest(token.as_bytes()).to_vec());
    assert_eq!(label, "first laptop");

    let r = hello(&db, token).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.data()["schemaVersion"], 2);
    assert_eq!(hello(&db, "spd_not_issued").await.status, 401);
}

#[tokio::test]
async fn a_second_user_joins_an_org_by_id_and_a_user_gets_another_token_by_id() {
    let db = TestDb::new().await;
    let first = invoke(
        &db,
        json!({"action": "provision", "org": "acme", "user": "ada", "sync_policy": "off",
               "feature_gate": "off", "frustration": "on"}),
    )
    .await
    .unwrap();
    let org = first["org_id"].as_i64().unwrap();
    let (gate, frustration): (bool, bool) =
        sqlx::query_as("SELECT session_sync_gate, frustration_opt_in FROM orgs WHERE id = $1")
            .bind(org)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!((gate, frustration), (false, true));

    let second = invoke(
        &db,
        json!({"action": "provision", "org_id": org, "user": "grace", "compute_target": "g-1"}),
    )
    .await
    .unwrap();
    assert_eq!(second["org_id"], json!(org));
    assert_eq!(
        second["created"],
        json!(["user", "compute_target", "device_token"])
    );

    let again = invoke(
        &db,
        json!({"action": "provision", "user_id": first["user_id"], "compute_target": "ada-2"}),
    )
    .await
    .unwrap();
    assert_eq!(again["user_id"], first["user_id"]);
    assert_eq!(again["org_id"], json!(org));
    assert_eq!(again["created"], json!(["compute_target", "device_token"]));
    assert_ne!(again["token"], first["token"]);
    for token in [&first["token"], &second["token"], &again["token"]] {
        assert_eq!(hello(&db, token.as_str().unwrap()).await.status, 200);
    }
    assert_eq!(
        counts(&db).await,
        [1, 2, 2, 3],
        "orgs, users, targets, tokens"
    );
}

#[tokio::test]
async fn bad_provision_input_answers_a_clear_error_naming_the_field_and_creates_nothing() {
    let db = TestDb::new().await;
    let long = "x".repeat(201);
    let cases = [
        (
            json!({"action": "provision", "org": "acme", "usr": "ada"}),
            "unknown field `usr`",
        ),
        (
            json!({"action": "provision", "org": "acme"}),
            "`user` (a new user's name) or `user_id`",
        ),
        (
            json!({"action": "provision", "org": "acme", "user": "ada", "user_id": 1}),
            "not both",
        ),
        (json!({"action": "provision", "user": "ada"}), "needs `org`"),
        (
            json!({"action": "provision", "org": "a", "org_id": 1, "user": "ada"}),
            "not both",
        ),
        (
            json!({"action": "provision", "user_id": 1, "org": "acme"}),
            "`org`: an existing user",
        ),
        (
            json!({"action": "provision", "org_id": 1, "user": "b", "feature_gate": "on"}),
            "`feature_gate`: sets up a new org",
        ),
        (
            json!({"action": "provision", "org": long, "user": "ada"}),
            "`org`: a string of 1 to 200",
        ),
        (
            json!({"action": "provision", "org": " ", "user": "ada"}),
            "`org`: a string of 1 to 200",
        ),
        (
            json!({"action": "provision", "org_id": "1", "user": "ada"}),
            "`org_id`: a positive integer",
        ),
        (
            json!({"action": "provision", "user_id": -4}),
            "`user_id`: a positive integer",
        ),
        (
            json!({"action": "provision", "org": "acme", "user": "ada", "sync_policy": "maybe"}),
            "`sync_policy`: one of \"on\", \"off\", \"none\"",
        ),
        (
            json!({"action": "provision", "org": "acme", "user": "ada",
                "compute_target": "t".repeat(129)}),
            "`compute_target`: a string of 1 to 128",
        ),
        (
            json!({"action": "provision", "user_id": 1, "token_label": 7}),
            "`token_label`",
        ),
    ];
    for (event, says) in cases {
        let e = refused(&db, event.clone()).await;
        assert_eq!(e.code(), Some("invalid_request"), "{event}: {e}");
        assert_eq!(e.status(), 400);
        let message = e.to_string();
        assert!(message.starts_with("invalid_request: "), "{message}");
        assert!(
            message.contains(says),
            "{event}: {message:?} should say {says:?}"
        );
    }
    assert_eq!(
        counts(&db).await,
        [0, 0, 0, 0],
        "orgs, users, targets, tokens"
    );
}

#[tokio::test]
async fn a_refused_step_leaves_nothing_behind_and_names_what_holds_the_name() {
    let db = TestDb::new().await;
    let first =
        json!({"action": "provision", "org": "acme", "user": "ada", "compute_target": "t-1"});
    let out = invoke(&db, first.clone()).await.unwrap();
    let (org, user) = (&out["org_id"], &out["user_id"]);

    // Taken names answer with the id to give instead (the operator cannot look it up).
    let e = refused(&db, first).await;
    assert_eq!((e.code(), e.status().as_u16()), (Some("org_exists"), 409));
    assert!(e.to_string().contains("\"acme\""), "{e}");
    assert!(e.to_string().contains(&format!("\"org_id\": {org}")), "{e}");
    let e = refused(
        &db,
        json!({"action": "provision", "org_id": org, "user": "ada"}),
    )
    .await;
    assert_eq!(e.code(), Some("user_exists"), "{e}");
    assert!(
        e.to_string().contains(&format!("\"user_id\": {user}")),
        "{e}"
    );

    // The target is taken: the new org and user of this request are rolled back with it.
    let e = refused(
        &db,
        json!({"action": "provision", "org": "globex", "user": "hal", "compute_target": "t-1"}),
    )
    .await;
    assert_eq!(e.code(), Some("compute_target_exists"), "{e}");
    assert!(e.to_string().contains(&format!("to user {user}")), "{e}");
    let counted = counts(&db).await;
    assert_eq!(counted, [1, 1, 1, 1], "orgs, users, targets, tokens");

    let e = refused(
        &db,
        json!({"action": "provision", "org_id": 999_999, "user": "b"}),
    )
    .await;
    assert_eq!(
        (e.code(), e.status().as_u16()),
        (Some("org_not_found"), 404)
    );
    let e = refused(&db, json!({"action": "provision", "user_id": 999_999})).await;
    assert_eq!(e.code(), Some("user_not_found"), "{e}");
    assert_eq!(counts(&db).await, counted, "nothing created");
}

#[tokio::test]
async fn provisioning_a_database_not_yet_migrated_answers_schema_behind_naming_the_migrate_action()
{
    let db = TestDb::empty().await;
    let e = refused(
        &db,
        json!({"action": "provision", "org": "acme", "user": "ada"}),
    )
    .await;
    assert_eq!(
        (e.code(), e.status().as_u16()),
        (Some("schema_behind"), 503)
    );
    assert!(e.to_string().contains("{\"action\":\"migrate\"}"), "{e}");

    // And other events still reach the migration, which the unknown ones name this action beside.
    let out = invoke(&db, json!({"action": "migrate"})).await.unwrap();
    assert!(out["version"].as_i64().unwrap() > 0, "{out}");
    let e = invoke(&db, json!({"action": "drop"})).await.unwrap_err();
    assert!(e.to_string().contains("\"provision\""), "{e}");
}

/// The migrate binary's environment: the test database, every log at trace.
fn function_vars(db: &TestDb) -> Vec<(String, String)> {
    vec![
        ("DATABASE_URL".to_owned(), db.url().expose().to_owned()),
        ("RUST_LOG".to_owned(), "trace".to_owned()),
    ]
}

#[tokio::test]
async fn the_device_token_is_in_the_invoke_response_and_nowhere_in_the_functions_logs() {
    let db = TestDb::new().await;
    let event = json!({"action": "provision", "org": "acme", "user": "ada", "compute_target": "t"});
    let inv = processes::invoke("migrate", &function_vars(&db), &event).await;
    let output = format!("{}\n{}", inv.output.stdout, inv.output.stderr);
    let body = inv
        .response
        .as_deref()
        .unwrap_or_else(|| panic!("no answer ({:?}): {output}", inv.error));
    let out: Value = serde_json::from_slice(body).unwrap();
    let token = out["token"].as_str().expect("the token in the response");
    let hex = token.strip_prefix("spd_").unwrap();
    assert_eq!(hello(&db, token).await.status, 200);

    // The test means something only with the runtime's own trace logging on.
    assert!(output.contains("New event arrived"), "{output}");
    assert!(output.contains("provisioned a device token"), "{output}");
    assert!(!output.contains(hex), "the token is in the logs: {output}");
    // Not even redacted: a redacted token would still mean something logged it.
    assert!(!output.contains("spd_"), "a token was logged: {output}");

    // A refusal is a function error naming its code, through the real runtime too.
    let bad = json!({"action": "provision", "org": "acme"});
    let inv = processes::invoke("migrate", &function_vars(&db), &bad).await;
    let error: Value = serde_json::from_slice(inv.error.as_deref().expect("a function error"))
        .expect("the runtime's error JSON");
    let message = error["errorMessage"].as_str().unwrap();
    assert!(message.starts_with("invalid_request: "), "{error}");
}
