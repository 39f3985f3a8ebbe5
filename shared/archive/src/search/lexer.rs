//! The prose half of the search vector, made here rather than by Postgres's `to_tsvector`:
//! Postgres's parser read about 12 MB of text per second per core on this project's machine
//! class, under issue 34's indexing target of 20 MB/s with everything else besides. The query
//! side uses this same lexer ([`plain_query`], [`phrase_query`]), so a word is always looked up
//! as it was indexed.
//!
//! A word is a maximal run of letters and digits, lower-cased. The Snowball English stop words
//! are dropped but keep their positions (as Postgres's `english` configuration does, so
//! `"connection was refused"` is `'connect' <2> 'refus'`). A word with a digit is kept whole;
//! any other is stemmed by the Snowball English stemmer (Porter2, the algorithm of Postgres's
//! `english` configuration). Positions start at 1 and stop at Postgres's 16,383; a lexeme keeps
//! at most Postgres's 256 positions.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rust_stemmers::{Algorithm, Stemmer};

use super::tokens::quoted_lexeme;

/// Postgres's last position.
pub const MAX_POSITION: usize = 16_383;
/// Positions one lexeme keeps (Postgres's cap).
const MAX_POSITIONS: usize = 256;
/// A longer run of letters and digits is a blob, not a word.
const MAX_WORD_BYTES: usize = 100;

/// The Snowball English stop words (Postgres's `english.stop`).
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "did",
    "do",
    "does",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Makes lexemes, remembering each word's (a segment repeats its words: stemming each once).
pub struct Lexer {
    stemmer: Stemmer,
    seen: HashMap<String, Option<String>>,
}

impl Default for Lexer {
    fn default() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            seen: HashMap::new(),
        }
    }
}

/// Words remembered at most (a segment of distinct blobs does not grow it without bound).
const MAX_REMEMBERED: usize = 100_000;

impl Lexer {
    /// The lexeme of one word: `None` for a stop word.
    fn lexeme(&mut self, w: &str) -> Option<String> {
        if let Some(l) = self.seen.get(w) {
            return l.clone();
        }
        let lower = w.to_lowercase();
        let lexeme = if STOP_WORDS.binary_search(&lower.as_str()).is_ok() {
            None
        } else if lower.chars().any(|c| c.is_ascii_digit()) {
            Some(lower)
        } else {
            Some(self.stemmer.stem(&lower).into_owned())
        };
        if self.seen.len() < MAX_REMEMBERED {
            self.seen.insert(w.to_owned(), lexeme.clone());
        }
        lexeme
    }

    /// Each word of `text` with its position: its lexeme, or `None` for a stop word.
    fn words<'a>(
        &'a mut self,
        text: &'a str,
    ) -> impl Iterator<Item = (usize, Option<String>)> + 'a {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty() && w.len() <= MAX_WORD_BYTES)
            .enumerate()
            .map(move |(i, w)| ((i + 1).min(MAX_POSITION), self.lexeme(w)))
    }

    /// The `tsvector` literal of `text`'s words with their positions, and `codes` (exact
    /// lexemes, no position).
    pub fn vector(&mut self, text: &str, codes: &BTreeSet<String>) -> String {
        literal(&lexemes(self.words(text), codes))
    }

    /// [`Lexer::vector`] in Postgres's binary form of a `tsvector` (what its `tsvectorrecv`
    /// reads), which the indexer sends: Postgres then builds the vector without parsing a
    /// literal (a fifth of its work while indexing, issue 34).
    pub fn binary_vector(&mut self, text: &str, codes: &BTreeSet<String>) -> Vec<u8> {
        binary(&lexemes(self.words(text), codes))
    }
}

/// Each word of `text` with its position (a lexer of its own).
fn words(text: &str) -> Vec<(usize, Option<String>)> {
    Lexer::default().words(text).collect()
}

/// [`Lexer::vector`] with a lexer of its own.
pub fn vector(text: &str, codes: &BTreeSet<String>) -> String {
    Lexer::default().vector(text, codes)
}

/// [`Lexer::binary_vector`] with a lexer of its own.
pub fn binary_vector(text: &str, codes: &BTreeSet<String>) -> Vec<u8> {
    Lexer::default().binary_vector(text, codes)
}

/// Each lexeme (lower-cased, as the literal's quoting lower-cases it) with its positions in
/// ascending order: sorted by bytes and unique, as Postgres keeps a vector's lexemes.
fn lexemes(
    words: impl Iterator<Item = (usize, Option<String>)>,
    codes: &BTreeSet<String>,
) -> BTreeMap<String, Vec<usize>> {
    let mut lexemes: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (pos, lexeme) in words {
        if let Some(l) = lexeme {
            let positions = lexemes.entry(l).or_default();
            if positions.len() < MAX_POSITIONS && positions.last() != Some(&pos) {
                positions.push(pos);
            }
        }
    }
    for c in codes {
        lexemes.entry(c.to_lowercase()).or_default();
    }
    lexemes
}

/// The binary form (`tsvectorrecv`): the number of lexemes (int32), then each lexeme as a
/// NUL-terminated string, its number of positions (uint16) and each position (uint16, weight D);
/// all big-endian. A lexeme holding a NUL (which the binary form cannot carry) is left out.
fn binary(lexemes: &BTreeMap<String, Vec<usize>>) -> Vec<u8> {
    let kept = || lexemes.iter().filter(|(l, _)| !l.contains('\0'));
    let mut out = Vec::with_capacity(4 + lexemes.keys().map(|l| l.len() + 8).sum::<usize>());
    let count = u32::try_from(kept().count()).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_be_bytes());
    for (lexeme, positions) in kept() {
        out.extend_from_slice(lexeme.as_bytes());
        out.push(0);
        let n = u16::try_from(positions.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&n.to_be_bytes());
        for p in positions {
            let p = u16::try_from((*p).min(MAX_POSITION)).unwrap_or(0);
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    out
}

fn literal(lexemes: &BTreeMap<String, Vec<usize>>) -> String {
    let mut out = String::new();
    for (lexeme, positions) in lexemes {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&quoted_lexeme(lexeme));
        for (i, p) in positions.iter().enumerate() {
            out.push(if i == 0 { ':' } else { ',' });
            out.push_str(&p.to_string());
        }
    }
    out
}

/// `text`'s lexemes, all of them (`'a' & 'b'`); `""` when it has only stop words.
pub fn plain_query(text: &str) -> String {
    let lexemes: BTreeSet<String> = words(text).into_iter().filter_map(|(_, l)| l).collect();
    lexemes
        .iter()
        .map(|l| quoted_lexeme(l))
        .collect::<Vec<_>>()
        .join(" & ")
}

/// `text`'s lexemes in order at their distances (`'a' <-> 'b' <2> 'c'`); `""` when it has only
/// stop words.
pub fn phrase_query(text: &str) -> String {
    let mut out = String::new();
    let mut last = None;
    for (pos, lexeme) in words(text) {
        let Some(l) = lexeme else { continue };
        if let Some(prev) = last {
            let gap: usize = pos - prev;
            out.push_str(&if gap == 1 {
                " <-> ".to_owned()
            } else {
                format!(" <{gap}> ")
            });
        }
        out.push_str(&quoted_lexeme(&l));
        last = Some(pos);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_words_are_sorted_for_the_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn words_are_stemmed_as_postgres_english_stems_them_and_stop_words_keep_their_place() {
        let v = vector(
            "The connection was refused; refusing connections v2 TLS",
            &BTreeSet::new(),
        );
        assert_eq!(v, "'connect':2,6 'refus':4,5 'tls':8 'v2':7");
        assert_eq!(
            phrase_query("connection was refused"),
            "'connect' <2> 'refus'"
        );
        assert_eq!(
            plain_query("the refused Connections"),
            "'connect' & 'refus'"
        );
        assert_eq!(plain_query("the of"), "");
    }

    #[test]
    fn code_tokens_join_the_vector_as_exact_lexemes() {
        let codes: BTreeSet<String> = ["src/main.rs".to_owned()].into();
        assert_eq!(vector("see it", &codes), "'see':1 'src/main.rs'");
    }
}
