//! Serialization and locks (spec "Serialization and locks"; decision "advisory locks, no queue").
//!
//! Syncs of one repository never overlap: each takes a session-level Postgres advisory lock in
//! try mode on a dedicated connection. The key is the first 8 bytes of SHA-256 over a namespace
//! and the repository's GitHub id, so it can be taken before the repository's row exists and a
//! rename cannot let two syncs overlap. A lock dies with its connection: if a lock cannot be
//! released cleanly, its connection is closed instead of going back to the pool.

use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres};

/// Namespaces keep the key spaces of different lock kinds apart.
pub(crate) const REPO_NAMESPACE: &str = "syncplane:repo:";
pub(crate) const RUN_NAMESPACE: &str = "syncplane:run:";
pub(crate) const SCHEDULER_NAMESPACE: &str = "syncplane:scheduler:";

pub use syncplane_core::db::lock_key;

/// The lock key of a repository, by GitHub id.
pub fn repo_key(github_id: i64) -> i64 {
    lock_key(REPO_NAMESPACE, &github_id.to_string())
}

/// The lock key of a run, by its `sync_runs` id.
pub fn run_key(run_id: i64) -> i64 {
    lock_key(RUN_NAMESPACE, &run_id.to_string())
}

/// The cluster-wide lock that lets only one scheduled full sync of a tenant run at a time.
pub fn scheduler_key(tenant: &str) -> i64 {
    lock_key(SCHEDULER_NAMESPACE, tenant)
}

/// A held session advisory lock and the connection that holds it.
#[derive(Debug)]
pub struct HeldLock {
    conn: Option<PoolConnection<Postgres>>,
    key: i64,
}

impl HeldLock {
    /// Try to take `key` on a dedicated connection. `Ok(None)`: someone else holds it.
    pub async fn try_acquire(pool: &PgPool, key: i64) -> Result<Option<Self>, sqlx::Error> {
        let mut conn = pool.acquire().await?;
        let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(key)
            .fetch_one(&mut *conn)
            .await?;
        Ok(got.then_some(Self {
            conn: Some(conn),
            key,
        }))
    }

    pub fn key(&self) -> i64 {
        self.key
    }

    /// Whether the lock is still held (false after its connection was lost).
    pub(crate) async fn is_held(&mut self) -> bool {
        let Some(conn) = self.conn.as_mut() else {
            return false;
        };
        sqlx::query_scalar::<_, bool>(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
               AND granted AND ((classid::bigint << 32) | objid::bigint) = $1)",
        )
        .bind(self.key)
        .fetch_one(&mut **conn)
        .await
        .unwrap_or(false)
    }

    /// Release the lock and return the connection to the pool. If the unlock fails, the
    /// connection is closed, which releases the lock too.
    pub async fn release(mut self) {
        if let Some(mut conn) = self.conn.take() {
            let unlocked: Result<bool, _> = sqlx::query_scalar("SELECT pg_advisory_unlock($1)")
                .bind(self.key)
                .fetch_one(&mut *conn)
                .await;
            if !matches!(unlocked, Ok(true)) {
                let _ = conn.close().await;
            }
        }
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        // Dropped without `release` (a panic or a cancelled future): never hand a connection
        // that holds a lock back to the pool.
        if let Some(mut conn) = self.conn.take() {
            conn.close_on_drop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn keys_are_stable_and_namespaced() {
        assert_eq!(repo_key(42), repo_key(42));
        assert_ne!(repo_key(42), repo_key(43));
        assert_ne!(repo_key(42), run_key(42), "namespaces differ");
        let digest = Sha256::digest(b"syncplane:repo:42");
        assert_eq!(repo_key(42).to_be_bytes(), digest[..8]);
    }
}
