//! The Lambda runtime loop of the functions, built once, here (issue 33: what a change below a
//! function rebuilds). `lambda_http::run_concurrent` and `lambda_runtime::run_concurrent` are
//! generic over the handler: called from a function's `main`, the runtime's stack (its tower
//! layers, the request and event types' decoding) was instantiated and compiled again in each
//! binary, at every rebuild of a crate below it. Here it is instantiated once, for a boxed
//! handler, in the floor crate; a `main` hands its handler over and compiles nothing of the
//! runtime (a function binary's own compile: 2.5 s to 1.6 s, most of what is left its link).
//!
//! Behaviour is the runtime's own: the same `run_concurrent` (one invocation at a time unless
//! `AWS_LAMBDA_MAX_CONCURRENCY` says more), the same decoding and the same answers.

use std::sync::Arc;

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use futures::future::BoxFuture;
use lambda_http::{Body, Request, Response};
use lambda_runtime::{Error, LambdaEvent};
use serde_json::value::RawValue;

/// An HTTP function's handler: every request gets an answer (errors are answers).
pub type HttpHandler = dyn Fn(Request) -> BoxFuture<'static, Response<Body>> + Send + Sync;

/// A scheduled function's handler: its report as JSON (what the invocation returns), or the
/// error that fails the invocation.
pub type ScheduleHandler =
    dyn Fn(EventBridgeEvent) -> BoxFuture<'static, Result<Box<RawValue>, Error>> + Send + Sync;

/// A queue consumer's handler: the batch's failed items (`ReportBatchItemFailures`).
pub type QueueHandler = dyn Fn(SqsEvent) -> BoxFuture<'static, SqsBatchResponse> + Send + Sync;

/// Serves API Gateway requests (HTTP API, REST API or a function URL, as `lambda_http` reads
/// them) until the runtime stops.
pub async fn serve_http(handler: Box<HttpHandler>) -> Result<(), Error> {
    let handler: Arc<HttpHandler> = Arc::from(handler);
    lambda_http::run_concurrent(lambda_http::service_fn(move |req: Request| {
        let answer = handler(req);
        async move { Ok::<_, Error>(answer.await) }
    }))
    .await
}

/// Serves EventBridge schedule invocations until the runtime stops.
pub async fn serve_schedule(handler: Box<ScheduleHandler>) -> Result<(), Error> {
    let handler: Arc<ScheduleHandler> = Arc::from(handler);
    lambda_runtime::run_concurrent(lambda_runtime::service_fn(
        move |event: LambdaEvent<EventBridgeEvent>| handler(event.payload),
    ))
    .await
}

/// Serves SQS batches until the runtime stops.
pub async fn serve_queue(handler: Box<QueueHandler>) -> Result<(), Error> {
    let handler: Arc<QueueHandler> = Arc::from(handler);
    lambda_runtime::run_concurrent(lambda_runtime::service_fn(
        move |event: LambdaEvent<SqsEvent>| {
            let answer = handler(event.payload);
            async move { Ok::<_, Error>(answer.await) }
        },
    ))
    .await
}
