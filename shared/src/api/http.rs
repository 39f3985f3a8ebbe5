//! Small HTTP helpers shared by the HTTP handlers (webhook, sync API, ingest).

use http::StatusCode;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::Value;

/// A JSON response with extra headers. Building it cannot fail with these inputs; an empty
/// response is the fallback rather than a panic.
pub fn respond(status: StatusCode, body: &Value, headers: &[(&str, &str)]) -> Response<Body> {
    let mut builder = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Body::Text(body.to_string()))
        .unwrap_or_else(|_| Response::new(Body::Empty))
}

/// The route path: API Gateway puts a named stage in front of it (`/prod/api/...`).
pub fn route_path(req: &Request) -> &str {
    let path = req.uri().path();
    if let Some(RequestContext::ApiGatewayV2(ctx)) = req.request_context_ref()
        && let Some(stage) = ctx.stage.as_deref()
        && stage != "$default"
        && let Some(rest) = path.strip_prefix('/').and_then(|p| p.strip_prefix(stage))
        && rest.starts_with('/')
    {
        return rest;
    }
    path
}

/// The body bytes as the client sent them (lambda_http has already undone API Gateway's base64).
pub fn body_bytes(body: &Body) -> &[u8] {
    match body {
        Body::Text(s) => s.as_bytes(),
        Body::Binary(b) => b,
        _ => &[],
    }
}

/// A header's value as text, if present and valid.
pub fn header<'r>(req: &'r Request, name: &str) -> Option<&'r str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The token from `Authorization: Bearer <token>` (scheme case-insensitive; empty is none).
pub fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(char::is_whitespace)?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}
