//! GitHub webhooks' endpoint ([`handler`]: tenant, [`signature`], installation, one
//! `webhook.dispatch` job). The routing of verified deliveries is the worker's
//! (`syncplane_worker::worker::routing`): it runs when the job runs.

pub mod handler;
pub mod signature;

pub use handler::{WebhookError, handle, serve};
