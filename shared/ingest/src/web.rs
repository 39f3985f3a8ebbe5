//! The web app's reads of the metadata lane (issue 22 "Sessions" and "Insights"; spec: the web
//! app exists for the org-wide view), with the org read token the transcript read routes take
//! (`spr_...`, `transcripts::read_auth`): a reader sees its own org only.
//!
//! - `GET /api/agent-sessions/sessions?limit=&cursor=&computeTargetId=&sessionId=`: the org's
//!   sessions, newest (`updated_at`) first, with the promoted columns; keyset pages (index
//!   `agent_sessions_org_updated_id_idx`); narrowed to one compute target or one session (the
//!   console's session page, issue 34).
//! - `GET /api/agent-sessions/insights?days=`: per day (UTC, by the session's start, else its
//!   update time) the sessions, active users and, where the org opted in, sessions whose
//!   frustration score is at least [`FRUSTRATED_SCORE`]; tokens by model; sessions per
//!   repository (the [`TOP_REPOSITORIES`] busiest). Aggregated in SQL over the window (index
//!   `agent_sessions_org_day_idx`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, NaiveDate, Utc};
use lambda_http::Request;
use serde::Serialize;
use serde_json::{Value, json};
use sqlx::PgPool;

use super::error::{IngestError, db_failure};
use super::transcripts::read::Params;
use syncplane_accounts::tokens;
use syncplane_contract::chars;
use syncplane_contract::transcripts::Refusal;

pub(crate) const SESSIONS_PATH: &str = "/api/agent-sessions/sessions";
pub(crate) const INSIGHTS_PATH: &str = "/api/agent-sessions/insights";

/// Sessions per page: default and most.
pub(crate) const DEFAULT_SESSIONS: u64 = 50;
pub(crate) const MAX_SESSIONS: u64 = 200;
/// The insights window in days: default and most.
pub(crate) const DEFAULT_DAYS: u64 = 30;
pub(crate) const MAX_DAYS: u64 = 365;
/// Repositories listed by sessions, busiest first.
pub(crate) const TOP_REPOSITORIES: i64 = 20;
/// A session counts as frustrated from this score (the signal's score is 0 to 1).
pub(crate) const FRUSTRATED_SCORE: f64 = 0.5;

#[derive(Debug, Serialize, syncplane_core::FromRow)]
struct SessionRow {
    #[serde(flatten)]
    #[row(flatten)]
    session: crate::export::sessions::Row,
    frustration: Option<Value>,
}

/// `GET .../sessions`. The keyset is a row comparison the index answers (as the export's pages,
/// `crate::export::sessions::PAGE_ROWS`): a later page does not rescan the earlier ones.
pub async fn sessions(pool: &PgPool, req: &Request) -> Result<Value, IngestError> {
    let reader = tokens::authenticate_reader(pool, req.headers()).await?;
    let params = Params::parse(req, &["limit", "cursor", "computeTargetId", "sessionId"])?;
    let target = params.bounded(
        "computeTargetId",
        chars::COMPUTE_TARGET_ID,
        Refusal::InvalidComputeTargetId,
    )?;
    let session = params.bounded("sessionId", chars::SESSION_ID, Refusal::InvalidSessionId)?;
    let limit = params
        .number("limit", 1, MAX_SESSIONS)?
        .unwrap_or(DEFAULT_SESSIONS) as i64;
    let after = params.get("cursor").map(decode_cursor).transpose()?;
    let mut rows: Vec<SessionRow> = sqlx::query_as(
        "SELECT id, session_id, compute_target_id, agent, model, title, status, started_at,
                ended_at, updated_at, last_synced_at, event_count, input_tokens, output_tokens,
                cost_usd, repository_remote_url AS repository, repository_branch AS branch,
                frustration
           FROM agent_sessions
          WHERE org_id = $1
            AND (updated_at, id) < (coalesce($2, 'infinity'::timestamptz), $3)
            AND ($5::text IS NULL OR compute_target_id = $5)
            AND ($6::text IS NULL OR session_id = $6)
          ORDER BY updated_at DESC, id DESC
          LIMIT $4",
    )
    .bind(reader.org_id)
    .bind(after.map(|(at, _)| at))
    .bind(after.map_or(i64::MAX, |(_, id)| id))
    .bind(limit + 1)
    .bind(target)
    .bind(session)
    .fetch_all(pool)
    .await
    .map_err(db_failure("list sessions"))?;
    let next = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last()
            .map(|r| encode_cursor(r.session.updated_at, r.session.id))
    } else {
        None
    };
    Ok(json!({
        "org": org_row(pool, reader.org_id).await?.0,
        "sessions": rows,
        "nextCursor": next,
    }))
}

#[derive(Debug, Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
struct DayRow {
    day: NaiveDate,
    sessions: i64,
    active_users: i64,
    frustrated: Option<i64>,
}

#[derive(Debug, Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
struct ModelRow {
    model: String,
    sessions: i64,
    input_tokens: i64,
    output_tokens: i64,
}

#[derive(Debug, Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
struct RepositoryRow {
    repository: String,
    sessions: i64,
}

/// The insights window over `agent_sessions s`: org `$1`, the last `$2` UTC days (today
/// included) by the day a session counts on, when it started, else when the device last updated
/// it (the expression `agent_sessions_org_day_idx` indexes).
macro_rules! window {
    () => {
        "s.org_id = $1 AND coalesce(s.started_at, s.updated_at)
           >= (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
              - make_interval(days => $2 - 1)"
    };
}

/// `GET .../insights`.
pub async fn insights(pool: &PgPool, req: &Request) -> Result<Value, IngestError> {
    let reader = tokens::authenticate_reader(pool, req.headers()).await?;
    let params = Params::parse(req, &["days"])?;
    let days = params.number("days", 1, MAX_DAYS)?.unwrap_or(DEFAULT_DAYS) as i32;
    let org = reader.org_id;
    let (name, opted_in) = org_row(pool, org).await?;
    let per_day: Vec<DayRow> = sqlx::query_as(concat!(
        "SELECT (coalesce(s.started_at, s.updated_at) AT TIME ZONE 'UTC')::date AS day,
                count(*) AS sessions, count(DISTINCT t.user_id) AS active_users,
                CASE WHEN $3 THEN count(*) FILTER (
                    WHERE (s.frustration->>'score')::float8 >= $4) END AS frustrated
           FROM agent_sessions s JOIN compute_targets t ON t.id = s.compute_target_id
          WHERE ",
        window!(),
        " GROUP BY 1 ORDER BY 1"
    ))
    .bind(org)
    .bind(days)
    .bind(opted_in)
    .bind(FRUSTRATED_SCORE)
    .fetch_all(pool)
    .await
    .map_err(db_failure("insights per day"))?;
    let by_model: Vec<ModelRow> = sqlx::query_as(concat!(
        "SELECT coalesce(s.model, 'unknown') AS model, count(*) AS sessions,
                coalesce(sum(s.input_tokens), 0)::int8 AS input_tokens,
                coalesce(sum(s.output_tokens), 0)::int8 AS output_tokens
           FROM agent_sessions s
          WHERE ",
        window!(),
        " GROUP BY 1
          ORDER BY coalesce(sum(s.input_tokens), 0) + coalesce(sum(s.output_tokens), 0) DESC, 1"
    ))
    .bind(org)
    .bind(days)
    .fetch_all(pool)
    .await
    .map_err(db_failure("insights by model"))?;
    let by_repository: Vec<RepositoryRow> = sqlx::query_as(concat!(
        "SELECT coalesce(s.repository_remote_url, 'none') AS repository, count(*) AS sessions
           FROM agent_sessions s
          WHERE ",
        window!(),
        " GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $3"
    ))
    .bind(org)
    .bind(days)
    .bind(TOP_REPOSITORIES)
    .fetch_all(pool)
    .await
    .map_err(db_failure("insights by repository"))?;
    Ok(json!({
        "org": name,
        "days": days,
        "frustrationOptIn": opted_in,
        "perDay": per_day,
        "tokensByModel": by_model,
        "sessionsByRepository": by_repository,
    }))
}

/// The reader's org: its name and whether it opted in to the frustration signal.
async fn org_row(pool: &PgPool, org: i64) -> Result<(String, bool), IngestError> {
    sqlx::query_as("SELECT name, frustration_opt_in FROM orgs WHERE id = $1")
        .bind(org)
        .fetch_one(pool)
        .await
        .map_err(db_failure("read org"))
}

/// A page's cursor: the last row's update time (microseconds) and id, opaque to the reader.
fn encode_cursor(at: DateTime<Utc>, id: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}.{id}", at.timestamp_micros()))
}

fn decode_cursor(cursor: &str) -> Result<(DateTime<Utc>, i64), IngestError> {
    let bad = || {
        IngestError::refused(
            Refusal::InvalidCursor,
            "cursor: not one this route handed out",
        )
    };
    let raw = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let text = std::str::from_utf8(&raw).map_err(|_| bad())?;
    let (micros, id) = text.split_once('.').ok_or_else(bad)?;
    let at = micros
        .parse::<i64>()
        .ok()
        .and_then(DateTime::from_timestamp_micros)
        .ok_or_else(bad)?;
    Ok((at, id.parse().map_err(|_| bad())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_a_forged_one_is_refused() {
        let at = DateTime::from_timestamp_micros(1_764_000_000_123_456).unwrap();
        assert_eq!(decode_cursor(&encode_cursor(at, 42)).unwrap(), (at, 42));
        for bad in ["", "!!", "bm90LWEtY3Vyc29y", &URL_SAFE_NO_PAD.encode("1.x")] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
    }
}
