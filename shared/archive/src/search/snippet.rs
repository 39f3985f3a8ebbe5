//! A hit's snippet: a window of the line's text around the first match, HTML-escaped, with the
//! matched words in `<mark>`. Only `<mark>` and `</mark>` are ever markup in it: the text is
//! escaped first (`<script>` in a tool's output stays text), so it is safe to render as HTML.
//!
//! A word matches a needle when it starts with it (ASCII case-insensitively): the query's own
//! words and their dictionary stems (`connect` marks `connection`), its code tokens exactly.

/// Characters of context before the first match.
const BEFORE: usize = 80;
/// Characters a snippet holds at most.
pub const SNIPPET_CHARS: usize = 240;

/// The needles of a query: `words` lower-cased (the query's terms' words and the lexemes Postgres
/// normalized them to).
pub fn needles<'a>(words: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words {
        for part in w.split(|c: char| c.is_whitespace() || c == '\'') {
            let part = part.trim_matches(|c: char| !c.is_alphanumeric() && !"-_/.".contains(c));
            let lower = part.to_ascii_lowercase();
            if lower.chars().any(char::is_alphanumeric) && !out.contains(&lower) {
                out.push(lower);
            }
        }
    }
    out
}

/// The snippet of `text` for `needles` (see the module doc).
pub fn snippet(text: &str, needles: &[String]) -> String {
    let spans = matches(text, needles);
    let first = spans.first().map_or(0, |s| s.0);
    let start = back_chars(text, first, BEFORE);
    let end = forward_chars(text, start, SNIPPET_CHARS);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let mut at = start;
    for &(s, e) in spans.iter().filter(|(s, e)| *s >= start && *e <= end) {
        escape_into(&text[at..s], &mut out);
        out.push_str("<mark>");
        escape_into(&text[s..e], &mut out);
        out.push_str("</mark>");
        at = e;
    }
    escape_into(&text[at..end], &mut out);
    if end < text.len() {
        out.push('…');
    }
    out
}

/// Non-overlapping `(start, end)` byte spans of matched words, in order.
fn matches(text: &str, needles: &[String]) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let at_word_start = i == 0 || !is_word_byte(bytes[i - 1]);
        let hit = at_word_start && text.is_char_boundary(i) && {
            needles.iter().any(|n| {
                bytes.len() - i >= n.len()
                    && bytes[i..i + n.len()].eq_ignore_ascii_case(n.as_bytes())
            })
        };
        if hit {
            // The rest of the word the needle starts.
            let word: usize = text[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .map(char::len_utf8)
                .sum();
            let end = i + word.max(1);
            let longest = needles
                .iter()
                .filter(|n| {
                    bytes[i..].len() >= n.len()
                        && bytes[i..i + n.len()].eq_ignore_ascii_case(n.as_bytes())
                })
                .map(String::len)
                .max()
                .unwrap_or(0);
            let mut end = end.max(i + longest);
            while !text.is_char_boundary(end.min(text.len())) {
                end += 1;
            }
            spans.push((i, end.min(text.len())));
            i = end;
        } else {
            i += 1;
        }
    }
    spans
}

/// Whether `b` may be inside a word (bytes of non-ASCII characters count: a needle never starts
/// in the middle of one).
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// The byte index `n` characters before `i` (at most), on a boundary.
fn back_chars(text: &str, i: usize, n: usize) -> usize {
    text[..i]
        .char_indices()
        .rev()
        .nth(n.saturating_sub(1))
        .map_or(0, |(j, _)| j)
}

/// The byte index `n` characters after `i` (at most).
fn forward_chars(text: &str, i: usize, n: usize) -> usize {
    text[i..]
        .char_indices()
        .nth(n)
        .map_or(text.len(), |(j, _)| i + j)
}

/// `s` HTML-escaped, with bidi controls made visible as their code points (so a tool's output
/// cannot reorder the text around it).
fn escape_into(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' => {
                out.push_str(&format!("&lt;U+{:04X}&gt;", c as u32));
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matched_words_are_marked_and_everything_else_is_escaped() {
        let n = needles(["connect", "econnrefused"]);
        let s = snippet("<script>x</script> Connection ECONNREFUSED & done", &n);
        assert_eq!(
            s,
            "&lt;script&gt;x&lt;/script&gt; <mark>Connection</mark> <mark>ECONNREFUSED</mark> &amp; done"
        );
    }

    #[test]
    fn a_long_text_is_cut_around_the_first_match() {
        let text = format!("{} needle {}", "a ".repeat(500), "b ".repeat(500));
        let s = snippet(&text, &needles(["needle"]));
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("<mark>needle</mark>"));
        assert!(s.chars().count() <= SNIPPET_CHARS + 2 + "<mark></mark>".len());
    }

    #[test]
    fn bidi_controls_are_shown_not_obeyed() {
        let s = snippet("abc\u{202E}fed", &needles(["abc"]));
        assert_eq!(s, "<mark>abc</mark>&lt;U+202E&gt;fed");
    }

    #[test]
    fn code_tokens_match_whole_and_multibyte_text_is_safe() {
        let s = snippet("voir src/main.rs — été", &needles(["src/main.rs", "été"]));
        assert_eq!(s, "voir <mark>src/main.rs</mark> — <mark>été</mark>");
    }
}
