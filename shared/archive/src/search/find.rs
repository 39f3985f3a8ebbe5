//! Finding lines (issue 34 "Search"): one org's indexed lines that match a [`Query`], newest
//! first, with the filters (compute target, session, time range, role, tool), in keyset pages.
//!
//! The index holds groups of consecutive lines (migration 0018), so a page is found in two steps,
//! as often as it takes: the groups that may hold a match, newest first
//! ([`Query::candidates_tsquery`] on their terms, through the GIN index, with the filters a group
//! can answer), then the lines of those groups that pass every filter, of which [`Matcher`] keeps
//! those that match.
//! Within a group its later lines come first. A page reads at most [`MAX_GROUPS_PER_PAGE`] groups:
//! a query whose groups hold few matching lines may end a page with fewer hits and a cursor.
//!
//! Every value is a bound parameter; the statement names only the filters that are set (a
//! generic plan over `$n IS NULL OR …` would not use the indexes). The cursor carries the last
//! hit's group `(at, id)` and place in it, and a fingerprint of the query and filters: a cursor
//! of another search, or one that does not decode, is refused.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::{PgPool, QueryBuilder};

use super::extract::Role;
use super::lexer;
use super::matcher::Matcher;
use super::query::{Query, Term};
use super::snippet::{needles, snippet};

/// Hits per page by default, and at most.
pub const DEFAULT_LIMIT: i64 = 20;
pub const MAX_LIMIT: i64 = 100;
/// Groups of lines read at most for one page.
pub const MAX_GROUPS_PER_PAGE: i64 = 1_000;

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

/// Where the next page starts: in the group `(at, id)`, its lines before the `entry`-th (1-based;
/// 1: none of them), then the groups after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct After {
    pub at: DateTime<Utc>,
    pub id: i64,
    pub entry: i64,
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
    group_at: DateTime<Utc>,
    entry: i64,
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

/// A group that may hold a match.
#[derive(syncplane_core::FromRow)]
struct Candidate {
    id: i64,
    at: DateTime<Utc>,
}

/// Run `s` (see the module doc).
pub async fn find(pool: &PgPool, s: &Search<'_>) -> Result<Page, sqlx::Error> {
    let (Some(matcher), Some(of_groups)) = (
        Matcher::new(s.query),
        s.query
            .candidates_tsquery(&normalize(s.query, lexer::plain_query)),
    ) else {
        // Only stop words: nothing can match.
        return Ok(Page {
            hits: Vec::new(),
            next_cursor: None,
        });
    };
    let mut lexer = lexer::Lexer::default();
    let want = usize::try_from(s.limit).unwrap_or(0) + 1;
    let mut rows: Vec<HitRow> = Vec::new();
    let mut after = s.after;
    let mut read = 0;
    let mut batch = s.limit + 1;
    // Past the last group read, when the page ends on the bound of groups read.
    let mut stopped_at = None;
    loop {
        let groups: Vec<Candidate> = candidates(s, &of_groups, after, batch)
            .build_query_as()
            .fetch_all(pool)
            .await?;
        let Some(last) = groups.last() else { break };
        let last = After {
            at: last.at,
            id: last.id,
            entry: 1,
        };
        let ids: Vec<i64> = groups.iter().map(|g| g.id).collect();
        let lines: Vec<HitRow> = group_lines(s, &ids, after)
            .build_query_as()
            .fetch_all(pool)
            .await?;
        rows.extend(
            lines
                .into_iter()
                .filter(|r| matcher.matches(&mut lexer, &r.body))
                .take(want - rows.len()),
        );
        read += i64::try_from(groups.len()).unwrap_or(0);
        if rows.len() >= want || (groups.len() as i64) < batch {
            break;
        }
        if read >= MAX_GROUPS_PER_PAGE {
            stopped_at = Some(last);
            break;
        }
        after = Some(last);
        batch = (batch * 4).min(MAX_GROUPS_PER_PAGE - read);
    }
    let more = rows.len() >= want;
    rows.truncate(want - 1);
    let marks = needles(s.query.marks(&normalize(s.query, lexer::phrase_query)));
    let next_cursor = if more {
        rows.last().map(|r| After {
            at: r.group_at,
            id: r.id,
            entry: r.entry,
        })
    } else {
        stopped_at
    }
    .map(|a| encode_cursor(s, a));
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

/// The groups of the org that may hold a match (`tsquery` on their terms) and the filters a
/// group answers, from the page's start (its group included), newest first: `limit` of them.
fn candidates(
    s: &Search<'_>,
    tsquery: &str,
    after: Option<After>,
    limit: i64,
) -> QueryBuilder<sqlx::Postgres> {
    let mut b =
        QueryBuilder::new("SELECT g.id, g.at FROM transcript_line_groups g WHERE g.org_id = ");
    b.push_bind(s.org_id);
    b.push(" AND g.terms @@ ");
    b.push_bind(tsquery.to_owned());
    b.push("::tsquery");
    let f = s.filters;
    if let Some(t) = &f.compute_target_id {
        b.push(" AND g.compute_target_id = ").push_bind(t.clone());
    }
    if let Some(id) = &f.session_id {
        b.push(" AND g.session_id = ").push_bind(id.clone());
    }
    if let Some(t) = f.since {
        b.push(" AND g.at >= ").push_bind(t);
    }
    if let Some(t) = f.until {
        b.push(" AND g.first_at < ").push_bind(t);
    }
    if let Some(r) = f.role {
        b.push(" AND ")
            .push_bind(r.as_str())
            .push(" = ANY (g.roles)");
    }
    if let Some(t) = &f.tool {
        b.push(" AND ")
            .push_bind(t.clone())
            .push(" = ANY (g.tool_names)");
    }
    if let Some(a) = after {
        // The start's own group too while lines before its `entry` are left (a group read whole,
        // `entry` 1, is not read again by the next batch).
        let op = if a.entry > 1 { " <= " } else { " < " };
        b.push(" AND (g.at, g.id)")
            .push(op)
            .push("(")
            .push_bind(a.at);
        b.push(", ").push_bind(a.id).push(")");
    }
    b.push(" ORDER BY g.at DESC, g.id DESC LIMIT ")
        .push_bind(limit);
    b
}

/// The lines of the groups `ids` that pass every filter, past the page's start, in page order
/// (which match the query is [`Matcher`]'s to say).
fn group_lines(s: &Search<'_>, ids: &[i64], after: Option<After>) -> QueryBuilder<sqlx::Postgres> {
    let mut b = QueryBuilder::new(
        "SELECT g.id, g.at AS group_at, x.entry, g.compute_target_id, g.session_id, a.title,
                a.agent, a.started_at, f.file_id, g.generation, x.line_no, g.segment_offset,
                x.segment_line, x.role, x.tool_name, x.at, x.body
           FROM transcript_line_groups g
           CROSS JOIN LATERAL unnest(g.line_nos, g.segment_lines, g.roles, g.tool_names, g.ats,
                                     g.bodies) WITH ORDINALITY
                AS x(line_no, segment_line, role, tool_name, at, body, entry)
           JOIN transcript_files f ON f.id = g.file_row
           LEFT JOIN agent_sessions a
                  ON a.compute_target_id = g.compute_target_id AND a.session_id = g.session_id
                 AND a.org_id = g.org_id
          WHERE g.id = ANY (",
    );
    b.push_bind(ids.to_vec());
    b.push(")");
    let f = s.filters;
    if let Some(t) = f.since {
        b.push(" AND x.at >= ").push_bind(t);
    }
    if let Some(t) = f.until {
        b.push(" AND x.at < ").push_bind(t);
    }
    if let Some(r) = f.role {
        b.push(" AND x.role = ").push_bind(r.as_str());
    }
    if let Some(t) = &f.tool {
        b.push(" AND x.tool_name = ").push_bind(t.clone());
    }
    if let Some(a) = after {
        b.push(" AND (g.id <> ").push_bind(a.id);
        b.push(" OR x.entry < ").push_bind(a.entry).push(")");
    }
    b.push(" ORDER BY g.at DESC, g.id DESC, x.entry DESC");
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

/// Each leaf's prose as the index's lexer makes it ([`lexer`]; a phrase by `phrase`; `""` for
/// code terms and for prose that is all stop words).
fn normalize(q: &Query, phrase: fn(&str) -> String) -> Vec<String> {
    q.leaves()
        .map(|t| match t {
            Term::Words(w) => lexer::plain_query(w),
            Term::Phrase(p) => phrase(p),
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
    let text = format!(
        "{}:{}:{}:{}",
        fingerprint(s),
        a.at.timestamp_micros(),
        a.id,
        a.entry
    );
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
    let entry = parts.next()?.parse().ok().filter(|i: &i64| *i > 0)?;
    parts.next().is_none().then_some(After { at, id, entry })
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
            entry: 3,
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
