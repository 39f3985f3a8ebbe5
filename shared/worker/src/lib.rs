//! What runs the engine: the tenants of a deployment ([`tenants`]), jobs and their queue
//! ([`jobs`]: SQS, or inline), the scheduler's rules ([`scheduler`]), the worker that runs each
//! job kind ([`worker`], the transcript archive's S3 notifications and retention included) and
//! [`app`], the state the API and webhook surfaces hand their requests to.
//!
//! Uses the floor (`syncplane_core`), the GitHub client, the engine, the archive and accounts
//! (an org's gates, for S3 notifications).

pub mod app;
pub mod jobs;
pub mod scheduler;
pub mod tenants;
pub mod worker;
