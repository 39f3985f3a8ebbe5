//! Secret redaction on the device, before a transcript is staged (docs/transcript-wire-contract.md
//! "Client rules": the server never receives an unredacted byte; redaction removes secrets, not
//! ordinary per-turn text). (Skeleton: the ruleset is filled in by the redaction work; the
//! interface below is what the transcript lane calls.)

use std::borrow::Cow;

/// What redacting one JSON Lines line came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The line with every secret in a JSON string value replaced by `[REDACTED:<rule>]`; borrowed
    /// when nothing was found.
    pub text: Cow<'a, str>,
    /// Secrets replaced, per rule id (only rules that matched).
    pub hits: Vec<(&'static str, usize)>,
}

/// The ruleset, built once (compiling the patterns is the costly part) and shared.
#[derive(Debug, Default)]
pub struct Redactor {}

impl Redactor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Redact one line of a transcript (a JSON document; a line that is not JSON is redacted as
    /// one string).
    pub fn redact_line<'a>(&self, line: &'a str) -> Redacted<'a> {
        Redacted {
            text: Cow::Borrowed(line),
            hits: Vec::new(),
        }
    }
}
