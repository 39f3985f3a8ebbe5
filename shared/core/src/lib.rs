//! The floor of syncplane, on which every other crate of the workspace stands: named limits,
//! typed configuration (environment, secrets by reference, tenants), logs and metrics, the HTTP
//! envelope every surface answers with, Postgres (pools, row reading, the embedded migrations,
//! advisory-lock keys), the schema check and migration, query parameters, and a function's
//! start-up and its runtime loop.
//!
//! Uses no other crate of the workspace but its derive, `syncplane-row-derive` ([`FromRow`]). Inside, modules import down this list only (the
//! architecture test checks it): `limits`; `config`; `telemetry`, `metrics`, `http`, `params`,
//! `db`; `schema`; `start`, `runtime`.

/// `#[derive(FromRow)]`: a struct read from a Postgres row by its fields' names, without sqlx's
/// proc-macro crate (issue 32); `#[row(flatten)]` and `#[row(skip)]` as sqlx's own derive has them.
pub use syncplane_row_derive::FromRow;

pub mod config;
pub mod db;
pub mod http;
pub mod limits;
pub mod metrics;
pub mod params;
pub mod runtime;
pub mod schema;
pub mod start;
pub mod telemetry;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
