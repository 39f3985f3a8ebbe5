//! Thin Lambda entry point: logging, then the handler from `shared` (added with its issue).

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init(true);
    run(service_fn(|_event: LambdaEvent<Value>| async {
        Ok::<Value, Error>(Value::Null)
    }))
    .await
}
