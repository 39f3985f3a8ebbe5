//! The manual sync API (`Authorization: Bearer $SYNC_API_TOKEN`): `POST /api/sync`,
//! `GET /api/repos`, `GET /api/sync/runs`, `GET /api/sync/runs/{id}`; the read API of issue 11
//! (`read/`: search, documents, READMEs, code owners; also `SYNC_READ_TOKEN`); and
//! `GET /api/openapi.json` and `GET /api/health` (no token); and the web console ([`console`]:
//! its page, script and style sheet, which read this API like any client).
//!
//! Uses the floor (`syncplane_core`), the GitHub client (a document's images), the engine (runs,
//! the documents it stored), the jobs (`syncplane_jobs`: `app`, the state a surface builds, and
//! the job queue) and the worker (`TenantWorkspace`: a tenant's engine workspace).

pub mod auth;
pub mod console;
pub mod error;
pub mod handler;
pub mod health;
pub mod openapi;
pub mod read;
pub mod sync;

pub use error::ApiError;
pub use handler::{handle, serve};
