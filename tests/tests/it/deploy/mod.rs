//! Deployment: the SAM template's guarantees that cfn-lint cannot check, and the sample events
//! of `events/` run through their handlers.

mod events;
mod template;

use std::path::PathBuf;

/// A file of the repository root (template.yaml, events/...).
pub fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}
