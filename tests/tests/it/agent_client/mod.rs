//! The desktop agent client (`clients/agent-sync`, issue 14) end to end against the real ingest
//! handler served on loopback, with real Postgres: delivery exactly once, chunk sequences, the
//! schedule, the refusals that pause, park or wait, dead letters and how each class comes back,
//! deploy skew, a faulty network, a crash, the CLI's exit codes, and how a one-shot push ends
//! what the lane would wait through (issue 21).

mod backfill;
mod cli;
mod crash;
mod dead_letters;
mod faults;
mod isolation;
mod presigned;
mod presigned_expiry;
mod redaction;
mod refusals;
mod scanner;
mod skew;
pub mod support;
mod transcripts;
mod waits;
