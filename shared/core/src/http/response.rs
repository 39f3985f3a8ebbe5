//! From a result to a response, written once for every surface: success is the envelope's
//! `data` with the status the handler chose; failure is the envelope's error with the status,
//! stable code and headers the error type gives ([`HttpError`]). The message is the error's
//! fixed text: internal detail goes to the logs, never into a response.

use http::StatusCode;
use lambda_http::{Body, Response};
use serde::Serialize;
use serde_json::Value;

use super::envelope;

/// An error a surface answers with: each variant has its status and stable code.
pub trait HttpError: std::fmt::Display {
    fn status(&self) -> StatusCode;
    /// The stable code; `None` where the contract says a status carries none.
    fn code(&self) -> Option<&'static str>;
    /// Headers the answer carries besides the content type (`allow`, `retry-after`).
    fn headers(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// What the failure envelope carries beside `error`, where the contract gives a refusal data
    /// of its own (the transcript lane's `409 offset_mismatch` answers the file's state).
    fn data(&self) -> Option<Value> {
        None
    }
}

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

/// The failure envelope with the status, code and headers of `e`.
pub fn error_response<E: HttpError + ?Sized>(e: &E) -> Response<Body> {
    let headers = e.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let mut body = envelope::failure(&e.to_string(), e.code());
    if let Some(data) = e.data() {
        body["data"] = data;
    }
    respond(e.status(), &body, &headers)
}

/// A handler's result as the response: `(status, data)` in the success envelope, or the error's.
pub fn result_response<T: Serialize, E: HttpError>(
    result: &Result<(StatusCode, T), E>,
) -> Response<Body> {
    match result {
        Ok((status, data)) => respond(*status, &envelope::success(data), &[]),
        Err(e) => error_response(e),
    }
}
