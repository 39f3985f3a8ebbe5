//! Deployment: the SAM template's guarantees that cfn-lint cannot check, the `cargo lambda deploy`
//! metadata, migrations from inside the VPC, secrets by reference, the transcript bucket, and the
//! sample events of `events/` run through their handlers.

mod cargo_lambda;
mod events;
mod local_database;
mod local_run;
mod migrate;
mod secrets;
mod template;
mod test_script;
mod transcripts;

use std::path::PathBuf;

/// A file of the repository root (template.yaml, events/...).
pub fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}
