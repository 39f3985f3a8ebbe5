//! `GET /api/openapi.json`: the OpenAPI 3.1 document of every HTTP route of every function (sync
//! API, read API, webhook, ingest). It is the file `openapi.json` at the repository root, built in,
//! so the served contract and the reviewed one cannot drift. It is served as the document itself
//! (tools read it directly), not inside the envelope, and needs no token: it holds no data.

use http::StatusCode;
use lambda_http::{Body, Request, Response};

use super::error::ApiError;
use syncplane_core::http::{error_response, route_path};

pub(crate) const OPENAPI_PATH: &str = "/api/openapi.json";

/// The document, byte for byte as committed.
pub const DOCUMENT: &str = include_str!("../../../openapi.json");

/// The answer when `req` is for the document (405 for a method other than GET), else `None`.
pub fn serve(req: &Request) -> Option<Response<Body>> {
    if route_path(req) != OPENAPI_PATH {
        return None;
    }
    if req.method() != http::Method::GET {
        let e = ApiError::MethodNotAllowed { allow: "GET" };
        return Some(error_response(&e));
    }
    let response = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .header("cache-control", "public, max-age=300")
        .body(Body::Text(DOCUMENT.to_owned()))
        .unwrap_or_else(|_| Response::new(Body::Empty));
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi_3_1_json() {
        let doc: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        assert!(doc["paths"][OPENAPI_PATH]["get"].is_object());
    }
}
