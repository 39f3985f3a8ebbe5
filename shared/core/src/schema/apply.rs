//! Apply the embedded migrations (`db::MIGRATOR`'s set), serialized across every concurrent caller
//! (two deploys, a deploy and `syncplane migrate`) by a session advisory lock, and idempotent:
//! a second run applies nothing.
//!
//! The lock is waited for until a deadline, never forever: a migration stuck holding it (a
//! `syncplane migrate` left hanging) must not keep the migrate function waiting past its own
//! timeout, which would leave CloudFormation without an answer and the stack waiting with it.
//! Past the deadline the run fails with [`MigrationError::LockBusy`], naming the holder's session.
//! The migrate function also gives the migrations a deadline to finish by: one still running then
//! has its session ended ([`MigrationError::OutOfTime`]), so nothing is left holding locks.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};
use tokio::time::Instant;

use crate::config::{Config, ConfigError};
use crate::db;

/// The advisory lock key of schema changes, in its own namespace (`db::lock_key`, as the engine's locks).
pub fn migrate_lock_key() -> i64 {
    crate::db::lock_key("syncplane:schema:", "migrations")
}

/// The embedded migrations, tolerating applied versions newer than this build: when a deploy
/// fails after some of its migrations applied, CloudFormation's rollback runs the previous build
/// against that schema, which must then succeed (migrations are additive, so the previous build
/// still works on it).
static MIGRATOR_AHEAD_OK: std::sync::LazyLock<Migrator> =
    std::sync::LazyLock::new(|| crate::db::migrator(true));

/// What one database's migration did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Migrated {
    /// Versions applied by this call (empty when the schema was already current).
    pub applied: Vec<i64>,
    /// The newest version now in the database.
    pub version: i64,
}

/// How long `syncplane migrate` ([`migrate_locked`]) waits for a migration already running
/// elsewhere (a deploy's) before giving up. The migrate function waits instead until
/// [`MIGRATE_ROOM`] before the migrations must be done (`invoke::finish_by`).
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(60);
/// The first pause between two tries of the lock; it doubles up to [`LOCK_POLL_MAX`].
const LOCK_POLL_MIN: Duration = Duration::from_millis(100);
const LOCK_POLL_MAX: Duration = Duration::from_secs(1);

/// Why a migration did not run, or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    /// Another session held the schema lock until the deadline: nothing was applied.
    #[error(
        "another migration holds the schema lock ({}) and did not release it within {}s; nothing \
         was applied: let it finish{}, then migrate again",
        holder.map_or("its session is not visible to this role".to_owned(), |pid| format!("session pid {pid}")),
        waited.as_secs(),
        holder.map_or(String::new(), |pid| format!(" or end it (SELECT pg_terminate_backend({pid}))")),
    )]
    LockBusy {
        /// How long this run waited.
        waited: Duration,
        /// The backend pid of the session holding the lock, when the database says.
        holder: Option<i32>,
    },
    /// The migrations did not finish by the deadline; their session was ended from another
    /// one, so the server rolled back its transaction and freed its locks.
    #[error(
        "the migrations did not finish within the {}s left before the deadline; their database \
         session was ended, so an unfinished migration rolled back and the schema lock is free: \
         run `syncplane migrate` from a machine that reaches the database, then deploy again",
        ran.as_secs()
    )]
    OutOfTime {
        /// How long they ran.
        ran: Duration,
    },
    /// The migrations themselves failed (or the database did).
    #[error(transparent)]
    Migrate(#[from] MigrateError),
}

impl From<sqlx::Error> for MigrationError {
    fn from(e: sqlx::Error) -> Self {
        Self::Migrate(MigrateError::from(e))
    }
}

/// Apply every pending migration on one connection of `pool` while holding the lock, waiting for
/// the lock at most [`DEFAULT_LOCK_WAIT`].
pub async fn migrate_locked(pool: &PgPool) -> Result<Migrated, MigrationError> {
    migrate_locked_until(pool, Instant::now() + DEFAULT_LOCK_WAIT).await
}

/// The same, waiting for the lock until `lock_until` (one try at least).
pub async fn migrate_locked_until(
    pool: &PgPool,
    lock_until: Instant,
) -> Result<Migrated, MigrationError> {
    migrate_locked_by(pool, lock_until, None).await
}

/// Time kept for applying the migrations once the lock is taken, when they must be done by a
/// deadline: the lock is waited for until this long before it (or half the time left, if less).
pub const MIGRATE_ROOM: Duration = Duration::from_secs(60);

/// Until when a run that must finish by `finish_by` waits for the schema lock.
pub fn lock_deadline(finish_by: Instant) -> Instant {
    let now = Instant::now();
    let left = finish_by.saturating_duration_since(now);
    now + left.saturating_sub(MIGRATE_ROOM.min(left / 2))
}

/// Waiting for the lock until `lock_until`, and, given `finish_by`, done by then: a migration
/// still running at `finish_by` has its session ended from another connection
/// ([`MigrationError::OutOfTime`]). Merely dropping it would not do: the pool keeps a dropped
/// connection (its open transaction, its DDL locks, the schema lock) until a background task
/// tidies it, and a Lambda environment is frozen once it has answered.
pub async fn migrate_locked_by(
    pool: &PgPool,
    lock_until: Instant,
    finish_by: Option<Instant>,
) -> Result<Migrated, MigrationError> {
    let mut conn = pool.acquire().await?;
    lock_until_deadline(&mut conn, lock_until).await?;
    let result = match finish_by {
        None => migrate_on(&mut conn).await,
        Some(finish_by) => {
            let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
                .fetch_one(&mut *conn)
                .await?;
            let started = Instant::now();
            match tokio::time::timeout_at(finish_by, migrate_on(&mut conn)).await {
                Ok(result) => result,
                Err(_) => {
                    end_session(pool, pid).await;
                    // Its server side is gone: never back into the pool.
                    drop(conn.detach());
                    return Err(MigrationError::OutOfTime {
                        ran: started.elapsed(),
                    });
                }
            }
        }
    };
    // Always released, even after a failed migration (the session may live on in the pool).
    let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(migrate_lock_key())
        .execute(&mut *conn)
        .await;
    if let Err(e) = unlocked {
        tracing::warn!(error = %e, "could not release the migration lock; closing the session");
        conn.detach();
    }
    Ok(result?)
}

/// End the backend `pid` from a connection of its own (the pool may allow only one), so the
/// server rolls back its transaction and frees its locks; logged when it cannot.
async fn end_session(pool: &PgPool, pid: i32) {
    let ended = async {
        let mut other = pool.connect_options().connect().await?;
        let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(pid)
            .fetch_one(&mut other)
            .await?;
        other.close().await?;
        Ok::<bool, sqlx::Error>(ended)
    };
    match tokio::time::timeout(Duration::from_secs(5), ended).await {
        Ok(Ok(true)) => tracing::warn!(pid, "migration out of time: its session was ended"),
        Ok(Ok(false)) => {
            tracing::warn!(pid, "migration out of time: its session had already ended")
        }
        Ok(Err(e)) => {
            tracing::error!(pid, error = %e, "migration out of time and its session could not be ended; end it with pg_terminate_backend")
        }
        Err(_) => tracing::error!(
            pid,
            "migration out of time and ending its session timed out; end it with pg_terminate_backend"
        ),
    }
}

/// Take the session lock on `conn`, trying until `until`.
async fn lock_until_deadline(
    conn: &mut PgConnection,
    until: Instant,
) -> Result<(), MigrationError> {
    let started = Instant::now();
    let mut pause = LOCK_POLL_MIN;
    let mut said = false;
    loop {
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(migrate_lock_key())
            .fetch_one(&mut *conn)
            .await?;
        if locked {
            return Ok(());
        }
        let now = Instant::now();
        if now >= until {
            let holder = lock_holder(conn).await;
            return Err(MigrationError::LockBusy {
                waited: now - started,
                holder,
            });
        }
        if !said {
            said = true;
            tracing::info!(
                wait_secs = (until - now).as_secs(),
                "another migration holds the schema lock; waiting for it"
            );
        }
        tokio::time::sleep(pause.min(until - now)).await;
        pause = (pause * 2).min(LOCK_POLL_MAX);
    }
}

/// The backend pid of the session holding the schema lock (best effort: `pg_locks` is readable by
/// every role, but the session may have gone meanwhile).
async fn lock_holder(conn: &mut PgConnection) -> Option<i32> {
    // A bigint advisory key shows in pg_locks as classid (high half), objid (low half), objsubid 1.
    sqlx::query_scalar::<_, Option<i32>>(
        "SELECT pid FROM pg_locks \
         WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
           AND classid = (($1 >> 32) & 4294967295)::oid AND objid = ($1 & 4294967295)::oid \
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         LIMIT 1",
    )
    .bind(migrate_lock_key())
    .fetch_optional(&mut *conn)
    .await
    .ok()
    .flatten()
    .flatten()
}

/// Postgres's notices are not sent while the migrations run (issue 21 point 6): the migrator's
/// `CREATE TABLE IF NOT EXISTS _sqlx_migrations` would otherwise log `relation "_sqlx_migrations"
/// already exists, skipping` at INFO on every run; warnings and errors still come through.
async fn migrate_on(conn: &mut PgConnection) -> Result<Migrated, MigrateError> {
    let before = applied_versions(conn).await?;
    sqlx::query("SET client_min_messages = warning")
        .execute(&mut *conn)
        .await?;
    let ran = MIGRATOR_AHEAD_OK.run(&mut *conn).await;
    // The session may go back to a pool: its notices as before.
    let reset = sqlx::query("RESET client_min_messages")
        .execute(&mut *conn)
        .await;
    ran?;
    reset?;
    let after = applied_versions(conn).await?;
    Ok(Migrated {
        applied: after.difference(&before).copied().collect(),
        version: after.last().copied().unwrap_or(0),
    })
}

/// Versions recorded as applied; none when the bookkeeping table does not exist yet.
pub(crate) async fn applied_versions(
    conn: &mut PgConnection,
) -> Result<BTreeSet<i64>, sqlx::Error> {
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(&mut *conn)
        .await?;
    if !exists {
        return Ok(BTreeSet::new());
    }
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(&mut *conn)
            .await?;
    Ok(versions.into_iter().collect())
}

/// Migrate every configured tenant's database, in order, all done by `finish_by` (each waits
/// for the schema lock until [`lock_deadline`] of it); the first failure stops and is returned as
/// one line naming the tenant (no connection string, no secret).
pub async fn migrate_tenants(
    config: &Config,
    finish_by: Instant,
) -> Result<Vec<(String, Migrated)>, String> {
    let mut done = Vec::with_capacity(config.tenants.len());
    for tenant in &config.tenants {
        let pool = db::connect_tenant(tenant, 1)
            .await
            .map_err(|e| format!("tenant {}: {e}", tenant.id))?;
        let migrated = migrate_locked_by(&pool, lock_deadline(finish_by), Some(finish_by)).await;
        pool.close().await;
        let migrated = migrated.map_err(|e| match e {
            MigrationError::LockBusy { .. } | MigrationError::OutOfTime { .. } => {
                format!("tenant {}: {}", tenant.id, one_line(&e.to_string()))
            }
            MigrationError::Migrate(e) => format!(
                "tenant {}: migration failed: {}",
                tenant.id,
                one_line(&e.to_string())
            ),
        })?;
        tracing::info!(
            tenant = %tenant.id,
            applied = ?migrated.applied,
            version = migrated.version,
            "schema migrated"
        );
        done.push((tenant.id.to_string(), migrated));
    }
    Ok(done)
}

/// Migrate what `config` names and summarise it as the function's answer (and the custom
/// resource's `Data`); a configuration error is a failure like any other.
pub async fn migrate_summary(
    config: Result<Config, ConfigError>,
    finish_by: Instant,
) -> Result<Value, String> {
    let config = config.map_err(|e| e.to_string())?;
    let done = migrate_tenants(&config, finish_by).await?;
    let version = done.iter().map(|(_, m)| m.version).max().unwrap_or(0);
    let tenants: BTreeMap<String, Migrated> = done.into_iter().collect();
    Ok(json!({ "version": version, "tenants": tenants }))
}

/// Collapse whitespace so a reason stays on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
