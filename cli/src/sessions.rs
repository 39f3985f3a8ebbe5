//! `syncplane ingest sessions [--org ID] [--limit N] [--json]`: the sessions agent session ingest
//! stored, per org, newest first (issue 21 point 16: seeing them needed psql), from the first
//! configured tenant's database like every `ingest` command (`shared::ingest::listing`).

use std::io::Write;

use anyhow::bail;
use chrono::SecondsFormat;
use shared::ingest::listing::{OrgSessions, SessionSummary, sessions_by_org};
use sqlx::PgPool;

/// What a listing of orgs says when there is none (`syncplane ingest orgs` and `sessions`).
pub(crate) const NO_ORG_YET: &str = "no org yet (`syncplane ingest create-org NAME` creates one)";

/// Longest title a line shows (the JSON has it whole).
const TITLE_CHARS: usize = 60;

/// List the sessions of `org` (or every org), at most `limit` per org.
pub async fn list(
    pool: &PgPool,
    org: Option<i64>,
    limit: i64,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let Some(orgs) = sessions_by_org(pool, org, limit).await? else {
        bail!(
            "org {}: no such org (`syncplane ingest create-org` prints the ids)",
            org.unwrap_or_default()
        );
    };
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&orgs)?)?;
        return Ok(());
    }
    if orgs.is_empty() {
        writeln!(out, "{NO_ORG_YET}")?;
    }
    for o in &orgs {
        writeln!(out, "{}", org_line(o))?;
        for s in &o.sessions {
            writeln!(out, "  {}", session_line(s))?;
        }
    }
    Ok(())
}

/// `org 1 "acme": 3 sessions, newest first` (and how many are left out).
fn org_line(o: &OrgSessions) -> String {
    let shown = o.sessions.len() as i64;
    let head = format!("org {} {:?}", o.org_id, printable(&o.org));
    match o.total {
        0 => format!("{head}: no sessions ingested"),
        n if n == shown => format!("{head}: {n} session(s), newest first"),
        n => format!("{head}: the newest {shown} of {n} sessions (--limit shows more)"),
    }
}

/// `updated  target  session  agent[/model]  N events  "title"`.
fn session_line(s: &SessionSummary) -> String {
    let agent = match &s.model {
        Some(m) => format!("{}/{}", printable(&s.agent), printable(m)),
        None => printable(&s.agent),
    };
    let mut line = format!(
        "{}  {}  {}  {agent}  {} events",
        s.updated_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        printable(&s.compute_target_id),
        printable(&s.session_id),
        s.event_count,
    );
    if let Some(status) = &s.status {
        line.push_str(&format!("  [{}]", printable(status)));
    }
    if let Some(title) = &s.title {
        let short: String = printable(title).chars().take(TITLE_CHARS).collect();
        let more = if title.chars().count() > TITLE_CHARS {
            "…"
        } else {
            ""
        };
        line.push_str(&format!("  {short:?}{more}"));
    }
    line
}

/// Client-sent text made safe for a terminal: control characters (escape sequences, newlines)
/// become spaces.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_text_cannot_move_the_terminal() {
        assert_eq!(printable("a\u{1b}[2Jb\nc"), "a [2Jb c");
    }
}
