//! The sync engine (spec/sync-engine.txt): the only writer of repository content.
//!
//! One module per step of "One repository": `fingerprint`, `scope` (reading the tree: the docs
//! scope, only what changed, with `listings` storing what it read), `selection`, `fetch` (diff and
//! fetch), `parse`, `persist`, with `failure` for the fixed messages and run error codes and
//! `repository` tying the steps together. Runs: `lock` (serialization), `coalescing` (rerun
//! markers), `runs` (sync_runs rows and run locks), `full` (full runs and the drain), `estate` (their
//! listing, with heads from GraphQL), `head_batch` (their batched GraphQL head checks), `probe` (one GraphQL look at what a plan reads), `removal`, `reaper`, `workspace`.

pub mod coalescing;
pub mod estate;
pub mod failure;
pub mod fetch;
pub mod fingerprint;
pub mod full;
pub mod head_batch;
pub mod listings;
pub mod lock;
pub mod parse;
pub mod persist;
pub mod probe;
pub mod reaper;
pub mod removal;
pub mod repository;
pub mod runs;
pub mod scope;
pub mod selection;
pub mod workspace;

pub use repository::{RepoOutcome, SyncError, sync_repository};
