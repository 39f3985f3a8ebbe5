//! The ingest function: the cloud side of the desktop clients' session sync, in two lanes that
//! share nothing but the device token and the envelope, and the archive's read routes.
//!
//! - The metadata lane, schema version 2 (`contracts/agent-session-sync-v2.md`): a POST runs the
//!   contract's steps in order, cheapest and most abusable first, once [`admission`] gives it a
//!   slot: authentication (`syncplane_accounts::tokens`) → [`decode`] (+ [`strict_json`]) →
//!   ownership → [`rate_limit`] → [`batch`] (schema parse) → org sync policy → feature gate →
//!   [`sanitize`] + [`upsert`]. [`handler`] wires them; [`listing`] is what was ingested
//!   (`syncplane ingest sessions`), [`web`] the console's session routes.
//! - The transcript lane ([`transcripts`], docs/transcript-wire-contract.md), its read routes
//!   included.
//!
//! [`router`] sends each request to its lane. The wire contract's numbers, codes and names are
//! the `syncplane_contract` crate's, shared with the desktop client.
//!
//! Uses the floor (`syncplane_core`), accounts (tokens and gates), the archive and the contract;
//! never the engine, the GitHub client or the job queue.

pub mod admission;
pub mod batch;
pub mod decode;
pub mod error;
pub(crate) mod event_rows;
pub mod export;
pub mod handler;
pub mod listing;
pub mod rate_limit;
pub mod router;
pub mod sanitize;
pub mod strict_json;
pub mod transcripts;
pub mod upsert;
pub mod web;

#[cfg(test)]
mod properties;

pub use admission::Admission;
pub use error::IngestError;
pub use router::{IngestState, handle, serve};

// The wire contract's numbers live in the contract crate (their one home); re-exported here for
// the handler, the parsers and the tests that bound bodies by them.
pub use syncplane_contract::{
    MAX_DECODED_BYTES, MAX_SESSIONS_PER_BATCH, MAX_WIRE_BYTES, SCHEMA_VERSION,
};
