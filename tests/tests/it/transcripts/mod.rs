//! The transcript lane's server side, direct transport (docs/transcript-wire-contract.md), through
//! the real ingest handler with a real Postgres and the filesystem store in a temporary
//! directory: the happy path and each bad input and fault of issue 20, and the archive's
//! retention run as a background job.

mod export;
mod faults;
mod position;
mod refusals;
mod retention;
mod search;
mod serve;
mod support;
mod upload;
mod usage;
