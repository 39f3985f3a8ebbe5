//! Provisioning who may sync: orgs (with sync policy, feature gate, frustration opt-in and the
//! transcript gate, and their settings as listed), users, compute targets and device tokens (issued in `crate::tokens`). The `syncplane` CLI, the migrate function's
//! `provision` action (`crate::admin`, issue 21 point 15: inside the VPC, in one transaction) and
//! the tests call these: each takes a pool or a connection (a transaction).
//!
//! A device token is 32 random bytes, shown once as `spd_<hex>`; only its SHA-256 is stored.

use sqlx::{Acquire, PgExecutor, PgPool, Postgres};

use crate::tokens::{FEATURE_FLAG, token_hash};

/// How an org starts out.
#[derive(Debug, Clone)]
pub struct NewOrg<'a> {
    pub name: &'a str,
    /// `None`: no sync policy row at all (ingest treats it as disabled).
    pub sync_policy: Option<bool>,
    /// The org-level feature gate.
    pub feature_gate: bool,
    pub frustration_opt_in: bool,
}

/// Create an org (and its sync policy row, when it has one) in one transaction: a savepoint when
/// `db` is a transaction already.
pub async fn create_org<'c>(
    db: impl Acquire<'c, Database = Postgres>,
    org: &NewOrg<'_>,
) -> Result<i64, sqlx::Error> {
    let mut tx = db.begin().await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO orgs (name, session_sync_gate, frustration_opt_in) VALUES ($1, $2, $3)
         RETURNING id",
    )
    .bind(org.name)
    .bind(org.feature_gate)
    .bind(org.frustration_opt_in)
    .fetch_one(&mut *tx)
    .await?;
    if let Some(enabled) = org.sync_policy {
        set_sync_policy_in(&mut tx, id, Some(enabled)).await?;
    }
    tx.commit().await?;
    Ok(id)
}

/// Set (`Some`) or remove (`None`) an org's sync policy. Returns whether the org exists.
pub async fn set_sync_policy(
    pool: &PgPool,
    org_id: i64,
    enabled: Option<bool>,
) -> Result<bool, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM orgs WHERE id = $1)")
        .bind(org_id)
        .fetch_one(&mut *tx)
        .await?;
    if exists {
        set_sync_policy_in(&mut tx, org_id, enabled).await?;
    }
    tx.commit().await?;
    Ok(exists)
}

async fn set_sync_policy_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    org_id: i64,
    enabled: Option<bool>,
) -> Result<(), sqlx::Error> {
    match enabled {
        Some(enabled) => {
            sqlx::query(
                "INSERT INTO org_sync_policies (org_id, session_sync_enabled) VALUES ($1, $2)
                 ON CONFLICT (org_id) DO UPDATE
                    SET session_sync_enabled = EXCLUDED.session_sync_enabled, updated_at = now()",
            )
            .bind(org_id)
            .bind(enabled)
            .execute(&mut **tx)
            .await?;
        }
        None => {
            sqlx::query("DELETE FROM org_sync_policies WHERE org_id = $1")
                .bind(org_id)
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(())
}

/// Org-level switches; `None` leaves a setting as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct OrgFlags {
    /// The metadata lane's org-level feature gate.
    pub feature_gate: Option<bool>,
    pub frustration_opt_in: Option<bool>,
    /// The transcript lane's org-level gate (`403 transcripts_disabled` when off).
    pub transcript_gate: Option<bool>,
}

/// Set the org's switches. Returns whether the org exists.
pub async fn set_org_flags(
    pool: &PgPool,
    org_id: i64,
    flags: OrgFlags,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE orgs SET session_sync_gate = coalesce($2, session_sync_gate),
                         frustration_opt_in = coalesce($3, frustration_opt_in),
                         transcript_gate = coalesce($4, transcript_gate)
          WHERE id = $1",
    )
    .bind(org_id)
    .bind(flags.feature_gate)
    .bind(flags.frustration_opt_in)
    .bind(flags.transcript_gate)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// An org's settings, as `syncplane ingest orgs` lists them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct OrgSettings {
    pub id: i64,
    pub name: String,
    /// `None`: no policy row (ingest treats it as off).
    pub sync_policy: Option<bool>,
    pub feature_gate: bool,
    pub frustration_opt_in: bool,
    pub transcript_gate: bool,
    /// `None`: transcripts kept forever.
    pub transcript_retention_days: Option<i32>,
}

/// The settings of `org` (or of every org, by id).
pub async fn org_settings(
    pool: &PgPool,
    org: Option<i64>,
) -> Result<Vec<OrgSettings>, sqlx::Error> {
    sqlx::query_as(
        "SELECT o.id, o.name, p.session_sync_enabled AS sync_policy,
                o.session_sync_gate AS feature_gate, o.frustration_opt_in, o.transcript_gate,
                o.transcript_retention_days
           FROM orgs o LEFT JOIN org_sync_policies p ON p.org_id = o.id
          WHERE $1::bigint IS NULL OR o.id = $1 ORDER BY o.id",
    )
    .bind(org)
    .fetch_all(pool)
    .await
}

/// The global switches (table `feature_flags`; a missing row is off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobalFeature {
    /// The metadata lane (`agent_session_sync`).
    Sessions,
    /// The transcript lane (`agent_transcript_sync`).
    Transcripts,
}

impl GlobalFeature {
    pub fn flag(self) -> &'static str {
        match self {
            Self::Sessions => FEATURE_FLAG,
            Self::Transcripts => crate::gates::TRANSCRIPT_FLAG,
        }
    }
}

/// Set a global switch.
pub async fn set_global_feature(
    pool: &PgPool,
    feature: GlobalFeature,
    enabled: bool,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO feature_flags (name, enabled) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = now()",
    )
    .bind(feature.flag())
    .bind(enabled)
    .execute(pool)
    .await?;
    Ok(())
}

/// The global switches, `(flag, on)` (a flag without a row is off).
pub async fn global_features(pool: &PgPool) -> Result<Vec<(&'static str, bool)>, sqlx::Error> {
    let mut out = Vec::new();
    for feature in [GlobalFeature::Sessions, GlobalFeature::Transcripts] {
        let on: Option<bool> =
            sqlx::query_scalar("SELECT enabled FROM feature_flags WHERE name = $1")
                .bind(feature.flag())
                .fetch_optional(pool)
                .await?;
        out.push((feature.flag(), on == Some(true)));
    }
    Ok(out)
}

pub async fn create_user(
    db: impl PgExecutor<'_>,
    org_id: i64,
    name: &str,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("INSERT INTO users (org_id, name) VALUES ($1, $2) RETURNING id")
        .bind(org_id)
        .bind(name)
        .fetch_one(db)
        .await
}

/// Register a compute target (the client's `computeTargetId`) as the user's, in the user's org.
pub async fn create_compute_target(
    db: impl PgExecutor<'_>,
    user_id: i64,
    target_id: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO compute_targets (id, user_id, org_id)
         SELECT $1, id, org_id FROM users WHERE id = $2",
    )
    .bind(target_id)
    .bind(user_id)
    .execute(db)
    .await
    .and_then(|done| {
        if done.rows_affected() == 1 {
            Ok(())
        } else {
            Err(sqlx::Error::RowNotFound)
        }
    })
}

/// The device token the `events/ingest-*.json` samples carry: for the local demo only (a local
/// run without a GitHub App), never issued by `issue_device_token`.
pub const DEMO_DEVICE_TOKEN: &str =
    "spd_events_fixture_test_only_0000000000000000000000000000000000000";
/// The compute target the samples name.
pub const DEMO_COMPUTE_TARGET: &str = "laptop-1";
/// The demo org's read token (the console's organization sign-in in a local run with no App):
/// public like [`DEMO_DEVICE_TOKEN`], for the local demo only.
pub const DEMO_READ_TOKEN: &str =
    "spr_0000000000000000000000000000000000000000000000000000000000000de0";
/// The demo org's name.
pub(crate) const DEMO_ORG: &str = "demo-acme";

/// The demo org's id, if it is provisioned.
pub async fn demo_org(pool: &PgPool) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM orgs WHERE name = $1")
        .bind(DEMO_ORG)
        .fetch_optional(pool)
        .await
}

/// [`DEMO_READ_TOKEN`] for the demo org unless it is there already.
pub async fn demo_read_token(pool: &PgPool, org: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO read_tokens (token_hash, org_id, label)
         SELECT $1, $2, 'local demo (console)'
          WHERE NOT EXISTS (SELECT 1 FROM read_tokens WHERE token_hash = $1)",
    )
    .bind(token_hash(DEMO_READ_TOKEN).as_slice())
    .bind(org)
    .execute(pool)
    .await?;
    Ok(())
}

/// Provision what the ingest samples need (org `demo-acme` with the policy and gate on, user
/// `ada`, target [`DEMO_COMPUTE_TARGET`], token [`DEMO_DEVICE_TOKEN`]) unless the token is already
/// there: idempotent, so every local run can call it. Returns whether it provisioned.
pub async fn demo(pool: &PgPool) -> Result<bool, sqlx::Error> {
    let hash = token_hash(DEMO_DEVICE_TOKEN);
    let present: Option<i64> =
        sqlx::query_scalar("SELECT id FROM device_tokens WHERE token_hash = $1")
            .bind(hash.as_slice())
            .fetch_optional(pool)
            .await?;
    if present.is_some() {
        return Ok(false);
    }
    let org = create_org(
        pool,
        &NewOrg {
            name: DEMO_ORG,
            sync_policy: Some(true),
            feature_gate: true,
            frustration_opt_in: false,
        },
    )
    .await?;
    let user = create_user(pool, org, "ada").await?;
    create_compute_target(pool, user, DEMO_COMPUTE_TARGET).await?;
    sqlx::query(
        "INSERT INTO device_tokens (token_hash, user_id, org_id, label)
         VALUES ($1, $2, $3, 'local demo (events/ samples)')",
    )
    .bind(hash.as_slice())
    .bind(user)
    .bind(org)
    .execute(pool)
    .await?;
    Ok(true)
}
