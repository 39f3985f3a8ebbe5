//! Thin Lambda entry point for the worker (SQS event source with `ReportBatchItemFailures`):
//! logging, configuration, the tenants and the jobs adapter built once, then per batch (in the runtime loop built once in
//! `syncplane_core::runtime`)
//! `syncplane_worker::Worker::serve`: the schema check (a tenant whose database is behind this build
//! has its jobs put back on the queue with a delay, unrun, with one log line), then the jobs. With
//! `TRANSCRIPT_BUCKET` it also completes uploads from the bucket's notifications and runs the
//! archive's retention (`transcripts.expire`).

use std::sync::Arc;

use lambda_runtime::Error;
use syncplane_core::start::{OrExit, for_process};
use syncplane_engine::sync::workspace::RunOptions;
use syncplane_jobs::tenants::Tenants;
use syncplane_worker::Worker;
use syncplane_worker::expire::TranscriptArchive;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = syncplane_core::start::function().await;
    let tenants = Arc::new(
        Tenants::from_config(
            &config,
            syncplane_core::db::DEFAULT_POOL_SIZE,
            RunOptions::default(),
        )
        .or_exit("configuration error: DATABASE_URL"),
    );
    let runner = syncplane_worker::runner();
    let jobs = syncplane_jobs::app::jobs_adapter(&config, tenants.clone(), Some(&runner))
        .await
        .or_exit("configuration error");
    let mut worker = Worker::new(tenants.clone(), jobs);
    // S3 notifications of the transcript bucket complete uploads whose `complete` was lost; the
    // tick's hourly `transcripts.expire` deletes from the same bucket what retention says is due.
    if let Some(archive) = syncplane_worker::s3_events::archive(&config, &tenants).await {
        if let Some(retention) = TranscriptArchive::first_tenant(&config, archive.store.clone()) {
            worker = worker.with_retention(retention);
        }
        worker = worker.with_archive(archive);
    }
    let worker = for_process(worker);
    syncplane_core::runtime::serve_queue(Box::new(move |batch| Box::pin(worker.serve(batch)))).await
}
