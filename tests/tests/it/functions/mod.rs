//! The HTTP functions' handlers (webhook, sync API), called with real lambda_http requests built
//! from API Gateway v2 events, against real Postgres and the fake GitHub, with the inline jobs
//! adapter (the job runs before the answer).

mod events;
mod support;
mod sync_api;
mod webhook;
