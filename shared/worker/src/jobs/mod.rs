//! The mailbox (spec "Jobs and tenants"; docs/design.md "Jobs"): what a job is ([`job`]) and
//! where a submitted job goes ([`adapter`]: run in the calling process, or sent to the queue by
//! [`sqs`]). Nothing here runs a job: the scheduler and the webhook endpoint never call the sync
//! engine directly, they submit a [`Job`] whose payload names its tenant, and the worker
//! (`crate::worker`) runs it against that tenant's workspace. The inline adapter is handed its
//! runner where the application is assembled, so the mailbox never calls up.
//!
//! The locks and rerun markers live in the tenant's database, so two copies of one job leave the
//! state of one sync, whichever process runs them.

pub mod adapter;
pub mod job;
pub mod sqs;

pub use job::{Job, JobError, JobOutcome, RepoRef};
