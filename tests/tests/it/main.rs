//! The one integration-test binary: real Postgres, the fake GitHub, the SQS emulator.

mod fake_github;
mod github_client;
mod migrations;
