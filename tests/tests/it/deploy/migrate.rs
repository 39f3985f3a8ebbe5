//! Migrations in AWS (issue 13 point 1): the migrate function's handler with CloudFormation's own
//! request shapes (Create, Update, Delete, and a failing migration), answering on a local HTTP
//! server that plays the pre-signed `ResponseURL`, against real Postgres; the advisory lock that
//! serializes concurrent runs, waited for only until the invocation's deadline (a lock held
//! elsewhere, or a migration outliving the function, is answered FAILED in time, never left for
//! CloudFormation to wait on); and the 503 `schema_behind` of a function whose database is behind.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::put;
use lambda_http::{Body, Response};
use serde_json::{Value, json};
use shared::config::{Config, ConfigError};
use shared::schema::apply::migrate_lock_key;
use shared::schema::invoke::{self, InvokeError, PHYSICAL_RESOURCE_ID};
use shared::schema::{
    MigrationError, SchemaGuard, migrate_locked, migrate_locked_by, migrate_locked_until,
    migrate_summary,
};
use sqlx::{Connection, PgConnection};
use syncplane_tests::apigw::reply;
use syncplane_tests::db::TestDb;
use tokio::time::Instant;

/// What the fake `ResponseURL` received: content type and JSON body of each PUT.
#[derive(Clone, Default)]
struct Answers(Arc<Mutex<Vec<(String, Value)>>>);

impl Answers {
    fn only(&self) -> (String, Value) {
        let got = self.0.lock().unwrap();
        assert_eq!(got.len(), 1, "exactly one answer per request");
        got[0].clone()
    }
}

async fn record(State(answers): State<Answers>, headers: HeaderMap, body: Bytes) -> &'static str {
    let content_type = headers
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_else(|| "<none>".into());
    let json: Value = serde_json::from_slice(&body).expect("the answer is JSON");
    answers.0.lock().unwrap().push((content_type, json));
    ""
}

/// A local server playing S3's pre-signed URL; returns its URL (with a signature-like query).
async fn response_url() -> (String, Answers) {
    let answers = Answers::default();
    let app = Router::new()
        .route("/cfn/{*key}", put(record))
        .with_state(answers.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (
        format!("http://{addr}/cfn/stack/request?X-Amz-Signature=abc"),
        answers,
    )
}

/// CloudFormation's request, as the custom resource's Lambda receives it.
fn request(kind: &str, url: &str, physical: Option<&str>) -> Value {
    let mut event = json!({
        "RequestType": kind,
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:syncplane-MigrateFunction",
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/syncplane/guid",
        "RequestId": format!("req-{kind}"),
        "LogicalResourceId": "SchemaMigration",
        "ResourceType": "Custom::SchemaMigration",
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:syncplane-MigrateFunction",
            "MigrateFunctionVersion": "arn:aws:lambda:us-east-1:123456789012:function:syncplane-MigrateFunction:2"
        }
    });
    if let Some(id) = physical {
        event["PhysicalResourceId"] = json!(id);
        event["OldResourceProperties"] = json!({"MigrateFunctionVersion": "1"});
    }
    event
}

fn config_for(db: &TestDb) -> Result<Config, ConfigError> {
    let url = db.url().expose().to_owned();
    shared::config::from_lookup(move |k| (k == "DATABASE_URL").then(|| url.clone()))
}

/// When a function with a minute left must answer.
fn a_minute_left() -> Instant {
    invoke::answer_by(SystemTime::now() + Duration::from_secs(60))
}

/// One invocation of the migrate function's handler, exactly as its main wires it.
async fn invoke_with(db: &TestDb, event: Value) -> Result<Value, InvokeError> {
    invoke_by(db, event, a_minute_left()).await
}

/// The same, with the answer due at `answer_by`.
async fn invoke_by(db: &TestDb, event: Value, answer_by: Instant) -> Result<Value, InvokeError> {
    let http = reqwest::Client::new();
    let config = config_for(db);
    invoke::handle(event, &http, answer_by, |until| {
        migrate_summary(config, until)
    })
    .await
}

async fn table_exists(db: &TestDb, name: &str) -> bool {
    sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(name)
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

async fn applied_count(db: &TestDb) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

/// Send one custom resource request on a fresh fake ResponseURL; the function's own result and
/// the answer CloudFormation received.
async fn cfn(db: &TestDb, kind: &str, physical: Option<&str>) -> (Value, Value) {
    let (url, answers) = response_url().await;
    let out = invoke_with(db, request(kind, &url, physical))
        .await
        .unwrap();
    (out, answers.only().1)
}

/// The same with a configuration that cannot even name a database.
async fn cfn_unconfigured(kind: &str) -> Value {
    let (url, answers) = response_url().await;
    let http = reqwest::Client::new();
    let broken: Result<Config, ConfigError> = shared::config::from_lookup(|_| None);
    invoke::handle(
        request(kind, &url, Some(PHYSICAL_RESOURCE_ID)),
        &http,
        a_minute_left(),
        |until| migrate_summary(broken, until),
    )
    .await
    .unwrap();
    answers.only().1
}

fn embedded() -> i64 {
    shared::db::MIGRATOR.iter().count() as i64
}

#[tokio::test]
async fn create_migrates_an_empty_database_and_answers_success_on_the_response_url() {
    let db = TestDb::empty().await;
    let (url, answers) = response_url().await;
    let out = invoke_with(&db, request("Create", &url, None))
        .await
        .unwrap();
    assert_eq!(out["Status"], "SUCCESS");

    let (content_type, answer) = answers.only();
    assert_eq!(
        content_type, "",
        "the pre-signed URL is signed without a content type"
    );
    assert_eq!(answer["Status"], "SUCCESS");
    assert_eq!(answer["PhysicalResourceId"], PHYSICAL_RESOURCE_ID);
    assert_eq!(
        answer["StackId"],
        "arn:aws:cloudformation:us-east-1:123456789012:stack/syncplane/guid"
    );
    assert_eq!(answer["RequestId"], "req-Create");
    assert_eq!(answer["LogicalResourceId"], "SchemaMigration");
    let version = shared::schema::check::build_version();
    assert_eq!(
        answer["Data"]["version"],
        version.to_string(),
        "Data values are strings"
    );

    assert!(table_exists(&db, "repos").await && table_exists(&db, "agent_sessions").await);
    assert_eq!(applied_count(&db).await, embedded());
}

#[tokio::test]
async fn update_is_idempotent_and_keeps_the_physical_id() {
    let db = TestDb::empty().await;
    cfn(&db, "Create", None).await;

    let (out, answer) = cfn(&db, "Update", Some(PHYSICAL_RESOURCE_ID)).await;
    assert_eq!(out["Status"], "SUCCESS");
    assert_eq!(answer["Status"], "SUCCESS");
    assert_eq!(
        answer["PhysicalResourceId"], PHYSICAL_RESOURCE_ID,
        "a changed id would make CloudFormation replace (and delete) the resource"
    );
    let tenants: Value = serde_json::from_str(answer["Data"]["tenants"].as_str().unwrap()).unwrap();
    assert_eq!(
        tenants["default"]["applied"],
        json!([]),
        "nothing left to apply"
    );
    assert_eq!(applied_count(&db).await, embedded());
}

#[tokio::test]
async fn delete_always_succeeds_and_drops_nothing() {
    let db = TestDb::new().await;
    let (out, answer) = cfn(&db, "Delete", Some(PHYSICAL_RESOURCE_ID)).await;
    assert_eq!(out["Status"], "SUCCESS");
    assert_eq!(answer["Status"], "SUCCESS");
    assert_eq!(answer["PhysicalResourceId"], PHYSICAL_RESOURCE_ID);
    assert!(
        table_exists(&db, "repos").await,
        "removing the stack keeps the data"
    );

    // Even with configuration it cannot use, Delete never blocks a stack's removal.
    assert_eq!(cfn_unconfigured("Delete").await["Status"], "SUCCESS");
}

#[tokio::test]
async fn a_failing_migration_answers_failed_with_the_reason_and_fails_the_deploy() {
    let db = TestDb::empty().await;
    // A table in the way of the first migration: it cannot apply.
    sqlx::query("CREATE TABLE repos (in_the_way int)")
        .execute(&db.pool)
        .await
        .unwrap();
    let (out, answer) = cfn(&db, "Create", None).await;
    assert_eq!(out["Status"], "FAILED");
    assert_eq!(answer["Status"], "FAILED");
    let reason = answer["Reason"].as_str().unwrap();
    assert!(reason.contains("migration failed"), "{reason}");
    assert!(
        reason.contains("repos"),
        "the database's own reason: {reason}"
    );
    assert!(!reason.contains('\n'), "one line");
    assert!(
        !reason.contains("postgres://"),
        "never the connection string"
    );
    assert_eq!(answer["PhysicalResourceId"], PHYSICAL_RESOURCE_ID);
}

#[tokio::test]
async fn an_unusable_configuration_is_reported_to_cloudformation_too() {
    let answer = cfn_unconfigured("Update").await;
    assert_eq!(answer["Status"], "FAILED");
    assert!(
        answer["Reason"]
            .as_str()
            .unwrap()
            .starts_with("DATABASE_URL")
    );
}

#[tokio::test]
async fn by_hand_the_plain_migrate_payload_migrates_and_unknown_payloads_are_refused() {
    let db = TestDb::empty().await;
    let out = invoke_with(&db, json!({"action": "migrate"}))
        .await
        .unwrap();
    assert_eq!(
        out["tenants"]["default"]["applied"]
            .as_array()
            .unwrap()
            .len() as i64,
        embedded()
    );
    let again = invoke_with(&db, json!({"action": "migrate"}))
        .await
        .unwrap();
    assert_eq!(again["tenants"]["default"]["applied"], json!([]));

    let err = invoke_with(&db, json!({"action": "drop"}))
        .await
        .unwrap_err();
    assert!(matches!(err, InvokeError::UnknownEvent), "{err}");
}

#[tokio::test]
async fn concurrent_migrations_are_serialized_by_the_advisory_lock() {
    let db = TestDb::empty().await;
    let runs = (0..4).map(|_| migrate_locked(&db.pool));
    let results = futures::future::join_all(runs).await;
    let mut applied: Vec<usize> = results
        .into_iter()
        .map(|r| r.expect("every concurrent run succeeds").applied.len())
        .collect();
    applied.sort();
    assert_eq!(
        applied,
        [0, 0, 0, embedded() as usize],
        "one run applied everything, the others found it done"
    );
}

/// Another session holding the schema lock (a `syncplane migrate` stuck somewhere), and its pid.
async fn hold_the_lock(db: &TestDb) -> (PgConnection, i32) {
    let mut holder = PgConnection::connect(db.url().expose()).await.unwrap();
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(migrate_lock_key())
        .execute(&mut holder)
        .await
        .unwrap();
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut holder)
        .await
        .unwrap();
    (holder, pid)
}

#[tokio::test]
async fn a_schema_lock_held_elsewhere_is_answered_failed_with_the_reason_before_the_deadline() {
    let db = TestDb::empty().await;
    let (holder, pid) = hold_the_lock(&db).await;

    // An invocation with 23 s left must answer within its 3 s (ANSWER_MARGIN is for delivery).
    let deadline = SystemTime::now() + invoke::ANSWER_MARGIN + Duration::from_secs(3);
    let answer_by = invoke::answer_by(deadline);
    let started = Instant::now();
    let (url, answers) = response_url().await;
    let out = invoke_by(
        &db,
        request("Update", &url, Some(PHYSICAL_RESOURCE_ID)),
        answer_by,
    )
    .await
    .unwrap();
    let took = started.elapsed();
    assert_eq!(out["Status"], "FAILED");
    assert!(
        took >= Duration::from_millis(500) && Instant::now() <= answer_by,
        "it waited for the lock, then answered in time: {took:?}"
    );

    let (_, answer) = answers.only();
    assert_eq!(answer["Status"], "FAILED");
    assert_eq!(answer["PhysicalResourceId"], PHYSICAL_RESOURCE_ID);
    let reason = answer["Reason"].as_str().unwrap();
    assert!(
        reason.starts_with("tenant default: another migration holds the schema lock"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("session pid {pid}")),
        "names the holder: {reason}"
    );
    assert!(reason.contains("nothing was applied"), "{reason}");
    assert!(
        !reason.contains('\n') && !reason.contains("postgres://"),
        "{reason}"
    );
    assert!(
        !table_exists(&db, "_sqlx_migrations").await,
        "nothing applied while the lock was held elsewhere"
    );

    // Released within the deadline, the lock is taken and the migration runs: runs serialize.
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(800)).await;
        holder.close().await.unwrap();
    });
    let started = Instant::now();
    let (out, answer) = cfn(&db, "Update", Some(PHYSICAL_RESOURCE_ID)).await;
    release.await.unwrap();
    assert_eq!(
        (out["Status"].as_str(), answer["Status"].as_str()),
        (Some("SUCCESS"), Some("SUCCESS"))
    );
    assert!(
        started.elapsed() >= Duration::from_millis(700),
        "it waited for the holder"
    );
    assert_eq!(applied_count(&db).await, embedded());
}

#[tokio::test]
async fn a_migration_still_running_at_its_deadline_has_its_session_ended_and_leaves_no_lock() {
    let db = TestDb::new().await;
    // Another session holds the bookkeeping table, so the migration's first query waits on the
    // server: a statement in flight when the deadline comes.
    let mut blocker = PgConnection::connect(db.url().expose()).await.unwrap();
    sqlx::query("BEGIN").execute(&mut blocker).await.unwrap();
    sqlx::query("LOCK TABLE _sqlx_migrations IN ACCESS EXCLUSIVE MODE")
        .execute(&mut blocker)
        .await
        .unwrap();

    let started = Instant::now();
    let finish_by = started + Duration::from_millis(1500);
    let err = migrate_locked_by(&db.pool, started + Duration::from_secs(1), Some(finish_by))
        .await
        .unwrap_err();
    assert!(matches!(err, MigrationError::OutOfTime { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "answered promptly: {:?}",
        started.elapsed()
    );
    let message = err.to_string();
    assert!(message.contains("session was ended"), "{message}");

    // Its session is gone from the server: nothing waits on the table, the schema lock is free.
    // (`pg_terminate_backend` signals the backend; the server takes a moment to end it.)
    let gone_by = Instant::now() + Duration::from_secs(5);
    let waiting = loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&mut blocker)
        .await
        .unwrap();
        if waiting == 0 || Instant::now() > gone_by {
            break waiting;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(waiting, 0, "the migration's session no longer waits");
    let mut other = PgConnection::connect(db.url().expose()).await.unwrap();
    let free: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(migrate_lock_key())
        .fetch_one(&mut other)
        .await
        .unwrap();
    assert!(free, "nobody holds the schema lock");
    other.close().await.unwrap();

    // Once the table is free the same pool migrates (its ended connection was not reused).
    sqlx::query("ROLLBACK").execute(&mut blocker).await.unwrap();
    migrate_locked(&db.pool).await.unwrap();
    assert_eq!(applied_count(&db).await, embedded());
}

#[tokio::test]
async fn the_cli_path_waits_a_bounded_time_for_the_lock_and_names_its_holder() {
    assert_eq!(shared::schema::DEFAULT_LOCK_WAIT, Duration::from_secs(60));
    let db = TestDb::empty().await;
    let (holder, pid) = hold_the_lock(&db).await;
    let started = Instant::now();
    let err = migrate_locked_until(&db.pool, Instant::now() + Duration::from_millis(600))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    match &err {
        MigrationError::LockBusy { holder, waited } => {
            assert_eq!(*holder, Some(pid));
            assert!(*waited >= Duration::from_millis(500), "{waited:?}");
        }
        other => panic!("not LockBusy: {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&format!("pg_terminate_backend({pid})")),
        "{text}"
    );
    holder.close().await.unwrap();
    // The pool's connection gave up cleanly: the next run takes the lock at once.
    let done = migrate_locked_until(&db.pool, Instant::now())
        .await
        .unwrap();
    assert_eq!(done.applied.len() as i64, embedded());
}

#[tokio::test]
async fn a_migration_outliving_the_function_is_abandoned_and_answered_failed_in_time() {
    // A past deadline is "now", never a panic; a far one keeps the answer's margin.
    let now = Instant::now();
    assert!(
        invoke::answer_by(SystemTime::now() - Duration::from_secs(5)) - now
            < Duration::from_secs(1)
    );
    let far = invoke::answer_by(SystemTime::now() + Duration::from_secs(300));
    let left = far - Instant::now();
    assert!(
        left <= Duration::from_secs(300) - invoke::ANSWER_MARGIN,
        "{left:?}"
    );
    assert!(left > Duration::from_secs(270), "{left:?}");

    let (url, answers) = response_url().await;
    let http = reqwest::Client::new();
    let started = Instant::now();
    let out = invoke::handle(
        request("Create", &url, None),
        &http,
        Instant::now() + Duration::from_millis(500),
        |_| std::future::pending::<Result<Value, String>>(),
    )
    .await
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out["Status"], "FAILED");
    let (_, answer) = answers.only();
    let reason = answer["Reason"].as_str().unwrap();
    assert!(reason.contains("did not finish"), "{reason}");
    assert!(reason.contains("syncplane migrate"), "{reason}");

    // By hand (`{"action":"migrate"}`) the same bound holds: a function error, not a timeout.
    let err = invoke::handle(
        json!({"action": "migrate"}),
        &http,
        Instant::now() + Duration::from_millis(200),
        |_| std::future::pending::<Result<Value, String>>(),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("did not finish"), "{err}");
}

fn ok() -> Response<Body> {
    Response::new(Body::Text(r#"{"success":true,"data":{}}"#.into()))
}

/// What an HTTP surface's `serve` does first: the schema check, then the handler (here [`ok`]).
async fn guarded(guard: &SchemaGuard, pool: &sqlx::PgPool) -> Response<Body> {
    match guard.check(pool).await {
        Ok(()) => ok(),
        Err(behind) => shared::http::error_response(&behind),
    }
}

#[tokio::test]
async fn a_function_on_a_schema_behind_its_build_answers_503_schema_behind() {
    let db = TestDb::empty().await;
    let guard = SchemaGuard::with_recheck(Duration::ZERO);
    let r = reply(guarded(&guard, &db.pool).await);
    assert_eq!(r.status, 503);
    assert_eq!(r.code(), Some("schema_behind"));
    assert!(r.headers.contains_key("retry-after"));

    // The migration lands: the next request is served, and the answer is remembered.
    migrate_locked(&db.pool).await.unwrap();
    let r = reply(guarded(&guard, &db.pool).await);
    assert_eq!(r.status, 200);
    sqlx::query("DROP TABLE _sqlx_migrations")
        .execute(&db.pool)
        .await
        .unwrap();
    let r = reply(guarded(&guard, &db.pool).await);
    assert_eq!(
        r.status, 200,
        "a current schema is checked once per environment"
    );
}

#[tokio::test]
async fn the_real_handlers_answer_503_not_500_on_an_unmigrated_database() {
    let db = TestDb::empty().await;
    let state = shared::ingest::IngestState {
        pool: db.pool.clone(),
        rate_limit_per_minute: 100,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };
    let guard = SchemaGuard::default();
    let req = syncplane_tests::apigw::request(
        "GET",
        "/api/agent-sessions/hello",
        &[("authorization", "Bearer spd_x")],
        None,
    );
    let r = reply(shared::ingest::serve(&state, &guard, req).await);
    assert_eq!((r.status, r.code()), (503, Some("schema_behind")));

    // A schema missing only the newest migration is behind too, and says how far.
    let partial = TestDb::new().await;
    let build = shared::schema::check::build_version();
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = $1")
        .bind(build)
        .execute(&partial.pool)
        .await
        .unwrap();
    let behind = shared::schema::check::behind(&partial.pool)
        .await
        .unwrap()
        .expect("behind");
    assert_eq!(behind.build, build);
    assert!(behind.database < build);
    let current = TestDb::new().await;
    assert_eq!(
        shared::schema::check::behind(&current.pool).await.unwrap(),
        None
    );
}
