//! GitHub webhooks: the endpoint ([`handler`]: tenant, [`signature`], installation, one
//! `webhook.dispatch` job) and the routing of verified deliveries (run by the worker).

pub mod handler;
pub mod routing;
pub mod signature;

pub use handler::{WebhookError, handle};
