//! Whether one line matches a query: what Postgres's `@@` answered on each line's own vector
//! before the index held groups of lines without them (migration 0018; docs/transcript-search.md
//! "Groups of lines"). The line's lexemes are made by the indexer's lexer ([`super::lexer`]) and
//! code tokens ([`super::tokens::code_tokens`]), the query's as [`super::find`] normalizes them,
//! and the query is read as [`Query::tsquery`] writes it: an AND of OR-groups of clauses, each
//! clause all of its leaves, a word all of its lexemes, a phrase its lexemes at their distances,
//! a code token one exact lexeme; a leaf of stop words only is left out (and a clause or group
//! left with nothing). A test has Postgres answer the same lines and queries.

use super::lexer::{self, Lexer};
use super::query::{Query, Term};
use super::tokens::code_tokens;

/// What a clause needs of a line: each of these.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Need<L> {
    /// A lexeme, anywhere.
    Lexeme(L),
    /// Lexemes at these distances from the first (a phrase).
    Phrase(Vec<(L, usize)>),
}

/// A query, ready to test lines with.
#[derive(Debug, Clone)]
pub struct Matcher {
    /// Every group must hold: one of its clauses does (or, for an excluded clause, does not).
    /// A lexeme is its place in `lexemes`.
    groups: Vec<Vec<(Vec<Need<usize>>, bool)>>,
    /// The lexemes the query names, sorted: only these of a line are looked at.
    lexemes: Vec<String>,
}

impl Matcher {
    /// `None` when nothing is left to look for (stop words only, or exclusions only).
    pub fn new(q: &Query) -> Option<Self> {
        let mut positive = false;
        let mut groups = Vec::new();
        for group in &q.groups {
            let mut alts = Vec::new();
            for c in group {
                let needs: Vec<Need<String>> =
                    c.term.leaves().into_iter().flat_map(needs).collect();
                if needs.is_empty() {
                    continue;
                }
                positive |= !c.negated;
                alts.push((needs, c.negated));
            }
            if !alts.is_empty() {
                groups.push(alts);
            }
        }
        if !positive {
            return None;
        }
        let mut lexemes: Vec<String> = groups
            .iter()
            .flatten()
            .flat_map(|(needs, _)| needs)
            .flat_map(|n| match n {
                Need::Lexeme(l) => vec![l.clone()],
                Need::Phrase(words) => words.iter().map(|(l, _)| l.clone()).collect(),
            })
            .collect();
        lexemes.sort();
        lexemes.dedup();
        let place = |l: &String| lexemes.binary_search(l).unwrap_or(0);
        let groups = groups
            .iter()
            .map(|alts| {
                alts.iter()
                    .map(|(needs, negated)| {
                        let needs = needs
                            .iter()
                            .map(|n| match n {
                                Need::Lexeme(l) => Need::Lexeme(place(l)),
                                Need::Phrase(w) => {
                                    Need::Phrase(w.iter().map(|(l, d)| (place(l), *d)).collect())
                                }
                            })
                            .collect();
                        (needs, *negated)
                    })
                    .collect()
            })
            .collect();
        Some(Self { groups, lexemes })
    }

    /// Whether `text` (one line's searchable text, as indexed) matches.
    pub fn matches(&self, lexer: &mut Lexer, text: &str) -> bool {
        // The positions of each lexeme the query names (`None`: not in the line).
        let mut line: Vec<Option<Vec<u16>>> = vec![None; self.lexemes.len()];
        lexer.lexemes(text, &code_tokens(text), |l, p| {
            if let Ok(i) = self.lexemes.binary_search_by(|w| w.as_str().cmp(l)) {
                line[i] = Some(p.to_vec());
            }
        });
        self.groups.iter().all(|alts| {
            alts.iter()
                .any(|(needs, negated)| needs.iter().all(|n| holds(&line, n)) != *negated)
        })
    }
}

/// What a leaf needs (nothing when it is stop words only).
fn needs(leaf: &Term) -> Vec<Need<String>> {
    match leaf {
        Term::Code(t) => vec![Need::Lexeme(t.to_lowercase())],
        Term::Words(w) => {
            let mut lexemes: Vec<String> =
                lexer::words(w).into_iter().filter_map(|(_, l)| l).collect();
            lexemes.sort();
            lexemes.dedup();
            lexemes.into_iter().map(Need::Lexeme).collect()
        }
        Term::Phrase(p) => {
            let words: Vec<(usize, String)> = lexer::words(p)
                .into_iter()
                .filter_map(|(pos, l)| Some((pos, l?)))
                .collect();
            match words.as_slice() {
                [] => Vec::new(),
                [(_, one)] => vec![Need::Lexeme(one.clone())],
                [(first, _), ..] => vec![Need::Phrase(
                    words
                        .iter()
                        .map(|(pos, l)| (l.clone(), pos - first))
                        .collect(),
                )],
            }
        }
        Term::All(pieces) => pieces.iter().flat_map(needs).collect(),
    }
}

fn holds(line: &[Option<Vec<u16>>], need: &Need<usize>) -> bool {
    let at = |l: &usize| line.get(*l).and_then(Option::as_ref);
    match need {
        Need::Lexeme(l) => at(l).is_some(),
        Need::Phrase(words) => {
            let Some(((first, _), rest)) = words.split_first() else {
                return false;
            };
            let Some(starts) = at(first) else {
                return false;
            };
            starts.iter().any(|start| {
                rest.iter().all(|(l, offset)| {
                    let want = usize::from(*start) + offset;
                    at(l).is_some_and(|ps| ps.iter().any(|p| usize::from(*p) == want))
                })
            })
        }
    }
}
