//! Postgres: pools and migrations.
//!
//! Connections are direct (no transaction-mode pooler): the engine's session advisory locks need a
//! real session. Pools are small per execution environment; concurrency is clamped to them, so a
//! connection is never waited for long: a pool that has none within [`ACQUIRE_TIMEOUT`] is a
//! database that does not answer ([`is_unreachable`]), which every HTTP surface answers 503
//! `database_unreachable` within those seconds (issue 21 point 4), not 500 after a long wait.

use std::time::Duration;

use sha2::{Digest, Sha256};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};

use crate::config::{Secret, TenantConfig};

pub mod diagnose;

/// The schema, embedded in every binary: `migrations/` as files of its own (`NNNN_description.sql`),
/// each included here. Listed rather than found by sqlx's `migrate!`, whose proc-macro crate
/// compiles the Postgres driver, rustls and tokio a second time for the host (issue 32); the test
/// `migrations::every_file_of_the_migrations_folder_is_embedded_in_order` keeps the list whole.
macro_rules! migrations {
    ($($version:literal $description:literal $file:literal),* $(,)?) => {
        &[$(($version, $description, include_str!(concat!("../../../migrations/", $file)))),*]
    };
}

/// `(version, description, SQL)` of every migration, in order.
pub const MIGRATIONS: &[(i64, &str, &str)] = migrations![
    1 "sync" "0001_sync.sql",
    2 "ingest" "0002_ingest.sql",
    3 "document batches" "0003_document_batches.sql",
    4 "ingest event rows" "0004_ingest_event_rows.sql",
    5 "run outcomes" "0005_run_outcomes.sql",
    6 "installation tokens" "0006_installation_tokens.sql",
    7 "graphql head checks" "0007_graphql_head_checks.sql",
    8 "plan trees" "0008_plan_trees.sql",
    9 "read api" "0009_read_api.sql",
    10 "search tiers" "0010_search_tiers.sql",
    11 "transcripts" "0011_transcripts.sql",
    12 "console" "0012_console.sql",
    13 "listing checks" "0013_listing_checks.sql",
    14 "document images" "0014_document_images.sql",
    15 "transcript search" "0015_transcript_search.sql",
    16 "transcript lines without foreign keys" "0016_transcript_lines_without_foreign_keys.sql",
    17 "transcript export rate limits" "0017_transcript_export_rate_limits.sql",
    18 "transcript line groups" "0018_transcript_line_groups.sql",
];

/// [`MIGRATIONS`] as sqlx runs them (checksums are SHA-384 of the SQL, as `migrate!` makes them,
/// so databases migrated by earlier builds validate).
pub static MIGRATOR: std::sync::LazyLock<sqlx::migrate::Migrator> =
    std::sync::LazyLock::new(|| migrator(false));

/// A migrator of [`MIGRATIONS`]; `ignore_missing`: versions applied that this build does not
/// know are tolerated.
pub(crate) fn migrator(ignore_missing: bool) -> sqlx::migrate::Migrator {
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    let migrations: Vec<Migration> = MIGRATIONS
        .iter()
        .map(|(version, description, sql)| {
            Migration::new(
                *version,
                std::borrow::Cow::Borrowed(description),
                MigrationType::Simple,
                sqlx::SqlStr::from_static(sql),
                false,
            )
        })
        .collect();
    Migrator {
        migrations: std::borrow::Cow::Owned(migrations),
        ignore_missing,
        ..Migrator::DEFAULT
    }
}

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

/// Open a pool for `tenant` once one connection has proved the database answers: a database that
/// does not is one [`Unreachable`] line, at once.
pub async fn connect_tenant(
    tenant: &TenantConfig,
    max_connections: u32,
) -> Result<PgPool, Unreachable> {
    reach(tenant).await?;
    let options: PgConnectOptions = tenant
        .database_url
        .expose()
        .parse()
        .map_err(|e| Unreachable::new(tenant, &e))?;
    pool_options(max_connections)
        .connect_with(options.application_name("syncplane"))
        .await
        .map_err(|e| Unreachable::new(tenant, &e))
}

/// How long one connection attempt may take before the database counts as unreachable.
pub const REACH_TIMEOUT: Duration = Duration::from_secs(5);

/// A database that does not answer, as one operator line (issue 13 §10): the setting, the host,
/// port and database name (never the user or password), the cause, what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{setting}: cannot connect to the database at {target}: {cause} (check that Postgres runs there and that {setting} is right)"
)]
pub struct Unreachable {
    pub setting: String,
    pub target: String,
    pub cause: String,
}

impl Unreachable {
    fn new(tenant: &TenantConfig, e: &dyn std::fmt::Display) -> Self {
        Self::with_cause(tenant, cause_line(&e.to_string()))
    }

    fn with_cause(tenant: &TenantConfig, cause: String) -> Self {
        Self {
            setting: database_setting(tenant),
            target: target(&tenant.database_url),
            cause,
        }
    }
}

/// The setting that holds a tenant's database URL.
pub fn database_setting(tenant: &TenantConfig) -> String {
    if tenant.id.as_str() == crate::config::DEFAULT_TENANT {
        "DATABASE_URL".to_owned()
    } else {
        format!("TENANTS_FILE: tenants[{}].databaseUrl", tenant.id)
    }
}

/// `host:port/database` of a URL (what an operator needs to find it; no credentials).
fn target(url: &Secret) -> String {
    match url.expose().parse::<PgConnectOptions>() {
        Ok(o) => format!(
            "{}:{}/{}",
            o.get_host(),
            o.get_port(),
            o.get_database().unwrap_or(o.get_username())
        ),
        Err(_) => "an unparsable URL".to_owned(),
    }
}

/// An error's text on one line, without anything secret (a driver never prints the password,
/// but the URL scrubber runs anyway), and without sqlx's repeated wrapping ("error communicating
/// with database: X (os error 111)" says X once).
fn cause_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = line
        .strip_prefix("error communicating with database: ")
        .unwrap_or(&line)
        .to_owned();
    crate::telemetry::redact(&line).into_owned()
}

/// One direct connection, at most [`REACH_TIMEOUT`]: the pool would retry a refused connection
/// until its acquire timeout and then report only that it timed out, losing the cause.
pub async fn reach(tenant: &TenantConfig) -> Result<(), Unreachable> {
    let options: PgConnectOptions = tenant
        .database_url
        .expose()
        .parse()
        .map_err(|e| Unreachable::new(tenant, &e))?;
    match tokio::time::timeout(REACH_TIMEOUT, PgConnection::connect_with(&options)).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            Ok(())
        }
        Ok(Err(sqlx::Error::Database(e))) => {
            // The server's own words ("database \"x\" does not exist", "password authentication
            // failed for user \"app\""), without the driver's wrapping.
            Err(Unreachable::with_cause(tenant, cause_line(e.message())))
        }
        Ok(Err(e)) => Err(Unreachable::new(tenant, &e)),
        Err(_) => Err(Unreachable::with_cause(
            tenant,
            format!("no answer within {} s", REACH_TIMEOUT.as_secs()),
        )),
    }
}

/// Longest wait for a pooled connection, connecting included (the pool retries a refused
/// connection until then): past it the database counts as unreachable. The same bound as
/// `GET /api/health`'s check; well above a healthy local or in-VPC connect (milliseconds).
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// The stable code of an answer given because the database does not answer.
pub const UNREACHABLE_CODE: &str = "database_unreachable";
/// The `Retry-After` of that answer, in seconds.
pub const UNREACHABLE_RETRY_AFTER_SECS: u64 = 5;

/// Whether `e` says the database cannot be reached or used at all (no connection within
/// [`ACQUIRE_TIMEOUT`], a transport or TLS failure, or the server refusing the connection:
/// authentication, a missing database, shutting down, too many connections), rather than that
/// one query failed.
pub fn is_unreachable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            // 08: connection exception; 28: invalid authorization; 3D000: no such database;
            // 53300: too many connections; 57P01-57P03: shutting down, cannot connect now.
            code.starts_with("08")
                || code.starts_with("28")
                || matches!(&*code, "3D000" | "53300" | "57P01" | "57P02" | "57P03")
        }),
        _ => false,
    }
}

fn pool_options(max_connections: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(ACQUIRE_TIMEOUT)
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
