//! The one integration-test binary: real Postgres, the fake GitHub, the SQS emulator.

mod ingest;
mod migrations;
