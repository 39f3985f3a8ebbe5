//! GitHub webhooks: routing of verified deliveries (run by the worker as `webhook.dispatch`).

pub mod routing;
