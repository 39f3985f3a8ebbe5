//! Test support shared by every integration test (and by the local demo): per-test Postgres
//! databases and a faithful fake GitHub.

pub mod agent_server;
pub mod apigw;
pub mod bench;
pub mod browser;
pub mod cli;
pub mod crates;
pub mod db;
/// The fake GitHub (its own crate, so the local demo builds it without the tests' dependencies).
pub use syncplane_fake_github as fake_github;
pub mod images;
pub mod imports;
pub mod lane_proxy;
pub mod openapi;
pub mod pg_proxy;
pub mod processes;
pub mod provisioned;
pub mod redaction_corpus;
pub mod rows;
pub mod s3;
pub mod s3_front;
pub mod scanner;
pub mod search_plan;
pub mod sqs;
pub mod transcript_corpus;
pub mod transcripts;

use std::sync::Once;

/// Show logs when `TEST_LOG=1` (captured per test by the test runner).
pub fn init_logging() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        if std::env::var("TEST_LOG").is_ok_and(|v| v == "1") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                        tracing_subscriber::EnvFilter::new("debug,sqlx=warn,hyper=warn")
                    }),
                )
                .with_test_writer()
                .try_init();
        }
    });
}
