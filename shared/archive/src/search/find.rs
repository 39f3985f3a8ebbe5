//! Finding lines (issue 34 "Search"): one org's indexed lines that match a [`Query`], newest
//! first, with the filters (compute target, session, time range, role, tool), in keyset pages.
//!
//! Every value is a bound parameter; the statement names only the filters that are set (a
//! generic plan over `$n IS NULL OR …` would not use the indexes). The cursor carries the last
//! hit's `(at, id)` and a fingerprint of the query and filters: a cursor of another search, or
//! one that does not decode, is refused.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::{PgPool, QueryBuilder};

use super::extract::Role;
use super::lexer;
use super::query::{Query, Term};
use super::snippet::{needles, snippet};

/// Hits per page by default, and at most.
pub const DEFAULT_LIMIT: i64 = 20;
pub const MAX_LIMIT: i64 = 100;

/// What a search may be narrowed to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    pub compute_target_id: Option<String>,
    pub session_id: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub role: Option<Role>,
    pub tool: Option<String>,
}

/// Where the next page starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct After {
    pub at: DateTime<Utc>,
    pub id: i64,
}

/// A search of one org's lines.
#[derive(Debug, Clone)]
pub struct Search<'a> {
    pub org_id: i64,
    /// The query as typed (its fingerprint binds the cursor).
    pub text: &'a str,
    pub query: &'a Query,
    pub filters: &'a Filters,
    pub limit: i64,
    pub after: Option<After>,
}

/// One hit.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub compute_target_id: String,
    pub session_id: String,
    pub session_title: Option<String>,
    pub agent: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub file_id: String,
    pub generation: i32,
    /// The line within its file (1-based), and where the lines route finds it.
    pub line: i64,
    pub segment_offset: i64,
    pub segment_line: i32,
    pub role: Option<String>,
    pub tool_name: Option<String>,
    pub at: DateTime<Utc>,
    /// Escaped text with `<mark>` around matches ([`super::snippet`]).
    pub snippet: String,
}

/// A page of hits and the cursor of the next (when there may be one).
#[derive(Debug, Clone)]
pub struct Page {
    pub hits: Vec<Hit>,
    pub next_cursor: Option<String>,
}

#[derive(syncplane_core::FromRow)]
struct HitRow {
    id: i64,
    compute_target_id: String,
    session_id: String,
    title: Option<String>,
    agent: Option<String>,
    started_at: Option<DateTime<Utc>>,
    file_id: String,
    generation: i32,
    line_no: i64,
    segment_offset: i64,
    segment_line: i32,
    role: Option<String>,
    tool_name: Option<String>,
    at: DateTime<Utc>,
    body: String,
}

/// Run `s` (see the module doc).
pub async fn find(pool: &PgPool, s: &Search<'_>) -> Result<Page, sqlx::Error> {
    let normalized = normalize(s.query);
    let Some(tsquery) = s.query.tsquery(&normalized) else {
        // Only stop words: nothing can match.
        return Ok(Page {
            hits: Vec::new(),
            next_cursor: None,
        });
    };
    let mut rows: Vec<HitRow> = statement(s, tsquery)
        .build_query_as()
        .fetch_all(pool)
        .await?;
    let more = rows.len() as i64 > s.limit;
    rows.truncate(usize::try_from(s.limit).unwrap_or(0));
    let marks = needles(s.query.marks(&normalized));
    let next_cursor = more
        .then(|| rows.last())
        .flatten()
        .map(|r| encode_cursor(s, After { at: r.at, id: r.id }));
    // A long line is indexed in parts: one hit per line on a page.
    let mut lines = std::collections::HashSet::new();
    rows.retain(|r| {
        lines.insert((
            r.compute_target_id.clone(),
            r.session_id.clone(),
            r.file_id.clone(),
            r.line_no,
        ))
    });
    let hits = rows.into_iter().map(|r| r.hit(&marks)).collect();
    Ok(Page { hits, next_cursor })
}

/// The search's statement: the org, the query, the filters that are set, the page's start.
fn statement(s: &Search<'_>, tsquery: String) -> QueryBuilder<sqlx::Postgres> {
    let mut b = QueryBuilder::new(
        "SELECT l.id, l.compute_target_id, l.session_id, a.title, a.agent, a.started_at,
                f.file_id, l.generation, l.line_no, l.segment_offset, l.segment_line, l.role,
                l.tool_name, l.at, l.body
           FROM transcript_lines l
           JOIN transcript_files f ON f.id = l.file_row
           LEFT JOIN agent_sessions a
                  ON a.compute_target_id = l.compute_target_id AND a.session_id = l.session_id
                 AND a.org_id = l.org_id
          WHERE l.org_id = ",
    );
    b.push_bind(s.org_id);
    b.push(" AND l.search_vector @@ ");
    b.push_bind(tsquery);
    b.push("::tsquery");
    let f = s.filters;
    if let Some(t) = &f.compute_target_id {
        b.push(" AND l.compute_target_id = ").push_bind(t.clone());
    }
    if let Some(id) = &f.session_id {
        b.push(" AND l.session_id = ").push_bind(id.clone());
    }
    if let Some(t) = f.since {
        b.push(" AND l.at >= ").push_bind(t);
    }
    if let Some(t) = f.until {
        b.push(" AND l.at < ").push_bind(t);
    }
    if let Some(r) = f.role {
        b.push(" AND l.role = ").push_bind(r.as_str());
    }
    if let Some(t) = &f.tool {
        b.push(" AND l.tool_name = ").push_bind(t.clone());
    }
    if let Some(a) = s.after {
        b.push(" AND (l.at, l.id) < (").push_bind(a.at);
        b.push(", ").push_bind(a.id).push(")");
    }
    b.push(" ORDER BY l.at DESC, l.id DESC LIMIT ")
        .push_bind(s.limit + 1);
    b
}

impl HitRow {
    fn hit(self, marks: &[String]) -> Hit {
        Hit {
            snippet: snippet(&self.body, marks),
            compute_target_id: self.compute_target_id,
            session_id: self.session_id,
            session_title: self.title,
            agent: self.agent,
            started_at: self.started_at,
            file_id: self.file_id,
            generation: self.generation,
            line: self.line_no,
            segment_offset: self.segment_offset,
            segment_line: self.segment_line,
            role: self.role,
            tool_name: self.tool_name,
            at: self.at,
        }
    }
}

/// Each leaf's prose as the index's lexer makes it ([`lexer`]; `""` for code terms and for prose
/// that is all stop words).
fn normalize(q: &Query) -> Vec<String> {
    q.leaves()
        .map(|t| match t {
            Term::Words(w) => lexer::plain_query(w),
            Term::Phrase(p) => lexer::phrase_query(p),
            Term::Code(_) | Term::All(_) => String::new(),
        })
        .collect()
}

/// The fingerprint of a search's query and filters (not its page).
fn fingerprint(s: &Search<'_>) -> String {
    let f = s.filters;
    let mut h = Sha256::new();
    for part in [
        s.text,
        f.compute_target_id.as_deref().unwrap_or("\u{1}"),
        f.session_id.as_deref().unwrap_or("\u{1}"),
        &f.since.map(|t| t.to_rfc3339()).unwrap_or_default(),
        &f.until.map(|t| t.to_rfc3339()).unwrap_or_default(),
        f.role.map_or("", Role::as_str),
        f.tool.as_deref().unwrap_or("\u{1}"),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..8])
}

fn encode_cursor(s: &Search<'_>, a: After) -> String {
    let text = format!("{}:{}:{}", fingerprint(s), a.at.timestamp_micros(), a.id);
    URL_SAFE_NO_PAD.encode(text)
}

/// The position `raw` carries, when it is a cursor of this very search (query and filters).
pub fn decode_cursor(s: &Search<'_>, raw: &str) -> Option<After> {
    if raw.is_empty() || raw.len() > 128 {
        return None;
    }
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(raw).ok()?).ok()?;
    let mut parts = text.split(':');
    if parts.next()? != fingerprint(s) {
        return None;
    }
    let at = DateTime::from_timestamp_micros(parts.next()?.parse().ok()?)?;
    let id = parts.next()?.parse().ok().filter(|i: &i64| *i > 0)?;
    parts.next().is_none().then_some(After { at, id })
}

#[cfg(test)]
mod tests {
    use super::super::query::parse;
    use super::*;

    #[test]
    fn a_cursor_is_bound_to_its_query_and_filters() {
        let q = parse("tls").unwrap();
        let f = Filters::default();
        let s = Search {
            org_id: 1,
            text: "tls",
            query: &q,
            filters: &f,
            limit: 20,
            after: None,
        };
        let a = After {
            at: DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap(),
            id: 42,
        };
        let c = encode_cursor(&s, a);
        assert_eq!(decode_cursor(&s, &c), Some(a));
        let other = Search {
            text: "ssl",
            ..s.clone()
        };
        assert_eq!(decode_cursor(&other, &c), None, "another query's cursor");
        let f2 = Filters {
            role: Some(Role::Tool),
            ..Filters::default()
        };
        let filtered = Search {
            filters: &f2,
            ..s.clone()
        };
        assert_eq!(decode_cursor(&filtered, &c), None, "other filters' cursor");
        for forged in ["", "!!", "bm9wZQ", &"A".repeat(200)] {
            assert_eq!(decode_cursor(&s, forged), None, "{forged}");
        }
    }
}
