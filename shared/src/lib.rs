//! syncplane's library: every rule of the specification lives here, so the Lambda functions, the
//! `syncplane` CLI and the tests all reach the same code.

pub mod api;
pub mod app;
pub mod archive;
pub mod config;
pub mod console;
pub mod db;
pub mod github;
pub mod http;
pub mod ingest;
pub mod jobs;
pub mod limits;
pub mod metrics;
pub mod scheduler;
pub mod schema;
pub mod start;
pub mod status;
pub mod sync;
pub mod telemetry;
pub mod tenants;
#[cfg(test)]
mod testing;
pub mod webhook;
pub mod worker;
