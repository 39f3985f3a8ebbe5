//! HTML escaping, once for every HTML this module writes (rendered documents, image tags, search
//! snippets).

/// `text` appended to `out` as HTML text or attribute value (`&`, `<`, `>`, quotes escaped).
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        push_escaped_char(out, c);
    }
}

/// One character of [`push_escaped`].
pub fn push_escaped_char(out: &mut String, c: char) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '"' => out.push_str("&quot;"),
        '\'' => out.push_str("&#39;"),
        c => out.push(c),
    }
}
