//! The query language, the document search's (`websearch_to_tsquery`): words (all of them),
//! `"a phrase"`, `-excluded`, `a or b`; plus exact code tokens (`ECONNREFUSED`, `src/main.rs`,
//! `snake_case_name`, `--flag`: [`super::tokens::is_code_token`]), matched as they are
//! (case-insensitively) rather than through the English dictionary.
//!
//! [`parse`] turns the text into terms; [`Query::candidates_tsquery`] writes the `tsquery` that
//! finds the groups of lines that may match once the prose terms are normalized by the index's
//! own lexer ([`super::lexer`]): code terms are quoted lexemes, never stemmed. [`Query::tsquery`]
//! is the whole query as Postgres would match one line's vector (`a b or c -d` is
//! `a & (b | c) & !d`): what [`super::matcher`] answers, and its test's oracle.

use super::tokens::{is_boundary, is_code_token, quoted_lexeme, trim_token};

/// Longest query, in bytes.
pub const MAX_QUERY_BYTES: usize = 512;
/// Most terms one query may have.
pub const MAX_TERMS: usize = 32;

/// One term of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// Prose, normalized by the dictionary.
    Words(String),
    /// A quoted phrase, normalized by the dictionary, its words in order.
    Phrase(String),
    /// A code token, matched exactly (lower-cased).
    Code(String),
    /// A word the index splits (`KEY=v4lue+x`): each of its pieces, all of them.
    All(Vec<Term>),
}

impl Term {
    /// The term's leaves, in order: itself, or the pieces of [`Term::All`].
    pub fn leaves(&self) -> Vec<&Term> {
        match self {
            Self::All(pieces) => pieces.iter().collect(),
            t => vec![t],
        }
    }

    /// The literal texts to mark in a snippet.
    pub fn texts(&self) -> Vec<&str> {
        self.leaves()
            .into_iter()
            .filter_map(|t| match t {
                Self::Words(x) | Self::Phrase(x) | Self::Code(x) => Some(x.as_str()),
                Self::All(_) => None,
            })
            .collect()
    }

    /// `text` as the index reads it: one term when it is one code token or prose; else the
    /// pieces the index splits it into, all of them.
    fn of(text: &str, prose: fn(String) -> Term) -> Term {
        let t = trim_token(text);
        if is_code_token(t) {
            return Term::Code(t.to_owned());
        }
        let pieces: Vec<&str> = text
            .split(is_boundary)
            .map(trim_token)
            .filter(|p| !p.is_empty())
            .collect();
        if !pieces.iter().any(|p| is_code_token(p)) {
            return prose(text.to_owned());
        }
        Term::All(
            pieces
                .into_iter()
                .map(|p| {
                    if is_code_token(p) {
                        Term::Code(p.to_owned())
                    } else {
                        Term::Words(p.to_owned())
                    }
                })
                .collect(),
        )
    }
}

/// A term with its sign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    pub term: Term,
    pub negated: bool,
}

/// A parsed query: an AND of OR-groups.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Query {
    pub groups: Vec<Vec<Clause>>,
}

/// Why a query is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("the query is empty")]
    Empty,
    #[error("the query is over {MAX_QUERY_BYTES} bytes")]
    TooLong,
    #[error("the query has over {MAX_TERMS} terms")]
    TooManyTerms,
    #[error("the query holds a control character")]
    Control,
    #[error("the query only excludes: say what to find")]
    OnlyExclusions,
    #[error("an excluded word cannot be an alternative (a or -b): exclude it outside the or")]
    ExcludedAlternative,
}

/// Parse `text` (see the module doc).
pub fn parse(text: &str) -> Result<Query, QueryError> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(QueryError::TooLong);
    }
    if text.chars().any(|c| c.is_control() && c != '\t') {
        return Err(QueryError::Control);
    }
    let mut q = Query::default();
    let mut join_next = false;
    let mut terms = 0;
    for piece in split(text) {
        if !piece.quoted && piece.text.eq_ignore_ascii_case("or") {
            join_next = !q.groups.is_empty();
            continue;
        }
        let Some(clause) = clause(&piece) else {
            continue;
        };
        terms += 1;
        if terms > MAX_TERMS {
            return Err(QueryError::TooManyTerms);
        }
        match q.groups.last_mut() {
            Some(group) if join_next => group.push(clause),
            _ => q.groups.push(vec![clause]),
        }
        join_next = false;
    }
    if q.groups.is_empty() {
        return Err(QueryError::Empty);
    }
    if q.groups.iter().flatten().all(|c| c.negated) {
        return Err(QueryError::OnlyExclusions);
    }
    // `a or -b` would match nearly every line (and read the whole index).
    if q.groups
        .iter()
        .any(|g| g.len() > 1 && g.iter().any(|c| c.negated))
    {
        return Err(QueryError::ExcludedAlternative);
    }
    Ok(q)
}

/// One piece of the query text: a quoted phrase (its sign outside the quotes) or a word.
struct Piece<'a> {
    text: &'a str,
    quoted: bool,
    negated: bool,
}

/// The query's pieces: quoted phrases (`"…"`, `-"…"`; an unclosed quote runs to the end) and
/// whitespace-split words.
fn split(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let (negated, after) = match rest.strip_prefix('-') {
            Some(a) if a.starts_with('"') => (true, a),
            _ => (false, rest),
        };
        if let Some(body) = after.strip_prefix('"') {
            let end = body.find('"').unwrap_or(body.len());
            out.push(Piece {
                text: &body[..end],
                quoted: true,
                negated,
            });
            rest = body[end..].strip_prefix('"').unwrap_or(&body[end..]);
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            out.push(Piece {
                text: &rest[..end],
                quoted: false,
                negated: false,
            });
            rest = &rest[end..];
        }
        rest = rest.trim_start();
    }
    out
}

fn clause(p: &Piece<'_>) -> Option<Clause> {
    if p.quoted {
        let inner = p.text.trim();
        return (!inner.is_empty()).then(|| Clause {
            term: Term::of(inner, Term::Phrase),
            negated: p.negated,
        });
    }
    // `--flag` is a code token; `-word` excludes the word.
    let (negated, word) = match p.text.strip_prefix('-') {
        Some(w) if !w.starts_with('-') && !w.is_empty() => (true, w),
        _ => (false, p.text),
    };
    if is_code_token(trim_token(word)) {
        return Some(Clause {
            term: Term::of(word, Term::Words),
            negated,
        });
    }
    let w = word.trim_matches(|c: char| !c.is_alphanumeric());
    (!w.is_empty()).then(|| Clause {
        term: Term::of(w, Term::Words),
        negated,
    })
}

impl Query {
    /// Every term, in order.
    pub fn clauses(&self) -> impl Iterator<Item = &Clause> {
        self.groups.iter().flatten()
    }

    /// The `tsquery` text, given each leaf's normalized prose (`normalized[i]` for the i-th
    /// leaf in [`Query::leaves`] order; `""` for a prose term that is all stop words, which
    /// drops it). `None` when nothing is left to search for.
    pub fn tsquery(&self, normalized: &[String]) -> Option<String> {
        self.write_tsquery(normalized, true)
    }

    /// The `tsquery` that finds the groups of lines (migration 0018) that may hold a line
    /// [`Query::tsquery`] matches: without its exclusions (another line of the group may hold an
    /// excluded word), given each phrase as all of its words (`normalized` as
    /// [`super::lexer::plain_query`] makes it: a group's terms have no positions).
    pub fn candidates_tsquery(&self, normalized: &[String]) -> Option<String> {
        self.write_tsquery(normalized, false)
    }

    fn write_tsquery(&self, normalized: &[String], exclusions: bool) -> Option<String> {
        let mut pieces = normalized.iter();
        let mut positive = false;
        let mut groups = Vec::new();
        for group in &self.groups {
            let mut alts = Vec::new();
            for c in group {
                let leaves: Vec<String> = c
                    .term
                    .leaves()
                    .into_iter()
                    .filter_map(|leaf| {
                        let normalized = pieces.next().cloned().unwrap_or_default();
                        let piece = match leaf {
                            Term::Code(t) => quoted_lexeme(t),
                            _ => normalized,
                        };
                        (!piece.is_empty()).then(|| format!("({piece})"))
                    })
                    .collect();
                let piece = leaves.join(" & ");
                if piece.is_empty() || (c.negated && !exclusions) {
                    continue;
                }
                positive |= !c.negated;
                let sign = if c.negated { "!" } else { "" };
                alts.push(format!("{sign}({piece})"));
            }
            if !alts.is_empty() {
                groups.push(format!("({})", alts.join(" | ")));
            }
        }
        positive.then(|| groups.join(" & "))
    }

    /// Every clause's leaves, in order (what [`Query::tsquery`]'s `normalized` follows).
    pub fn leaves(&self) -> impl Iterator<Item = &Term> {
        self.clauses().flat_map(|c| c.term.leaves())
    }

    /// Whether each leaf ([`Query::leaves`]) is excluded.
    pub fn leaves_negated(&self) -> impl Iterator<Item = bool> + '_ {
        self.clauses()
            .flat_map(|c| std::iter::repeat_n(c.negated, c.term.leaves().len()))
    }

    /// The words to mark in snippets: the positive terms as typed, and the lexemes the
    /// dictionary made of them (`normalized`, in leaf order; the quoted parts of each).
    pub fn marks<'a>(&'a self, normalized: &'a [String]) -> Vec<&'a str> {
        let typed = self
            .clauses()
            .filter(|c| !c.negated)
            .flat_map(|c| c.term.texts());
        let lexemes = self
            .leaves_negated()
            .zip(normalized)
            .filter(|(negated, _)| !negated)
            .flat_map(|(_, n)| n.split('\'').skip(1).step_by(2));
        typed.chain(lexemes).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(q: &str) -> Vec<(Term, bool)> {
        parse(q)
            .unwrap()
            .clauses()
            .map(|c| (c.term.clone(), c.negated))
            .collect()
    }

    #[test]
    fn words_phrases_exclusions_and_or_as_the_document_search_reads_them() {
        let q = parse(r#"tls "handshake failed" -docker podman or kubernetes"#).unwrap();
        assert_eq!(q.groups.len(), 4);
        assert_eq!(q.groups[3].len(), 2, "or joins its neighbours");
        assert_eq!(
            terms(r#"-"flaky test" retry"#),
            vec![
                (Term::Phrase("flaky test".into()), true),
                (Term::Words("retry".into()), false)
            ]
        );
    }

    #[test]
    fn code_tokens_are_exact_terms() {
        assert_eq!(
            terms("ECONNREFUSED src/main.rs snake_case_name --flag -v"),
            vec![
                (Term::Code("ECONNREFUSED".into()), false),
                (Term::Code("src/main.rs".into()), false),
                (Term::Code("snake_case_name".into()), false),
                (Term::Code("--flag".into()), false),
                (Term::Words("v".into()), true),
            ]
        );
        let q = parse("src/main.rs or it's").unwrap();
        assert_eq!(
            q.tsquery(&["".into(), "'it'".into()]).unwrap(),
            "((('src/main.rs')) | (('it')))"
        );
    }

    #[test]
    fn a_word_the_index_splits_is_searched_as_its_pieces() {
        assert_eq!(
            terms("\"DB_PASSWORD=0ZDOX079!%B2fwKUDC\""),
            vec![(
                Term::All(vec![
                    Term::Code("DB_PASSWORD".into()),
                    Term::Code("0ZDOX079".into()),
                    Term::Code("B2fwKUDC".into())
                ]),
                false
            )]
        );
        let q = parse("2t+GmEi/JBWy").unwrap();
        assert_eq!(
            q.tsquery(&["".into(), "".into()]).unwrap(),
            "((('2t') & ('gmei/jbwy')))"
        );
    }

    #[test]
    fn bad_queries_are_refused_with_their_reason() {
        assert_eq!(parse("  "), Err(QueryError::Empty));
        assert_eq!(parse(&"a".repeat(513)), Err(QueryError::TooLong));
        assert_eq!(parse("-only"), Err(QueryError::OnlyExclusions));
        assert_eq!(parse("a\u{0}b"), Err(QueryError::Control));
        assert_eq!(parse(&"w ".repeat(40)), Err(QueryError::TooManyTerms));
        assert_eq!(
            parse("tls or -docker"),
            Err(QueryError::ExcludedAlternative)
        );
        assert!(parse("tls or ssl -docker").is_ok());
    }

    #[test]
    fn marks_are_the_positive_words_and_their_lexemes_never_operators_or_exclusions() {
        let q = parse("\"connection to the server\" -docker").unwrap();
        let normalized = ["'connect' <3> 'server'".to_owned(), "'docker'".to_owned()];
        assert_eq!(
            q.marks(&normalized),
            ["connection to the server", "connect", "server"]
        );
    }

    #[test]
    fn stop_words_alone_leave_nothing_to_search() {
        let q = parse("the").unwrap();
        assert_eq!(q.tsquery(&["".into()]), None);
        let q = parse("the tls").unwrap();
        assert_eq!(
            q.tsquery(&["".into(), "'tl'".into()]).unwrap(),
            "((('tl')))"
        );
    }

    #[test]
    fn a_groups_query_has_no_exclusion_and_takes_a_phrase_as_its_words() {
        let q = parse("tls -docker \"connection refused\" or ECONNREFUSED").unwrap();
        let lines = [
            "'tl'".into(),
            "'docker'".into(),
            "'connect' <-> 'refus'".into(),
            String::new(),
        ];
        assert_eq!(
            q.tsquery(&lines).unwrap(),
            "((('tl'))) & (!(('docker'))) & ((('connect' <-> 'refus')) | (('econnrefused')))"
        );
        let groups = [
            "'tl'".into(),
            "'docker'".into(),
            "'connect' & 'refus'".into(),
            String::new(),
        ];
        assert_eq!(
            q.candidates_tsquery(&groups).unwrap(),
            "((('tl'))) & ((('connect' & 'refus')) | (('econnrefused')))"
        );
    }
}
