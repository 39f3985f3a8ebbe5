//! The database schema in a deployment (issue 13, "Migrations reach a private database"): applying
//! the embedded migrations under one advisory lock (`apply`), the check every HTTP function makes
//! before serving (`check`: a schema behind the build answers 503 `schema_behind`, not 500), the
//! same check is made by the functions that run jobs (`syncplane_jobs::held`: the worker leaves the
//! messages on the queue, the tick fails); and the migrate function's two ways in: a CloudFormation custom resource on
//! every `sam deploy`, or `{"action": "migrate"}` by hand (`invoke`).

pub mod apply;
pub mod check;
pub mod invoke;

pub use apply::{
    DEFAULT_LOCK_WAIT, MIGRATE_ROOM, Migrated, MigrationError, lock_deadline, migrate_locked,
    migrate_locked_by, migrate_locked_until, migrate_summary, migrate_tenants,
};
pub use check::{Refusal, SchemaBehind, SchemaGuard};
