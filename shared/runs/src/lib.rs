//! The vocabulary of a sync run, as plain data: what started it ([`Trigger`]), how it ended
//! ([`RunStatus`], [`RunCounts`], [`RunReport`]), what stopped it ([`Stopped`], [`SyncError`],
//! [`RemovalError`]), what a request for one repository came to ([`RequestOutcome`]) and the
//! tunables of the runs layer ([`RunOptions`], the spec's numbers by default).
//!
//! The engine (`syncplane_engine::sync`) produces these and re-exports each where it always
//! stood; the jobs (`syncplane_jobs`) carry them, and so stand below the engine: a function that
//! only submits jobs (the webhook, the tick) builds without the engine (issue 33).
//!
//! Uses the GitHub client's error and usage types (`syncplane_github`); nothing else of the
//! workspace.

mod error;
mod options;
mod run;

pub use error::{RemovalError, SyncError};
pub use options::{MAX_PASSES, REAPER_GRACE, RunOptions};
pub use run::{RequestOutcome, RunCounts, RunReport, RunStatus, Stopped, Trigger};
