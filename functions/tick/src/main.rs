//! Thin Lambda entry point for the one-minute EventBridge schedule: logging, the queue client
//! built once, then per invocation the configuration read again (the tenant list can change),
//! the schema check (`syncplane_jobs::held::JobsSchema::hold_back`: a tenant whose database is behind
//! this build gets no job, one log line, and fails the invocation once the others have ticked)
//! and `syncplane_jobs::tick::TickFunction::invoke`, in the runtime loop built once in
//! `syncplane_core::runtime` (the report goes back as the JSON the tick wrote, unchanged).

use lambda_runtime::Error;
use syncplane_core::start::{OrExit, for_process};
use syncplane_jobs::adapter::InlineRunner;
use syncplane_jobs::held::{JobsFunction, JobsSchema};
use syncplane_jobs::tick::{TickFunction, TickReport};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = syncplane_core::start::function().await;
    let tick = TickFunction::new(&config, inline_jobs()).await;
    let tick = for_process(tick.or_exit("configuration error"));
    let schema = for_process(JobsSchema::new(JobsFunction::Tick));
    syncplane_core::runtime::serve_schedule(Box::new(move |_event| {
        Box::pin(async move {
            let mut config = syncplane_core::config::from_env_resolved().await?;
            // With the scheduler off the tick touches no database: nothing to check.
            let held_back = if config.scheduler_enabled {
                schema.hold_back(&mut config).await
            } else {
                Ok(())
            };
            let report = if config.tenants.is_empty() {
                None
            } else {
                Some(tick.invoke(&config, chrono::Utc::now()).await?)
            };
            held_back?;
            let report = report.unwrap_or(TickReport {
                scheduler_enabled: config.scheduler_enabled,
                tenants: Vec::new(),
            });
            Ok::<_, Error>(serde_json::value::to_raw_value(&report)?)
        })
    }))
    .await
}

/// The runner of inline jobs: the worker's with the `inline-jobs` feature (local runs), none
/// without it (deployed: `JOBS_BACKEND=sqs`; `inline` is then refused at start, in one line).
fn inline_jobs() -> Option<InlineRunner> {
    #[cfg(feature = "inline-jobs")]
    return Some(syncplane_worker::runner());
    #[cfg(not(feature = "inline-jobs"))]
    None
}
