//! Thin Lambda entry point for the one-minute EventBridge schedule: logging, the queue client
//! built once, then per invocation the configuration read again (the tenant list can change)
//! and `shared::scheduler::tick::TickFunction::invoke`.

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use shared::scheduler::tick::{TickFunction, TickReport};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init(true);
    let config = shared::start::config().await;
    shared::start::check_databases(&config).await;
    let tick = &TickFunction::new(&config).await;
    run(service_fn(
        move |_event: LambdaEvent<EventBridgeEvent>| async move {
            let config = shared::config::from_env_resolved().await?;
            Ok::<TickReport, Error>(tick.invoke(&config, chrono::Utc::now()).await?)
        },
    ))
    .await
}
