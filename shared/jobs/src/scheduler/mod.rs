//! The scheduler (spec "Scheduler"), serverless: no long-lived process. The tick function
//! (`crate::tick`) calls [`tick`] every minute per tenant; it decides from state kept in Postgres
//! (`scheduler_state`) with the pure [`rules`], and the full sync it asks for runs under one
//! cluster-wide advisory lock per tenant (the worker's `scheduled::run_scheduled_full`) so only
//! one scheduled full sync runs at a time; [`record_run`] feeds its end back into the schedule.

pub mod rules;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use rules::{ScheduleSettings, ScheduleState};
use syncplane_core::config::SyncConfig;
use syncplane_runs::{RunReport, RunStatus, Trigger};

/// What a fresh start is measured against: the code version and the schedule settings.
pub(crate) fn schedule_fingerprint(config: &SyncConfig) -> String {
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(b"\0");
    h.update(config.interval_minutes.to_be_bytes());
    h.update([u8::from(config.on_startup)]);
    hex::encode(&h.finalize()[..16])
}

fn settings(config: &SyncConfig) -> ScheduleSettings {
    ScheduleSettings {
        interval_minutes: config.interval_minutes,
        on_startup: config.on_startup,
    }
}

#[derive(syncplane_core::FromRow)]
struct StateRow {
    next_due_at: Option<DateTime<Utc>>,
    consecutive_failures: i32,
    last_run_finished_at: Option<DateTime<Utc>>,
    config_fingerprint: Option<String>,
}

pub(crate) async fn load_state(pool: &PgPool, tenant: &str) -> Result<ScheduleState, sqlx::Error> {
    let row: Option<StateRow> = sqlx::query_as(
        "SELECT next_due_at, consecutive_failures, last_run_finished_at, config_fingerprint
         FROM scheduler_state WHERE tenant = $1",
    )
    .bind(tenant)
    .fetch_optional(pool)
    .await?;
    Ok(row
        .map(|r| ScheduleState {
            next_due_at: r.next_due_at,
            consecutive_failures: r.consecutive_failures.max(0) as u32,
            last_run_finished_at: r.last_run_finished_at,
            config_fingerprint: r.config_fingerprint,
        })
        .unwrap_or_default())
}

/// One tick for one tenant at `now`: store the decision and return the trigger of a full sync
/// to submit, if one is due. Two ticks racing for the same slot: only the one whose update
/// still sees the old state submits.
pub async fn tick(
    pool: &PgPool,
    tenant: &str,
    config: &SyncConfig,
    now: DateTime<Utc>,
) -> Result<Option<Trigger>, sqlx::Error> {
    let state = load_state(pool, tenant).await?;
    let fingerprint = schedule_fingerprint(config);
    let decision = rules::decide(
        now,
        &state,
        settings(config),
        &fingerprint,
        rand::random_range(-1.0..=1.0),
    );
    let claimed = sqlx::query(
        "INSERT INTO scheduler_state (tenant, next_due_at, config_fingerprint, updated_at)
         VALUES ($1, $2, $3, now())
         ON CONFLICT (tenant) DO UPDATE SET next_due_at = $2, config_fingerprint = $3, updated_at = now()
         WHERE scheduler_state.next_due_at IS NOT DISTINCT FROM $4
           AND scheduler_state.config_fingerprint IS NOT DISTINCT FROM $5
           AND (scheduler_state.next_due_at, scheduler_state.config_fingerprint) IS DISTINCT FROM ($2, $3)",
    )
    .bind(tenant)
    .bind(decision.next_due_at)
    .bind(&fingerprint)
    .bind(state.next_due_at)
    .bind(&state.config_fingerprint)
    .execute(pool)
    .await?
    .rows_affected()
        > 0;
    Ok(if claimed { decision.run } else { None })
}

/// Record a run's end: failures count up and retry soon; success resets and waits an interval.
pub async fn record_run(
    pool: &PgPool,
    tenant: &str,
    config: &SyncConfig,
    report: &RunReport,
) -> Result<(), sqlx::Error> {
    let state = load_state(pool, tenant).await?;
    let failures = if report.status == RunStatus::Failed {
        state.consecutive_failures.saturating_add(1)
    } else {
        0
    };
    let finished: DateTime<Utc> =
        sqlx::query_scalar("SELECT finished_at FROM sync_runs WHERE id = $1")
            .bind(report.run_id)
            .fetch_optional(pool)
            .await?
            .flatten()
            .unwrap_or_else(Utc::now);
    let next = rules::next_after_run(
        finished,
        failures,
        settings(config),
        rand::random_range(-1.0..=1.0),
    );
    sqlx::query(
        "INSERT INTO scheduler_state (tenant, next_due_at, consecutive_failures, last_run_id, last_run_finished_at, config_fingerprint, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, now())
         ON CONFLICT (tenant) DO UPDATE SET next_due_at = $2, consecutive_failures = $3, last_run_id = $4,
             last_run_finished_at = $5, config_fingerprint = $6, updated_at = now()",
    )
    .bind(tenant)
    .bind(next)
    .bind(failures.min(i32::MAX as u32) as i32)
    .bind(report.run_id)
    .bind(finished)
    .bind(schedule_fingerprint(config))
    .execute(pool)
    .await?;
    Ok(())
}
