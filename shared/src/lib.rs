//! syncplane's layers under one name, for the two programs that use all of them: the `syncplane`
//! CLI (which serves every surface locally and operates every table) and the tests. The Lambda
//! functions depend on their own surface's crate only. Each module here is a crate of
//! `shared/`, lowest first (docs/design.md, "Crates"); nothing is defined here.

pub use syncplane_accounts as accounts;
pub use syncplane_api as api;
pub use syncplane_api::console;
pub use syncplane_archive as archive;
pub use syncplane_core::{
    FromRow, config, db, http, limits, metrics, params, schema, start, telemetry,
};
pub use syncplane_engine::{status, sync};
pub use syncplane_github as github;
pub use syncplane_ingest as ingest;
pub use syncplane_jobs as jobs;
pub use syncplane_jobs::{app, scheduler, tenants};
pub use syncplane_webhook as webhook;
pub use syncplane_worker as worker;
