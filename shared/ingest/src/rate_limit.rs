//! Rate limit per compute target (contract step 4), shared by every server instance: one atomic
//! statement counts the batch in the target's current minute window (and drops the target's
//! older windows), so concurrent instances never lose a count.

use sqlx::PgPool;
use syncplane_contract::{RATE_LIMITED_RETRY_AFTER_MAX_SECS, RATE_LIMITED_RETRY_AFTER_MIN_SECS};

use super::error::{IngestError, db_failure};

/// The windows counted: per compute target the metadata lane's batches and the transcript lane's
/// upload intents, apart (the two lanes share nothing; contract "intent", step 2); per read
/// token its transcript searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Batches,
    TranscriptIntents,
    /// Transcript searches, per read token (its id).
    TranscriptSearches,
}

impl Window {
    /// One atomic statement per window table: count one in the current minute, drop the target's
    /// older windows, answer the count and the seconds left in the minute.
    fn statement(self) -> &'static str {
        match self {
            Self::Batches => {
                "WITH expired AS (
                     DELETE FROM ingest_rate_limits
                      WHERE compute_target_id = $1 AND window_start < date_trunc('minute', now())
                 )
                 INSERT INTO ingest_rate_limits AS r (compute_target_id, window_start, batches)
                 VALUES ($1, date_trunc('minute', now()), 1)
                 ON CONFLICT (compute_target_id, window_start)
                 DO UPDATE SET batches = r.batches + 1
                 RETURNING r.batches,
                           extract(epoch FROM r.window_start + interval '1 minute' - now())::float8"
            }
            Self::TranscriptIntents => {
                "WITH expired AS (
                     DELETE FROM transcript_rate_limits
                      WHERE compute_target_id = $1 AND window_start < date_trunc('minute', now())
                 )
                 INSERT INTO transcript_rate_limits AS r (compute_target_id, window_start, requests)
                 VALUES ($1, date_trunc('minute', now()), 1)
                 ON CONFLICT (compute_target_id, window_start)
                 DO UPDATE SET requests = r.requests + 1
                 RETURNING r.requests,
                           extract(epoch FROM r.window_start + interval '1 minute' - now())::float8"
            }
            Self::TranscriptSearches => {
                "WITH expired AS (
                     DELETE FROM transcript_search_rate_limits
                      WHERE read_token_id = $1::bigint
                        AND window_start < date_trunc('minute', now())
                 )
                 INSERT INTO transcript_search_rate_limits AS r (read_token_id, window_start, requests)
                 VALUES ($1::bigint, date_trunc('minute', now()), 1)
                 ON CONFLICT (read_token_id, window_start)
                 DO UPDATE SET requests = r.requests + 1
                 RETURNING r.requests,
                           extract(epoch FROM r.window_start + interval '1 minute' - now())::float8"
            }
        }
    }
}

/// Count this batch; 429 with the seconds until the window ends when over `limit`.
pub async fn check(pool: &PgPool, target: &str, limit: u32) -> Result<(), IngestError> {
    check_window(pool, Window::Batches, target, limit).await
}

/// Count one request in `window`; 429 with the seconds until the window ends when over `limit`.
pub(crate) async fn check_window(
    pool: &PgPool,
    window: Window,
    target: &str,
    limit: u32,
) -> Result<(), IngestError> {
    let (count, secs_left): (i32, f64) = sqlx::query_as(window.statement())
        .bind(target)
        .fetch_one(pool)
        .await
        .map_err(db_failure("rate limit"))?;
    if i64::from(count) > i64::from(limit) {
        // Whole seconds, rounded up, at least 1.
        let retry_after_secs = secs_left.ceil().clamp(
            RATE_LIMITED_RETRY_AFTER_MIN_SECS as f64,
            RATE_LIMITED_RETRY_AFTER_MAX_SECS as f64,
        ) as u64;
        return Err(IngestError::RateLimited { retry_after_secs });
    }
    Ok(())
}
