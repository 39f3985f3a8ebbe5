//! The one integration-test binary: real Postgres, the fake GitHub, the SQS emulator.

mod agent_client;
mod architecture;
mod cli;
mod console;
mod console_browser;
mod deploy;
mod docs;
mod engine;
mod fake_github;
mod fake_graphql;
mod functions;
mod github_client;
mod ingest;
mod migrations;
mod ops;
mod pool;
mod read;
mod rows;
mod runs;
mod shared_token;
mod transcripts;
mod transcripts_read;
mod transcripts_s3;
