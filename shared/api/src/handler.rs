//! The sync API's routes. Order of work: route (404/405), tenant, bearer token, then the work.
//!
//! Tenants: the API serves the default tenant (the first configured one); `?tenant=<id>` picks
//! another, authenticated with that tenant's own `syncApiToken` (or, on GET routes, its read-only
//! `readToken`). `GET /api/openapi.json` and `GET /api/health` are the routes without tenant or
//! token: the contract holds no data, the health report no secret; nor do the web console's
//! files (`GET /`, `/console/app.js`, `/console/app.css`: `crate::console`), which hold none and
//! ask for the token in the page. `GET /api/whoami` says which token the caller holds (the
//! console shows the sync button only for the write token).

use http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};

use super::auth::Access;
use super::error::{ApiError, db_failure};

use super::read::route::{ReadRoute, match_read};
use super::{auth, health, openapi, read, sync};
use crate::console;
use syncplane_core::config::{TenantConfig, TenantId};
use syncplane_core::http::{body_bytes, error_response, result_response, route_path};
use syncplane_core::schema::SchemaGuard;
use syncplane_jobs::app::AppState;
use syncplane_worker::TenantWorkspace;

pub const SYNC_PATH: &str = "/api/sync";
pub(crate) const REPOS_PATH: &str = "/api/repos";
pub(crate) const RUNS_PATH: &str = "/api/sync/runs";
pub(crate) const WHOAMI_PATH: &str = "/api/whoami";

/// What the function serves: the health route before the schema check (it reports the schema
/// itself, and must answer while it is behind), everything else behind it (503 `schema_behind`,
/// or 503 `database_unreachable` while the database does not answer).
pub async fn serve(state: &AppState, schema: &SchemaGuard, req: Request) -> Response<Body> {
    if let Some(pool) = state.default_pool()
        && !health::is_health(&req)
        && console::asset(route_path(&req)).is_none()
        && let Err(refused) = schema.check(pool).await
    {
        return error_response(&refused);
    }
    handle(state, req).await
}

/// Answer one request; never fails (every error is an enveloped response).
pub async fn handle(state: &AppState, req: Request) -> Response<Body> {
    if let Some(asset) = console::asset(route_path(&req)) {
        return match *req.method() {
            Method::GET => console::response(asset, false),
            Method::HEAD => console::response(asset, true),
            _ => error_response(&ApiError::MethodNotAllowed { allow: "GET, HEAD" }),
        };
    }
    if let Some(document) = openapi::serve(&req) {
        return document;
    }
    if health::is_health(&req) {
        return health::serve(&req, state.default_pool()).await;
    }
    let result = route(state, &req).await;
    match &result {
        Ok(answer) => tracing::info!(
            path = req.uri().path(),
            status = answer.status().as_u16(),
            "sync API ok"
        ),
        Err(e) => tracing::info!(
            path = req.uri().path(),
            status = e.status().as_u16(),
            code = e.code(),
            "sync API refused"
        ),
    }
    match result {
        Ok(Answer::Json(status, data)) => result_response::<_, ApiError>(&Ok((status, data))),
        Ok(Answer::Image(image)) => image_response(&image, &req),
        Err(e) => error_response(&e),
    }
}

/// What a route answers: JSON in the envelope, or an image's bytes.
enum Answer {
    Json(StatusCode, Value),
    Image(read::images::Image),
}

impl Answer {
    fn status(&self) -> StatusCode {
        match self {
            Self::Json(status, _) => *status,
            Self::Image(_) => StatusCode::OK,
        }
    }
}

/// An image's answer: its bytes and type, `nosniff`, a sandboxing CSP, its blob SHA as the ETag
/// (`304` without the bytes when the client holds them), revalidated on every use.
fn image_response(image: &read::images::Image, req: &Request) -> Response<Body> {
    let etag = format!("\"{}\"", image.blob_sha);
    let fresh = req
        .headers()
        .get(http::header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let builder = Response::builder()
        .status(if fresh {
            StatusCode::NOT_MODIFIED
        } else {
            StatusCode::OK
        })
        .header("content-type", image.content_type.as_str())
        .header("etag", etag.as_str())
        .header("cache-control", "private, no-cache")
        .header("x-content-type-options", "nosniff")
        .header("content-security-policy", read::images::IMAGE_CSP)
        .header("content-disposition", "inline");
    let body = if fresh {
        Body::Empty
    } else {
        Body::Binary(image.bytes.clone())
    };
    builder
        .body(body)
        .unwrap_or_else(|_| Response::new(Body::Empty))
}

enum Route {
    WhoAmI,
    Sync,
    Repos,
    Runs,
    Run(Option<i64>),
    Read(ReadRoute),
}

fn match_route(path: &str) -> Option<Route> {
    let path = path.strip_suffix('/').unwrap_or(path);
    match path {
        SYNC_PATH => Some(Route::Sync),
        WHOAMI_PATH => Some(Route::WhoAmI),
        REPOS_PATH => Some(Route::Repos),
        RUNS_PATH => Some(Route::Runs),
        _ if path.starts_with(RUNS_PATH) => {
            let id = path.strip_prefix(RUNS_PATH)?.strip_prefix('/')?;
            if id.is_empty() || id.contains('/') {
                return None;
            }
            // A malformed id names no run: 404 like an unknown one.
            Some(Route::Run(id.parse::<i64>().ok().filter(|i| *i > 0)))
        }
        _ => match_read(path).map(Route::Read),
    }
}

fn tenant<'s>(state: &'s AppState, req: &Request) -> Result<&'s TenantConfig, ApiError> {
    let named = syncplane_core::params::first(req.uri().query(), "tenant");
    let id = match named {
        None => state.default_tenant.clone(),
        Some(v) => TenantId::parse(&v).ok_or(ApiError::UnknownTenant)?,
    };
    state
        .tenants
        .config(id.as_str())
        .ok_or(ApiError::UnknownTenant)
}

async fn route(state: &AppState, req: &Request) -> Result<Answer, ApiError> {
    let route = match_route(route_path(req)).ok_or(ApiError::NotFound)?;
    let (allowed, allow) = match route {
        Route::Sync => (Method::POST, "POST"),
        _ => (Method::GET, "GET"),
    };
    if req.method() != allowed {
        return Err(ApiError::MethodNotAllowed { allow });
    }
    let tenant = tenant(state, req)?;
    let access = auth::authenticate_any(
        req.headers(),
        tenant.sync_api_token.as_ref(),
        tenant.read.token.as_ref(),
    )?;
    if matches!(route, Route::Sync) && access == Access::ReadOnly {
        return Err(ApiError::ReadOnlyToken);
    }
    let pool = state
        .tenants
        .pool(tenant.id.as_str())
        .ok_or(ApiError::UnknownTenant)?;
    match route {
        Route::WhoAmI => {
            let access = match access {
                Access::ReadOnly => "read",
                Access::Full => "write",
            };
            Ok(Answer::Json(
                StatusCode::OK,
                json!({ "access": access, "tenant": tenant.id.as_str() }),
            ))
        }
        Route::Sync => {
            let data = sync::post(state, tenant, body_bytes(req.body())).await?;
            Ok(Answer::Json(StatusCode::ACCEPTED, data))
        }
        Route::Repos => {
            let params = read::params::parse(req.uri().query(), &["limit", "cursor"])?;
            Ok(Answer::Json(
                StatusCode::OK,
                read::repos::list(pool, &params).await?,
            ))
        }
        Route::Read(ReadRoute::Images(r)) => {
            // The installation token, when the tenant has a GitHub App (a cached image needs none).
            let workspace = state.tenants.workspace(tenant.id.as_str()).ok();
            let client = workspace.as_ref().map(|w| &w.client);
            let image = read::route::image(pool, client, &r, req.uri().query()).await?;
            Ok(Answer::Image(image))
        }
        Route::Read(route) => {
            let data = read::route::serve(pool, tenant, route, req.uri().query()).await?;
            Ok(Answer::Json(StatusCode::OK, data))
        }
        Route::Runs => {
            let params = read::params::parse(req.uri().query(), &["repo"])?;
            let repo = params.one("repo")?;
            if let Some(r) = repo {
                read::params::repo_name(r)?;
            }
            let runs = read::runs(pool, repo)
                .await
                .map_err(db_failure("list runs"))?;
            Ok(Answer::Json(StatusCode::OK, json!({ "runs": runs })))
        }
        Route::Run(id) => {
            let id = id.ok_or(ApiError::RunNotFound)?;
            let run = read::run(pool, id)
                .await
                .map_err(db_failure("read run"))?
                .ok_or(ApiError::RunNotFound)?;
            Ok(Answer::Json(StatusCode::OK, json!(run)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert!(matches!(match_route("/api/sync"), Some(Route::Sync)));
        assert!(matches!(match_route("/api/whoami"), Some(Route::WhoAmI)));
        assert!(matches!(match_route("/api/repos/"), Some(Route::Repos)));
        assert!(matches!(match_route("/api/sync/runs"), Some(Route::Runs)));
        assert!(matches!(
            match_route("/api/sync/runs/12"),
            Some(Route::Run(Some(12)))
        ));
        assert!(matches!(
            match_route("/api/sync/runs/x"),
            Some(Route::Run(None))
        ));
        assert!(match_route("/api/sync/runs/1/2").is_none());
        assert!(match_route("/api/other").is_none());
    }
}
