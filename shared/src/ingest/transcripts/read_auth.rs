//! Read tokens (docs/transcript-wire-contract.md "Reading"): what the web app reads a session's
//! archive with. One org each, issued by an operator (`syncplane ingest issue-read-token`), shown
//! once as `spr_` and 64 hex digits; only its SHA-256 is stored (`read_tokens`). The lookup is by
//! that hash, and the stored hash is compared in constant time before it is trusted, as device
//! tokens are ([`super::super::auth`]).

use http::HeaderMap;
use rand::RngCore;
use sqlx::PgPool;
use subtle::ConstantTimeEq;

use super::super::auth::token_hash;
use super::super::error::{IngestError, db_failure};
use crate::http::bearer_token;

/// A read token's prefix (a device token's is `spd_`).
pub const READ_TOKEN_PREFIX: &str = "spr_";

/// Who a valid read token reads for: one org's archive, nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reader {
    pub token_id: i64,
    pub org_id: i64,
}

/// 401 `unauthenticated` unless the header carries a known, unrevoked read token. A device
/// token is no read token (its hash is not in `read_tokens`).
pub async fn authenticate(pool: &PgPool, headers: &HeaderMap) -> Result<Reader, IngestError> {
    let token = bearer_token(headers).ok_or(IngestError::ReadUnauthenticated)?;
    if !token.starts_with(READ_TOKEN_PREFIX) {
        return Err(IngestError::ReadUnauthenticated);
    }
    let hash = token_hash(token);
    let row: Option<(i64, Vec<u8>, bool, i64)> = sqlx::query_as(
        "SELECT id, token_hash, revoked_at IS NOT NULL, org_id FROM read_tokens
          WHERE token_hash = $1",
    )
    .bind(hash.as_slice())
    .fetch_optional(pool)
    .await
    .map_err(db_failure("authenticate read token"))?;
    let Some((token_id, stored, revoked, org_id)) = row else {
        return Err(IngestError::ReadUnauthenticated);
    };
    if !bool::from(stored.ct_eq(hash.as_slice())) || revoked {
        return Err(IngestError::ReadUnauthenticated);
    }
    Ok(Reader { token_id, org_id })
}

/// A freshly issued read token: show `token` once; it is not stored.
#[derive(Debug)]
pub struct IssuedReadToken {
    pub id: i64,
    pub token: String,
}

/// Issue a read token for `org_id` (`spr_` + 32 random bytes in hex); only its SHA-256 is kept.
/// `RowNotFound` when the org does not exist.
pub async fn issue_read_token(
    pool: &PgPool,
    org_id: i64,
    label: Option<&str>,
) -> Result<IssuedReadToken, sqlx::Error> {
    let mut raw = [0u8; 32];
    rand::rng().fill_bytes(&mut raw);
    let token = format!("{READ_TOKEN_PREFIX}{}", hex::encode(raw));
    let hash = token_hash(&token);
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO read_tokens (token_hash, org_id, label)
         SELECT $1, id, $3 FROM orgs WHERE id = $2
         RETURNING id",
    )
    .bind(hash.as_slice())
    .bind(org_id)
    .bind(label)
    .fetch_optional(pool)
    .await?
    .ok_or(sqlx::Error::RowNotFound)?;
    Ok(IssuedReadToken { id, token })
}

/// Revoke a read token; false if it does not exist or was already revoked.
pub async fn revoke_read_token(pool: &PgPool, token_id: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE read_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL",
    )
    .bind(token_id)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}
