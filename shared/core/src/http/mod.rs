//! The HTTP layer no surface owns (docs/design.md "Shape"): the one body shape every endpoint
//! answers with ([`envelope`]), reading a request as API Gateway hands it over ([`request`]), and
//! turning a surface's result into a response ([`response`]: each surface's error type implements
//! [`HttpError`], its status, stable code and headers, once). The surfaces (`api`, `webhook`,
//! `ingest`) and the schema check sit above it; it imports none of them.

pub mod envelope;
pub mod request;
pub mod response;

pub use request::{FORWARDED_PREFIX, bearer_token, body_bytes, header, route_path};
pub use response::{HttpError, error_response, respond, result_response};
