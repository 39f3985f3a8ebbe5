//! What was ingested, for operators (issue 21 point 16: no psql needed): each org's sessions,
//! newest first, as `syncplane ingest sessions` shows them. Read-only; the columns are the ones
//! the ingest path projects from a session (migration 0002 `agent_sessions`).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

/// Most sessions one org's listing shows.
pub const MAX_LIMIT: i64 = 1000;
/// Sessions per org when the caller does not say.
pub const DEFAULT_LIMIT: i64 = 20;

/// One org and its newest sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrgSessions {
    pub org_id: i64,
    pub org: String,
    /// Every session the org has, of which `sessions` are the newest.
    pub total: i64,
    pub sessions: Vec<SessionSummary>,
}

/// One ingested session, as the ingest path stored it.
#[derive(Debug, Clone, PartialEq, Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    #[serde(skip)]
    pub org_id: i64,
    pub compute_target_id: String,
    pub session_id: String,
    pub agent: String,
    pub model: Option<String>,
    pub title: Option<String>,
    pub status: Option<String>,
    /// The device store's update time of the session (the listing's order).
    pub updated_at: DateTime<Utc>,
    pub last_synced_at: DateTime<Utc>,
    pub event_count: i32,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cost_usd: Option<f64>,
}

/// Sessions per org, newest (`updated_at`) first, at most `limit` per org (1 to [`MAX_LIMIT`]):
/// one org with `Some(id)` (`None` when it does not exist), else every org in id order.
pub async fn sessions_by_org(
    pool: &PgPool,
    org: Option<i64>,
    limit: i64,
) -> Result<Option<Vec<OrgSessions>>, sqlx::Error> {
    let limit = limit.clamp(1, MAX_LIMIT);
    let orgs: Vec<(i64, String, i64)> = sqlx::query_as(
        "SELECT o.id, o.name,
                (SELECT count(*) FROM agent_sessions s WHERE s.org_id = o.id)
           FROM orgs o
          WHERE $1::int8 IS NULL OR o.id = $1
          ORDER BY o.id",
    )
    .bind(org)
    .fetch_all(pool)
    .await?;
    if org.is_some() && orgs.is_empty() {
        return Ok(None);
    }
    let ids: Vec<i64> = orgs.iter().map(|(id, _, _)| *id).collect();
    let rows: Vec<SessionSummary> = sqlx::query_as(
        "SELECT s.org_id, s.compute_target_id, s.session_id, s.agent, s.model, s.title, s.status,
                s.updated_at, s.last_synced_at, s.event_count, s.input_tokens, s.output_tokens,
                s.cost_usd
           FROM orgs o
          CROSS JOIN LATERAL (
                SELECT * FROM agent_sessions s WHERE s.org_id = o.id
                 ORDER BY s.updated_at DESC, s.id DESC LIMIT $2
          ) s
          WHERE o.id = ANY($1)
          ORDER BY o.id, s.updated_at DESC, s.id DESC",
    )
    .bind(&ids)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    let mut listed: Vec<OrgSessions> = orgs
        .into_iter()
        .map(|(org_id, org, total)| OrgSessions {
            org_id,
            org,
            total,
            sessions: Vec::new(),
        })
        .collect();
    for row in rows {
        if let Some(o) = listed.iter_mut().find(|o| o.org_id == row.org_id) {
            o.sessions.push(row);
        }
    }
    Ok(Some(listed))
}
