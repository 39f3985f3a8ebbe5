//! Requests as API Gateway (HTTP API, payload v2) hands them to a function: a real event JSON,
//! its body as text or base64 by the request's content type as a deployed HTTP API chooses,
//! deserialized through lambda_http's own request type. And the answer read back: status,
//! headers and the JSON envelope.

use base64::Engine;
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};

/// An API Gateway v2 request for `method` and `path_and_query`, with `headers` (names lowercased,
/// as API Gateway delivers them) and an optional body, delivered as [`event`] says.
pub fn request(
    method: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Request {
    from_event(event(method, path_and_query, headers, body))
}

pub use syncplane_cli::serve::gateway::delivered_as_text;

/// The API Gateway v2 event JSON behind [`request`] (what the Lambda runtime hands a function).
/// A body of a text type arrives as a JSON string (`isBase64Encoded: false`): bytes that are not
/// UTF-8 are, at best, replaced, as a JSON string cannot hold them. Any other body arrives base64.
pub fn event(
    method: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Value {
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
        "isBase64Encoded": false
    });
    if let Some(body) = body {
        let content_type = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| *v);
        if delivered_as_text(content_type) {
            event["body"] = json!(String::from_utf8_lossy(body));
        } else {
            event["body"] = json!(base64::engine::general_purpose::STANDARD.encode(body));
            event["isBase64Encoded"] = json!(true);
        }
    }
    event
}

/// A request from a whole API Gateway v2 event (e.g. a file of `events/`).
pub fn from_event(event: Value) -> Request {
    let lambda: LambdaRequest = serde_json::from_value(event).expect("an API Gateway v2 event");
    lambda.into()
}

/// A function's answer: status, headers and the JSON envelope body.
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: http::HeaderMap,
}

impl Reply {
    /// The failure envelope's `error.code`, when there is one.
    pub fn code(&self) -> Option<&str> {
        self.body["error"]["code"].as_str()
    }
    /// The success envelope's `data`.
    pub fn data(&self) -> &Value {
        &self.body["data"]
    }
}

/// Read the answer to `method path_and_query` and check it against the OpenAPI document: every
/// answer a test reads this way must validate against its route's schema for its status.
pub fn checked_reply(method: &str, path_and_query: &str, resp: Response<Body>) -> Reply {
    let r = reply(resp);
    let path = path_and_query.split('?').next().unwrap_or(path_and_query);
    crate::openapi::check_response(method, path, r.status, &r.body);
    r
}

/// Read a response; every answer of the HTTP functions is a JSON envelope.
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
