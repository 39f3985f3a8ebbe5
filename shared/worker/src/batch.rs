//! The worker function's logic: run each job of an SQS batch and name only the failed messages in
//! `batchItemFailures`, so one failing job never re-runs its neighbours.
//!
//! What becomes of a message:
//! - its job succeeded, or was requeued with a delay (rate-limit pause): deleted;
//! - its job failed and running it again can succeed (`JobError::retryable`, `Busy` included):
//!   named, so SQS redelivers it after the visibility timeout and, past the queue's
//!   `maxReceiveCount`, moves it to the dead-letter queue;
//! - its body is not a job, or its job can never succeed (unknown tenant, no App): logged and
//!   deleted at once. Redelivering such a message cannot change the outcome, so it is not sent
//!   round until the DLQ; the log line (message id, error) is the record.
//!
//! A message without an id cannot be named; it is logged (SQS always sets one).

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use chrono::Utc;
use futures::StreamExt;

use crate::expire::TranscriptArchive;
use crate::fan_out::fan_out_full;
use crate::pause;
use crate::run::run_in;
use crate::s3_events::{self, Completion, Uploads};
use crate::workspace::TenantWorkspace;
use syncplane_github::GithubError;
use syncplane_jobs::adapter::JobsAdapter;
use syncplane_jobs::held::{JobsFunction, JobsSchema};
use syncplane_jobs::redelivery::name_for_redelivery;
use syncplane_jobs::sqs::SqsAdapter;
use syncplane_jobs::tenants::Tenants;
use syncplane_jobs::{Job, JobError, JobOutcome};

/// Jobs of one batch run at once: each sync holds a lock connection and a working connection,
/// so two fit the default pool of five with room for the pause checks.
pub(crate) const DEFAULT_CONCURRENCY: usize = 2;

/// What became of one job.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Done,
    /// Sent back to the queue, visible after `delay` (the installation's rate-limit pause).
    Requeued {
        delay: Duration,
    },
    /// Not retried: invalid, or can never succeed.
    Dropped {
        reason: String,
    },
    /// Redeliver this message.
    Retry {
        reason: String,
    },
}

impl Verdict {
    /// The verdict's name in logs.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Requeued { .. } => "requeued",
            Self::Dropped { .. } => "dropped",
            Self::Retry { .. } => "retry",
        }
    }

    pub(crate) fn is_failure(&self) -> bool {
        matches!(self, Verdict::Retry { .. })
    }
}

impl From<Completion> for Verdict {
    fn from(c: Completion) -> Self {
        match c {
            Completion::Done => Self::Done,
            Completion::Retry(reason) => Self::Retry { reason },
            Completion::Dropped(reason) => Self::Dropped { reason },
        }
    }
}

/// The worker's state, built once per execution environment.
pub struct Worker {
    tenants: Arc<Tenants>,
    jobs: JobsAdapter,
    concurrency: usize,
    schema: JobsSchema,
    /// The transcript archive S3 notifications complete uploads in (`TRANSCRIPT_BUCKET`).
    archive: Option<Arc<dyn Uploads>>,
    /// The transcript archive `transcripts.expire` deletes from (`TRANSCRIPT_BUCKET`).
    retention: Option<TranscriptArchive>,
}

impl Worker {
    /// `jobs` is where follow-up jobs go: with SQS, full syncs fan out and paused jobs are
    /// requeued with a delay; inline, full syncs run here and paused jobs are redelivered.
    pub fn new(tenants: Arc<Tenants>, jobs: JobsAdapter) -> Self {
        Self {
            tenants,
            jobs,
            concurrency: DEFAULT_CONCURRENCY,
            schema: JobsSchema::new(JobsFunction::Worker),
            archive: None,
            retention: None,
        }
    }

    /// Complete transcript uploads from the bucket's S3 notifications (`s3_events`), in the
    /// first tenant's database.
    pub fn with_archive(mut self, archive: Arc<dyn Uploads>) -> Self {
        self.archive = Some(archive);
        self
    }

    /// Run `transcripts.expire` (the archive's retention) against `archive`.
    pub fn with_retention(mut self, archive: TranscriptArchive) -> Self {
        self.retention = Some(archive);
        self
    }

    /// The schema check of [`Worker::serve`] (tests: one that re-checks at once).
    pub fn with_schema(mut self, schema: JobsSchema) -> Self {
        self.schema = schema;
        self
    }

    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// What the worker function does with one SQS batch: the jobs of a tenant whose schema is
    /// behind this build are held back (`held`), the others run ([`Worker::handle`]).
    pub async fn serve(&self, event: SqsEvent) -> SqsBatchResponse {
        self.schema
            .worker_batch(&self.tenants, event, self.queue(), |batch| {
                self.handle(batch)
            })
            .await
    }

    /// One SQS batch: the response names only the messages to redeliver.
    pub async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        let verdicts: Vec<(Option<String>, Verdict)> = futures::stream::iter(event.records)
            .map(|message| async move {
                let verdict = self.handle_message(&message).await;
                (message.message_id, verdict)
            })
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        let mut response = SqsBatchResponse::default();
        for (id, verdict) in verdicts {
            if verdict.is_failure() && !name_for_redelivery(&mut response, id) {
                tracing::error!(
                    verdict = verdict.name(),
                    "a failed message has no id and cannot be named for redelivery"
                );
            }
        }
        response
    }

    /// One message: parse its body, then run its job.
    pub(crate) async fn handle_message(&self, message: &SqsMessage) -> Verdict {
        let id = message.message_id.as_deref().unwrap_or("");
        let receive_count = message
            .attributes
            .get("ApproximateReceiveCount")
            .map(String::as_str)
            .unwrap_or("");
        let body = message.body.as_deref().unwrap_or("");
        if let Some(notification) = s3_events::parse(body) {
            return s3_events::handle(id, notification, self.archive.as_ref())
                .await
                .into();
        }
        let job: Job = match serde_json::from_str(body) {
            Ok(job) => job,
            Err(e) => {
                // The body is never logged: a webhook payload may carry anything.
                tracing::error!(message_id = id, error = %e, "message is not a job; deleted");
                return Verdict::Dropped {
                    reason: format!("invalid job: {e}"),
                };
            }
        };
        let verdict = self.run_job(&job).await;
        match &verdict {
            Verdict::Retry { reason } => tracing::warn!(
                message_id = id, receive_count, kind = job.kind(), tenant = %job.tenant(), reason,
                "job failed; it will be redelivered"
            ),
            Verdict::Dropped { reason } => tracing::error!(
                message_id = id, kind = job.kind(), tenant = %job.tenant(), reason,
                "job cannot succeed; deleted"
            ),
            Verdict::Requeued { delay } => tracing::info!(
                message_id = id, kind = job.kind(), tenant = %job.tenant(), delay_secs = delay.as_secs(),
                "installation paused by its rate limit; job requeued"
            ),
            Verdict::Done => tracing::info!(
                message_id = id, kind = job.kind(), tenant = %job.tenant(), "job done"
            ),
        }
        verdict
    }

    /// Run one job, honouring the installation's rate-limit pause.
    pub async fn run_job(&self, job: &Job) -> Verdict {
        let tenant = job.tenant().as_str();
        let installation = self.installation_of(job);
        if let (Some(installation), Some(pool)) = (installation, self.tenants.pool(tenant)) {
            let now = Utc::now();
            match pause::active(pool, installation, now).await {
                Ok(Some(until)) => {
                    // Every tick submits a drain; a paused one is not worth keeping.
                    if matches!(job, Job::SyncDrain { .. }) {
                        return Verdict::Dropped {
                            reason: "rate-limit pause; the next tick drains again".into(),
                        };
                    }
                    return self.requeue(job, pause::requeue_delay(until, now)).await;
                }
                Ok(None) => {}
                Err(e) => {
                    return Verdict::Retry {
                        reason: format!("rate-limit pause unreadable: {e}"),
                    };
                }
            }
        }

        match self.execute(job).await {
            Ok(outcome) => {
                tracing::debug!(?outcome, "job outcome");
                Verdict::Done
            }
            Err(e) => {
                if let (Some(retry_at), Some(installation), Some(pool)) = (
                    pause::rate_limited_until(&e),
                    installation,
                    self.tenants.pool(tenant),
                ) {
                    return match pause::record(pool, installation, retry_at).await {
                        Ok(until) => {
                            self.requeue(job, pause::requeue_delay(until, Utc::now()))
                                .await
                        }
                        Err(db) => Verdict::Retry {
                            reason: format!("rate limited; pause not recorded: {db}"),
                        },
                    };
                }
                if e.retryable() {
                    Verdict::Retry {
                        reason: e.to_string(),
                    }
                } else {
                    Verdict::Dropped {
                        reason: e.to_string(),
                    }
                }
            }
        }
    }

    /// A full sync fans out through the queue; everything else runs as [`run_in`] does.
    async fn execute(&self, job: &Job) -> Result<JobOutcome, JobError> {
        let (Job::SyncFull { tenant, trigger }, JobsAdapter::Sqs(queue)) = (job, &self.jobs) else {
            return run_in(&self.tenants, self.retention.as_ref(), job).await;
        };
        let ws = self.tenants.workspace(tenant.as_str())?;
        let Some(fanned) = fan_out_full(&ws, *trigger, queue).await? else {
            return Ok(JobOutcome::Run { report: None });
        };
        if let (Some(e @ GithubError::RateLimited { retry_at, .. }), Some(inst)) =
            (&fanned.stopped_by, self.installation_of(job))
        {
            // The run is recorded failed (the schedule retries it); other jobs wait for the pause.
            if let Err(db) = pause::record(&ws.pool, inst, *retry_at).await {
                tracing::error!(error = %db, cause = %e, "rate-limit pause not recorded");
            }
        }
        Ok(JobOutcome::Run {
            report: Some(fanned.report),
        })
    }

    /// The GitHub App installation a job would call, if it calls GitHub at all.
    fn installation_of(&self, job: &Job) -> Option<i64> {
        if matches!(job, Job::SyncReap { .. } | Job::TranscriptsExpire { .. }) {
            return None;
        }
        let github = self
            .tenants
            .config(job.tenant().as_str())?
            .github
            .as_ref()?;
        i64::try_from(github.installation_id).ok()
    }

    /// The queue follow-up jobs go to, when jobs are queued.
    pub fn queue(&self) -> Option<&SqsAdapter> {
        self.jobs.queue()
    }

    /// Send the job back with a delay; without a queue (inline), have it redelivered instead.
    async fn requeue(&self, job: &Job, delay: Duration) -> Verdict {
        match &self.jobs {
            JobsAdapter::Sqs(queue) => match queue.send(job, Some(delay)).await {
                Ok(_) => Verdict::Requeued { delay },
                Err(e) => Verdict::Retry {
                    reason: format!("requeue failed: {e}"),
                },
            },
            JobsAdapter::Inline(_) => Verdict::Retry {
                reason: "rate-limit pause; no queue to requeue on".into(),
            },
        }
    }
}
