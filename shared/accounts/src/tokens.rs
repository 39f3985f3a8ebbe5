//! Tokens, by kind: a device token (`spd_`, what a desktop client syncs with, one user's in one
//! org) and a read token (`spr_`, what the web app reads one org's archive with). Both are 32
//! random bytes shown once in hex; only a SHA-256 of each is stored (`device_tokens`,
//! `read_tokens`). A check looks the token up by that hash and compares the stored hash in
//! constant time before trusting it; a token of the other kind is unknown to it.
//!
//! The device check (contract step 1) brings the org's policy and gates in the same query, which
//! the metadata lane decides on later (steps 6 and 7); [`owns_target`] is its step 3.

use http::HeaderMap;
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::{PgExecutor, PgPool};
use subtle::ConstantTimeEq;
use syncplane_core::http::bearer_token;

use crate::error::{AccountsError, failed};
pub use crate::kind::{DEVICE_TOKEN_PREFIX, READ_TOKEN_PREFIX, TokenKind};

/// The global feature flag of the metadata lane (table `feature_flags`).
pub(crate) const FEATURE_FLAG: &str = "agent_session_sync";
/// SHA-256 of a token, as stored.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// A new token of `kind`: its prefix and 32 random bytes in hex.
fn new_token(kind: TokenKind) -> String {
    let mut raw = [0u8; 32];
    rand::rng().fill_bytes(&mut raw);
    format!("{}{}", kind.prefix(), hex::encode(raw))
}

/// The presented token of `kind`, hashed: 401 without a bearer token of its prefix.
fn presented(headers: &HeaderMap, kind: TokenKind) -> Result<[u8; 32], AccountsError> {
    let token = bearer_token(headers)
        .filter(|t| kind == TokenKind::Device || t.starts_with(kind.prefix()))
        .ok_or(AccountsError::Unauthenticated(kind))?;
    Ok(token_hash(token))
}

/// Whether a stored row trusts the presented hash: equal in constant time and not revoked.
fn trusted(stored: &[u8], presented: &[u8; 32], revoked: bool) -> bool {
    bool::from(stored.ct_eq(presented.as_slice())) && !revoked
}

/// Who a valid device token speaks for, and the org settings ingest decides on.
#[derive(Debug, Clone)]
pub struct Device {
    pub token_id: i64,
    pub user_id: i64,
    pub org_id: i64,
    /// `None`: the org has no sync policy row (counts as disabled).
    pub org_sync_enabled: Option<bool>,
    pub org_gate_enabled: bool,
    /// `None`: the global flag row is missing (counts as off).
    pub global_gate_enabled: Option<bool>,
    pub frustration_opt_in: bool,
}

impl Device {
    /// Step 6: fail-closed, no policy row is disabled.
    pub fn sync_policy_allows(&self) -> bool {
        self.org_sync_enabled == Some(true)
    }
    /// Step 7: the org-level and the global switch must both be on.
    pub fn feature_gate_allows(&self) -> bool {
        self.org_gate_enabled && self.global_gate_enabled == Some(true)
    }
}

/// Step 1: 401 unless the header carries a known, unrevoked device token.
pub async fn authenticate(pool: &PgPool, headers: &HeaderMap) -> Result<Device, AccountsError> {
    let hash = presented(headers, TokenKind::Device)?;
    type Row = (
        i64,
        Vec<u8>,
        bool,
        i64,
        i64,
        Option<bool>,
        bool,
        Option<bool>,
        bool,
    );
    let row: Option<Row> = sqlx::query_as(
        "SELECT t.id, t.token_hash, t.revoked_at IS NOT NULL, t.user_id, t.org_id,
                p.session_sync_enabled, o.session_sync_gate,
                (SELECT f.enabled FROM feature_flags f WHERE f.name = $2),
                o.frustration_opt_in
           FROM device_tokens t
           JOIN orgs o ON o.id = t.org_id
           LEFT JOIN org_sync_policies p ON p.org_id = t.org_id
          WHERE t.token_hash = $1",
    )
    .bind(hash.as_slice())
    .bind(FEATURE_FLAG)
    .fetch_optional(pool)
    .await
    .map_err(failed("authenticate"))?;
    let Some((token_id, stored, revoked, user_id, org_id, sync, gate, global, frustration)) = row
    else {
        return Err(AccountsError::Unauthenticated(TokenKind::Device));
    };
    if !trusted(&stored, &hash, revoked) {
        return Err(AccountsError::Unauthenticated(TokenKind::Device));
    }
    Ok(Device {
        token_id,
        user_id,
        org_id,
        org_sync_enabled: sync,
        org_gate_enabled: gate,
        global_gate_enabled: global,
        frustration_opt_in: frustration,
    })
}

/// Step 3: the target must belong to the token's user in the token's org.
pub async fn owns_target(
    pool: &PgPool,
    device: &Device,
    target: &str,
) -> Result<bool, AccountsError> {
    if target.contains('\0') {
        // No stored id holds U+0000 (Postgres text cannot), so no target is named.
        return Ok(false);
    }
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM compute_targets WHERE id = $1 AND user_id = $2 AND org_id = $3)",
    )
    .bind(target)
    .bind(device.user_id)
    .bind(device.org_id)
    .fetch_one(pool)
    .await
    .map_err(failed("resolve compute target"))
}

/// Who a valid read token reads for: one org's archive, nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reader {
    pub token_id: i64,
    pub org_id: i64,
}

/// 401 unless the header carries a known, unrevoked read token. A device token is no read token
/// (its prefix is not `spr_`, and its hash is not in `read_tokens`).
pub async fn authenticate_reader(
    pool: &PgPool,
    headers: &HeaderMap,
) -> Result<Reader, AccountsError> {
    let hash = presented(headers, TokenKind::Read)?;
    let row: Option<(i64, Vec<u8>, bool, i64)> = sqlx::query_as(
        "SELECT id, token_hash, revoked_at IS NOT NULL, org_id FROM read_tokens
          WHERE token_hash = $1",
    )
    .bind(hash.as_slice())
    .fetch_optional(pool)
    .await
    .map_err(failed("authenticate read token"))?;
    match row {
        Some((token_id, stored, revoked, org_id)) if trusted(&stored, &hash, revoked) => {
            Ok(Reader { token_id, org_id })
        }
        _ => Err(AccountsError::Unauthenticated(TokenKind::Read)),
    }
}

/// A freshly issued token: show `token` once; it is not stored.
pub struct IssuedToken {
    pub id: i64,
    pub token: String,
}

/// Without the token: a `{:?}` in a log line must not carry it.
impl std::fmt::Debug for IssuedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedToken")
            .field("id", &self.id)
            .field("token", &"[shown once]")
            .finish()
    }
}

/// Issue a device token for `user_id`, in the user's org. `RowNotFound` when the user does not
/// exist.
pub async fn issue_device_token(
    db: impl PgExecutor<'_>,
    user_id: i64,
    label: Option<&str>,
) -> Result<IssuedToken, sqlx::Error> {
    let token = new_token(TokenKind::Device);
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO device_tokens (token_hash, user_id, org_id, label)
         SELECT $1, id, org_id, $3 FROM users WHERE id = $2
         RETURNING id",
    )
    .bind(token_hash(&token).as_slice())
    .bind(user_id)
    .bind(label)
    .fetch_optional(db)
    .await?
    .ok_or(sqlx::Error::RowNotFound)?;
    Ok(IssuedToken { id, token })
}

/// Issue a read token for `org_id`. `RowNotFound` when the org does not exist.
pub async fn issue_read_token(
    pool: &PgPool,
    org_id: i64,
    label: Option<&str>,
) -> Result<IssuedToken, sqlx::Error> {
    let token = new_token(TokenKind::Read);
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO read_tokens (token_hash, org_id, label)
         SELECT $1, id, $3 FROM orgs WHERE id = $2
         RETURNING id",
    )
    .bind(token_hash(&token).as_slice())
    .bind(org_id)
    .bind(label)
    .fetch_optional(pool)
    .await?
    .ok_or(sqlx::Error::RowNotFound)?;
    Ok(IssuedToken { id, token })
}

/// Revoke a token of `kind`; false if it does not exist or was already revoked.
pub async fn revoke(pool: &PgPool, kind: TokenKind, token_id: i64) -> Result<bool, sqlx::Error> {
    let sql = match kind {
        TokenKind::Device => {
            "UPDATE device_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL"
        }
        TokenKind::Read => {
            "UPDATE read_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL"
        }
    };
    let done = sqlx::query(sql).bind(token_id).execute(pool).await?;
    Ok(done.rows_affected() == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_token_has_its_kinds_prefix_and_32_random_bytes() {
        for kind in [TokenKind::Device, TokenKind::Read] {
            let a = new_token(kind);
            let b = new_token(kind);
            assert!(a.starts_with(kind.prefix()));
            assert_eq!(a.len(), kind.prefix().len() + 64);
            assert_ne!(a, b);
        }
    }

    #[test]
    fn a_device_token_is_refused_where_a_read_token_is_asked_for() {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::AUTHORIZATION,
            "Bearer spd_abc".parse().unwrap(),
        );
        assert!(matches!(
            presented(&h, TokenKind::Read),
            Err(AccountsError::Unauthenticated(TokenKind::Read))
        ));
        assert!(presented(&h, TokenKind::Device).is_ok());
    }

    #[test]
    fn a_revoked_or_different_hash_is_not_trusted() {
        let hash = token_hash("spr_x");
        assert!(trusted(&hash, &hash, false));
        assert!(!trusted(&hash, &hash, true));
        assert!(!trusted(&token_hash("spr_y"), &hash, false));
    }
}
