//! The transcript lane, the desktop side (docs/transcript-wire-contract.md): redacted session
//! transcripts uploaded as immutable, content-addressed segments from each file's acknowledged
//! offset.
//!
//! Spec, "Two independent lanes": "a transcript upload that fails or is throttled never touches
//! the metadata lane, and vice versa. The two run on their own tickers with their own queues and
//! backoff." This module shares nothing with [`crate::lane`] but the device token at run time;
//! the rules the two lanes follow alike are written once, in the crate's shared core
//! (`lane_core`), which each lane calls with its own tables and numbers.
//!
//! - [`source`]: the [`TranscriptSource`] trait, a directory of JSON Lines, an in-memory source;
//! - [`segment`]: a segment staged within the caps (redacted line by line, zstd, SHA-256);
//! - [`verify`]: noticing a rewrite (a new generation);
//! - [`outcome`]: what each answer does (ladder, budgets, adopting the server's state);
//! - [`transport`]: hello, state, intent, upload (presigned or direct), complete;
//! - [`schedule`]: settings, hooks, status, the observer and the figures;
//! - [`state`]: per-file progress, due files, dead letters in SQLite;
//! - [`lane`]: [`TranscriptLane::tick`], [`TranscriptLane::run`], hooks, the sweep.

pub mod lane;
pub mod outcome;
pub mod schedule;
pub mod segment;
pub mod source;
pub mod state;
pub mod transport;
pub mod verify;

pub use lane::{LaneError, TranscriptLane};
pub use outcome::{Failure, FileState};
pub use schedule::{
    Figures, Hooks, Settings, TickReport, TranscriptObserver, TranscriptStatus, Trigger,
};
pub use source::{JsonlDirSource, MemorySource, TranscriptFile, TranscriptSource};
pub use state::TranscriptState;
pub use transport::{Api, Hello, TranscriptTransport, UploadMode};

#[cfg(test)]
mod tests;
