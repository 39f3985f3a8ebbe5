//! The cloud side of the desktop clients' agent session sync, metadata lane, schema version 2
//! (`contracts/agent-session-sync-v2.md`): the ingest endpoint, the provisioning of who may use
//! it, and [`listing`], what was ingested (`syncplane ingest sessions`). The wire contract's
//! numbers, codes and names are the `syncplane_contract` crate's, shared with the desktop client.
//!
//! A POST runs the contract's steps in order, cheapest and most abusable first, once
//! [`admission`] gives it a slot: [`auth`] → [`decode`] (+ [`strict_json`]) → ownership → [`rate_limit`] → [`batch`] (schema
//! parse) → org sync policy → feature gate → [`sanitize`] + [`upsert`]. [`handler`] wires them.
//! [`provision`] creates who may sync; [`admin`] is the migrate function's `provision` action,
//! which does it from inside the VPC.

pub mod admin;
pub mod admission;
pub mod auth;
pub mod batch;
pub mod decode;
pub mod error;
pub mod event_rows;
pub mod handler;
pub mod listing;
pub mod provision;
pub mod rate_limit;
pub mod sanitize;
pub mod strict_json;
pub mod transcripts;
pub mod upsert;
pub mod web;

#[cfg(test)]
mod properties;

pub use admission::Admission;
pub use auth::FEATURE_FLAG;
pub use error::IngestError;
pub use handler::{IngestState, handle, serve};

// The wire contract's numbers live in the contract crate (their one home); re-exported here for
// the handler, the parsers and the tests that bound bodies by them.
pub use syncplane_contract::{
    MAX_DECODED_BYTES, MAX_SESSIONS_PER_BATCH, MAX_WIRE_BYTES, SCHEMA_VERSION,
};
