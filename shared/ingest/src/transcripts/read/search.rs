//! `GET /api/agent-sessions/transcripts/search` (issue 34; docs/transcript-search.md): the read
//! token's org's transcript lines that match `q`, newest first, in keyset pages, narrowed by
//! `computeTargetId`, `sessionId`, `since`/`until` (RFC 3339), `role` (`user`, `assistant`,
//! `tool`) and `tool` (a tool's name). Steps: authenticate the read token (401), count the search
//! against the token's minute (429), read the parameters (400 with a code), search
//! (`syncplane_archive::search`).

use http::StatusCode;
use lambda_http::Request;
use serde_json::{Value, json};
use syncplane_archive::search::find::{DEFAULT_LIMIT, MAX_LIMIT, decode_cursor};
use syncplane_archive::search::{self, Filters, Hit, QueryError, Role, Search};
use syncplane_contract::chars;
use syncplane_contract::transcripts::Refusal;

use super::access::Params;
use super::page::Cursor;
use crate::error::{IngestError, db_failure};
use crate::rate_limit::{Window, check_window};
use syncplane_accounts::tokens;

/// The parameters the route takes.
const PARAMS: &[&str] = &[
    "q",
    "computeTargetId",
    "sessionId",
    "since",
    "until",
    "role",
    "tool",
    "limit",
    "cursor",
];
/// Longest `tool` filter.
const MAX_TOOL_CHARS: usize = 128;

/// The route (see the module doc); `per_minute`: searches a read token may make in a minute.
pub async fn search(
    pool: &sqlx::PgPool,
    per_minute: u32,
    req: &Request,
) -> Result<(StatusCode, Value), IngestError> {
    let reader = tokens::authenticate_reader(pool, req.headers()).await?;
    check_window(
        pool,
        Window::TranscriptSearches,
        &reader.token_id.to_string(),
        per_minute,
    )
    .await?;
    let params = Params::parse(req, PARAMS)?;
    let text = params.get("q").unwrap_or_default();
    let query = search::parse(text).map_err(|e| query_refusal(&e))?;
    let filters = filters(&params)?;
    let limit = params
        .number("limit", 1, MAX_LIMIT as u64)?
        .map_or(DEFAULT_LIMIT, |n| n as i64);
    let mut s = Search {
        org_id: reader.org_id,
        text,
        query: &query,
        filters: &filters,
        limit,
        after: None,
    };
    if let Some(raw) = params.get("cursor") {
        s.after = Some(decode_cursor(&s, raw).ok_or_else(|| {
            IngestError::refused(
                Refusal::InvalidCursor,
                "cursor: not one this search (its query and filters) gave",
            )
        })?);
    }
    let page = search::find(pool, &s)
        .await
        .map_err(db_failure("transcript search"))?;
    let hits: Vec<Value> = page.hits.iter().map(hit_json).collect();
    let mut data = json!({ "hits": hits });
    if let Some(c) = page.next_cursor {
        data["nextCursor"] = Value::String(c);
    }
    Ok((StatusCode::OK, data))
}

fn query_refusal(e: &QueryError) -> IngestError {
    IngestError::refused(Refusal::InvalidQuery, format!("q: {e}"))
}

/// The filters, each bounded as the lane bounds it elsewhere.
fn filters(p: &Params) -> Result<Filters, IngestError> {
    let bounded =
        |name: &str, max: usize, refusal: Refusal| -> Result<Option<String>, IngestError> {
            Ok(p.bounded(name, max, refusal)?.map(str::to_owned))
        };
    let role = p
        .get("role")
        .map(|r| Role::parse(r).ok_or_else(|| invalid("role: one of user, assistant, tool".into())))
        .transpose()?;
    let f = Filters {
        compute_target_id: bounded(
            "computeTargetId",
            chars::COMPUTE_TARGET_ID,
            Refusal::InvalidComputeTargetId,
        )?,
        session_id: bounded("sessionId", chars::SESSION_ID, Refusal::InvalidSessionId)?,
        since: p.time("since")?,
        until: p.time("until")?,
        role,
        tool: bounded("tool", MAX_TOOL_CHARS, Refusal::InvalidParameter)?,
    };
    if let (Some(a), Some(b)) = (f.since, f.until)
        && a >= b
    {
        return Err(invalid("since: must be before until".into()));
    }
    Ok(f)
}

fn invalid(message: String) -> IngestError {
    IngestError::refused(Refusal::InvalidParameter, message)
}

/// A hit as the route answers it: the session, the file and line (with the `lines` route's
/// cursor that opens its page at that line), the role, the tool, the time and the snippet.
fn hit_json(h: &Hit) -> Value {
    let cursor = Cursor {
        generation: h.generation,
        offset: h.segment_offset,
        line: usize::try_from(h.segment_line).unwrap_or(0),
    };
    json!({
        "session": {
            "computeTargetId": h.compute_target_id,
            "sessionId": h.session_id,
            "title": h.session_title,
            "agent": h.agent,
            "startedAt": h.started_at.map(|t| t.to_rfc3339()),
        },
        "fileId": h.file_id,
        "line": h.line,
        "linesCursor": cursor.encode(),
        "role": h.role,
        "toolName": h.tool_name,
        "at": h.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "snippet": h.snippet,
    })
}
