//! The tick: schedule decisions across simulated time (the library tick called with explicit
//! `now` values), drain and reap every tick, the scheduler switch, tenants independent, and the
//! events/ schedule sample. Jobs go to a real queue on the emulator, which the tests read back.

use std::time::Duration;

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use chrono::{DateTime, Utc};
use shared::config::{Secret, SyncConfig, TenantConfig, TenantId};
use shared::jobs::Job;
use shared::jobs::adapter::JobsAdapter;
use shared::sync::runs::Trigger;
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use shared::worker::tick::{TickFunction, run_tick};
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
    let url = db.url().expose().to_owned();
    let queue = q.url.clone();
    let scheduler = scheduler.to_owned();
    shared::config::from_lookup(move |name| match name {
        "DATABASE_URL" => Some(url.clone()),
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
