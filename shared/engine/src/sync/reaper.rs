//! The reaper (spec "Serialization and locks"): `running` rows older than a grace period whose
//! run lock is not held are marked failed. Liveness is decided by the lock, never by the row.

use std::time::Duration;

use sqlx::PgPool;

use crate::sync::failure::REAPED_ERROR;

/// Mark dead runs failed; returns how many were reaped.
pub async fn reap(pool: &PgPool, grace: Duration) -> Result<u32, sqlx::Error> {
    let grace_secs = grace.as_secs_f64();
    let candidates: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT id, lock_key FROM sync_runs
         WHERE status = 'running' AND started_at < clock_timestamp() - make_interval(secs => $1)",
    )
    .bind(grace_secs)
    .fetch_all(pool)
    .await?;
    if candidates.is_empty() {
        return Ok(0);
    }
    // Probing a lock takes it for a moment: do it on one dedicated connection and let go at once.
    let mut conn = pool.acquire().await?;
    let mut reaped = 0;
    for (id, key) in candidates {
        let free: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(key)
            .fetch_one(&mut *conn)
            .await?;
        if !free {
            continue; // a live process holds it
        }
        let marked = sqlx::query(
            "UPDATE sync_runs SET status = 'failed', finished_at = clock_timestamp(), error = $2
             WHERE id = $1 AND status = 'running'",
        )
        .bind(id)
        .bind(REAPED_ERROR)
        .execute(&mut *conn)
        .await;
        let _ = sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(key)
            .execute(&mut *conn)
            .await;
        if marked?.rows_affected() > 0 {
            tracing::warn!(run_id = id, "reaped a run left by a dead process");
            reaped += 1;
        }
    }
    Ok(reaped)
}
