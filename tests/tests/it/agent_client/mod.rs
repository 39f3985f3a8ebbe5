//! The desktop agent client (`clients/agent-sync`, issue 14) end to end against the real ingest
//! handler served on loopback, with real Postgres: delivery exactly once, chunk sequences, the
//! schedule, the refusals that pause, park or wait, a faulty network, and a crash.

mod backfill;
mod crash;
mod faults;
mod refusals;
pub mod support;
