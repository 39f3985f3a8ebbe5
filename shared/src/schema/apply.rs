//! Apply the embedded migrations (`db::MIGRATOR`'s set), serialized across every concurrent caller
//! (two deploys, a deploy and `syncplane migrate`) by a session advisory lock, and idempotent:
//! a second run applies nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Value, json};
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::{PgConnection, PgPool};

use crate::config::{Config, ConfigError};
use crate::db;

/// The advisory lock key of schema changes, in its own namespace (`sync::lock::lock_key`).
pub fn migrate_lock_key() -> i64 {
    crate::sync::lock::lock_key("syncplane:schema:", "migrations")
}

/// The embedded migrations, tolerating applied versions newer than this build: when a deploy
/// fails after some of its migrations applied, CloudFormation's rollback runs the previous build
/// against that schema, which must then succeed (migrations are additive, so the previous build
/// still works on it). `migrate!` can only build the struct, hence its fields here.
static MIGRATOR_AHEAD_OK: Migrator = Migrator {
    ignore_missing: true,
    ..sqlx::migrate!("../migrations")
};

/// What one database's migration did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Migrated {
    /// Versions applied by this call (empty when the schema was already current).
    pub applied: Vec<i64>,
    /// The newest version now in the database.
    pub version: i64,
}

/// Apply every pending migration on one connection of `pool` while holding the lock.
pub async fn migrate_locked(pool: &PgPool) -> Result<Migrated, MigrateError> {
    let mut conn = pool.acquire().await?;
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(migrate_lock_key())
        .execute(&mut *conn)
        .await?;
    let result = migrate_on(&mut conn).await;
    // Always released, even after a failed migration (the session may live on in the pool).
    let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(migrate_lock_key())
        .execute(&mut *conn)
        .await;
    if let Err(e) = unlocked {
        tracing::warn!(error = %e, "could not release the migration lock; closing the session");
        conn.detach();
    }
    result
}

async fn migrate_on(conn: &mut PgConnection) -> Result<Migrated, MigrateError> {
    let before = applied_versions(conn).await?;
    MIGRATOR_AHEAD_OK.run(&mut *conn).await?;
    let after = applied_versions(conn).await?;
    Ok(Migrated {
        applied: after.difference(&before).copied().collect(),
        version: after.last().copied().unwrap_or(0),
    })
}

/// Versions recorded as applied; none when the bookkeeping table does not exist yet.
pub async fn applied_versions(conn: &mut PgConnection) -> Result<BTreeSet<i64>, sqlx::Error> {
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

/// Migrate every configured tenant's database, in order; the first failure stops and is
/// returned as one line naming the tenant (no connection string, no secret).
pub async fn migrate_tenants(config: &Config) -> Result<Vec<(String, Migrated)>, String> {
    let mut done = Vec::with_capacity(config.tenants.len());
    for tenant in &config.tenants {
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            format!("tenant {}: {what}: {}", tenant.id, one_line(&e.to_string()))
        };
        let pool = db::connect_tenant(tenant, 1)
            .await
            .map_err(|e| format!("tenant {}: {e}", tenant.id))?;
        let migrated = migrate_locked(&pool)
            .await
            .map_err(|e| fail("migration failed", &e));
        pool.close().await;
        let migrated = migrated?;
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
pub async fn migrate_summary(config: Result<Config, ConfigError>) -> Result<Value, String> {
    let config = config.map_err(|e| e.to_string())?;
    let done = migrate_tenants(&config).await?;
    let version = done.iter().map(|(_, m)| m.version).max().unwrap_or(0);
    let tenants: BTreeMap<String, Migrated> = done.into_iter().collect();
    Ok(json!({ "version": version, "tenants": tenants }))
}

/// Collapse whitespace so a reason stays on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
