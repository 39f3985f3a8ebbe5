//! The Lambda functions: the HTTP handlers (webhook, sync API) called with real lambda_http
//! requests built from API Gateway v2 events, the worker and tick handlers, and the SQS adapter
//! against the emulator; real Postgres and the fake GitHub throughout.

mod events;
mod serve;
mod serve_lifecycle;
mod sqs;
pub mod support;
mod sync_api;
mod tick;
mod webhook;
mod worker;
