//! Thin Lambda entry point of the migrate function: applies the embedded migrations to every
//! tenant's database from inside the VPC, for the CloudFormation custom resource on every
//! `sam deploy` or by hand (`{"action": "migrate"}`: `syncplane_core::schema::invoke::handle`); and, by
//! hand, provisions the first org, user, compute target and device token on a database only the
//! VPC reaches (`{"action": "provision", ...}`, issue 21 point 15: `syncplane_accounts::admin`;
//! `migrate::handle` dispatches both). Configuration is read per invocation, inside the handler, so that even a
//! configuration error is reported to CloudFormation instead of leaving the stack waiting; and
//! the work (the migration's wait for the schema lock included) is bounded by the invocation's
//! deadline, less the time to answer.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::Value;
use syncplane_core::schema::invoke;

#[tokio::main]
async fn main() -> Result<(), Error> {
    syncplane_core::telemetry::init(true);
    // `run`, not `run_concurrent` as the other functions (issue 21 point 6): the handler's future
    // is not provably `Send` for every lifetime (a compiler limit with the generic migration
    // closure), and this function runs once per deploy; by hand under `cargo lambda watch` it
    // prints the runtime's AWS_LAMBDA_MAX_CONCURRENCY warning.
    // Each try at delivering the answer is bounded, so the answer's margin holds.
    let http = &reqwest::Client::builder()
        .timeout(invoke::DELIVERY_TIMEOUT)
        .build()?;
    run(service_fn(move |event: LambdaEvent<Value>| async move {
        let answer_by = invoke::answer_by(event.context.deadline());
        let run_migrations = |finish_by| async move {
            syncplane_core::schema::migrate_summary(
                syncplane_core::config::from_env_resolved().await,
                finish_by,
            )
            .await
        };
        let config = syncplane_core::config::from_env_resolved;
        Ok::<Value, Error>(
            migrate::handle(event.payload, http, answer_by, run_migrations, config).await?,
        )
    }))
    .await
}
