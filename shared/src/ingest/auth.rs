//! Device-token authentication (contract step 1). Only a SHA-256 of each token is stored; the
//! lookup is by that hash, and the stored hash is compared in constant time before it is trusted.
//! The same query brings the org's policy and gates, which later steps decide on.

use http::HeaderMap;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use subtle::ConstantTimeEq;

use super::error::{IngestError, db_failure};
use crate::http::bearer_token;

/// The global feature flag of the capability (table `feature_flags`).
pub const FEATURE_FLAG: &str = "agent_session_sync";

/// Who a valid token speaks for, and the org settings ingest decides on.
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

/// SHA-256 of a token, as stored.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Step 1: 401 unless the header carries a known, unrevoked token.
pub async fn authenticate(pool: &PgPool, headers: &HeaderMap) -> Result<Device, IngestError> {
    let token = bearer_token(headers).ok_or(IngestError::Unauthenticated)?;
    let hash = token_hash(token);
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
    .map_err(db_failure("authenticate"))?;
    let Some((token_id, stored, revoked, user_id, org_id, sync, gate, global, frustration)) = row
    else {
        return Err(IngestError::Unauthenticated);
    };
    if !bool::from(stored.ct_eq(hash.as_slice())) || revoked {
        return Err(IngestError::Unauthenticated);
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
) -> Result<bool, IngestError> {
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
    .map_err(db_failure("resolve compute target"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(http::header::AUTHORIZATION, v.parse().unwrap());
        m
    }

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer_token(&h("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&h("bEARER   abc ")), Some("abc"));
        assert_eq!(bearer_token(&h("Basic abc")), None);
        assert_eq!(bearer_token(&h("Bearer")), None);
        assert_eq!(bearer_token(&h("Bearer ")), None);
    }
}
