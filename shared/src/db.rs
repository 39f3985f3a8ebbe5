//! Postgres: pools and migrations.
//!
//! Connections are direct (no transaction-mode pooler): the engine's session advisory locks need a
//! real session. Pools are small per execution environment; concurrency is clamped to them.

use std::time::Duration;

use sha2::{Digest, Sha256};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::config::Secret;

/// The schema, embedded in every binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// Default pool size for one Lambda execution environment or one CLI process.
pub const DEFAULT_POOL_SIZE: u32 = 5;

/// Open a pool lazily: no connection is made until the first query, so a cold start does not
/// pay for a database round trip it may not need.
pub fn lazy_pool(url: &Secret, max_connections: u32) -> Result<PgPool, sqlx::Error> {
    let options: PgConnectOptions = url.expose().parse()?;
    Ok(pool_options(max_connections).connect_lazy_with(options.application_name("syncplane")))
}

/// Open a pool and check it with one connection now.
pub async fn connect(url: &Secret, max_connections: u32) -> Result<PgPool, sqlx::Error> {
    let options: PgConnectOptions = url.expose().parse()?;
    pool_options(max_connections)
        .connect_with(options.application_name("syncplane"))
        .await
}

fn pool_options(max_connections: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(Duration::from_secs(10))
        .idle_timeout(Duration::from_secs(300))
}

/// Apply every pending migration; applying twice is a no-op.
pub async fn migrate(pool: &PgPool) -> Result<(), sqlx::migrate::MigrateError> {
    MIGRATOR.run(pool).await
}

/// An advisory lock key: the first 8 bytes of SHA-256(namespace || id), as Postgres's bigint.
/// Namespaces keep the key spaces of different lock kinds apart.
pub fn lock_key(namespace: &str, id: &str) -> i64 {
    let digest = Sha256::new()
        .chain_update(namespace.as_bytes())
        .chain_update(id.as_bytes())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}
