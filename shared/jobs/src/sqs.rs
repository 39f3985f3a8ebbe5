//! The SQS jobs adapter: a job is one message whose body is the job's JSON; the worker function
//! receives it. The client is built once per execution environment and reused.

use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::error::DisplayErrorContext;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;

use crate::Job;

/// SQS refuses a longer `DelaySeconds` (15 minutes).
pub const MAX_DELAY: Duration = Duration::from_secs(900);
/// SQS's largest `SendMessageBatch`.
const BATCH_SIZE: usize = 10;
/// Region used with an emulator when the environment names none.
const EMULATOR_REGION: &str = "us-east-1";

/// A job could not be handed over.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error("the jobs queue refused the job: {0}")]
    Queue(String),
    #[error("the job could not be serialized: {0}")]
    Serialize(#[from] serde_json::Error),
}

#[derive(Clone, Debug)]
pub struct SqsAdapter {
    client: Client,
    queue_url: String,
}

impl SqsAdapter {
    /// From the environment's AWS configuration (the Lambda role's credentials and region),
    /// pointed at `endpoint` (`AWS_ENDPOINT_URL_SQS`) when one is given.
    /// An emulator endpoint with no credentials in the environment gets the emulator's dummy ones.
    pub async fn from_env(queue_url: &str, endpoint: Option<&str>) -> Self {
        if let Some(endpoint) = endpoint
            && std::env::var_os("AWS_ACCESS_KEY_ID").is_none()
        {
            return Self::for_emulator(endpoint, queue_url);
        }
        let mut loader = aws_config::defaults(BehaviorVersion::latest());
        if let Some(endpoint) = endpoint {
            loader = loader.endpoint_url(endpoint);
        }
        let shared = loader.load().await;
        let mut builder = aws_sdk_sqs::config::Builder::from(&shared);
        if shared.region().is_none() {
            builder = builder.region(Region::new(EMULATOR_REGION));
        }
        Self::new(Client::from_conf(builder.build()), queue_url)
    }

    /// For an emulator on loopback (tests, local runs): fixed region and dummy credentials.
    pub fn for_emulator(endpoint: &str, queue_url: &str) -> Self {
        Self::new(emulator_client(endpoint), queue_url)
    }

    pub fn new(client: Client, queue_url: &str) -> Self {
        Self {
            client,
            queue_url: queue_url.to_owned(),
        }
    }

    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Send one job, visible after `delay` (capped at SQS's 15 minutes). Returns the message id.
    pub async fn send(&self, job: &Job, delay: Option<Duration>) -> Result<String, SubmitError> {
        let body = serde_json::to_string(job)?;
        let mut request = self
            .client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body);
        if let Some(delay) = delay {
            request = request.delay_seconds(delay_seconds(delay));
        }
        let sent = request
            .send()
            .await
            .map_err(|e| SubmitError::Queue(DisplayErrorContext(e).to_string()))?;
        Ok(sent.message_id().unwrap_or_default().to_owned())
    }

    /// Send many jobs in batches of ten (a fan-out of thousands of repositories). Stops at the
    /// first batch the queue refuses in whole or in part; returns how many were sent.
    pub async fn send_many(&self, jobs: &[Job]) -> Result<usize, SubmitError> {
        let mut sent = 0;
        for chunk in jobs.chunks(BATCH_SIZE) {
            let mut request = self.client.send_message_batch().queue_url(&self.queue_url);
            for (i, job) in chunk.iter().enumerate() {
                let entry = SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(serde_json::to_string(job)?)
                    .build()
                    .map_err(|e| SubmitError::Queue(e.to_string()))?;
                request = request.entries(entry);
            }
            let out = request
                .send()
                .await
                .map_err(|e| SubmitError::Queue(DisplayErrorContext(e).to_string()))?;
            sent += out.successful().len();
            if let Some(failed) = out.failed().first() {
                return Err(SubmitError::Queue(format!(
                    "{} of {} jobs refused ({})",
                    out.failed().len(),
                    chunk.len(),
                    failed.code()
                )));
            }
        }
        Ok(sent)
    }
}

/// An SQS client for an emulator: region us-east-1, static test credentials.
pub fn emulator_client(endpoint: &str) -> Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(EMULATOR_REGION))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("test", "test", None, None, "emulator"))
        .build();
    Client::from_conf(config)
}

/// Whole seconds for `DelaySeconds`, rounded up, within SQS's 0..=900.
pub(crate) fn delay_seconds(delay: Duration) -> i32 {
    let secs = delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
    secs.min(MAX_DELAY.as_secs()) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_are_rounded_up_and_capped_at_fifteen_minutes() {
        assert_eq!(delay_seconds(Duration::ZERO), 0);
        assert_eq!(delay_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(delay_seconds(Duration::from_secs(900)), 900);
        assert_eq!(delay_seconds(Duration::from_secs(3600)), 900);
    }
}
