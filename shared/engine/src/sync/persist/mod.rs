//! Persist (spec "One repository", step 5): one transaction per repository.
//!
//! The repository row, documents, README and code owners are written together, with a savepoint
//! per document so one document Postgres refuses never fails the others. Every write is guarded
//! by `IS DISTINCT FROM`, so a sync that finds nothing new writes nothing (idempotence).
//!
//! `model` holds what a write carries, `stored` reads the state a sync starts from, `write` runs
//! the transaction, with `documents` (documents, README, code owners) and `repo_row` (the
//! repository row) below it.

mod documents;
mod model;
mod repo_row;
mod stored;
mod write;

pub use model::{
    CodeOwnersWrite, Counts, DocumentWrite, Markers, ReadmeWrite, Status, Stored, Write,
};
pub use repo_row::{RepoMeta, StoredInfo, ensure_row, move_markers, refresh_status, stored_info};
pub use stored::{load, load_contents};
pub use write::write;
