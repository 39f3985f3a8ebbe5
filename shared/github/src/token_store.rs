//! The installation token shared by every process of a tenant, kept in Postgres
//! (`github_installation_tokens`, encrypted: see `token_cipher`).
//!
//! Why: GitHub scopes an ETag to the token that received it. When each process (each CLI run, each
//! Lambda execution environment) minted its own token, the ETag another process stored never
//! matched, and spec "One repository", step 1 ("a 304 costs no rate limit; an unchanged repository
//! costs one request") held only within one process. With one token per installation, it holds
//! across processes for the token's life.
//!
//! How a process gets a token once its in-memory cache (`token.rs`) has none to offer:
//! 1. Read the row. A token that opens, is not within the refresh margin of its expiry and is not
//!    the one GitHub just refused is reused: no exchange.
//! 2. Otherwise take the mint lock (a transaction advisory lock per installation, waited for at
//!    most `ClientOptions::token_lock_wait`) and read the row again: a process that held the lock
//!    meanwhile has stored a fresh token, which is reused.
//! 3. Otherwise exchange a token with GitHub and store it (a new nonce) before releasing the lock.
//!
//! Faults: a row that does not open (the App key changed, the row was altered or copied) counts
//! as no row and is overwritten by the next mint. A database error (unreachable, table missing,
//! lock wait exceeded) never stops a sync: the process mints a token for itself and keeps it in
//! memory only, as every process did before this store existed; the cost is that ETags stored by
//! other processes answer 200 until the database is back. The cause is logged, never the token.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgExecutor, PgPool, Postgres, Transaction};
use tracing::{debug, info, warn};

use super::error::GithubError;
use super::token::IssuedToken;
use super::token_cipher::{Sealed, TokenCipher};

const LOCK_NAMESPACE: &str = "syncplane:installation-token:";

/// One installation's row in the shared store.
#[derive(Debug)]
pub(crate) struct TokenStore {
    pool: PgPool,
    cipher: TokenCipher,
    api_url: String,
    installation_id: i64,
    lock_key: i64,
    lock_wait: Duration,
}

impl TokenStore {
    pub(crate) fn new(
        pool: PgPool,
        private_key_pem: &str,
        api_url: &str,
        app_id: u64,
        installation_id: u64,
        lock_wait: Duration,
    ) -> Self {
        let api_url = api_url.trim_end_matches('/').to_owned();
        let lock_key =
            syncplane_core::db::lock_key(LOCK_NAMESPACE, &format!("{installation_id}@{api_url}"));
        Self {
            pool,
            cipher: TokenCipher::new(private_key_pem, &api_url, app_id, installation_id),
            // An id past i64 cannot be stored (the check fails): such a client mints in memory.
            installation_id: i64::try_from(installation_id).unwrap_or(-1),
            api_url,
            lock_key,
            lock_wait,
        }
    }

    /// A usable stored token, or one minted by `mint` (stored unless the database failed).
    pub(crate) async fn obtain(
        &self,
        usable: impl Fn(&IssuedToken) -> bool,
        mint: impl AsyncFnOnce() -> Result<IssuedToken, GithubError>,
    ) -> Result<IssuedToken, GithubError> {
        match self.read(&self.pool).await {
            Ok(Some(token)) if usable(&token) => {
                debug!(
                    installation_id = self.installation_id,
                    "installation token reused from the database"
                );
                return Ok(token);
            }
            Ok(_) => {}
            Err(e) => return self.unshared(&e, mint).await,
        }
        let mut tx = match self.lock().await {
            Ok(tx) => tx,
            Err(e) => return self.unshared(&e, mint).await,
        };
        match self.read(&mut *tx).await {
            Ok(Some(token)) if usable(&token) => {
                debug!(
                    installation_id = self.installation_id,
                    "installation token stored by another process meanwhile"
                );
                let _ = tx.commit().await;
                return Ok(token);
            }
            Ok(_) => {}
            Err(e) => return self.unshared(&e, mint).await,
        }
        // On a failed exchange the transaction is dropped, which releases the lock.
        let fresh = mint().await?;
        match self.write(&mut tx, &fresh).await {
            Ok(()) => match tx.commit().await {
                Ok(()) => {
                    info!(installation_id = self.installation_id, expires_at = %fresh.expires_at, "installation token minted and shared")
                }
                Err(e) => self.log_unshared(&e),
            },
            Err(e) => self.log_unshared(&e),
        }
        Ok(fresh)
    }

    /// The stored token; `None` when there is no row or it does not open.
    async fn read(&self, db: impl PgExecutor<'_>) -> Result<Option<IssuedToken>, sqlx::Error> {
        let row: Option<(Vec<u8>, Vec<u8>, DateTime<Utc>)> = sqlx::query_as(
            "SELECT nonce, ciphertext, expires_at FROM github_installation_tokens
             WHERE api_url = $1 AND installation_id = $2",
        )
        .bind(&self.api_url)
        .bind(self.installation_id)
        .fetch_optional(db)
        .await?;
        let Some((nonce, ciphertext, expires_at)) = row else {
            return Ok(None);
        };
        let opened = self.cipher.open(&Sealed { nonce, ciphertext });
        if opened.is_none() {
            warn!(
                installation_id = self.installation_id,
                "the stored installation token does not decrypt (the App key changed?); minting a new one"
            );
        }
        Ok(opened.map(|value| IssuedToken { value, expires_at }))
    }

    /// A transaction holding the installation's mint lock (released when it ends).
    async fn lock(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        // A lock wait past this fails with lock_not_available instead of blocking the sync.
        sqlx::query("SELECT set_config('lock_timeout', $1, true)")
            .bind(format!("{}ms", self.lock_wait.as_millis().max(1)))
            .execute(&mut *tx)
            .await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(self.lock_key)
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    async fn write(
        &self,
        tx: &mut Transaction<'static, Postgres>,
        token: &IssuedToken,
    ) -> Result<(), sqlx::Error> {
        let sealed = self.cipher.seal(&token.value);
        sqlx::query(
            "INSERT INTO github_installation_tokens (api_url, installation_id, nonce, ciphertext, expires_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (api_url, installation_id) DO UPDATE
                 SET nonce = excluded.nonce, ciphertext = excluded.ciphertext,
                     expires_at = excluded.expires_at, updated_at = clock_timestamp()",
        )
        .bind(&self.api_url)
        .bind(self.installation_id)
        .bind(&sealed.nonce)
        .bind(&sealed.ciphertext)
        .bind(token.expires_at)
        .execute(&mut **tx)
        .await
        .map(|_| ())
    }

    /// The database failed: mint a token for this process only.
    async fn unshared(
        &self,
        error: &sqlx::Error,
        mint: impl AsyncFnOnce() -> Result<IssuedToken, GithubError>,
    ) -> Result<IssuedToken, GithubError> {
        self.log_unshared(error);
        mint().await
    }

    fn log_unshared(&self, error: &sqlx::Error) {
        let lock_wait = error
            .as_database_error()
            .and_then(|e| e.code())
            .is_some_and(|code| code == "55P03");
        if lock_wait {
            warn!(
                installation_id = self.installation_id,
                waited_ms = self.lock_wait.as_millis() as u64,
                "another process is still minting the installation token; this process uses its own"
            );
        } else {
            warn!(
                installation_id = self.installation_id,
                error = %error,
                "shared installation token store unavailable; this process uses a token of its own"
            );
        }
    }
}
