//! Is the database's schema behind this build? (issue 13: "Functions that find the schema behind
//! their build say so in one clear log line and a 503 with a code, not a 500".)
//!
//! Checked at an HTTP function's first request against the migrations embedded in the binary:
//! one query over `_sqlx_migrations`. A current schema is remembered for the life of the
//! execution environment; a schema found behind is re-checked at most every `recheck` (the
//! migration may land a moment later), and logged once. Each HTTP surface checks first, as the
//! first step of its `serve`, and answers [`SchemaBehind`]'s 503 through `crate::http`. The functions that run jobs (worker,
//! tick) use the same guard without its HTTP wording: `syncplane_jobs::held`.
//!
//! A database that does not answer the check (`db::is_unreachable`) is answered at once, 503
//! `database_unreachable` ([`Refusal`]; issue 21 point 4), instead of letting the request through
//! to meet the same wait a second time in its handler.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use http::StatusCode;
use sqlx::{PgConnection, PgPool};

use super::apply::applied_versions;
use crate::db::{self, MIGRATOR};
use crate::http::HttpError;

/// How often a schema found behind is looked at again.
pub const DEFAULT_RECHECK: Duration = Duration::from_secs(5);

/// The answer while the schema is behind: the one error of this check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the database schema is behind this deployment; migrations have not run yet")]
pub struct SchemaBehind {
    /// Newest version the database has (0: none).
    pub database: i64,
    /// Newest version this build embeds.
    pub build: i64,
}

/// The enveloped 503 (`Retry-After`: a deploy's migration usually lands within seconds).
impl HttpError for SchemaBehind {
    fn status(&self) -> StatusCode {
        StatusCode::SERVICE_UNAVAILABLE
    }
    fn code(&self) -> Option<&'static str> {
        Some("schema_behind")
    }
    fn headers(&self) -> Vec<(&'static str, String)> {
        vec![("retry-after", "30".to_owned())]
    }
}

/// What an HTTP function's schema check answers instead of serving: the check's one error type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(transparent)]
    Behind(#[from] SchemaBehind),
    /// The check found no connection within `db::ACQUIRE_TIMEOUT` (or the server refused it).
    #[error("the database does not answer")]
    DatabaseUnreachable,
}

/// Both enveloped 503s, each with its code and `Retry-After`.
impl HttpError for Refusal {
    fn status(&self) -> StatusCode {
        match self {
            Self::Behind(b) => b.status(),
            Self::DatabaseUnreachable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
    fn code(&self) -> Option<&'static str> {
        match self {
            Self::Behind(b) => b.code(),
            Self::DatabaseUnreachable => Some(db::UNREACHABLE_CODE),
        }
    }
    fn headers(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::Behind(b) => b.headers(),
            Self::DatabaseUnreachable => {
                vec![("retry-after", db::UNREACHABLE_RETRY_AFTER_SECS.to_string())]
            }
        }
    }
}

/// What brings the schema up to date, as every schema-behind message says it.
pub const REMEDY: &str = "run the migrate function (sam deploy runs it; by hand: aws lambda \
                          invoke with {\"action\":\"migrate\"}) or `syncplane migrate`";

/// The newest migration version embedded in this build.
pub fn build_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Compare the database with the embedded migrations. `Ok(None)`: current (or ahead: a newer
/// deployment migrated first; migrations are additive). A database error is returned as is:
/// the handler then meets it and answers as it always does.
pub async fn behind(pool: &PgPool) -> Result<Option<SchemaBehind>, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    behind_on(&mut conn).await
}

/// [`behind`] on one connection.
pub async fn behind_on(conn: &mut PgConnection) -> Result<Option<SchemaBehind>, sqlx::Error> {
    let (database, missing) = versions_on(conn).await?;
    Ok(missing.then(|| SchemaBehind {
        database,
        build: build_version(),
    }))
}

/// The newest version applied in the database (0: none), and whether any migration of this build
/// is missing from it.
pub async fn versions(pool: &PgPool) -> Result<(i64, bool), sqlx::Error> {
    let mut conn = pool.acquire().await?;
    versions_on(&mut conn).await
}

async fn versions_on(conn: &mut PgConnection) -> Result<(i64, bool), sqlx::Error> {
    let applied = applied_versions(conn).await?;
    let missing = MIGRATOR.iter().any(|m| !applied.contains(&m.version));
    Ok((applied.last().copied().unwrap_or(0), missing))
}

/// One per execution environment (and per database it guards).
pub struct SchemaGuard {
    current: AtomicBool,
    logged: AtomicBool,
    last_behind: Mutex<Option<(Instant, SchemaBehind)>>,
    recheck: Duration,
}

impl Default for SchemaGuard {
    fn default() -> Self {
        Self::with_recheck(DEFAULT_RECHECK)
    }
}

impl SchemaGuard {
    pub fn with_recheck(recheck: Duration) -> Self {
        Self {
            current: AtomicBool::new(false),
            logged: AtomicBool::new(false),
            last_behind: Mutex::new(None),
            recheck,
        }
    }

    /// `Err` while the schema is behind the build, or when the database does not answer the
    /// check; cheap once the schema has been found current (a later outage is then met, and
    /// answered the same way, by the handler's own query).
    pub async fn check(&self, pool: &PgPool) -> Result<(), Refusal> {
        let unreachable = AtomicBool::new(false);
        let outcome = self
            .look(|| async {
                let found = behind(pool).await;
                if let Err(e) = &found
                    && db::is_unreachable(e)
                {
                    tracing::warn!(error = %e, "schema check: the database does not answer; answering 503 database_unreachable");
                    unreachable.store(true, Ordering::Relaxed);
                }
                found
            })
            .await;
        if unreachable.load(Ordering::Relaxed) {
            return Err(Refusal::DatabaseUnreachable);
        }
        if let Err(b) = &outcome
            && !self.logged.swap(true, Ordering::Relaxed)
        {
            tracing::error!(
                database_version = b.database,
                build_version = b.build,
                "database schema is behind this build: {REMEDY}; answering 503 schema_behind \
                 until then"
            );
        }
        outcome.map_err(Refusal::Behind)
    }

    /// The check without the HTTP functions' log line (the caller says what it does instead):
    /// `look` compares the database with the build, and is only called when needed (never once
    /// the schema was found current, nor within `recheck` of finding it behind). A database
    /// error counts as current for now: the caller then meets it and reports it as it does.
    pub async fn look<F, Fut>(&self, look: F) -> Result<(), SchemaBehind>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Option<SchemaBehind>, sqlx::Error>>,
    {
        if self.current.load(Ordering::Relaxed) {
            return Ok(());
        }
        if let Some(recent) = self.recent_behind() {
            return Err(recent);
        }
        match look().await {
            Ok(None) => {
                self.current.store(true, Ordering::Relaxed);
                Ok(())
            }
            Ok(Some(b)) => {
                if let Ok(mut last) = self.last_behind.lock() {
                    *last = Some((Instant::now(), b.clone()));
                }
                Err(b)
            }
            // Unknown: let the request through; its handler reports the database failure.
            Err(_) => Ok(()),
        }
    }

    fn recent_behind(&self) -> Option<SchemaBehind> {
        let last = self.last_behind.lock().ok()?;
        let (at, b) = last.as_ref()?;
        (at.elapsed() < self.recheck).then(|| b.clone())
    }
}
