//! The export routes (`shared::ingest::export`), streamed: where the deployed ingest function,
//! behind API Gateway, sends an export to the bucket and answers with a link to it, the local
//! server sends it to the client as it is written, in chunks, whatever its size. Every refusal
//! (the read token, a parameter, a session of another org) is answered before the first byte,
//! as the function answers it; a failure after it ends the body early (the client sees a
//! truncated chunked body, never a complete-looking one) and goes to the log.

use axum::body::Body;
use http::request::Parts;
use shared::ingest::export::{self, Plan};

use super::{Functions, gateway, routes};

impl Functions {
    /// The streamed answer to `parts` when it is an export request; `None` for any other path.
    pub async fn export(&self, parts: &Parts) -> Option<http::Response<Body>> {
        let (function, raw_path) = routes::resolve(parts.uri.path())?;
        if function != routes::Function::Ingest || !export::owns(raw_path) {
            return None;
        }
        let event = gateway::event(
            &parts.method,
            raw_path,
            parts.uri.query(),
            &parts.headers,
            b"",
        );
        let req = gateway::to_lambda(event).ok()?;
        let state = &self.ingest;
        let refused = |resp| Some(gateway::from_lambda(resp).map(Body::from));
        if let Err(e) = self.schema[function as usize].check(&state.pool).await {
            return refused(shared::http::error_response(&e));
        }
        let per_minute = state.transcripts.export_rate_limit_per_minute;
        let plan = match Plan::from_request(&state.pool, &req, per_minute).await {
            Ok(plan) => plan,
            Err(e) => return refused(shared::http::error_response(&e)),
        };
        let disposition = format!("attachment; filename=\"{}\"", plan.filename());
        let content_type = plan.content_type();
        tracing::info!(path = raw_path, org = plan.org_id(), "export streaming");
        let rx = export::start(plan, state.pool.clone(), state.transcripts.store.clone());
        http::Response::builder()
            .status(http::StatusCode::OK)
            .header(http::header::CONTENT_TYPE, content_type)
            .header(http::header::CONTENT_DISPOSITION, disposition)
            .header(http::header::CACHE_CONTROL, "no-store")
            .body(Body::from_stream(export::stream(rx)))
            .ok()
    }
}
