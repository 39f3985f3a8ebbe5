//! Escaped text seen as what it stands for. A tool's output often carries text that was JSON- or
//! string-escaped once more than the line itself: a file with a JSON document in it, a log line
//! quoting a request body, a `cat` of a `.jsonl`. In such a string a PEM block's line breaks are
//! `\n` (two characters), a token follows `\n` (so no word boundary is seen before it) and a
//! quote inside a value is `\"`. A [`View`] decodes those escapes (`\n \t \r \" \\ \/ \b \f
//! \uXXXX`), keeping for each byte of the decoded text the byte range of the text it came from,
//! so that a secret found in the view is replaced in the original, whole escape sequences
//! included. Views nest ([`View::within`]): a string escaped twice is decoded twice.

/// Escape levels looked through at most (a JSON document in a string in a string).
pub(super) const MAX_LEVELS: usize = 3;

/// `text` decoded one escape level: the decoded text and, per decoded byte, the range of the
/// original string's bytes it stands for.
#[derive(Debug)]
pub(super) struct View {
    pub text: String,
    /// Per byte of `text`: `[start, end)` in the original string (of the outermost view).
    from: Vec<(u32, u32)>,
}

impl View {
    /// `text` decoded one level; `None` when it holds no escape to decode (or is too long to map
    /// with 32-bit offsets).
    pub fn of(text: &str) -> Option<Self> {
        let identity = |i: usize| (i as u32, i as u32 + 1);
        Self::decode(text, identity)
    }

    /// This view decoded one level further, mapped to the same original string.
    pub fn within(&self) -> Option<Self> {
        Self::decode(&self.text, |i| self.from[i])
    }

    /// The original range of the view's bytes `start..end` (`end > start`).
    pub fn original(&self, start: usize, end: usize) -> (usize, usize) {
        (self.from[start].0 as usize, self.from[end - 1].1 as usize)
    }

    fn decode(text: &str, map: impl Fn(usize) -> (u32, u32)) -> Option<Self> {
        if !text.contains('\\') || u32::try_from(text.len()).is_err() {
            return None;
        }
        let b = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut from = Vec::with_capacity(text.len());
        let mut decoded_any = false;
        let mut i = 0;
        while i < b.len() {
            let decoded = if b[i] == b'\\' {
                escape_at(text, i)
            } else {
                None
            };
            match decoded {
                Some((c, len)) => {
                    let span = (map(i).0, map(i + len - 1).1);
                    let mut buf = [0u8; 4];
                    let s = c.encode_utf8(&mut buf);
                    out.push_str(s);
                    from.extend(std::iter::repeat_n(span, s.len()));
                    decoded_any = true;
                    i += len;
                }
                None => {
                    // A whole character, so the decoded text stays UTF-8.
                    let len = utf8_len(b[i]);
                    out.push_str(&text[i..i + len]);
                    from.extend((i..i + len).map(&map));
                    i += len;
                }
            }
        }
        decoded_any.then_some(Self { text: out, from })
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// The character the escape at `text[at]` (a backslash) stands for, and the escape's length.
fn escape_at(text: &str, at: usize) -> Option<(char, usize)> {
    let b = text.as_bytes();
    let c = match *b.get(at + 1)? {
        b'n' => '\n',
        b't' => '\t',
        b'r' => '\r',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'u' => return unicode_at(text, at),
        _ => return None,
    };
    Some((c, 2))
}

/// `\uXXXX` (a surrogate pair joined) at `text[at]`.
fn unicode_at(text: &str, at: usize) -> Option<(char, usize)> {
    let hex = |from: usize| {
        text.get(from..from + 4)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    let first = hex(at + 2)?;
    if (0xD800..0xDC00).contains(&first) && text.get(at + 6..at + 8) == Some("\\u") {
        let second = hex(at + 8).filter(|s| (0xDC00..0xE000).contains(s))?;
        let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return char::from_u32(c).map(|c| (c, 12));
    }
    char::from_u32(first).map(|c| (c, 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_maps_each_decoded_byte_to_its_whole_escape() {
        let v = View::of(r#"a\nb\"c\u00e9d"#).unwrap();
        assert_eq!(v.text, "a\nb\"céd");
        let at = v.text.find('b').unwrap();
        assert_eq!(v.original(at - 1, at + 1), (1, 4), "\\n and b");
        let e = v.text.find('é').unwrap();
        assert_eq!(v.original(e, e + 2), (7, 13), "the whole \\u00e9");
        assert!(View::of("no escape here").is_none());
        assert!(View::of(r"a \q b").is_none(), "not an escape");
    }

    #[test]
    fn a_view_within_a_view_maps_to_the_outer_string() {
        // `x\\ny` is `x\ny` once decoded, a line break twice.
        let outer = View::of(r"x\\nghp_y").unwrap();
        assert_eq!(outer.text, r"x\nghp_y");
        let inner = outer.within().unwrap();
        assert_eq!(inner.text, "x\nghp_y");
        let g = inner.text.find('g').unwrap();
        assert_eq!(inner.original(g, inner.text.len()), (4, 9));
        assert_eq!(
            inner.original(1, 2),
            (1, 4),
            "the line break is three bytes"
        );
    }
}
