//! Secret redaction on the device, before a transcript is staged (docs/transcript-wire-contract.md
//! "Client rules": "Every JSON string value of every line is redacted on the device before it is
//! staged: the server never receives an unredacted byte"; the spec: "The redaction removes
//! secrets, not ordinary per-turn text").
//!
//! - [`rules`]: the ruleset (id, pattern, keywords, entropy floor, check), priority first;
//! - [`entropy`]: the checks that keep ordinary text as it is;
//! - [`json`]: the string literals of a line, found in place and decoded;
//! - [`view`]: escaped text seen as what it stands for (a JSON document inside a string, a
//!   tool's output quoting another), mapped back so a secret found there is replaced here.
//!
//! How a line goes: the keywords of every rule are searched in the raw line (two aho-corasick
//! automatons, case-sensitive token prefixes and case-insensitive context words). A line with no
//! keyword, and no `\u` or `\/` escape that could hide one, is returned borrowed: that is the cost
//! of an ordinary line. Otherwise a JSON line is walked string by string (each literal decoded, so
//! a secret split across escapes is whole again; keys too; a member's value is also judged by its
//! key, `{"password": "..."}`), and a line that is not JSON is redacted as one string. A string
//! that still holds escapes is searched again through up to three [`View`]s, so a secret a tool
//! rendered inside escaped text (a PEM block with `\n` line breaks, a token after an escaped
//! line break) is found whatever the rendering. In a string the keywords pick the candidate rules
//! and only those run (each its own regex: a `RegexSet` of
//! all the rules as a second gate was measured at 24 to 33 ms per MiB of ordinary transcript,
//! its lazy DFA determinizing the 23 patterns over and over, against 6.5 without it);
//! overlapping finds merge into one placeholder named by the rule of highest priority,
//! `[REDACTED:<rule-id>]`. Only a string that changed is re-encoded; the rest of the line is
//! kept byte for byte.

mod entropy;
mod json;
mod rules;
mod view;

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};
use regex::Regex;
use syncplane_contract::transcripts::REDACTED_PREFIX;

use rules::{GCP_SERVICE_ACCOUNT, GENERIC_SECRET, Kw, PRIVATE_KEY, RULES};
use view::{MAX_LEVELS, View};

/// What redacting one JSON Lines line came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The line with every secret in a JSON string value replaced by `[REDACTED:<rule>]`; borrowed
    /// when nothing was found.
    pub text: Cow<'a, str>,
    /// Secrets replaced, per rule id (only rules that matched).
    pub hits: Vec<(&'static str, usize)>,
}

/// The rule ids, priority first (what a placeholder can name).
pub fn rule_ids() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.id)
}

/// One automaton's keywords: for each, the rules it stands for and whether it must start a token.
#[derive(Debug)]
struct Keywords {
    automaton: AhoCorasick,
    rules: Vec<u64>,
    bounded: Vec<bool>,
}

impl Keywords {
    fn build(case_insensitive: bool) -> Self {
        let mut words: Vec<&'static str> = Vec::new();
        let (mut rules, mut bounded) = (Vec::new(), Vec::new());
        for (i, rule) in RULES.iter().enumerate() {
            for kw in rule.keywords {
                let (word, is_bounded) = match (*kw, case_insensitive) {
                    (Kw::Token(w), false) => (w, true),
                    (Kw::Plain(w), false) => (w, false),
                    (Kw::Word(w), true) => (w, false),
                    _ => continue,
                };
                match words.iter().position(|w| *w == word) {
                    Some(at) => rules[at] |= 1u64 << i,
                    None => {
                        words.push(word);
                        rules.push(1u64 << i);
                        bounded.push(is_bounded);
                    }
                }
            }
        }
        let automaton = AhoCorasickBuilder::new()
            .ascii_case_insensitive(case_insensitive)
            .build(&words)
            .expect("the built-in keywords make an automaton");
        Self {
            automaton,
            rules,
            bounded,
        }
    }

    /// The rules whose keywords occur in `text`, as a bit set.
    fn candidates(&self, text: &str) -> u64 {
        let b = text.as_bytes();
        let mut mask = 0;
        for m in self.automaton.find_overlapping_iter(text) {
            let at = m.pattern().as_usize();
            if self.bounded[at] && inside_word(b, m.start()) {
                continue;
            }
            mask |= self.rules[at];
        }
        mask
    }
}

/// Whether `b[at]` continues a word (so a token prefix there is not one), where a letter after
/// a backslash (`\\n` in a raw JSON line) ends the escape, not a word.
fn inside_word(b: &[u8], at: usize) -> bool {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    at > 0 && word(b[at - 1]) && !(at > 1 && b[at - 2] == b'\\')
}

/// The ruleset, built once (compiling the patterns is the costly part) and shared.
#[derive(Debug)]
pub struct Redactor {
    exact: Keywords,
    words: Keywords,
    regexes: Vec<Regex>,
    key_name: Regex,
    /// Indexes in [`RULES`] of the rules a JSON member's key can invoke.
    generic: usize,
    gcp: usize,
    pem: usize,
}

impl Default for Redactor {
    fn default() -> Self {
        Self::new()
    }
}

/// Per-rule counts of one line, indexed like [`RULES`].
type Counts = [usize; RULES.len()];

impl Redactor {
    pub fn new() -> Self {
        const _: () = assert!(RULES.len() <= 64, "candidates are a u64 bit set");
        let index = |id: &str| RULES.iter().position(|r| r.id == id).unwrap_or(0);
        Self {
            exact: Keywords::build(false),
            words: Keywords::build(true),
            regexes: RULES
                .iter()
                .map(|r| Regex::new(r.pattern).expect("the built-in patterns compile"))
                .collect(),
            key_name: Regex::new(rules::KEY_NAME).expect("the built-in pattern compiles"),
            generic: index(GENERIC_SECRET),
            gcp: index(GCP_SERVICE_ACCOUNT),
            pem: index(PRIVATE_KEY),
        }
    }

    /// Redact one line of a transcript (a JSON document; a line that is not JSON is redacted as
    /// one string).
    pub fn redact_line<'a>(&self, line: &'a str) -> Redacted<'a> {
        let untouched = || Redacted {
            text: Cow::Borrowed(line),
            hits: Vec::new(),
        };
        if self.candidates(line) == 0 && !line.contains("\\u") && !line.contains("\\/") {
            return untouched();
        }
        let mut counts: Counts = [0; RULES.len()];
        let text = if serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok() {
            self.redact_json(line, &mut counts)
        } else {
            self.redact_text(line, None, &mut counts)
        };
        match text {
            None => untouched(),
            Some(text) => Redacted {
                text: Cow::Owned(text),
                hits: RULES
                    .iter()
                    .zip(counts)
                    .filter(|(_, n)| *n > 0)
                    .map(|(r, n)| (r.id, n))
                    .collect(),
            },
        }
    }

    fn candidates(&self, text: &str) -> u64 {
        self.exact.candidates(text) | self.words.candidates(text)
    }

    /// Every string literal of a JSON line, decoded and redacted; `None` when none changed.
    fn redact_json(&self, line: &str, counts: &mut Counts) -> Option<String> {
        let mut out = String::new();
        let mut copied = 0;
        for item in json::literals(line) {
            let value = json::decode(item.literal.inner(line));
            let key = item.key.map(|k| json::decode(k.inner(line)));
            if let Some(redacted) = self.redact_text(&value, key.as_deref(), counts) {
                out.push_str(&line[copied..item.literal.start]);
                out.push_str(&json::encode(&redacted));
                copied = item.literal.end;
            }
        }
        if copied == 0 {
            return None;
        }
        out.push_str(&line[copied..]);
        Some(out)
    }

    /// One string with its secrets replaced; `None` when it has none. `key`: the object member's
    /// key when the string is a member's value. The string is searched as it is and, when it
    /// holds escapes, as it reads once they are decoded ([`View`], up to [`MAX_LEVELS`]): a
    /// secret rendered inside escaped text is found there and replaced here, escapes and all.
    fn redact_text(&self, text: &str, key: Option<&str>, counts: &mut Counts) -> Option<String> {
        let mut spans: Vec<(usize, usize, usize)> = Vec::new();
        self.find(text, &mut spans);
        if text.contains('\\') {
            let mut view = View::of(text);
            for _ in 0..MAX_LEVELS {
                let Some(v) = view else { break };
                let mut found = Vec::new();
                self.find(&v.text, &mut found);
                spans.extend(found.into_iter().map(|(s, e, rule)| {
                    let (s, e) = v.original(s, e);
                    (s, e, rule)
                }));
                view = v.within();
            }
        }
        if let Some(rule) = key.and_then(|k| self.by_key(k, text)) {
            spans.push((0, text.len(), rule));
        }
        if spans.is_empty() {
            return None;
        }
        Some(replace(text, spans, counts))
    }

    /// Every secret the candidate rules of `text` find in it.
    fn find(&self, text: &str, spans: &mut Vec<(usize, usize, usize)>) {
        let mask = self.candidates(text);
        for i in (0..RULES.len()).filter(|i| mask & (1u64 << i) != 0) {
            self.spans(i, text, spans);
        }
    }

    /// Where rule `i` finds a secret in `text`: (start, end, rule). The secret is the rule's
    /// group, or for a pattern of alternatives the first of its groups from there that took part.
    fn spans(&self, i: usize, text: &str, spans: &mut Vec<(usize, usize, usize)>) {
        let rule = &RULES[i];
        for caps in self.regexes[i].captures_iter(text) {
            let Some(m) = (rule.group..caps.len().max(rule.group + 1)).find_map(|g| caps.get(g))
            else {
                continue;
            };
            if m.is_empty() || !entropy::passes(rule.check, text, m.start(), m.end()) {
                continue;
            }
            if rule
                .entropy
                .is_some_and(|floor| entropy::shannon(m.as_str()) < floor)
            {
                continue;
            }
            spans.push((m.start(), m.end(), i));
        }
    }

    /// A member's whole value, judged by its key: a service account's key id, a private key, a
    /// value of a secret-looking name.
    fn by_key(&self, key: &str, value: &str) -> Option<usize> {
        let long_token = value.len() >= 16 && value.bytes().all(|b| b.is_ascii_alphanumeric());
        match key {
            "private_key_id" if long_token => Some(self.gcp),
            "private_key" if value.len() >= 32 => Some(self.pem),
            _ if self.key_name.is_match(key) && entropy::generic_value(value) => Some(self.generic),
            _ => None,
        }
    }
}

/// `text` with each run of overlapping spans replaced by one placeholder naming the rule of
/// highest priority among them; counts one hit per placeholder.
fn replace(text: &str, mut spans: Vec<(usize, usize, usize)>, counts: &mut Counts) -> String {
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end, rule) in spans {
        match merged.last_mut() {
            Some(last) if start < last.1 => {
                last.1 = last.1.max(end);
                last.2 = last.2.min(rule);
            }
            _ => merged.push((start, end, rule)),
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (start, end, rule) in merged {
        out.push_str(&text[copied..start]);
        out.push_str(REDACTED_PREFIX);
        out.push_str(RULES[rule].id);
        out.push(']');
        copied = end;
        counts[rule] += 1;
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests;
