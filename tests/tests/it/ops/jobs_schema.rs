//! Issue 13, "functions that find the schema behind their build say so in one clear log line",
//! for the functions that run jobs: on a database the migrations have not reached, the worker
//! runs none of the tenant's messages (with a queue it sends each job back delayed, so holding
//! back never spends the messages' receives; without one it names each in `batchItemFailures`),
//! so none is lost, and the tick submits nothing and fails, each saying so in one log line that
//! names the version found, the version needed and the remedy, instead of jobs failing on
//! "relation ... does not exist" until they reach the dead-letter queue. Real Postgres; the real
//! binaries with the events/ samples, and the handlers in-process for the multi-tenant cases.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use serde_json::Value;
use shared::config::{Config, TenantConfig, TenantId};
use shared::jobs::Job;
use shared::jobs::held::{JobsFunction, JobsSchema};
use shared::jobs::tick::TickFunction;
use shared::schema::check::build_version;
use shared::schema::{SchemaBehind, migrate_locked};
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use shared::worker::Worker;
use syncplane_tests::db::TestDb;
use syncplane_tests::processes;

fn event(name: &str) -> Value {
    let path = crate::deploy::repo_file(&format!("events/{name}"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn vars(db: &TestDb, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut all = vec![
        ("DATABASE_URL".to_owned(), db.url().expose().to_owned()),
        ("RUST_LOG".to_owned(), "info".to_owned()),
    ];
    all.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    all
}

async fn has_table(db: &TestDb, name: &str) -> bool {
    sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(name)
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

/// The JSON log lines of a function's standard error that say the schema is behind.
fn behind_lines(stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .filter(|l| l.contains("schema is behind"))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("a JSON log line: {l}")))
        .collect()
}

/// The one line: tenant, both versions, the remedy.
fn assert_the_line(stderr: &str) -> String {
    let lines = behind_lines(stderr);
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    let line = &lines[0];
    assert_eq!(line["level"], "ERROR", "{line}");
    let fields = &line["fields"];
    assert_eq!(fields["tenant"], "default", "{line}");
    assert_eq!(fields["database_version"], 0, "{line}");
    assert_eq!(fields["build_version"], build_version(), "{line}");
    let message = fields["message"].as_str().unwrap().to_owned();
    for said in [
        "at migration 0",
        &format!("needs {}", build_version()),
        "migrate function",
        "syncplane migrate",
    ] {
        assert!(message.contains(said), "says {said:?}: {message}");
    }
    assert!(
        !stderr.contains("does not exist"),
        "no job met the missing tables: {stderr}"
    );
    message
}

#[tokio::test]
async fn the_worker_leaves_every_message_on_the_queue_of_an_unmigrated_database_with_one_line() {
    let db = TestDb::empty().await;
    let batch = event("sqs-batch.json");
    let ids: BTreeSet<String> = batch["Records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["messageId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 5);

    let inv = processes::invoke("worker", &vars(&db, &[]), &batch).await;
    let body = inv
        .response
        .unwrap_or_else(|| panic!("the worker answers: {}", inv.output.stderr));
    let reply: Value = serde_json::from_slice(&body).unwrap();
    let failed: BTreeSet<String> = reply["batchItemFailures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["itemIdentifier"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        failed, ids,
        "every message redelivered, none deleted: {reply}"
    );
    let message = assert_the_line(&inv.output.stderr);
    assert!(message.contains("5 message(s)"), "{message}");
    assert!(
        !has_table(&db, "_sqlx_migrations").await && !has_table(&db, "sync_runs").await,
        "the database untouched"
    );
}

#[tokio::test]
async fn the_tick_submits_nothing_and_fails_on_an_unmigrated_database_with_one_line() {
    let db = TestDb::empty().await;
    let env = vars(
        &db,
        &[
            ("SYNC_SCHEDULER", "1"),
            ("SYNC_CONFIG", r#"{"sync":{"onStartup":true}}"#),
        ],
    );
    let inv = processes::invoke("tick", &env, &event("schedule-tick.json")).await;
    assert!(inv.response.is_none(), "{}", inv.output.stderr);
    let error = inv
        .error
        .unwrap_or_else(|| panic!("the invocation fails: {}", inv.output.stderr));
    let error: Value = serde_json::from_slice(&error).unwrap();
    let text = error["errorMessage"].as_str().unwrap();
    assert!(
        text.contains("tenant default (at migration 0") && text.contains("syncplane migrate"),
        "{error}"
    );
    assert_the_line(&inv.output.stderr);
    assert!(
        !inv.output.stderr.contains("\"tick\""),
        "no tenant ticked: {}",
        inv.output.stderr
    );
    assert!(!has_table(&db, "sync_runs").await, "the database untouched");
}

fn tenant(id: &str, db: &TestDb) -> TenantConfig {
    TenantConfig {
        id: TenantId::parse(id).unwrap(),
        database_url: db.url(),
        github: None,
        webhook_secrets: Vec::new(),
        sync_api_token: None,
        read: Default::default(),
        sync: Default::default(),
    }
}

fn message(id: &str, job: &Job) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some(id.to_owned());
    m.body = Some(serde_json::to_string(job).unwrap());
    m
}

fn ids(messages: &[SqsMessage]) -> BTreeSet<String> {
    messages
        .iter()
        .map(|m| m.message_id.clone().unwrap())
        .collect()
}

#[tokio::test]
async fn only_the_tenant_behind_is_held_back_and_it_runs_once_migrated() {
    let behind = TestDb::empty().await;
    let current = TestDb::new().await;
    let tenants = Arc::new(Tenants::from_parts(
        vec![
            (tenant("default", &behind), behind.pool.clone(), None),
            (tenant("other", &current), current.pool.clone(), None),
        ],
        RunOptions::default(),
    ));
    let worker = Worker::new(tenants.clone(), shared::worker::inline(tenants.clone()));
    let schema = JobsSchema::with_recheck(JobsFunction::Worker, Duration::ZERO);

    // The events/ batch (tenant "default"), with two jobs of the other tenant.
    let mut batch: SqsEvent = serde_json::from_value(event("sqs-batch.json")).unwrap();
    let held = ids(&batch.records);
    let other = TenantId::parse("other").unwrap();
    batch.records.push(message(
        "other-1",
        &Job::SyncDrain {
            tenant: other.clone(),
        },
    ));
    batch
        .records
        .push(message("other-2", &Job::SyncReap { tenant: other }));
    let ran = Mutex::new(BTreeSet::new());
    let run = |b: SqsEvent| {
        ran.lock().unwrap().extend(ids(&b.records));
        worker.handle(b)
    };
    let reply = schema
        .worker_batch(&tenants, batch.clone(), None, run)
        .await;
    let failed: BTreeSet<String> = reply
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    assert_eq!(failed, held, "the behind tenant's messages, all of them");
    assert_eq!(
        *ran.lock().unwrap(),
        BTreeSet::from(["other-1".to_owned(), "other-2".to_owned()]),
        "the other tenant's jobs ran"
    );
    assert!(!has_table(&behind, "sync_runs").await);

    // The migration lands: the same batch is no longer held back.
    migrate_locked(&behind.pool).await.unwrap();
    let ran = Mutex::new(BTreeSet::new());
    let run = |b: SqsEvent| {
        ran.lock().unwrap().extend(ids(&b.records));
        std::future::ready(Default::default())
    };
    let reply = schema
        .worker_batch(&tenants, batch.clone(), None, run)
        .await;
    assert!(reply.batch_item_failures.is_empty());
    assert_eq!(ran.lock().unwrap().len(), batch.records.len());
}

#[tokio::test]
async fn with_a_queue_held_back_jobs_go_back_on_it_delayed_so_no_receive_is_spent() {
    let behind = TestDb::empty().await;
    let tenants = Arc::new(Tenants::from_parts(
        vec![(tenant("default", &behind), behind.pool.clone(), None)],
        RunOptions::default(),
    ));
    let queue = syncplane_tests::sqs::Queue::new(30).await;
    let schema = JobsSchema::with_recheck(JobsFunction::Worker, Duration::ZERO);
    let batch: SqsEvent = serde_json::from_value(event("sqs-batch.json")).unwrap();
    let run = |_: SqsEvent| -> std::future::Ready<_> { panic!("no job of a tenant behind runs") };
    let reply = schema
        .worker_batch(&tenants, batch.clone(), Some(&queue.adapter), run)
        .await;
    assert!(
        reply.batch_item_failures.is_empty(),
        "the originals are done with: their copies are on the queue"
    );
    assert_eq!(
        queue
            .count(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesDelayed)
            .await,
        batch.records.len() as u64,
        "every job back on the queue, delayed"
    );
    assert_eq!(shared::jobs::held::HELD_DELAY, Duration::from_secs(120));
    assert!(!has_table(&behind, "sync_runs").await);
}

#[tokio::test]
async fn the_tick_skips_the_tenant_behind_ticks_the_others_and_fails() {
    let behind = TestDb::empty().await;
    let current = TestDb::new().await;
    let url = behind.url().expose().to_owned();
    let mut config: Config = shared::config::from_lookup(move |k| match k {
        "DATABASE_URL" => Some(url.clone()),
        "SYNC_SCHEDULER" => Some("1".to_owned()),
        _ => None,
    })
    .unwrap();
    config.tenants.push(tenant("other", &current));
    let schema = JobsSchema::with_recheck(JobsFunction::Tick, Duration::ZERO);

    let err = schema.hold_back(&mut config).await.unwrap_err();
    assert_eq!(
        err.0,
        [(
            "default".to_owned(),
            SchemaBehind {
                database: 0,
                build: build_version()
            }
        )]
    );
    assert!(err.to_string().contains("syncplane migrate"), "{err}");
    let kept: Vec<&str> = config.tenants.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(kept, ["other"]);
    // The others tick as usual (jobs inline here).
    let report = TickFunction::with_queue(None)
        .with_inline(shared::worker::runner())
        .invoke(&config, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(report.tenants.len(), 1);
    assert_eq!(report.tenants[0].tenant, "other");
    assert_eq!(report.tenants[0].submitted, ["sync.drain", "sync.reap"]);
    assert!(
        report.tenants[0]
            .errors
            .iter()
            .all(|e| !e.contains("does not exist")),
        "{report:?}"
    );
    assert!(!has_table(&behind, "sync_runs").await);

    migrate_locked(&behind.pool).await.unwrap();
    let mut config2 = config.clone();
    config2.tenants.insert(0, tenant("default", &behind));
    schema.hold_back(&mut config2).await.unwrap();
    assert_eq!(config2.tenants.len(), 2);
}
