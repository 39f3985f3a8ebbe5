//! An HTTP request as API Gateway (HTTP API, payload format 2.0) hands it to a function, and the
//! function's answer back to HTTP (issue 13 point 7).
//!
//! The request becomes the event JSON a deployed function receives and goes through lambda_http's
//! own deserialization (`LambdaRequest`), so the handlers see what they see in Lambda. The body
//! follows API Gateway's rule: a text content type (`text/*`, `application/json`,
//! `application/xml`, `application/javascript`) travels as a string, anything else base64 with
//! `isBase64Encoded: true`. Unlike API Gateway (docs/local.md "Request bodies through API
//! Gateway"), a text-typed body that is not UTF-8, such as the desktop client's gzip batch labelled
//! `application/json`, is sent base64 too: the bytes reach the handler exactly as the client
//! sent them.

use base64::Engine;
use http::{HeaderMap, Method, StatusCode};
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Request, Response};
use serde_json::{Map, Value, json};

/// API Gateway's request payload limit; the handlers' own caps (ingest: 256 KiB on the wire)
/// apply below it.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// Content types API Gateway HTTP APIs deliver as text (everything else is base64).
fn is_text_type(headers: &HeaderMap) -> bool {
    delivered_as_text(
        headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    )
}

/// Whether a deployed HTTP API hands a body of this `Content-Type` to the function as text:
/// `text/*`, `application/json`, `application/xml` and `application/javascript` (parameters
/// ignored); any other type, and no type, arrive base64 (docs/local.md "Request bodies through API
/// Gateway"). The tests build their API Gateway events by the same rule.
pub fn delivered_as_text(content_type: Option<&str>) -> bool {
    let Some(value) = content_type else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence.starts_with("text/")
        || matches!(
            essence.as_str(),
            "application/json" | "application/xml" | "application/javascript"
        )
}

/// The API Gateway v2 event for one request. `raw_path` is the route path the function sees (the
/// local prefix already removed); header names are lowercased and repeated headers joined with
/// commas, as API Gateway does; cookies go to `cookies`.
pub fn event(
    method: &Method,
    raw_path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
) -> Value {
    let mut h = Map::new();
    let mut cookies = Vec::new();
    for name in headers.keys() {
        let values: Vec<&str> = headers
            .get_all(name)
            .iter()
            // A value that is not text cannot be carried in the event; API Gateway drops it too.
            .filter_map(|v| v.to_str().ok())
            .collect();
        if values.is_empty() {
            continue;
        }
        if name == http::header::COOKIE {
            cookies.extend(
                values
                    .iter()
                    .flat_map(|v| v.split(';'))
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned),
            );
            continue;
        }
        h.insert(name.as_str().to_owned(), json!(values.join(",")));
    }
    let user_agent = h.get("user-agent").cloned().unwrap_or(json!(""));
    let mut event = json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": query.unwrap_or(""),
        "headers": h,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": "127.0.0.1",
            "domainPrefix": "local",
            "http": {"method": method.as_str(), "path": raw_path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": user_agent},
            "requestId": uuid::Uuid::new_v4().to_string(),
            "routeKey": "$default",
            "stage": "$default",
            "time": chrono::Utc::now().format("%d/%b/%Y:%H:%M:%S %z").to_string(),
            "timeEpoch": chrono::Utc::now().timestamp_millis()
        },
        "isBase64Encoded": false
    });
    if !cookies.is_empty() {
        event["cookies"] = json!(cookies);
    }
    if !body.is_empty() {
        let text_type = is_text_type(headers);
        match std::str::from_utf8(body) {
            Ok(text) if text_type => event["body"] = json!(text),
            _ => {
                if text_type {
                    warn_text_typed_binary();
                }
                event["body"] = json!(base64::engine::general_purpose::STANDARD.encode(body));
                event["isBase64Encoded"] = json!(true);
            }
        }
    }
    event
}

/// Said once per process: the local run takes such a body, a deployment may not, and a client
/// tested only locally would not find out until it is deployed.
fn warn_text_typed_binary() {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            "a request labelled as text (e.g. application/json) carried a body that is not UTF-8 \
             (gzip?): served here, but a deployed API Gateway HTTP API hands such a body over as \
             text and it may not arrive intact; label binary bodies application/octet-stream"
        );
    });
}

/// The request a function receives for `event`: the Lambda runtime's own deserialization.
pub fn to_lambda(event: Value) -> Result<Request, serde_json::Error> {
    let lambda: LambdaRequest = serde_json::from_value(event)?;
    Ok(lambda.into())
}

/// A function's answer as an HTTP response (status, headers, body bytes).
pub fn from_lambda(resp: Response<Body>) -> http::Response<Vec<u8>> {
    let (parts, body) = resp.into_parts();
    let bytes = match body {
        Body::Text(s) => s.into_bytes(),
        Body::Binary(b) => b,
        _ => Vec::new(),
    };
    http::Response::from_parts(parts, bytes)
}

/// A JSON envelope answer of the local server itself (unknown function, body too large).
pub fn refusal(status: StatusCode, code: &str, message: &str) -> Response<Body> {
    shared::http::respond(
        status,
        &shared::http::envelope::failure(message, Some(code)),
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn body_of(req: &Request) -> Vec<u8> {
        shared::http::body_bytes(req.body()).to_vec()
    }

    #[test]
    fn a_gzip_body_labelled_json_reaches_the_handler_byte_for_byte() {
        let gzip = [0x1f, 0x8b, 0x08, 0x00, 0xff, 0xfe, 0x00, 0x01];
        let h = headers(&[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ]);
        let e = event(&Method::POST, "/api/agent-sessions/sync", None, &h, &gzip);
        assert_eq!(e["isBase64Encoded"], true);
        let req = to_lambda(e).unwrap();
        assert_eq!(body_of(&req), gzip);
        assert_eq!(req.headers()["content-encoding"], "gzip");
    }

    #[test]
    fn text_bodies_travel_as_text_and_binary_types_as_base64_like_api_gateway() {
        let json_body = br#"{"repository": "acme/handbook"}"#;
        let h = headers(&[("content-type", "application/json; charset=utf-8")]);
        let e = event(&Method::POST, "/api/sync", None, &h, json_body);
        assert_eq!(e["isBase64Encoded"], false);
        assert_eq!(e["body"], r#"{"repository": "acme/handbook"}"#);
        assert_eq!(body_of(&to_lambda(e).unwrap()), json_body);

        // No content type, or a binary one: base64, as API Gateway does.
        for h in [
            headers(&[]),
            headers(&[("content-type", "application/octet-stream")]),
        ] {
            let e = event(&Method::POST, "/api/sync", None, &h, b"{}");
            assert_eq!(e["isBase64Encoded"], true);
            assert_eq!(body_of(&to_lambda(e).unwrap()), b"{}");
        }
    }

    #[test]
    fn path_query_repeated_headers_and_cookies_follow_payload_2_0() {
        let h = headers(&[
            ("x-multi", "a"),
            ("x-multi", "b"),
            ("cookie", "a=1; b=2"),
            ("authorization", "Bearer demo-sync-token"),
        ]);
        let e = event(
            &Method::GET,
            "/api/search",
            Some("q=intro&limit=5"),
            &h,
            b"",
        );
        assert_eq!(e["headers"]["x-multi"], "a,b");
        assert_eq!(e["cookies"], json!(["a=1", "b=2"]));
        assert!(e.get("body").is_none());
        let req = to_lambda(e).unwrap();
        assert_eq!(req.method(), Method::GET);
        assert_eq!(req.uri().path(), "/api/search");
        assert_eq!(req.uri().query(), Some("q=intro&limit=5"));
        assert_eq!(req.headers()["authorization"], "Bearer demo-sync-token");
        assert_eq!(req.headers()["cookie"], "a=1; b=2");
    }
}
