//! `GET /api/health` on sync-api (issue 13 §5): the build's version, the schema version (the
//! newest migration applied in the database against the newest this build embeds) and whether
//! the database answers.
//!
//! For load balancers and uptime checks, so it needs no token and names no tenant: it looks at
//! the default tenant's database (the one the schema check guards) and says nothing a caller
//! could not learn from the OpenAPI document, never a host, a connection error or a secret (the
//! cause goes to the log). 200 when the database answers and its schema is current (or ahead:
//! migrations are additive); 503 `database_unreachable` or `schema_behind` otherwise, with the
//! same report beside the error. It is served before the schema check, so it answers while the
//! schema is behind. The database gets [`CHECK_TIMEOUT`], the pool's acquire timeout, so a
//! health check fails fast instead of hanging, and as fast as every other route then answers
//! 503 `database_unreachable` (`db::is_unreachable`).

use std::time::Duration;

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use serde_json::json;
use sqlx::PgPool;

use super::error::ApiError;
use syncplane_core::http::envelope;
use syncplane_core::http::{error_response, respond, route_path};
use syncplane_core::schema::check;

pub(crate) const HEALTH_PATH: &str = "/api/health";

/// How long the database may take to answer a health check.
pub const CHECK_TIMEOUT: Duration = syncplane_core::db::ACQUIRE_TIMEOUT;

/// The report, in both the 200 and the 503 answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// The build (`CARGO_PKG_VERSION`).
    pub version: &'static str,
    pub database_reachable: bool,
    pub schema: SchemaVersion,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaVersion {
    /// Newest migration applied in the database (null when it could not be read; 0: none).
    pub database: Option<i64>,
    /// Newest migration this build embeds.
    pub build: i64,
    /// Every migration of the build is applied.
    pub current: bool,
}

/// Whether `req` is for the health route (the function serves it before the schema check).
pub(crate) fn is_health(req: &Request) -> bool {
    let path = route_path(req);
    path.strip_suffix('/').unwrap_or(path) == HEALTH_PATH
}

/// Look at the database, within [`CHECK_TIMEOUT`].
pub async fn check(pool: Option<&PgPool>) -> Health {
    let build = check::build_version();
    let found = match pool {
        Some(pool) => tokio::time::timeout(CHECK_TIMEOUT, check::versions(pool)).await,
        None => Ok(Err(sqlx::Error::PoolClosed)),
    };
    let (reachable, database, current) = match found {
        Ok(Ok((newest, missing))) => (true, Some(newest), !missing),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "health: database unreachable");
            (false, None, false)
        }
        Err(_) => {
            tracing::warn!(
                timeout_ms = CHECK_TIMEOUT.as_millis() as u64,
                "health: database did not answer in time"
            );
            (false, None, false)
        }
    };
    Health {
        version: env!("CARGO_PKG_VERSION"),
        database_reachable: reachable,
        schema: SchemaVersion {
            database,
            build,
            current,
        },
    }
}

/// The answer to `GET /api/health` (405 for another method).
pub async fn serve(req: &Request, pool: Option<&PgPool>) -> Response<Body> {
    if req.method() != http::Method::GET {
        let e = ApiError::MethodNotAllowed { allow: "GET" };
        return error_response(&e);
    }
    answer(&check(pool).await)
}

/// 200 with the report, or 503 with a code and the report beside the error.
pub fn answer(health: &Health) -> Response<Body> {
    let no_store = [("cache-control", "no-store")];
    let failure = if !health.database_reachable {
        Some((
            "the database does not answer",
            syncplane_core::db::UNREACHABLE_CODE,
        ))
    } else if !health.schema.current {
        Some((
            "the database schema is behind this deployment; migrations have not run yet",
            "schema_behind",
        ))
    } else {
        None
    };
    match failure {
        None => respond(StatusCode::OK, &envelope::success(health), &no_store),
        Some((message, code)) => {
            let mut body = envelope::failure(message, Some(code));
            body["data"] = json!(health);
            respond(StatusCode::SERVICE_UNAVAILABLE, &body, &no_store)
        }
    }
}
