//! Ingest provisioning that several tests start from.

use shared::ingest::provision::{self, NewOrg};
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
