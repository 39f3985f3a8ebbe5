//! The Lambda functions: worker, tick, and the SQS adapter against the emulator.

mod sqs;
mod tick;
mod worker;
