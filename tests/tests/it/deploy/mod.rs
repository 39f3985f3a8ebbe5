//! Deployment: the SAM template's guarantees that cfn-lint cannot check, the `cargo lambda deploy`
//! metadata, migrations from inside the VPC, the first device token provisioned from inside it,
//! the deploy guide and its samconfig example, secrets by reference, the transcript bucket, and
//! the sample events of `events/` run through their handlers.

mod cargo_lambda;
mod events;
mod guide;
mod local_database;
mod local_run;
mod migrate;
mod provision;
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
