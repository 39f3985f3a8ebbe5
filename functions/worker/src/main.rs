//! Thin Lambda entry point for the worker (SQS event source with `ReportBatchItemFailures`):
//! logging, configuration, the tenants and the jobs adapter built once, then per batch the schema
//! check (`shared::schema::JobsSchema::worker_batch`: a tenant whose database is behind this build
//! has its jobs put back on the queue with a delay, unrun, with one log line) and
//! `shared::jobs::worker::Worker::handle`.

use std::sync::Arc;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use shared::jobs::Tenants;
use shared::jobs::worker::Worker;
use shared::schema::{JobsFunction, JobsSchema};
use shared::start::OrExit;
use shared::sync::workspace::RunOptions;

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init(true);
    let config = shared::start::config().await;
    shared::start::check_databases(&config).await;
    let tenants = Arc::new(
        Tenants::from_config(
            &config,
            shared::db::DEFAULT_POOL_SIZE,
            RunOptions::default(),
        )
        .or_exit("configuration error: DATABASE_URL"),
    );
    let jobs = shared::jobs::sqs::jobs_adapter(&config, tenants.clone()).await;
    let worker = &Worker::new(tenants.clone(), jobs);
    let schema = &JobsSchema::new(JobsFunction::Worker);
    let tenants = &tenants;
    run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let response = schema
            .worker_batch(tenants, event.payload, worker.queue(), |batch| {
                worker.handle(batch)
            })
            .await;
        Ok::<SqsBatchResponse, Error>(response)
    }))
    .await
}
