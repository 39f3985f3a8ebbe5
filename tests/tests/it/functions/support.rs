//! A world (database + fake GitHub) as the state an HTTP function builds at start, and requests
//! as API Gateway (HTTP API, payload v2) hands them to the function.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};
use shared::app::AppState;
use shared::config::{GithubAppConfig, Secret, SyncConfig, TenantConfig, TenantId};
use shared::jobs::Tenants;
use shared::jobs::adapter::JobsAdapter;
use shared::sync::workspace::RunOptions;

use crate::engine::World;

/// The secret and token the events/ files are made with (documented test values).
pub const SECRET: &str = "events-secret";
pub const TOKEN: &str = "events-token";

/// One tenant's configuration over the world's database and fake GitHub.
pub fn tenant(
    w: &World,
    id: &str,
    secrets: &[&str],
    installation: u64,
    sync: SyncConfig,
) -> TenantConfig {
    TenantConfig {
        id: TenantId::parse(id).unwrap(),
        database_url: w.db.url(),
        github: Some(GithubAppConfig {
            api_url: w.gh.url().parse().unwrap(),
            app_id: w.gh.app_id(),
            private_key_pem: Secret::new(w.gh.private_key_pem()),
            installation_id: installation,
            rate_limit_wait_budget_secs: 0,
        }),
        webhook_secrets: secrets.iter().map(|s| Secret::new(*s)).collect(),
        sync_api_token: Some(Secret::new(TOKEN)),
        sync,
    }
}

/// The state of a function with these tenants (the first is the default), inline jobs, and
/// short waits for tests. Every tenant uses the world's client.
pub fn state_of(w: &World, tenants: Vec<TenantConfig>) -> AppState {
    let default_tenant = tenants[0].id.clone();
    let parts = tenants
        .into_iter()
        .map(|t| (t, w.db.pool.clone(), Some(w.client.clone())))
        .collect();
    let tenants = Arc::new(Tenants::from_parts(
        parts,
        RunOptions {
            no_row_retry_first: Duration::from_millis(20),
            reaper_grace: Duration::from_millis(0),
            ..RunOptions::default()
        },
    ));
    AppState {
        jobs: JobsAdapter::Inline(tenants.clone()),
        tenants,
        default_tenant,
    }
}

/// The usual state: tenant "default" with [`SECRET`], [`TOKEN`] and the world's installation.
pub fn state(w: &World) -> AppState {
    state_of(
        w,
        vec![tenant(
            w,
            "default",
            &[SECRET],
            w.installation,
            w.config.clone(),
        )],
    )
}

/// A request as API Gateway v2 delivers it, the body base64-encoded (`isBase64Encoded: true`).
pub fn apigw(
    method: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Request {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let mut h = serde_json::Map::new();
    for (k, v) in headers {
        h.insert(k.to_ascii_lowercase(), json!(v));
    }
    let mut event = json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": h,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api",
            "domainName": "api.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "api",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "192.0.2.1", "userAgent": "test"},
            "requestId": "req",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Jan/2026:00:00:00 +0000",
            "timeEpoch": 1767225600000u64
        },
        "isBase64Encoded": true
    });
    if let Some(body) = body {
        event["body"] = json!(base64::engine::general_purpose::STANDARD.encode(body));
    }
    from_event(event)
}

pub fn from_event(event: Value) -> Request {
    let lambda: LambdaRequest = serde_json::from_value(event).expect("API Gateway v2 event");
    lambda.into()
}

pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: http::HeaderMap,
}

impl Reply {
    pub fn code(&self) -> Option<&str> {
        self.body["error"]["code"].as_str()
    }
    pub fn data(&self) -> &Value {
        &self.body["data"]
    }
}

pub fn reply(resp: Response<Body>) -> Reply {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes: &[u8] = match resp.body() {
        Body::Text(s) => s.as_bytes(),
        Body::Binary(b) => b,
        _ => b"",
    };
    let body = serde_json::from_slice(bytes).expect("every answer is a JSON envelope");
    Reply {
        status,
        body,
        headers,
    }
}

pub async fn count(w: &World, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(&w.db.pool).await.unwrap()
}
