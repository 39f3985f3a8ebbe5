//! The manual sync API (`Authorization: Bearer $SYNC_API_TOKEN`): `POST /api/sync`,
//! `GET /api/repos`, `GET /api/sync/runs`, `GET /api/sync/runs/{id}`; the read API of issue 11
//! (`read/`: search, documents, READMEs, code owners; also `SYNC_READ_TOKEN`); and
//! `GET /api/openapi.json` and `GET /api/health` (no token).

pub mod auth;
pub mod error;
pub mod handler;
pub mod health;
pub mod openapi;
pub mod read;
pub mod sync;

pub use error::{ApiError, BadParameter};
pub use handler::{handle, serve};
