//! Reading a request as API Gateway hands it over: the route path without the stage, the body
//! bytes, a header, the bearer token.

use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt};

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

/// The path prefix a local server (`syncplane serve`) removed before the function saw the
/// request (`/lambda-url/ingest`), so a URL the function answers with can keep it.
pub const FORWARDED_PREFIX: &str = "x-forwarded-prefix";

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
