//! Agent session ingest (contracts/agent-session-sync-v2.md), through the handler exactly as
//! API Gateway delivers requests, against real Postgres.

mod access;
mod bounds;
mod chunks;
mod gateway;
mod schema;
mod semantics;
pub mod support;
