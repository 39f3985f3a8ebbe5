//! The side that runs jobs (spec "Jobs and tenants"; docs/design.md "Jobs"), above the mailbox
//! (`syncplane_jobs`) and the engine (`syncplane_engine::sync`): what the worker function does,
//! and what runs inline jobs in a process that has them (`syncplane serve`, the tests, a function
//! built with its `inline-jobs` feature).
//!
//! - [`run`]: one job against its tenant's workspace, and the inline adapter's runner
//!   ([`runner`]);
//! - [`workspace`]: a tenant's engine workspace ([`TenantWorkspace`]);
//! - [`scheduled`]: a scheduled full sync, under the tenant's scheduler lock;
//! - [`routing`]: a verified webhook delivery (`webhook.dispatch`) becomes syncs or removals;
//! - [`batch`]: the worker function's SQS batch, with partial batch failures;
//! - [`fan_out`]: a full sync that scales past one invocation through the queue;
//! - [`pause`]: the installation-wide rate-limit pause shared by every worker;
//! - [`s3_events`]: the transcript bucket's S3 notifications, which complete uploads;
//! - [`expire`]: `transcripts.expire`, the transcript archive's retention.
//!
//! Uses the floor (`syncplane_core`), the GitHub client, the jobs, the engine, the archive and
//! accounts (an org's gates, for S3 notifications).

pub mod batch;
pub mod expire;
pub mod fan_out;
pub mod pause;
pub mod routing;
pub mod run;
pub mod s3_events;
pub mod scheduled;
pub mod workspace;

pub use batch::{Verdict, Worker};
pub use run::{app_state, inline, inline_with_archive, run, run_in, runner, runner_with_archive};
pub use workspace::TenantWorkspace;
