//! Rate limit per compute target (contract step 4), shared by every server instance: one atomic
//! statement counts the batch in the target's current minute window (and drops the target's
//! older windows), so concurrent instances never lose a count.

use sqlx::PgPool;
use syncplane_contract::{RATE_LIMITED_RETRY_AFTER_MAX_SECS, RATE_LIMITED_RETRY_AFTER_MIN_SECS};

use super::error::{IngestError, db_failure};

/// The windows counted: per compute target the metadata lane's batches and the transcript lane's
/// upload intents, apart (the two lanes share nothing; contract "intent", step 2); per read
/// token its transcript searches and, apart, its exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Batches,
    TranscriptIntents,
    /// Transcript searches, per read token (its id).
    TranscriptSearches,
    /// Session and transcript exports, per read token (its id).
    TranscriptExports,
}

/// One atomic statement over a window table (`$table`, keyed by `$key` as `$1$cast`, counting in
/// `$count`): count one in the current minute, drop the key's older windows, answer the count
/// and the seconds left in the minute.
#[rustfmt::skip]
macro_rules! count_in_window {
    ($table:literal, $key:literal, $cast:literal, $count:literal) => {
        concat!(
            "WITH expired AS (DELETE FROM ", $table, " WHERE ", $key, " = $1", $cast,
            " AND window_start < date_trunc('minute', now())) ",
            "INSERT INTO ", $table, " AS r (", $key, ", window_start, ", $count, ") ",
            "VALUES ($1", $cast, ", date_trunc('minute', now()), 1) ",
            "ON CONFLICT (", $key, ", window_start) DO UPDATE SET ", $count, " = r.", $count, " + 1 ",
            "RETURNING r.", $count,
            ", extract(epoch FROM r.window_start + interval '1 minute' - now())::float8"
        )
    };
}

impl Window {
    fn statement(self) -> &'static str {
        match self {
            Self::Batches => {
                count_in_window!("ingest_rate_limits", "compute_target_id", "", "batches")
            }
            Self::TranscriptIntents => count_in_window!(
                "transcript_rate_limits",
                "compute_target_id",
                "",
                "requests"
            ),
            Self::TranscriptSearches => count_in_window!(
                "transcript_search_rate_limits",
                "read_token_id",
                "::bigint",
                "requests"
            ),
            Self::TranscriptExports => count_in_window!(
                "transcript_export_rate_limits",
                "read_token_id",
                "::bigint",
                "requests"
            ),
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
