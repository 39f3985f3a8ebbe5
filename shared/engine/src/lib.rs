//! The docs sync engine ([`sync`], spec/sync-engine.txt: the only writer of repository
//! content) and the status it records ([`status`]: runs and GitHub spend, as the CLI and the
//! API list them).
//!
//! Uses the floor (`syncplane_core`), the GitHub client (`syncplane_github`) and the vocabulary
//! of a run (`syncplane_runs`, re-exported where each type always stood); nothing here knows of
//! jobs, queues or the surfaces above.

pub mod status;
pub mod sync;
