//! GitHub webhooks' endpoint ([`handler`]: tenant, [`signature`], installation, one
//! `webhook.dispatch` job). The routing of verified deliveries is the worker's
//! (`syncplane_worker::routing`): it runs when the job runs.
//!
//! Uses the floor (`syncplane_core`) and the worker (`app`, the jobs it submits).

pub mod handler;
pub mod signature;

pub use handler::{WebhookError, handle, serve};
