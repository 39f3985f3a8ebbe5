//! Jobs adapters (docs/design.md "Jobs"): `inline` runs the job in the calling process before
//! returning (local runs and tests); `sqs` sends it to the queue and the worker function runs it.
//! A Lambda cannot work after it has answered, so deployed webhook and sync-api functions use `sqs`.

use std::sync::Arc;

use crate::jobs::sqs::SqsAdapter;
use crate::jobs::{Job, JobError, JobOutcome, Tenants, run};

/// Where submitted jobs go.
#[derive(Clone)]
pub enum JobsAdapter {
    Inline(Arc<Tenants>),
    Sqs(SqsAdapter),
}

/// What a submission came to.
#[derive(Debug)]
pub enum Submitted {
    /// Inline: the job ran; its result.
    Ran(Result<JobOutcome, JobError>),
    /// Queued for the worker.
    Queued { message_id: String },
}

/// A job could not be handed over.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error("the jobs queue refused the job: {0}")]
    Queue(String),
    #[error("the job could not be serialized: {0}")]
    Serialize(#[from] serde_json::Error),
}

impl JobsAdapter {
    pub async fn submit(&self, job: &Job) -> Result<Submitted, SubmitError> {
        match self {
            Self::Inline(tenants) => Ok(Submitted::Ran(run(tenants, job).await)),
            Self::Sqs(sqs) => Ok(Submitted::Queued {
                message_id: sqs.send(job, None).await?,
            }),
        }
    }
}
