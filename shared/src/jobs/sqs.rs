//! The SQS jobs adapter (placeholder until the functions issue lands it).

use std::time::Duration;

use crate::jobs::Job;
use crate::jobs::adapter::SubmitError;

#[derive(Clone, Debug)]
pub struct SqsAdapter {
    pub queue_url: String,
}

impl SqsAdapter {
    pub async fn send(&self, _job: &Job, _delay: Option<Duration>) -> Result<String, SubmitError> {
        Err(SubmitError::Queue("the SQS adapter is not built yet".into()))
    }
}
