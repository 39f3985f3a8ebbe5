//! The string literals of a JSON line, found in place so that everything around a redacted string
//! stays byte for byte as it was (key order, number spelling, whitespace): only a string that
//! changed is re-encoded (by serde_json). The caller has checked that the line is JSON.

use std::borrow::Cow;

/// One string literal: its byte range in the line, quotes included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Literal {
    pub start: usize,
    pub end: usize,
}

impl Literal {
    /// The text between the quotes, escapes as written.
    pub fn inner(self, line: &str) -> &str {
        let end = self.end.saturating_sub(1).max(self.start + 1);
        line.get(self.start + 1..end).unwrap_or_default()
    }
}

/// A literal and, for the value of an object member, the literal of its key.
#[derive(Debug, Clone, Copy)]
pub(super) struct Item {
    pub literal: Literal,
    pub key: Option<Literal>,
}

/// Every string literal of `line` (valid JSON), in order, each value with its member's key.
pub(super) fn literals(line: &str) -> Vec<Item> {
    let b = line.as_bytes();
    let mut items = Vec::new();
    let mut last_key: Option<Literal> = None;
    let mut i = 0;
    while let Some(q) = b[i..].iter().position(|&c| c == b'"') {
        let start = i + q;
        let mut j = start + 1;
        while j < b.len() && b[j] != b'"' {
            j += if b[j] == b'\\' { 2 } else { 1 };
        }
        let end = (j + 1).min(b.len());
        let literal = Literal { start, end };
        let next = b[end..].iter().find(|c| !c.is_ascii_whitespace());
        if next == Some(&b':') {
            last_key = Some(literal);
            items.push(Item { literal, key: None });
        } else {
            let prev = b[..start].iter().rev().find(|c| !c.is_ascii_whitespace());
            let key = if prev == Some(&b':') { last_key } else { None };
            items.push(Item { literal, key });
        }
        i = end;
    }
    items
}

/// The string a literal's inner text stands for: borrowed when it has no escape; a lone
/// surrogate becomes U+FFFD (the string is re-encoded only if a secret was found in it).
pub(super) fn decode(inner: &str) -> Cow<'_, str> {
    if !inner.contains('\\') {
        return Cow::Borrowed(inner);
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('u') => out.push(unicode_escape(&mut chars)),
            Some(other) => out.push(other),
            None => {}
        }
    }
    Cow::Owned(out)
}

fn hex4(chars: &mut std::str::Chars<'_>) -> Option<u32> {
    let digits: String = chars.by_ref().take(4).collect();
    if digits.len() != 4 {
        return None;
    }
    u32::from_str_radix(&digits, 16).ok()
}

/// After `\u`: one code point, joining a surrogate pair.
fn unicode_escape(chars: &mut std::str::Chars<'_>) -> char {
    let Some(first) = hex4(chars) else {
        return char::REPLACEMENT_CHARACTER;
    };
    if (0xD800..0xDC00).contains(&first) {
        let mut ahead = chars.clone();
        if ahead.next() == Some('\\')
            && ahead.next() == Some('u')
            && let Some(second) = hex4(&mut ahead)
            && (0xDC00..0xE000).contains(&second)
        {
            *chars = ahead;
            let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            return char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER);
        }
        return char::REPLACEMENT_CHARACTER;
    }
    char::from_u32(first).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// A string as a JSON literal, quotes included.
pub(super) fn encode(s: &str) -> String {
    // Serialising a str cannot fail; the fallback keeps the function total.
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}
