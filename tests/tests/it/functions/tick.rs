//! The tick: schedule decisions across simulated time (the library tick called with explicit
//! `now` values), drain and reap every tick, the scheduler switch, tenants independent, the
//! transcript archive's hourly `transcripts.expire` (only with an archive), and the events/
//! schedule sample. Jobs go to a real queue on the emulator, which the tests read back.

use std::time::Duration;

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use chrono::{DateTime, Utc};
use shared::config::{Secret, SyncConfig, TenantConfig, TenantId};
use shared::jobs::Job;
use shared::jobs::adapter::JobsAdapter;
use shared::jobs::tick::{TickFunction, run_tick, run_tick_with_retention};
use shared::sync::runs::Trigger;
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use sqlx::PgPool;
use syncplane_tests::db::TestDb;

use super::sqs::Queue;

fn tenant_config(id: &str, url: Secret, interval_minutes: u32, on_startup: bool) -> TenantConfig {
    TenantConfig {
        id: TenantId::parse(id).unwrap(),
        database_url: url,
        github: None,
        webhook_secrets: Vec::new(),
        sync_api_token: None,
        read: Default::default(),
        sync: SyncConfig {
            interval_minutes,
            on_startup,
            ..SyncConfig::default()
        },
    }
}

fn one_tenant(db: &TestDb, interval_minutes: u32, on_startup: bool) -> Tenants {
    Tenants::from_parts(
        vec![(
            tenant_config("default", db.url(), interval_minutes, on_startup),
            db.pool.clone(),
            None,
        )],
        RunOptions::default(),
    )
}

fn t0() -> DateTime<Utc> {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

fn minutes(m: i64) -> DateTime<Utc> {
    t0() + chrono::Duration::minutes(m)
}

/// One tick at `now`; returns the jobs it put on the queue, in a stable order.
async fn tick_at(tenants: &Tenants, q: &Queue, now: DateTime<Utc>) -> Vec<Job> {
    let report = run_tick(tenants, &JobsAdapter::Sqs(q.adapter.clone()), true, now).await;
    for t in &report.tenants {
        assert!(t.errors.is_empty(), "{:?}", t.errors);
    }
    let mut jobs = q.drain_jobs().await;
    jobs.sort_by_key(|j| (j.tenant().clone(), j.kind()));
    jobs
}

fn full(trigger: Trigger) -> Job {
    Job::SyncFull {
        tenant: TenantId::parse("default").unwrap(),
        trigger,
    }
}

fn drain_reap() -> Vec<Job> {
    let tenant = TenantId::parse("default").unwrap();
    vec![
        Job::SyncDrain {
            tenant: tenant.clone(),
        },
        Job::SyncReap { tenant },
    ]
}

fn with_full(trigger: Trigger) -> Vec<Job> {
    let mut jobs = drain_reap();
    jobs.insert(1, full(trigger));
    jobs
}

#[tokio::test]
async fn the_first_tick_with_on_startup_submits_a_startup_full_sync_once() {
    let db = TestDb::new().await;
    let q = Queue::new(30).await;
    let tenants = one_tenant(&db, 60, true);
    assert_eq!(
        tick_at(&tenants, &q, minutes(0)).await,
        with_full(Trigger::Startup)
    );
    assert_eq!(tick_at(&tenants, &q, minutes(1)).await, drain_reap());
    assert_eq!(tick_at(&tenants, &q, minutes(2)).await, drain_reap());
}

#[tokio::test]
async fn a_due_schedule_submits_one_full_sync_and_otherwise_only_drain_and_reap() {
    let db = TestDb::new().await;
    let q = Queue::new(30).await;
    let tenants = one_tenant(&db, 60, false);
    // Planned at the first tick, due 60 minutes +/- 10% later.
    assert_eq!(tick_at(&tenants, &q, minutes(0)).await, drain_reap());
    assert_eq!(tick_at(&tenants, &q, minutes(30)).await, drain_reap());
    assert_eq!(tick_at(&tenants, &q, minutes(53)).await, drain_reap());
    assert_eq!(
        tick_at(&tenants, &q, minutes(67)).await,
        with_full(Trigger::Schedule)
    );
    // Submitted once: the next ticks do not submit it again.
    assert_eq!(tick_at(&tenants, &q, minutes(68)).await, drain_reap());
    assert_eq!(tick_at(&tenants, &q, minutes(69)).await, drain_reap());
}

#[tokio::test]
async fn an_interval_of_zero_never_submits_a_full_sync() {
    let db = TestDb::new().await;
    let q = Queue::new(30).await;
    let tenants = one_tenant(&db, 0, false);
    for m in [0, 1, 61, 60 * 24 * 8] {
        assert_eq!(tick_at(&tenants, &q, minutes(m)).await, drain_reap());
    }
}

#[tokio::test]
async fn with_the_scheduler_off_a_tick_submits_nothing() {
    let db = TestDb::new().await;
    let q = Queue::new(30).await;
    let tenants = one_tenant(&db, 60, true);
    let report = run_tick(
        &tenants,
        &JobsAdapter::Sqs(q.adapter.clone()),
        false,
        minutes(0),
    )
    .await;
    assert!(!report.scheduler_enabled);
    assert!(report.tenants.is_empty());
    assert!(q.drain_jobs().await.is_empty());
    // Nothing was decided either: turned on later, the startup sync is still due.
    assert_eq!(
        tick_at(&tenants, &q, minutes(5)).await,
        with_full(Trigger::Startup)
    );
}

#[tokio::test]
async fn tenants_tick_independently_and_one_failing_does_not_stop_the_others() {
    let startup_db = TestDb::new().await;
    let schedule_db = TestDb::new().await;
    let unreachable_url = "postgres://postgres@127.0.0.1:1/unreachable";
    let unreachable: PgPool = sqlx::postgres::PgPoolOptions::new()
        .acquire_timeout(Duration::from_millis(500))
        .connect_lazy(unreachable_url)
        .unwrap();
    let tenants = Tenants::from_parts(
        vec![
            (
                tenant_config("a-startup", startup_db.url(), 60, true),
                startup_db.pool.clone(),
                None,
            ),
            (
                tenant_config("b-down", Secret::new(unreachable_url), 60, true),
                unreachable,
                None,
            ),
            (
                tenant_config("c-schedule", schedule_db.url(), 60, false),
                schedule_db.pool.clone(),
                None,
            ),
        ],
        RunOptions::default(),
    );
    let q = Queue::new(30).await;
    let report = run_tick(
        &tenants,
        &JobsAdapter::Sqs(q.adapter.clone()),
        true,
        minutes(0),
    )
    .await;
    let by_tenant = |id: &str| {
        report
            .tenants
            .iter()
            .find(|t| t.tenant == id)
            .unwrap()
            .clone()
    };
    assert_eq!(by_tenant("a-startup").full_sync, Some(Trigger::Startup));
    assert_eq!(
        by_tenant("a-startup").submitted,
        vec!["sync.full", "sync.drain", "sync.reap"]
    );
    assert!(!by_tenant("b-down").errors.is_empty());
    assert!(by_tenant("b-down").submitted.is_empty());
    assert_eq!(by_tenant("c-schedule").full_sync, None);
    assert_eq!(
        by_tenant("c-schedule").submitted,
        vec!["sync.drain", "sync.reap"]
    );

    let mut queued: Vec<(String, &str)> = q
        .drain_jobs()
        .await
        .iter()
        .map(|j| (j.tenant().to_string(), j.kind()))
        .collect();
    queued.sort();
    assert_eq!(
        queued,
        vec![
            ("a-startup".into(), "sync.drain"),
            ("a-startup".into(), "sync.full"),
            ("a-startup".into(), "sync.reap"),
            ("c-schedule".into(), "sync.drain"),
            ("c-schedule".into(), "sync.reap"),
        ]
    );
}

fn config_lookup(db: &TestDb, q: &Queue, scheduler: &str) -> shared::config::Config {
    config_with_bucket(db, q, scheduler, None)
}

/// The tick's configuration; `bucket`: `TRANSCRIPT_BUCKET` (template.yaml sets it on the tick
/// with the archive).
fn config_with_bucket(
    db: &TestDb,
    q: &Queue,
    scheduler: &str,
    bucket: Option<&str>,
) -> shared::config::Config {
    let url = db.url().expose().to_owned();
    let queue = q.url.clone();
    let scheduler = scheduler.to_owned();
    let bucket = bucket.map(str::to_owned);
    shared::config::from_lookup(move |name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "TRANSCRIPT_BUCKET" => bucket.clone(),
        "JOBS_BACKEND" => Some("sqs".into()),
        "SQS_QUEUE_URL" => Some(queue.clone()),
        "SYNC_SCHEDULER" => Some(scheduler.clone()),
        "SYNC_CONFIG" => Some(r#"{"sync":{"intervalMinutes":60,"onStartup":true}}"#.into()),
        _ => None,
    })
    .unwrap()
}

#[tokio::test]
async fn the_sample_schedule_event_runs_a_tick_with_the_configuration_read_again() {
    let raw = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../events/schedule-tick.json"
    ))
    .unwrap();
    let event: EventBridgeEvent = serde_json::from_str(&raw).unwrap();
    assert_eq!(event.detail_type, "Scheduled Event");
    assert_eq!(event.source, "aws.events");

    let db = TestDb::new().await;
    let q = Queue::new(30).await;
    let function = TickFunction::with_queue(Some(q.adapter.clone()));

    let off = function
        .invoke(&config_lookup(&db, &q, "0"), Utc::now())
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&off).unwrap(),
        serde_json::json!({"schedulerEnabled": false, "tenants": []})
    );
    assert!(q.drain_jobs().await.is_empty());

    let on = function
        .invoke(&config_lookup(&db, &q, "1"), Utc::now())
        .await
        .unwrap();
    let wire = serde_json::to_value(&on).unwrap();
    assert_eq!(wire["schedulerEnabled"], true);
    assert_eq!(wire["tenants"][0]["tenant"], "default");
    assert_eq!(wire["tenants"][0]["fullSync"], "startup");
    assert_eq!(
        wire["tenants"][0]["submitted"],
        serde_json::json!(["sync.full", "sync.drain", "sync.reap"])
    );
    assert_eq!(q.drain_jobs().await.len(), 3);
}

/// The kinds one invocation of `function` at `now` queued, sorted.
async fn invoked_kinds(
    function: &TickFunction,
    config: &shared::config::Config,
    q: &Queue,
    now: DateTime<Utc>,
) -> Vec<&'static str> {
    let report = function.invoke(config, now).await.unwrap();
    assert!(
        report.tenants.iter().all(|t| t.errors.is_empty()),
        "{report:?}"
    );
    let mut kinds: Vec<&'static str> = q.drain_jobs().await.iter().map(Job::kind).collect();
    kinds.sort();
    kinds
}

#[tokio::test]
async fn with_a_transcript_bucket_the_tick_submits_transcripts_expire_at_once_then_hourly() {
    let db = TestDb::new().await;
    let q = Queue::new(30).await;
    let config = config_with_bucket(&db, &q, "1", Some("syncplane-transcripts-test"));
    let function = TickFunction::with_queue(Some(q.adapter.clone()));
    let with_expire = ["sync.drain", "sync.full", "sync.reap", "transcripts.expire"];
    // The first tick of a process submits it (for the first tenant, which holds the archive).
    assert_eq!(
        invoked_kinds(&function, &config, &q, minutes(0)).await,
        with_expire
    );
    for m in [1, 30, 59] {
        assert_eq!(
            invoked_kinds(&function, &config, &q, minutes(m)).await,
            ["sync.drain", "sync.reap"],
            "minute {m}"
        );
    }
    // The tick at minute 60 is missed: the one at 61 submits it, and the next comes an hour on.
    let kinds = invoked_kinds(&function, &config, &q, minutes(61)).await;
    assert!(kinds.contains(&"transcripts.expire"), "{kinds:?}");
    let kinds = invoked_kinds(&function, &config, &q, minutes(120)).await;
    assert!(!kinds.contains(&"transcripts.expire"), "{kinds:?}");
    let kinds = invoked_kinds(&function, &config, &q, minutes(121)).await;
    assert!(kinds.contains(&"transcripts.expire"), "{kinds:?}");

    // The job names the tenant whose database holds the archive.
    function.invoke(&config, minutes(200)).await.unwrap();
    let jobs = q.drain_jobs().await;
    let expire = jobs.iter().find(|j| j.kind() == "transcripts.expire");
    assert_eq!(
        expire,
        Some(&Job::TranscriptsExpire {
            tenant: config.tenants[0].id.clone()
        })
    );
}

#[tokio::test]
async fn without_an_archive_the_tick_never_submits_transcripts_expire() {
    let db = TestDb::new().await;
    let q = Queue::new(30).await;
    // Queued jobs without TRANSCRIPT_BUCKET.
    let config = config_with_bucket(&db, &q, "1", None);
    let function = TickFunction::with_queue(Some(q.adapter.clone()));
    for m in [0, 60, 61, 60 * 24] {
        let kinds = invoked_kinds(&function, &config, &q, minutes(m)).await;
        assert!(
            !kinds.contains(&"transcripts.expire"),
            "minute {m}: {kinds:?}"
        );
    }
    // The library tick submits it only for the tenant it is told holds the archive.
    let tenants = one_tenant(&db, 0, false);
    let jobs = JobsAdapter::Sqs(q.adapter.clone());
    let other = TenantId::parse("other").unwrap();
    let report = run_tick_with_retention(&tenants, &jobs, true, minutes(0), Some(&other)).await;
    assert_eq!(report.tenants[0].submitted, ["sync.drain", "sync.reap"]);
    let default = TenantId::parse("default").unwrap();
    let report = run_tick_with_retention(&tenants, &jobs, true, minutes(0), Some(&default)).await;
    assert_eq!(
        report.tenants[0].submitted,
        ["sync.drain", "sync.reap", "transcripts.expire"]
    );
    q.drain_jobs().await;
}

#[tokio::test]
async fn a_tick_that_holds_the_archives_tenant_back_submits_no_expire_for_another_and_retries() {
    let db = TestDb::new().await;
    let q = Queue::new(30).await;
    let mut config = config_with_bucket(&db, &q, "1", Some("syncplane-transcripts-test"));
    config.sqs_endpoint = Some(syncplane_tests::sqs::endpoint());
    let mut second = config.tenants[0].clone();
    second.id = TenantId::parse("second").unwrap();
    config.tenants.push(second);
    // As the tick function is built at start: the first tenant then holds the archive.
    let function = TickFunction::new(&config, None).await.unwrap();
    // The first tenant's schema is behind: the tick's configuration has lost it (held.rs).
    let mut held = config.clone();
    held.tenants.remove(0);
    let report = function.invoke(&held, minutes(0)).await.unwrap();
    assert_eq!(report.tenants.len(), 1);
    assert!(
        !report.tenants[0].submitted.contains(&"transcripts.expire"),
        "{report:?}"
    );
    q.drain_jobs().await;
    // Migrated, the next tick submits it for the archive's tenant at once.
    let report = function.invoke(&config, minutes(1)).await.unwrap();
    let expired: Vec<&str> = report
        .tenants
        .iter()
        .filter(|t| t.submitted.contains(&"transcripts.expire"))
        .map(|t| t.tenant.as_str())
        .collect();
    assert_eq!(expired, ["default"]);
    q.drain_jobs().await;
}
