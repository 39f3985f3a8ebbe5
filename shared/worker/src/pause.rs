//! The rate-limit pause shared by all workers: when an installation's rate limit is exhausted,
//! the time GitHub gave is kept in Postgres (`github_rate_limit_pauses`), so every worker (each
//! Lambda execution environment has its own client and cannot see another's limit) leaves that
//! installation alone until then, and requeues its jobs with a delay instead of calling GitHub.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use syncplane_engine::sync::repository::SyncError;
use syncplane_github::GithubError;
use syncplane_jobs::JobError;
use syncplane_jobs::sqs::MAX_DELAY;

/// Record that `installation_id` is paused until `retry_at`; an existing later pause is kept.
/// Returns the pause now in force.
pub async fn record(
    pool: &PgPool,
    installation_id: i64,
    retry_at: DateTime<Utc>,
) -> Result<DateTime<Utc>, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO github_rate_limit_pauses (installation_id, paused_until, updated_at)
         VALUES ($1, $2, now())
         ON CONFLICT (installation_id) DO UPDATE
             SET paused_until = greatest(github_rate_limit_pauses.paused_until, excluded.paused_until),
                 updated_at = now()
         RETURNING paused_until",
    )
    .bind(installation_id)
    .bind(retry_at)
    .fetch_one(pool)
    .await
}

/// The end of the installation's pause, if it has not ended at `now`.
pub async fn active(
    pool: &PgPool,
    installation_id: i64,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT paused_until FROM github_rate_limit_pauses
         WHERE installation_id = $1 AND paused_until > $2",
    )
    .bind(installation_id)
    .bind(now)
    .fetch_optional(pool)
    .await
}

/// The time GitHub gave, when a job stopped on an exhausted rate limit.
pub(crate) fn rate_limited_until(error: &JobError) -> Option<DateTime<Utc>> {
    match error {
        JobError::Sync(SyncError::RunStopped(GithubError::RateLimited { retry_at, .. })) => {
            Some(*retry_at)
        }
        _ => None,
    }
}

/// How long to delay a requeued job: until the pause ends (at least one second), at most what
/// SQS allows; a longer pause just sends the job round again.
pub(crate) fn requeue_delay(paused_until: DateTime<Utc>, now: DateTime<Utc>) -> Duration {
    let remaining = (paused_until - now).to_std().unwrap_or(Duration::ZERO);
    remaining.clamp(Duration::from_secs(1), MAX_DELAY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requeue_waits_for_the_pause_but_never_past_fifteen_minutes() {
        let now = Utc::now();
        assert_eq!(
            requeue_delay(now + chrono::Duration::seconds(30), now),
            Duration::from_secs(30)
        );
        assert_eq!(
            requeue_delay(now + chrono::Duration::hours(1), now),
            MAX_DELAY
        );
        assert_eq!(requeue_delay(now, now), Duration::from_secs(1));
    }
}
