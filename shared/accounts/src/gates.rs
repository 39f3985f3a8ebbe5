//! Whether an org may archive transcripts now (docs/transcript-wire-contract.md "intent", steps
//! 4 and 5): its session sync policy (no policy row is off: fail-closed), its own transcript gate
//! and the global switch (no flag row is off). Asked at the intent, again at `complete` (switched
//! off mid-upload: nothing recorded), and by the worker before it completes an upload S3 reported.

use sqlx::PgPool;

/// The global switch of the transcript lane (table `feature_flags`).
pub const TRANSCRIPT_FLAG: &str = "agent_transcript_sync";

/// The org's transcript gate and the global switch, both on.
pub async fn gate_open(pool: &PgPool, org_id: i64) -> Result<bool, sqlx::Error> {
    let open: Option<bool> = sqlx::query_scalar(
        "SELECT o.transcript_gate
                AND coalesce((SELECT f.enabled FROM feature_flags f WHERE f.name = $2), false)
           FROM orgs o WHERE o.id = $1",
    )
    .bind(org_id)
    .bind(TRANSCRIPT_FLAG)
    .fetch_optional(pool)
    .await?;
    Ok(open == Some(true))
}

/// The org's sync policy, the gate and the switch all on.
pub async fn org_allows(pool: &PgPool, org_id: i64) -> Result<bool, sqlx::Error> {
    let policy: Option<bool> =
        sqlx::query_scalar("SELECT session_sync_enabled FROM org_sync_policies WHERE org_id = $1")
            .bind(org_id)
            .fetch_optional(pool)
            .await?;
    Ok(policy == Some(true) && gate_open(pool, org_id).await?)
}
