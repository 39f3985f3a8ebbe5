//! Ingest provisioning that several tests start from.

use shared::accounts::provision::{self, NewOrg};
use shared::accounts::tokens;
use sqlx::PgPool;

/// Org `acme` (sync policy on, feature gate on, frustration off) and its user `ada`: their ids.
pub async fn acme_and_ada(pool: &PgPool) -> (i64, i64) {
    let org = provision::create_org(
        pool,
        &NewOrg {
            name: "acme",
            sync_policy: Some(true),
            feature_gate: true,
            frustration_opt_in: false,
        },
    )
    .await
    .expect("create org");
    let user = provision::create_user(pool, org, "ada")
        .await
        .expect("create user");
    (org, user)
}

/// A device ready to post batches: org `acme` and user `ada` (as [`acme_and_ada`]), the user's
/// compute target `target` and a device token.
pub struct Device {
    pub org: i64,
    pub user: i64,
    pub token: String,
    pub token_id: i64,
}

pub async fn device_on_target(pool: &PgPool, target: &str) -> Device {
    let (org, user) = acme_and_ada(pool).await;
    provision::create_compute_target(pool, user, target)
        .await
        .expect("create compute target");
    let issued = tokens::issue_device_token(pool, user, Some("laptop"))
        .await
        .expect("issue device token");
    Device {
        org,
        user,
        token: issued.token,
        token_id: issued.id,
    }
}
