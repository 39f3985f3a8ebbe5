//! GitHub webhooks' endpoint ([`handler`]: tenant, [`signature`], installation, one
//! `webhook.dispatch` job). The routing of verified deliveries is the worker's
//! (`syncplane_worker::routing`): it runs when the job runs.
//!
//! Uses the floor (`syncplane_core`) and the jobs (`syncplane_jobs`: `app`, the jobs it submits);
//! not the worker or the engine, so the webhook function builds without them.

pub mod handler;
pub mod signature;

pub use handler::{WebhookError, handle, serve};
