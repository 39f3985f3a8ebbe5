//! The cloud side of the desktop clients' agent session sync, metadata lane, schema version 2
//! (`contracts/agent-session-sync-v2.md`): the ingest endpoint and the provisioning of who may
//! use it.
//!
//! A POST runs the contract's steps in order, cheapest and most abusable first, once
//! [`admission`] gives it a slot: [`auth`] → [`decode`] (+ [`strict_json`]) → ownership → [`rate_limit`] → [`batch`] (schema
//! parse) → org sync policy → feature gate → [`sanitize`] + [`upsert`]. [`handler`] wires them.

pub mod admission;
pub mod auth;
pub mod batch;
pub mod decode;
pub mod error;
pub mod event_rows;
pub mod handler;
pub mod provision;
pub mod rate_limit;
pub mod sanitize;
pub mod strict_json;
pub mod upsert;

#[cfg(test)]
mod properties;

pub use admission::Admission;
pub use error::IngestError;
pub use handler::{IngestState, handle, serve};

/// The pinned schema version (contract "Envelope").
pub const SCHEMA_VERSION: u64 = 2;
/// At most this many sessions in one batch.
pub const MAX_SESSIONS_PER_BATCH: usize = 200;
/// Bytes the client may send (compressed or not).
pub const MAX_WIRE_BYTES: usize = 262_144;
/// Bytes a body may inflate to.
pub const MAX_DECODED_BYTES: usize = 4_194_304;
/// The global feature flag of the capability (table `feature_flags`).
pub const FEATURE_FLAG: &str = "agent_session_sync";
