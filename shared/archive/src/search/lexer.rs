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

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

use foldhash::fast::RandomState;

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
/// Each lexeme has a number ([`Lexer::intern`]), so a row's words are sorted and grouped as
/// numbers, and only its distinct lexemes are compared as text.
pub struct Lexer {
    stemmer: Stemmer,
    /// Each word as written and its lexeme's number (`None`: a stop word).
    seen: HashMap<Box<str>, Option<u32>, RandomState>,
    /// Each lexeme's number, and the lexeme of each number below [`FIRST_ROW_ID`] with its
    /// [`sort_key`].
    ids: HashMap<Box<str>, u32, RandomState>,
    names: Vec<(u64, Box<str>)>,
    /// The lexemes of the row being made once [`MAX_REMEMBERED`] are known, numbered from
    /// [`FIRST_ROW_ID`] (forgotten with the row), and each one's number.
    row_names: Vec<(u64, String)>,
    row_ids: HashMap<String, u32, RandomState>,
    /// The row being made: each word's lexeme number and position.
    row: Vec<(u32, u16)>,
}

impl Default for Lexer {
    fn default() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            seen: HashMap::default(),
            ids: HashMap::default(),
            names: Vec::new(),
            row_names: Vec::new(),
            row_ids: HashMap::default(),
            row: Vec::new(),
        }
    }
}

/// Words (and lexemes) remembered at most (a segment of distinct blobs does not grow the lexer
/// without bound).
const MAX_REMEMBERED: usize = 100_000;
/// The first number of a lexeme the lexer does not remember past its row.
const FIRST_ROW_ID: u32 = 1 << 31;

impl Lexer {
    /// The lexeme of one word: `None` for a stop word.
    fn lexeme(&mut self, w: &str) -> Option<u32> {
        if let Some(l) = self.seen.get(w) {
            return *l;
        }
        let lower = w.to_lowercase();
        let lexeme = if STOP_WORDS.binary_search(&lower.as_str()).is_ok() {
            None
        } else if lower.chars().any(|c| c.is_ascii_digit()) {
            Some(self.intern(lower))
        } else {
            let stem = self.stemmer.stem(&lower).into_owned();
            Some(self.intern(stem))
        };
        if self.seen.len() < MAX_REMEMBERED && lexeme.is_none_or(|id| id < FIRST_ROW_ID) {
            self.seen.insert(w.into(), lexeme);
        }
        lexeme
    }

    /// The number of `lexeme`.
    fn intern(&mut self, lexeme: String) -> u32 {
        if let Some(id) = self.ids.get(lexeme.as_str()) {
            return *id;
        }
        if self.names.len() < MAX_REMEMBERED {
            let id = u32::try_from(self.names.len()).unwrap_or(FIRST_ROW_ID - 1);
            self.names.push((sort_key(&lexeme), lexeme.as_str().into()));
            self.ids.insert(lexeme.into(), id);
            id
        } else if let Some(id) = self.row_ids.get(lexeme.as_str()) {
            *id
        } else {
            // A row is one part of at most 16 KiB: far fewer lexemes than u32 numbers.
            let id = FIRST_ROW_ID + u32::try_from(self.row_names.len()).unwrap_or(0);
            self.row_names.push((sort_key(&lexeme), lexeme.clone()));
            self.row_ids.insert(lexeme, id);
            id
        }
    }

    /// The lexeme numbered `id` and its [`sort_key`].
    fn name(&self, id: u32) -> (u64, &str) {
        match id.checked_sub(FIRST_ROW_ID) {
            None => self
                .names
                .get(id as usize)
                .map_or((0, ""), |(k, n)| (*k, n)),
            Some(i) => self
                .row_names
                .get(i as usize)
                .map_or((0, ""), |(k, n)| (*k, n.as_str())),
        }
    }

    /// Each word of `text` with its position: its lexeme's number, or `None` for a stop word.
    fn words<'a>(&'a mut self, text: &'a str) -> impl Iterator<Item = (usize, Option<u32>)> + 'a {
        word_texts(text)
            .enumerate()
            .map(move |(i, w)| ((i + 1).min(MAX_POSITION), self.lexeme(w)))
    }

    /// Each lexeme of `text` (lower-cased, as the literal's quoting lower-cases it) with its
    /// positions in ascending order, at most [`MAX_POSITIONS`] of them, and `codes` (no
    /// position) merged in: given to `f` sorted by bytes and unique, as Postgres keeps a
    /// vector's lexemes.
    pub(crate) fn lexemes(
        &mut self,
        text: &str,
        codes: &BTreeSet<String>,
        mut f: impl FnMut(&str, &[u16]),
    ) {
        self.row_names.clear();
        self.row_ids.clear();
        let mut row = std::mem::take(&mut self.row);
        row.clear();
        for (pos, lexeme) in self.words(text) {
            if let Some(id) = lexeme {
                // Positions are at most MAX_POSITION, which a u16 holds.
                row.push((id, u16::try_from(pos).unwrap_or(u16::MAX)));
            }
        }
        // By number, then position: each lexeme's positions together, ascending.
        row.sort_unstable();
        let mut groups: Vec<Group<'_>> = row
            .chunk_by(|a, b| a.0 == b.0)
            .map(|g| (self.name(g[0].0), g))
            .collect();
        // By bytes: the keys first (one comparison of integers decides nearly always).
        groups.sort_unstable_by(|(a, _), (b, _)| {
            a.0.cmp(&b.0)
                .then_with(|| a.1.as_bytes().cmp(b.1.as_bytes()))
        });
        let mut codes = lowered(codes).into_iter().peekable();
        let mut positions: Vec<u16> = Vec::with_capacity(MAX_POSITIONS);
        // One number per lexeme, so one group per lexeme, its positions ascending.
        for ((_, lexeme), words) in groups {
            positions.clear();
            for (_, pos) in words {
                if positions.len() < MAX_POSITIONS && positions.last() != Some(pos) {
                    positions.push(*pos);
                }
            }
            while let Some(code) = codes.next_if(|c| c.as_bytes() <= lexeme.as_bytes()) {
                if code.as_bytes() != lexeme.as_bytes() {
                    f(&code, &[]);
                }
            }
            f(lexeme, &positions);
        }
        for code in codes {
            f(&code, &[]);
        }
        self.row = row;
    }

    /// The `tsvector` literal of `text`'s words with their positions, and `codes` (exact
    /// lexemes, no position).
    pub fn vector(&mut self, text: &str, codes: &BTreeSet<String>) -> String {
        let mut out = String::new();
        self.lexemes(text, codes, |lexeme, positions| {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&quoted_lexeme(lexeme));
            for (i, p) in positions.iter().enumerate() {
                out.push(if i == 0 { ':' } else { ',' });
                out.push_str(&p.to_string());
            }
        });
        out
    }

    /// [`Lexer::vector`] in Postgres's binary form of a `tsvector` (what its `tsvectorrecv`
    /// reads), the form in which the indexer sends a group's terms ([`Terms::take_binary`], with
    /// no positions): Postgres then builds the vector without parsing a literal (a fifth of its
    /// work while indexing, issue 34). The binary form: the number of
    /// lexemes (int32), then each lexeme as a NUL-terminated string, its number of positions
    /// (uint16) and each position (uint16, weight D); all big-endian. A lexeme holding a NUL
    /// (which the binary form cannot carry) is left out.
    pub fn binary_vector(&mut self, text: &str, codes: &BTreeSet<String>) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + text.len());
        out.extend_from_slice(&[0; 4]);
        let mut count = 0u32;
        self.lexemes(text, codes, |lexeme, positions| {
            if lexeme.contains('\0') {
                return;
            }
            count += 1;
            out.extend_from_slice(lexeme.as_bytes());
            out.push(0);
            let n = u16::try_from(positions.len()).unwrap_or(u16::MAX);
            out.extend_from_slice(&n.to_be_bytes());
            for p in positions {
                out.extend_from_slice(&p.to_be_bytes());
            }
        });
        out[..4].copy_from_slice(&count.to_be_bytes());
        out
    }

    /// Each lexeme of `text` and of `codes` added to `terms` (a group's, migration 0018): the
    /// lexemes [`Lexer::binary_vector`] would hold, without their positions (so without sorting
    /// a row's words: a lexeme the lexer remembers is added by its number, once per group).
    pub fn add_terms(&mut self, text: &str, codes: &BTreeSet<String>, terms: &mut Terms) {
        self.row_names.clear();
        self.row_ids.clear();
        for w in word_texts(text) {
            match self.lexeme(w) {
                Some(id) if id < FIRST_ROW_ID => terms.add_id(id),
                Some(id) => terms.add(self.name(id).1),
                None => {}
            }
        }
        for code in lowered(codes) {
            if !code.contains('\0') {
                terms.add(&code);
            }
        }
    }
}

/// The words of `text`: maximal runs of letters and digits, those of at most
/// [`MAX_WORD_BYTES`].
fn word_texts(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && w.len() <= MAX_WORD_BYTES)
}

/// The lexemes of several rows together, without positions: the `terms` of a group of lines
/// (migration 0018), which the GIN index holds. Made with one [`Lexer`] ([`Lexer::add_terms`],
/// [`Terms::take_binary`]).
#[derive(Debug)]
pub struct Terms {
    bytes: Vec<u8>,
    /// Each lexeme added as text: its [`sort_key`], and where its bytes are in `bytes`.
    items: Vec<(u64, usize, usize)>,
    /// The numbers of the lexer's remembered lexemes added since the last take, once each ...
    ids: Vec<u32>,
    /// ... for which each number's stamp is the take's `round`.
    stamps: Vec<u32>,
    round: u32,
}

impl Default for Terms {
    fn default() -> Self {
        Self {
            bytes: Vec::new(),
            items: Vec::new(),
            ids: Vec::new(),
            stamps: Vec::new(),
            round: 1,
        }
    }
}

impl Terms {
    fn add_id(&mut self, id: u32) {
        let i = id as usize;
        if i >= self.stamps.len() {
            self.stamps.resize(i + 1, 0);
        }
        if self.stamps[i] != self.round {
            self.stamps[i] = self.round;
            self.ids.push(id);
        }
    }

    fn add(&mut self, lexeme: &str) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(lexeme.as_bytes());
        self.items
            .push((sort_key(lexeme), start, start + lexeme.len()));
    }

    /// Every lexeme added (through `lexer`), once each and sorted by bytes, as a `tsvector`
    /// without positions in Postgres's binary form ([`Lexer::binary_vector`]); `self` is
    /// emptied for the next group.
    pub fn take_binary(&mut self, lexer: &Lexer) -> Vec<u8> {
        for id in self.ids.drain(..) {
            let (key, name) = lexer.name(id);
            let start = self.bytes.len();
            self.bytes.extend_from_slice(name.as_bytes());
            self.items.push((key, start, start + name.len()));
        }
        self.round = self.round.wrapping_add(1);
        if self.round == 0 {
            self.stamps.fill(0);
            self.round = 1;
        }
        let Self { bytes, items, .. } = self;
        let text = |&(_, start, end): &(u64, usize, usize)| &bytes[start..end];
        // Equal keys of two lexemes of at most 8 bytes are equal lexemes (a lexeme holds no NUL):
        // most repeated words are compared as numbers alone.
        let order = |a: &(u64, usize, usize), b: &(u64, usize, usize)| {
            a.0.cmp(&b.0).then_with(|| {
                if a.2 - a.1 <= 8 && b.2 - b.1 <= 8 {
                    std::cmp::Ordering::Equal
                } else {
                    text(a).cmp(text(b))
                }
            })
        };
        items.sort_unstable_by(order);
        items.dedup_by(|a, b| order(a, b).is_eq());
        let mut out = Vec::with_capacity(4 + bytes.len());
        out.extend_from_slice(&u32::try_from(items.len()).unwrap_or(u32::MAX).to_be_bytes());
        for item in items.iter() {
            out.extend_from_slice(text(item));
            out.push(0);
            out.extend_from_slice(&0u16.to_be_bytes());
        }
        bytes.clear();
        items.clear();
        out
    }
}

/// Each word of `text` with its position (a lexer of its own).
pub(crate) fn words(text: &str) -> Vec<(usize, Option<String>)> {
    let mut lexer = Lexer::default();
    let ids: Vec<(usize, Option<u32>)> = lexer.words(text).collect();
    ids.into_iter()
        .map(|(pos, id)| (pos, id.map(|id| lexer.name(id).1.to_owned())))
        .collect()
}

/// [`Lexer::vector`] with a lexer of its own.
pub fn vector(text: &str, codes: &BTreeSet<String>) -> String {
    Lexer::default().vector(text, codes)
}

/// [`Lexer::binary_vector`] with a lexer of its own.
pub fn binary_vector(text: &str, codes: &BTreeSet<String>) -> Vec<u8> {
    Lexer::default().binary_vector(text, codes)
}

/// A lexeme of a row (its [`sort_key`] and text) and the row's words that have it.
type Group<'a> = ((u64, &'a str), &'a [(u32, u16)]);

/// The first 8 bytes of `lexeme` as a big-endian number (zeros past its end): two lexemes whose
/// keys differ sort by bytes as their keys do; equal keys are compared whole.
fn sort_key(lexeme: &str) -> u64 {
    let mut bytes = [0u8; 8];
    let head = &lexeme.as_bytes()[..lexeme.len().min(8)];
    bytes[..head.len()].copy_from_slice(head);
    u64::from_be_bytes(bytes)
}

/// `codes` lower-cased, sorted by bytes and unique (as given when they are lower-case already,
/// as [`super::tokens::code_tokens`] makes them).
fn lowered(codes: &BTreeSet<String>) -> Vec<Cow<'_, str>> {
    let mut out: Vec<Cow<'_, str>> = codes
        .iter()
        .map(|c| {
            if c.chars().all(|ch| ch.to_lowercase().eq([ch])) {
                Cow::Borrowed(c.as_str())
            } else {
                Cow::Owned(c.to_lowercase())
            }
        })
        .collect();
    if out.iter().any(|c| matches!(c, Cow::Owned(_))) {
        out.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        out.dedup();
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

    /// Each lexeme with its positions, built the plain way (every word's lexeme into a sorted
    /// map, then the codes): the oracle of the lexer's sorted merge.
    fn reference(text: &str, codes: &BTreeSet<String>) -> Vec<(String, Vec<u16>)> {
        let mut map: std::collections::BTreeMap<String, Vec<u16>> = Default::default();
        for (pos, lexeme) in words(text) {
            if let Some(l) = lexeme {
                let pos = u16::try_from(pos).unwrap_or(u16::MAX);
                let positions = map.entry(l).or_default();
                if positions.len() < MAX_POSITIONS && positions.last() != Some(&pos) {
                    positions.push(pos);
                }
            }
        }
        for c in codes {
            map.entry(c.to_lowercase()).or_default();
        }
        map.into_iter().collect()
    }

    /// What the lexer gives the vector's writers, in its order.
    fn merged(lexer: &mut Lexer, text: &str, codes: &BTreeSet<String>) -> Vec<(String, Vec<u16>)> {
        let mut out = Vec::new();
        lexer.lexemes(text, codes, |l, p| out.push((l.to_owned(), p.to_vec())));
        out
    }

    #[test]
    fn terms_hold_each_lexeme_of_their_rows_once_in_byte_order() {
        // Lexemes that share their first 8 bytes, or are 8 bytes and a prefix of another.
        let texts = [
            "abcdefgh abcdefghij abcdefghia zeta",
            "zeta abcdefghij alpha1 abcdefgh",
            "x1 abcdefgh abcdefgh1",
        ];
        let codes: BTreeSet<String> = ["src/main.rs".to_owned(), "abcdefgh".to_owned()].into();
        let (mut lexer, mut terms) = (Lexer::default(), Terms::default());
        let mut expected = BTreeSet::new();
        for t in texts {
            lexer.add_terms(t, &codes, &mut terms);
            expected.extend(
                merged(&mut Lexer::default(), t, &codes)
                    .into_iter()
                    .map(|(l, _)| l),
            );
        }
        let binary = terms.take_binary(&lexer);
        let count = u32::from_be_bytes(binary[..4].try_into().unwrap()) as usize;
        let lexemes: Vec<String> = binary[4..]
            .split(|b| *b == 0)
            .enumerate()
            // Each lexeme is followed by NUL and a count of 0 positions (two zero bytes).
            .filter(|(i, _)| i % 3 == 0)
            .map(|(_, l)| String::from_utf8(l.to_vec()).unwrap())
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(lexemes.len(), count);
        assert_eq!(lexemes, expected.into_iter().collect::<Vec<_>>());
        assert_eq!(
            terms.take_binary(&lexer),
            0u32.to_be_bytes(),
            "emptied for the next group"
        );
        // Past the lexemes it remembers, the lexer still adds each new one (by its text).
        let many: String = (0..MAX_REMEMBERED + 10).map(|i| format!("w{i} ")).collect();
        lexer.add_terms(&many, &BTreeSet::new(), &mut terms);
        terms.take_binary(&lexer);
        lexer.add_terms("zzz1 zzz2 zzz1 abcdefgh", &BTreeSet::new(), &mut terms);
        let binary = terms.take_binary(&lexer);
        assert_eq!(u32::from_be_bytes(binary[..4].try_into().unwrap()), 3);
        assert_eq!(&binary[4..], b"abcdefgh\0\0\0zzz1\0\0\0zzz2\0\0\0");
    }

    #[test]
    fn the_merged_vector_is_the_plain_maps_at_the_position_caps_and_with_any_codes() {
        let many = "refused ".repeat(300);
        let long: String = (0..17_000).map(|i| format!("w{} ", i % 50)).collect();
        let texts = [
            "The connection was refused; refusing connections v2 TLS",
            many.as_str(),
            long.as_str(),
            "Ünïcödé straße ÉCOLE école 東京 東京 x1 X1 src main rs",
            "abcdefgh1 abcdefgh0 abcdefgh abcdefghz abcdefg abcdefgh1",
            "",
            "the of and",
        ];
        let code_sets: [&[&str]; 4] = [
            &[],
            &["src/main.rs", "econnrefused", "main.rs"],
            // Not lower-cased yet, one the same as a word's lexeme, one sorting first.
            &["Src/Main.rs", "TLS", "connect", "0x1f", "zz", "\u{1c5}x"],
            &["a\0b", "refus"],
        ];
        let mut lexer = Lexer::default();
        for text in texts {
            for codes in code_sets {
                let codes: BTreeSet<String> = codes.iter().map(|c| (*c).to_owned()).collect();
                assert_eq!(
                    merged(&mut lexer, text, &codes),
                    reference(text, &codes),
                    "{:.60}… with {codes:?}",
                    text
                );
            }
        }
    }

    #[test]
    fn past_the_lexemes_it_remembers_a_row_still_has_each_lexeme_once() {
        let mut lexer = Lexer::default();
        let known: String = (0..MAX_REMEMBERED).map(|i| format!("k{i} ")).collect();
        lexer.vector(&known, &BTreeSet::new());
        assert_eq!(lexer.names.len(), MAX_REMEMBERED);
        let text = "fresh x9 refusing fresh refused x9 k7";
        let repeated = "fresh refusing ".repeat(4_000);
        assert_eq!(
            merged(&mut lexer, &repeated, &BTreeSet::new()),
            reference(&repeated, &BTreeSet::new()),
            "a lexeme the lexer does not remember, repeated, is one lexeme with its first positions"
        );
        assert_eq!(
            merged(&mut lexer, text, &BTreeSet::new()),
            reference(text, &BTreeSet::new())
        );
        assert_eq!(
            lexer.vector(text, &BTreeSet::new()),
            "'fresh':1,4 'k7':7 'refus':3,5 'x9':2,6"
        );
    }

    #[test]
    fn code_tokens_join_the_vector_as_exact_lexemes() {
        let codes: BTreeSet<String> = ["src/main.rs".to_owned()].into();
        assert_eq!(vector("see it", &codes), "'see':1 'src/main.rs'");
    }
}
