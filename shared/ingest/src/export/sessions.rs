//! The sessions export: every session of the org the read token names, in a time range (by the
//! session's last update, `since` inclusive, `until` exclusive) and optionally of one compute
//! target, oldest update first, with the columns the console shows. Read in keyset pages of
//! [`PAGE_ROWS`] (index `agent_sessions_org_updated_id_idx`), so a page is all it holds, all in
//! one snapshot (a repeatable-read transaction): each session once, as it was when the export
//! began.
//!
//! - JSON Lines (`format=jsonl`, the default): one object per session, the console's names.
//! - CSV (`format=csv`, RFC 4180): a header row, CRLF line ends, fields quoted where they hold a
//!   comma, a quote or a line break. A text cell that a spreadsheet would run as a formula (it
//!   starts with `=`, `+`, `-`, `@`, a tab or a carriage return: session titles are what users
//!   typed) gets a leading `'` (OWASP "CSV injection").

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;
use syncplane_contract::chars;
use syncplane_contract::transcripts::Refusal;

use super::{Chunks, ExportError};
use crate::error::IngestError;
use crate::transcripts::read::Params;

/// The route's query parameters.
pub const PARAMS: &[&str] = &["format", "since", "until", "computeTargetId"];
/// Sessions read per query. Every bound of a page's query is an index condition (the keyset as a
/// row comparison, the range through `coalesce`), never `$n IS NULL OR ...`, which Postgres can
/// only filter by: each page would scan the org's sessions from the start.
pub const PAGE_ROWS: i64 = 1_000;

/// The export's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Csv,
}

impl Format {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "jsonl" => Some(Self::Jsonl),
            "csv" => Some(Self::Csv),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Jsonl => "application/x-ndjson",
            Self::Csv => "text/csv; charset=utf-8",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Jsonl => "jsonl",
            Self::Csv => "csv",
        }
    }
}

/// What to export.
#[derive(Debug, Clone)]
pub struct Plan {
    pub org_id: i64,
    pub format: Format,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub compute_target_id: Option<String>,
}

impl Plan {
    /// The plan `params` give (400 `invalid_parameter` for a format or time that is not one, or
    /// a range that is empty).
    pub fn parse(org_id: i64, params: &Params) -> Result<Self, IngestError> {
        let format = params
            .get("format")
            .map(|f| Format::parse(f).ok_or_else(|| invalid("format: jsonl or csv")))
            .transpose()?
            .unwrap_or(Format::Jsonl);
        let plan = Self {
            org_id,
            format,
            since: params.time("since")?,
            until: params.time("until")?,
            compute_target_id: params
                .bounded(
                    "computeTargetId",
                    chars::COMPUTE_TARGET_ID,
                    Refusal::InvalidComputeTargetId,
                )?
                .map(str::to_owned),
        };
        if let (Some(a), Some(b)) = (plan.since, plan.until)
            && a >= b
        {
            return Err(invalid("since: must be before until"));
        }
        Ok(plan)
    }
}

fn invalid(message: &str) -> IngestError {
    IngestError::refused(Refusal::InvalidParameter, message.to_owned())
}

/// One session with the columns the console shows (the export's, and the sessions route's with
/// the frustration signal beside them).
#[derive(Debug, Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    #[serde(skip)]
    pub(crate) id: i64,
    pub(crate) compute_target_id: String,
    pub(crate) session_id: String,
    pub(crate) title: Option<String>,
    pub(crate) agent: String,
    pub(crate) model: Option<String>,
    pub(crate) status: Option<String>,
    pub(crate) repository: Option<String>,
    pub(crate) branch: Option<String>,
    pub(crate) started_at: Option<DateTime<Utc>>,
    pub(crate) ended_at: Option<DateTime<Utc>>,
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) last_synced_at: DateTime<Utc>,
    pub(crate) event_count: i32,
    pub(crate) input_tokens: Option<i64>,
    pub(crate) output_tokens: Option<i64>,
    pub(crate) cost_usd: Option<f64>,
}

/// The CSV header: the JSON Lines names, in the same order.
pub const CSV_HEADER: &str = "computeTargetId,sessionId,title,agent,model,status,repository,\
branch,startedAt,endedAt,updatedAt,lastSyncedAt,eventCount,inputTokens,outputTokens,costUsd\r\n";

/// Write the sessions `plan` names to `out`.
pub async fn write(plan: &Plan, pool: &PgPool, out: &mut Chunks) -> Result<(), ExportError> {
    if plan.format == Format::Csv {
        out.push(CSV_HEADER.as_bytes()).await?;
    }
    // One snapshot for every page: a session updated while the export runs moves in
    // `updated_at`, and would otherwise be written twice or, moved back by its device, not at all.
    let mut snapshot = pool.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *snapshot)
        .await?;
    let mut after: Option<(DateTime<Utc>, i64)> = None;
    loop {
        let rows = page(plan, &mut snapshot, after).await?;
        for row in &rows {
            match plan.format {
                Format::Jsonl => {
                    serde_json::to_writer(&mut *out.buf(), row)?;
                    out.buf().push(b'\n');
                }
                Format::Csv => csv_row(out.buf(), row),
            }
            out.flush_full().await?;
        }
        match rows.last() {
            Some(last) if rows.len() as i64 == PAGE_ROWS => {
                after = Some((last.updated_at, last.id))
            }
            _ => {
                snapshot.rollback().await?;
                return Ok(());
            }
        }
    }
}

async fn page(
    plan: &Plan,
    db: &mut sqlx::PgConnection,
    after: Option<(DateTime<Utc>, i64)>,
) -> Result<Vec<Row>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, compute_target_id, session_id, title, agent, model, status,
                repository_remote_url AS repository, repository_branch AS branch, started_at,
                ended_at, updated_at, last_synced_at, event_count, input_tokens, output_tokens,
                cost_usd
           FROM agent_sessions
          WHERE org_id = $1
            AND (updated_at, id) > (coalesce($5, '-infinity'::timestamptz), $6)
            AND updated_at >= coalesce($2, '-infinity'::timestamptz)
            AND updated_at < coalesce($3, 'infinity'::timestamptz)
            AND ($4::text IS NULL OR compute_target_id = $4)
          ORDER BY updated_at, id
          LIMIT $7",
    )
    .bind(plan.org_id)
    .bind(plan.since)
    .bind(plan.until)
    .bind(plan.compute_target_id.as_deref())
    .bind(after.map(|(at, _)| at))
    .bind(after.map_or(i64::MIN, |(_, id)| id))
    .bind(PAGE_ROWS)
    .fetch_all(db)
    .await
}

/// One CSV record of `row`, in [`CSV_HEADER`]'s order.
pub fn csv_row(buf: &mut Vec<u8>, row: &Row) {
    for (i, value) in [
        Some(row.compute_target_id.as_str()),
        Some(row.session_id.as_str()),
        row.title.as_deref(),
        Some(row.agent.as_str()),
        row.model.as_deref(),
        row.status.as_deref(),
        row.repository.as_deref(),
        row.branch.as_deref(),
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            buf.push(b',');
        }
        csv_field(buf, value.unwrap_or_default(), true);
    }
    for t in [
        row.started_at,
        row.ended_at,
        Some(row.updated_at),
        Some(row.last_synced_at),
    ] {
        buf.push(b',');
        if let Some(t) = t {
            use std::io::Write;
            let _ = write!(buf, "{}", t.format("%Y-%m-%dT%H:%M:%S%.3fZ"));
        }
    }
    let numbers = [
        Some(i64::from(row.event_count)),
        row.input_tokens,
        row.output_tokens,
    ];
    for n in numbers {
        buf.push(b',');
        if let Some(n) = n {
            buf.extend_from_slice(n.to_string().as_bytes());
        }
    }
    buf.push(b',');
    if let Some(c) = row.cost_usd {
        buf.extend_from_slice(c.to_string().as_bytes());
    }
    buf.extend_from_slice(b"\r\n");
}

/// One CSV field: quoted (quotes doubled) when it holds a comma, a quote or a line break; a
/// `text` field a spreadsheet would run as a formula gets a leading `'`.
pub fn csv_field(buf: &mut Vec<u8>, value: &str, text: bool) {
    let formula = text && value.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let quote = formula || value.contains([',', '"', '\n', '\r']);
    if quote {
        buf.push(b'"');
    }
    if formula {
        buf.push(b'\'');
    }
    for b in value.bytes() {
        if b == b'"' {
            buf.push(b'"');
        }
        buf.push(b);
    }
    if quote {
        buf.push(b'"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(value: &str, text: bool) -> String {
        let mut buf = Vec::new();
        csv_field(&mut buf, value, text);
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn a_field_is_quoted_only_when_it_must_be_and_quotes_are_doubled() {
        assert_eq!(field("plain", true), "plain");
        assert_eq!(field("a,b", true), "\"a,b\"");
        assert_eq!(field("say \"hi\"", true), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines", true), "\"two\nlines\"");
        assert_eq!(field("", true), "");
    }

    #[test]
    fn a_text_cell_a_spreadsheet_would_run_as_a_formula_is_defused() {
        assert_eq!(
            field("=HYPERLINK(\"x\")", true),
            "\"'=HYPERLINK(\"\"x\"\")\""
        );
        assert_eq!(field("+1", true), "\"'+1\"");
        assert_eq!(field("@SUM(A1)", true), "\"'@SUM(A1)\"");
        // Numbers and times are the export's own, never defused.
        assert_eq!(field("-1", false), "-1");
    }
}
