//! Thin Lambda entry point of the migrate function: applies the embedded migrations to every
//! tenant's database from inside the VPC, for the CloudFormation custom resource on every
//! `sam deploy` or by hand (`{"action": "migrate"}`): `shared::schema::invoke::handle`.
//! Configuration is read per invocation, inside the handler, so that even a configuration error
//! is reported to CloudFormation instead of leaving the stack waiting.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init(true);
    let http = &reqwest::Client::new();
    run(service_fn(move |event: LambdaEvent<Value>| async move {
        let migrate = || async {
            shared::schema::migrate_summary(shared::config::from_env_resolved().await).await
        };
        Ok::<Value, Error>(shared::schema::invoke::handle(event.payload, http, migrate).await?)
    }))
    .await
}
