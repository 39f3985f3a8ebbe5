//! The mailbox and what stands beside it (spec "Jobs and tenants"; docs/design.md "Jobs"): what a
//! job is ([`Job`]) and where a submitted job goes ([`adapter`]: run in the calling process, or
//! sent to the queue by [`sqs`]); the tenants of a deployment ([`tenants`]); the state the HTTP
//! surfaces hand their requests to ([`app`]); the scheduler's decisions ([`scheduler`]) and the
//! tick function that submits what they say is due ([`tick`]); the schema check of the functions
//! that take jobs ([`held`]) and partial batch failures ([`redelivery`]).
//!
//! Nothing here runs a job: the scheduler and the webhook endpoint never call the sync engine,
//! they submit a [`Job`] whose payload names its tenant, and the worker (`syncplane_worker`) runs
//! it against that tenant's workspace. The inline adapter is handed its runner where a process is
//! assembled ([`adapter::InlineRunner`]), so the mailbox never calls up, and a function that
//! only submits jobs (the webhook, the tick) builds without the engine (issue 33).
//!
//! The locks and rerun markers live in the tenant's database, so two copies of one job leave the
//! state of one sync, whichever process runs them.
//!
//! Uses the floor (`syncplane_core`), the GitHub client (a tenant's App) and the vocabulary of a
//! run (`syncplane_runs`: what a job's payload and outcome carry).

pub mod adapter;
pub mod app;
pub mod held;
mod job;
pub mod redelivery;
pub mod scheduler;
pub mod sqs;
pub mod tenants;
pub mod tick;

pub use job::{Job, JobError, JobOutcome, RepoRef};
