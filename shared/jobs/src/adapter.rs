//! Jobs adapters (docs/design.md "Jobs"): `inline` runs the job in the calling process before
//! returning (local runs and tests); `sqs` sends it to the queue and the worker function runs it.
//! A Lambda cannot work after it has answered, so deployed webhook and sync-api functions use `sqs`.
//!
//! The inline adapter runs jobs through a [`JobRunner`] it is given where the application is
//! assembled (the worker's runner, made by an [`InlineRunner`]): the mailbox knows what a job is,
//! not how one runs.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::sqs::{SqsAdapter, SubmitError};
use crate::tenants::Tenants;
use crate::{Job, JobError, JobOutcome};

/// What runs a job handed to the inline adapter.
pub trait JobRunner: Send + Sync {
    fn run<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Result<JobOutcome, JobError>>;
}

/// Makes the inline adapter's runner over a process's tenants: the worker's
/// (`syncplane_worker::runner`), handed over where a process is assembled. A function built
/// without it (the webhook and the tick without their `inline-jobs` feature) runs no job in
/// process and refuses `JOBS_BACKEND=inline` at its start ([`crate::app::AppError`]).
pub type InlineRunner = Arc<dyn Fn(Arc<Tenants>) -> Arc<dyn JobRunner> + Send + Sync>;

/// Where submitted jobs go.
#[derive(Clone)]
pub enum JobsAdapter {
    Inline(Arc<dyn JobRunner>),
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

impl JobsAdapter {
    pub async fn submit(&self, job: &Job) -> Result<Submitted, SubmitError> {
        match self {
            Self::Inline(runner) => Ok(Submitted::Ran(runner.run(job).await)),
            Self::Sqs(sqs) => Ok(Submitted::Queued {
                message_id: sqs.send(job, None).await?,
            }),
        }
    }

    /// The queue, when jobs are queued.
    pub fn queue(&self) -> Option<&SqsAdapter> {
        match self {
            Self::Sqs(queue) => Some(queue),
            Self::Inline(_) => None,
        }
    }
}
