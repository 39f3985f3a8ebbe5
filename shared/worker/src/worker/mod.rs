//! The side that runs jobs (spec "Jobs and tenants"; docs/design.md "Jobs"), above the mailbox
//! (`crate::jobs`) and the engine (`syncplane_engine::sync`): what the worker and tick functions do.
//!
//! - [`run`]: one job against its tenant's workspace, and the inline adapter's runner;
//! - [`routing`]: a verified webhook delivery (`webhook.dispatch`) becomes syncs or removals;
//! - [`batch`]: the worker function's SQS batch, with partial batch failures;
//! - [`fan_out`]: a full sync that scales past one invocation through the queue;
//! - [`pause`]: the installation-wide rate-limit pause shared by every worker;
//! - [`redelivery`]: naming a message in `batchItemFailures`, so SQS redelivers it;
//! - [`s3_events`]: the transcript bucket's S3 notifications, which complete uploads;
//! - [`expire`]: `transcripts.expire`, the transcript archive's retention;
//! - [`held`]: the schema check of the functions that run jobs (jobs of a tenant whose schema
//!   is behind are held back, not run);
//! - [`tick`]: the tick function, which submits what the schedule says is due.

pub mod batch;
pub mod expire;
pub mod fan_out;
pub mod held;
pub mod pause;
pub mod redelivery;
pub mod routing;
pub mod run;
pub mod s3_events;
pub mod tick;

pub use batch::{Verdict, Worker};
pub use run::{inline, inline_with_archive, jobs_adapter, run, run_in};
