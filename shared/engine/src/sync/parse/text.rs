//! Text-level rules shared by both parsers: what Postgres would refuse, and the search text
//! builder that keeps a document's tsvector far below Postgres's 1 MB limit.

use super::model::ParseRefusal;

/// The body text kept for search ([`BODY_TEXT_CAP_BYTES`]) and the bytes one file may have
/// ([`MAX_INPUT_BYTES`], the engine's file cap, checked here too so every parser's bounds hold
/// whoever calls it): the engine's limits (`syncplane_core::limits`).
pub use syncplane_core::limits::{BODY_TEXT_CAP_BYTES, MAX_PARSER_INPUT_BYTES as MAX_INPUT_BYTES};

const UTF8_BOM: &str = "\u{feff}";

/// Bytes to text, or the reason the file is refused: larger than [`MAX_INPUT_BYTES`], or bytes
/// Postgres would refuse: a NUL byte (text columns cannot hold one) or invalid UTF-8. A leading
/// byte order mark is dropped.
pub fn decode(bytes: &[u8]) -> Result<&str, ParseRefusal> {
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(ParseRefusal::TooLarge);
    }
    if bytes.contains(&0) {
        return Err(ParseRefusal::NulByte);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| ParseRefusal::InvalidUtf8)?;
    Ok(text.strip_prefix(UTF8_BOM).unwrap_or(text))
}

/// Collects plain text: every whitespace run becomes one space, and text past the cap is dropped
/// on a char boundary.
#[derive(Debug)]
pub(crate) struct SearchText {
    out: String,
    cap: usize,
    pending_space: bool,
    truncated: bool,
}

impl SearchText {
    pub fn new(cap: usize) -> Self {
        Self {
            out: String::new(),
            cap,
            pending_space: false,
            truncated: false,
        }
    }

    /// Appends text as is (words touching earlier text stay joined, as in `foo**bar**`).
    pub fn push(&mut self, text: &str) {
        for c in text.chars() {
            if self.truncated {
                return;
            }
            if c.is_whitespace() {
                self.pending_space = !self.out.is_empty();
                continue;
            }
            let needed = c.len_utf8() + usize::from(self.pending_space);
            if self.out.len() + needed > self.cap {
                self.truncated = true;
                return;
            }
            if self.pending_space {
                self.out.push(' ');
                self.pending_space = false;
            }
            self.out.push(c);
        }
    }

    /// Separates what comes next from what came before (a block or line boundary).
    pub fn space(&mut self) {
        self.pending_space = !self.out.is_empty();
    }

    pub fn truncated(&self) -> bool {
        self.truncated
    }

    pub fn finish(self) -> String {
        self.out
    }
}

/// Text of a raw HTML block: tags and comments removed, `<script>` and `<style>` dropped whole.
/// Linear in the input: a `<` after the last `>` is kept as text without searching again.
pub(crate) fn html_block_text(html: &str) -> String {
    let lower_start = html
        .trim_start()
        .get(..8)
        .unwrap_or("")
        .to_ascii_lowercase();
    if lower_start.starts_with("<script") || lower_start.starts_with("<style") {
        return String::new();
    }
    let last_close = html.rfind('>');
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(comment) = tail.strip_prefix("<!--") {
            rest = comment.find("-->").map_or("", |end| &comment[end + 3..]);
            out.push(' ');
            continue;
        }
        let starts_tag = tail[1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!' || c == '?');
        let absolute = html.len() - tail.len();
        match (starts_tag, last_close) {
            (true, Some(close)) if close > absolute => {
                out.push(' ');
                rest = tail.find('>').map_or("", |end| &tail[end + 1..]);
            }
            _ => {
                out.push('<');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_byte_anywhere_is_refused() {
        assert_eq!(decode(b"# Title\n\0rest"), Err(ParseRefusal::NulByte));
    }

    #[test]
    fn invalid_utf8_is_refused() {
        assert_eq!(decode(b"caf\xe9"), Err(ParseRefusal::InvalidUtf8));
    }

    #[test]
    fn a_utf8_bom_is_stripped() {
        assert_eq!(decode("\u{feff}# Hi".as_bytes()), Ok("# Hi"));
    }

    #[test]
    fn search_text_collapses_whitespace() {
        let mut text = SearchText::new(100);
        text.push("  one\n\ttwo  ");
        text.space();
        text.push("three");
        assert_eq!(text.finish(), "one two three");
    }

    #[test]
    fn search_text_is_capped_on_a_char_boundary() {
        let mut text = SearchText::new(7);
        text.push("ééé\u{1F600}x");
        assert!(text.truncated());
        let out = text.finish();
        assert_eq!(out, "ééé");
        assert!(out.len() <= 7);
    }

    #[test]
    fn html_block_text_drops_tags_comments_and_scripts() {
        assert_eq!(
            html_block_text("<p align=\"center\">Fast <b>sync</b><!-- hidden --></p>")
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["Fast", "sync"]
        );
        assert_eq!(html_block_text("<script>alert(1)</script>"), "");
        assert_eq!(html_block_text("a < b <c"), "a < b <c");
    }
}
