//! The one integration-test binary: real Postgres, the fake GitHub, the SQS emulator.

mod cli;
mod deploy;
mod engine;
mod fake_github;
mod functions;
mod github_client;
mod ingest;
mod migrations;
mod read;
mod runs;
