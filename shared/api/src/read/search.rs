//! `GET /api/search?q=&repo=&path=&limit=&cursor=` (issue 11 "Search") over every synced document
//! and README.
//!
//! - The query is `websearch_to_tsquery` syntax (quoted phrases, `-exclusion`, `or`), parsed with
//!   the configured language, against the vector built with that same language (migration 0009),
//!   through its GIN index.
//! - Ranking in two tiers (migration 0010): hits whose title and headings alone satisfy the query
//!   first, ranked by `ts_rank_cd` over that vector (title A above headings B); then body-only
//!   hits, ranked by `ts_rank_cd` over the whole weighted vector (title A, headings B, body C).
//!   Within a tier ties are broken by kind (documents first) then id, so pages never overlap or
//!   skip. Each tier ranks at most [`RANK_CANDIDATES`] (body tier: [`BODY_RANK_CANDIDATES`])
//!   matches per table, taken in index order:
//!   ranking reads every candidate's vector, and without the cap a word found in most of 100,000
//!   documents costs a read of all of them. A capped page says `truncated: true`.
//! - Keyset pagination: the cursor carries the last (tier, rank, kind, id) and a fingerprint of
//!   the query and filters; every value is a bound parameter.
//! - Snippets: `ts_headline` over a window around the first query word, with private-use
//!   markers, HTML-escaped here and the markers turned into `<mark>`, so a document's text can
//!   never inject markup.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::PgPool;

use super::super::error::{ApiError, db_failure};
use super::cursor;
use super::owners::{owners_json, rules_of};
use super::params::{Params, like_prefix, repo_name, repo_path};
use super::repos::{self, next_cursor};
use syncplane_core::config::SearchLanguage;
use syncplane_engine::sync::parse::push_escaped_char;

pub const DEFAULT_LIMIT: i64 = 20;
pub const MAX_LIMIT: i64 = 50;
/// Longest query accepted, in bytes.
pub(crate) const MAX_QUERY_BYTES: usize = 512;
/// Most `repo` filters one request may name.
pub(crate) const MAX_REPO_FILTERS: usize = 20;

/// What a search asks for, after validation.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub q: String,
    pub repos: Vec<(String, String)>,
    pub path_prefix: Option<String>,
    pub limit: i64,
    pub cursor: Option<String>,
}

impl SearchRequest {
    pub(crate) fn from_params(params: &Params) -> Result<Self, ApiError> {
        let repos: Vec<&str> = params.all("repo").collect();
        Self::new(
            params.one("q")?.unwrap_or_default(),
            &repos,
            params.one("path")?,
            params.limit(DEFAULT_LIMIT, MAX_LIMIT)?,
            params.one("cursor")?,
        )
    }

    /// Validate each part: the query's size, `owner/name` filters (at most 20), a path prefix,
    /// `limit` in 1..=50.
    pub fn new(
        q: &str,
        repos: &[&str],
        path: Option<&str>,
        limit: i64,
        cursor: Option<&str>,
    ) -> Result<Self, ApiError> {
        let q = validate_query(q)?;
        if repos.len() > MAX_REPO_FILTERS {
            return Err(ApiError::InvalidRepository);
        }
        let repos = repos
            .iter()
            .map(|r| repo_name(r))
            .collect::<Result<Vec<_>, _>>()?;
        let path_prefix = path.map(|p| repo_path(p, true)).transpose()?;
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::InvalidLimit { max: MAX_LIMIT });
        }
        Ok(Self {
            q,
            repos,
            path_prefix,
            limit,
            cursor: cursor.map(str::to_owned),
        })
    }

    fn fingerprint(&self, language: SearchLanguage) -> String {
        let repos: Vec<String> = self
            .repos
            .iter()
            .map(|(o, n)| format!("{o}/{n}").to_lowercase())
            .collect();
        let mut parts = vec![language.as_str(), self.q.as_str()];
        parts.extend(repos.iter().map(String::as_str));
        parts.push(self.path_prefix.as_deref().unwrap_or(""));
        cursor::fingerprint(&parts)
    }
}

fn validate_query(q: &str) -> Result<String, ApiError> {
    let q = q.trim();
    if q.len() > MAX_QUERY_BYTES || q.contains('\0') {
        return Err(ApiError::InvalidQuery);
    }
    if q.is_empty() {
        return Err(ApiError::EmptyQuery);
    }
    Ok(q.to_owned())
}

/// Most candidates one tier ranks, per table (documents, READMEs). Ranking reads each
/// candidate's vector, so a word found in most documents would otherwise cost a read of all of
/// them; past this many matches a page says `truncated` and the caller narrows the query.
pub const RANK_CANDIDATES: i64 = 500;
/// The body tier's cap: its candidates' vectors are the large ones (about 5 KB each, read out of
/// TOAST and decompressed), so it ranks fewer; it is only reached when the first tier does not
/// fill the page.
pub(crate) const BODY_RANK_CANDIDATES: i64 = 200;

impl Tier {
    /// Most candidates this tier ranks per table.
    pub fn candidates(self) -> i64 {
        match self {
            Tier::Head => RANK_CANDIDATES,
            Tier::Body => BODY_RANK_CANDIDATES,
        }
    }
}

/// Where a hit ranks: title-and-headings hits first, body-only hits after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// The title and headings alone satisfy the query; ranked over that vector.
    Head,
    /// Only the whole document does; ranked over the whole weighted vector.
    Body,
}

/// The last hit of a page: where the next one starts.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Key {
    tier: Tier,
    rank: f32,
    kind: i32,
    id: i64,
}

#[derive(syncplane_core::FromRow)]
struct Row {
    kind: i32,
    id: i64,
    repo_id: i64,
    rank: f32,
    full_name: String,
    path: String,
    title: String,
    blob_sha: String,
    last_synced_at: Option<chrono::DateTime<chrono::Utc>>,
    heading: Option<Value>,
    headline: String,
    /// The tier reached its candidate cap in documents or READMEs.
    capped: bool,
    #[row(skip)]
    tier: Option<Tier>,
}

/// Snippets come from a window of the document's text around the first place a query word
/// occurs: `ts_headline` parses all the text it is given (about 0.4 ms for 5 KB, 10 ms for the
/// largest bodies), once per hit, so it is given [`SNIPPET_WINDOW_CHARS`] characters starting
/// [`SNIPPET_LEAD_CHARS`] before that place. The place is found by a plain search of the text
/// for the query's words and their stems (a stem is usually a prefix of the inflected word),
/// each as written in lower case, capitalised and upper case (lowercasing the whole text cost
/// more than the headline saved), within the first [`SNIPPET_SEARCH_CHARS`]; a hit whose words
/// are not found there (a stem that is not a prefix, other casings, or words further on) gets
/// the document's opening lines.
pub const SNIPPET_SEARCH_CHARS: usize = 65_536;
/// Characters handed to `ts_headline` per hit.
pub const SNIPPET_WINDOW_CHARS: usize = 1_000;
/// Context kept before the first query word found.
pub const SNIPPET_LEAD_CHARS: usize = 150;
/// Most words of a query used to place the snippet window.
const MAX_ANCHOR_WORDS: usize = 16;

/// The words of a query that can place a snippet window: its terms lowercased, without excluded
/// (`-word`) terms, the `or` operator and punctuation. Postgres adds their stems and drops stop
/// words ([`terms_sql`]).
fn anchor_words(q: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for token in q.split_whitespace() {
        if token.starts_with('-') || token.eq_ignore_ascii_case("or") {
            continue;
        }
        for part in token.split(|c: char| !c.is_alphanumeric()) {
            let w = part.to_lowercase();
            if !w.is_empty() && !words.contains(&w) && words.len() < MAX_ANCHOR_WORDS {
                words.push(w);
            }
        }
    }
    words
}

/// Snippet delimiters: private-use characters, turned into `<mark>` after escaping.
const START: char = '\u{E000}';
const STOP: char = '\u{E001}';

/// The search statement for one language and tier: the vector columns and the configuration the
/// query is parsed with must agree. The tsquery is written inline (not a CTE) so the planner sees
/// it as a constant and can take the GIN indexes. Each table's candidates stop at `$8` (the scan
/// ends there, so ranking never reads more vectors than that). The small title-and-headings test
/// is written first: of equal-cost conditions Postgres evaluates the first written first, and the
/// whole vector is the one that must be read out of TOAST.
/// The whole-vector condition: needed by the body tier, and by the title-and-headings tier only
/// when the query excludes a word (`-word`, which the body may contain). Without exclusions a
/// title-and-headings match is a whole-document match (the whole vector begins with the same
/// lexemes at the same positions), and skipping the condition skips reading the whole vector's
/// index for every document that has a common word.
macro_rules! whole_check {
    (whole, $alias:literal, $vector:literal, $config:literal) => {
        concat!(
            "AND ",
            $alias,
            ".",
            $vector,
            " @@ websearch_to_tsquery('",
            $config,
            "', $1)"
        )
    };
    (head_only, $alias:literal, $vector:literal, $config:literal) => {
        ""
    };
}

/// One table's candidates (`documents d` or `readmes r`), `columns` first, then the rank; at most
/// `$8` of them.
macro_rules! candidates {
    ($columns:literal, $table:literal, $a:literal, $config:literal, $vector:literal,
     $head:literal, $tier:literal, $rankvec:literal, $whole:tt) => {
        concat!(
            "(SELECT ",
            $columns,
            ",
                     ts_rank_cd(",
            $a,
            ".",
            $rankvec,
            ", websearch_to_tsquery('",
            $config,
            "', $1)) AS rank
              FROM ",
            $table,
            " ",
            $a,
            "
              WHERE ",
            $tier,
            "(",
            $a,
            ".",
            $head,
            " @@ websearch_to_tsquery('",
            $config,
            "', $1))
                ",
            whole_check!($whole, $a, $vector, $config),
            "
                AND ($2::bigint[] IS NULL OR ",
            $a,
            ".repo_id = ANY($2))
                AND ($3::text IS NULL OR ",
            $a,
            ".path LIKE $3 ESCAPE '\\')
              LIMIT $8)"
        )
    };
}

macro_rules! search_sql {
    ($config:literal, $vector:literal, $head:literal, $tier:literal, $rankvec:literal, $whole:tt) => {
        concat!(
            "WITH cand AS MATERIALIZED (
                ", candidates!("0 AS kind, d.id, d.repo_id", "documents", "d",
                               $config, $vector, $head, $tier, $rankvec, $whole), "
                UNION ALL
                ", candidates!("1, r.repo_id, r.repo_id", "readmes", "r",
                               $config, $vector, $head, $tier, $rankvec, $whole), "
            ),
            page AS (
                SELECT * FROM cand
                WHERE $4::real IS NULL
                   OR rank < $4 OR (rank = $4 AND (kind, id) > ($5::int, $6::bigint))
                ORDER BY rank DESC, kind, id
                LIMIT $7
            )
            SELECT p.kind, p.id, p.repo_id, p.rank, o.owner || '/' || o.name AS full_name,
                   x.path, x.title, x.blob_sha, o.last_synced_at,
                   (SELECT h.e FROM jsonb_array_elements(x.headings) WITH ORDINALITY AS h(e, n)
                    WHERE to_tsvector('", $config, "', h.e->>'text')
                          @@ websearch_to_tsquery('", $config, "', $1)
                    ORDER BY ts_rank(to_tsvector('", $config, "', h.e->>'text'),
                                     websearch_to_tsquery('", $config, "', $1)) DESC, h.n
                    LIMIT 1) AS heading,
                   ts_headline('", $config, "',
                       substr(x.body, greatest(a.at - 150, 1), 1000),
                       websearch_to_tsquery('", $config, "', $1),
                       'StartSel=\"\u{E000}\", StopSel=\"\u{E001}\", MaxWords=30, MinWords=12, MaxFragments=2, FragmentDelimiter=\" … \"') AS headline,
                   (SELECT count(*) FILTER (WHERE kind = 0) >= $8
                        OR count(*) FILTER (WHERE kind = 1) >= $8 FROM cand) AS capped
            FROM page p
            JOIN repos o ON o.id = p.repo_id
            CROSS JOIN LATERAL (
                -- Cut here, so the body is read out of TOAST once for both uses below.
                SELECT d.path, d.title, d.blob_sha, d.headings, left(d.body, 65536) AS body
                FROM documents d WHERE p.kind = 0 AND d.id = p.id
                UNION ALL
                SELECT r.path, r.title, r.blob_sha, r.headings, left(r.body, 65536)
                FROM readmes r WHERE p.kind = 1 AND r.repo_id = p.id
            ) x
            CROSS JOIN LATERAL (
                SELECT coalesce(min(nullif(strpos(x.body, w), 0)), 1) AS at
                FROM unnest($9::text[]) AS w
            ) a
            ORDER BY p.rank DESC, p.kind, p.id"
        )
    };
}

const ENGLISH_HEAD: &str = search_sql!(
    "english",
    "search_vector",
    "head_vector",
    "",
    "head_vector",
    head_only
);
const ENGLISH_HEAD_EXCLUDING: &str = search_sql!(
    "english",
    "search_vector",
    "head_vector",
    "",
    "head_vector",
    whole
);
const ENGLISH_BODY: &str = search_sql!(
    "english",
    "search_vector",
    "head_vector",
    "NOT ",
    "search_vector",
    whole
);
const SIMPLE_HEAD: &str = search_sql!(
    "simple",
    "search_vector_simple",
    "head_vector_simple",
    "",
    "head_vector_simple",
    head_only
);
const SIMPLE_HEAD_EXCLUDING: &str = search_sql!(
    "simple",
    "search_vector_simple",
    "head_vector_simple",
    "",
    "head_vector_simple",
    whole
);
const SIMPLE_BODY: &str = search_sql!(
    "simple",
    "search_vector_simple",
    "head_vector_simple",
    "NOT ",
    "search_vector_simple",
    whole
);

/// The search statement for `language` and `tier`, for a query that `excludes` a word or not
/// ($1 query, $2 repository ids, $3 path pattern, $4..$6 the cursor's rank, kind and id, $7 the
/// row limit, $8 the candidate cap, $9 the words that place the snippet window).
pub fn search_sql(language: SearchLanguage, tier: Tier, excludes: bool) -> &'static str {
    match (language, tier, excludes) {
        (SearchLanguage::English, Tier::Head, false) => ENGLISH_HEAD,
        (SearchLanguage::English, Tier::Head, true) => ENGLISH_HEAD_EXCLUDING,
        (SearchLanguage::English, Tier::Body, _) => ENGLISH_BODY,
        (SearchLanguage::Simple, Tier::Head, false) => SIMPLE_HEAD,
        (SearchLanguage::Simple, Tier::Head, true) => SIMPLE_HEAD_EXCLUDING,
        (SearchLanguage::Simple, Tier::Body, _) => SIMPLE_BODY,
    }
}

/// How many operands the query has once parsed (0: empty or only stop words), whether it has a
/// negation (`!` appears in a tsquery's text only as the NOT operator or inside a quoted lexeme;
/// a lexeme with one only costs the extra check), and the snippet's anchor words ($2, from
/// [`anchor_words`]) that are not stop words, with their stems.
fn terms_sql(language: SearchLanguage) -> &'static str {
    macro_rules! terms {
        ($config:literal) => {
            concat!(
                "SELECT numnode(q), strpos(q::text, '!') > 0,
                        ARRAY(SELECT DISTINCT c
                              FROM (SELECT w FROM unnest($2::text[]) AS w
                                     WHERE to_tsvector('",
                $config,
                "', w) <> ''::tsvector
                                    UNION
                                    SELECT unnest(tsvector_to_array(to_tsvector('",
                $config,
                "',
                                        array_to_string($2::text[], ' '))))) AS a,
                                   unnest(ARRAY[a.w, initcap(a.w), upper(a.w)]) AS c)
                 FROM websearch_to_tsquery('",
                $config,
                "', $1) AS q"
            )
        };
    }
    match language {
        SearchLanguage::English => terms!("english"),
        SearchLanguage::Simple => terms!("simple"),
    }
}

/// The page of hits for `req`, and the cursor of the next page (null at the end).
///
/// Title-and-headings hits come first, then body-only hits; a page that ends the first tier
/// goes on into the second. `truncated` says a tier had more matches than it ranks.
pub async fn search(
    pool: &PgPool,
    language: SearchLanguage,
    req: &SearchRequest,
) -> Result<Value, ApiError> {
    let fp = req.fingerprint(language);
    let after: Option<Key> = req
        .cursor
        .as_deref()
        .map(|c| cursor::decode("search", &fp, c))
        .transpose()?;
    let (excludes, anchors) = query_terms(pool, language, &req.q).await?;
    let repo_ids = repo_filter(pool, &req.repos).await?;
    let first = after.as_ref().map_or(Tier::Head, |k| k.tier);
    // The planner does not price reading a vector out of TOAST, so for a common word it prefers
    // scanning the table in order (reading every row's vector until enough match) over the GIN
    // bitmap (reading only the matches'): six times slower on 100,000 documents. Read-only,
    // and the setting ends with the transaction.
    let mut tx = pool.begin().await.map_err(db_failure("search"))?;
    sqlx::query("SET LOCAL enable_seqscan = off")
        .execute(&mut *tx)
        .await
        .map_err(db_failure("search"))?;
    let mut rows: Vec<Row> = Vec::new();
    let mut truncated = false;
    for tier in [Tier::Head, Tier::Body] {
        // A page holds limit + 1 rows: the extra one says another page follows.
        if tier < first || rows.len() as i64 > req.limit {
            continue;
        }
        let key = after.as_ref().filter(|k| k.tier == tier);
        let mut got: Vec<Row> = sqlx::query_as(search_sql(language, tier, excludes))
            .bind(&req.q)
            .bind(&repo_ids)
            .bind(req.path_prefix.as_deref().map(like_prefix))
            .bind(key.map(|k| k.rank))
            .bind(key.map(|k| k.kind))
            .bind(key.map(|k| k.id))
            .bind(req.limit + 1 - rows.len() as i64)
            .bind(tier.candidates())
            .bind(&anchors)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_failure("search"))?;
        truncated |= got.first().is_some_and(|r| r.capped);
        for r in &mut got {
            r.tier = Some(tier);
        }
        rows.append(&mut got);
    }
    tx.commit().await.map_err(db_failure("search"))?;
    let next = next_cursor(&mut rows, req.limit, |last| {
        let key = Key {
            tier: last.tier.unwrap_or(Tier::Body),
            rank: last.rank,
            kind: last.kind,
            id: last.id,
        };
        cursor::encode("search", &fp, &key)
    });
    let hits = hits_json(pool, rows).await?;
    Ok(json!({ "query": req.q, "hits": hits, "nextCursor": next, "truncated": truncated }))
}

/// Parse the query: whether it excludes words, and the words the snippet window is anchored on.
/// An empty or all-stop-word query would match nothing useful (or everything): it is refused.
async fn query_terms(
    pool: &PgPool,
    language: SearchLanguage,
    q: &str,
) -> Result<(bool, Vec<String>), ApiError> {
    let (terms, excludes, anchors): (i32, bool, Vec<String>) = sqlx::query_as(terms_sql(language))
        .bind(q)
        .bind(anchor_words(q))
        .fetch_one(pool)
        .await
        .map_err(db_failure("parse search query"))?;
    if terms == 0 {
        return Err(ApiError::EmptyQuery);
    }
    Ok((excludes, anchors))
}

/// The page's hits as JSON, each with the code owners of its path.
async fn hits_json(pool: &PgPool, rows: Vec<Row>) -> Result<Vec<Value>, ApiError> {
    let mut ids: Vec<i64> = rows.iter().map(|r| r.repo_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let rules = rules_of(pool, &ids).await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let owners = owners_json(rules.get(&r.repo_id), &r.path);
            hit_json(r, owners)
        })
        .collect())
}

/// The ids of the `repo` filters; a name no stored repository has is `unknown_repository`.
async fn repo_filter(
    pool: &PgPool,
    names: &[(String, String)],
) -> Result<Option<Vec<i64>>, ApiError> {
    if names.is_empty() {
        return Ok(None);
    }
    let mut ids = Vec::with_capacity(names.len());
    for (owner, name) in names {
        ids.push(repos::find(pool, owner, name).await?.id);
    }
    Ok(Some(ids))
}

fn hit_json(r: Row, owners: Value) -> Value {
    json!({
        "kind": if r.kind == 0 { "document" } else { "readme" },
        "matched": match r.tier {
            Some(Tier::Head) => "heading",
            _ => "body",
        },
        "repository": r.full_name,
        "path": r.path,
        "title": r.title,
        "heading": r.heading.map(|h| json!({
            "text": h["text"], "anchor": h["anchor"], "level": h["level"],
        })),
        "snippet": snippet_html(&r.headline),
        "rank": r.rank,
        "blobSha": r.blob_sha,
        "lastSyncedAt": r.last_synced_at,
        "codeOwners": owners,
    })
}

/// `ts_headline` output as safe HTML: everything escaped, the markers as balanced `<mark>` tags
/// (a stray marker in the text can only open or close one).
pub(crate) fn snippet_html(headline: &str) -> String {
    let mut out = String::with_capacity(headline.len() + 16);
    let mut open = false;
    for c in headline.chars() {
        match c {
            START if !open => {
                out.push_str("<mark>");
                open = true;
            }
            STOP if open => {
                out.push_str("</mark>");
                open = false;
            }
            START | STOP => {}
            c => push_escaped_char(&mut out, c),
        }
    }
    if open {
        out.push_str("</mark>");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_escape_html_and_keep_marks_balanced() {
        let h = format!("<script>alert(1)</script> {START}install{STOP} & \"go\" {START}open");
        assert_eq!(
            snippet_html(&h),
            "&lt;script&gt;alert(1)&lt;/script&gt; <mark>install</mark> &amp; &quot;go&quot; <mark>open</mark>"
        );
        assert_eq!(
            snippet_html(&format!("{STOP}x{START}{START}y")),
            "x<mark>y</mark>"
        );
    }

    #[test]
    fn anchor_words_drop_exclusions_operators_and_punctuation() {
        assert_eq!(
            anchor_words(r#""Install Guide" or -beta deploy, Café"#),
            ["install", "guide", "deploy", "café"]
        );
        assert_eq!(anchor_words("x ".repeat(40).as_str()), ["x"]);
        let many: String = (0..40).map(|i| format!("w{i} ")).collect();
        assert_eq!(anchor_words(&many).len(), MAX_ANCHOR_WORDS);
    }

    #[test]
    fn the_snippet_window_in_the_sql_is_the_named_one() {
        for tier in [Tier::Head, Tier::Body] {
            for language in [SearchLanguage::English, SearchLanguage::Simple] {
                let sql = search_sql(language, tier, false);
                assert!(sql.contains(&format!(
                    "substr(x.body, greatest(a.at - {SNIPPET_LEAD_CHARS}, 1), {SNIPPET_WINDOW_CHARS})"
                )));
                assert!(sql.contains(&format!("left(d.body, {SNIPPET_SEARCH_CHARS})")));
                assert!(sql.contains(&format!("left(r.body, {SNIPPET_SEARCH_CHARS})")));
            }
        }
    }

    #[test]
    fn queries_are_bounded_and_not_empty() {
        assert!(matches!(validate_query("  "), Err(ApiError::EmptyQuery)));
        assert!(matches!(
            validate_query("a\0b"),
            Err(ApiError::InvalidQuery)
        ));
        assert!(matches!(
            validate_query(&"w ".repeat(5000)),
            Err(ApiError::InvalidQuery)
        ));
        assert_eq!(validate_query(" install guide ").unwrap(), "install guide");
    }
}
