//! Code tokens: the words of a transcript that a prose dictionary would stem or split, kept as
//! exact lexemes (lower-cased) beside the English vector. One rule decides, for the indexer and
//! for a query's terms alike ([`is_code_token`]): a token is code when it holds `_`, `/`, `.`,
//! `:` or `\` inside it, starts with `-` or `--` followed by a letter (a flag), mixes letters and
//! digits, or has a capital after its first letter (`ECONNREFUSED`, `HashMap`).
//!
//! A path is indexed whole and by its six shortest `/` suffixes (`/home/u/app/src/main.rs` is
//! found by `src/main.rs` and by `main.rs`, however deep it is), and a token with `:` by its parts
//! (`src/main.rs:12:5` by `src/main.rs`).

use std::collections::BTreeSet;

/// Longest code token kept, in bytes (a longer run is a blob: base64, a minified line).
pub const MAX_CODE_TOKEN_BYTES: usize = 120;
/// Most code tokens one row keeps.
pub const MAX_CODE_TOKENS_PER_ROW: usize = 2_000;
/// Most `/` suffixes one path adds (its shortest).
const MAX_PATH_SUFFIXES: usize = 6;

/// Characters that end a token in running text (whitespace, quotes, brackets, separators). Not
/// `<` and `>`: a type (`Arc<Mutex<State>>`, `Vec<u8>`) is one token.
pub fn is_boundary(c: char) -> bool {
    if c.is_ascii() {
        ASCII_BOUNDARIES[c as usize]
    } else {
        c.is_whitespace()
    }
}

/// The rule [`is_boundary`] answers, written once: the table below is made of it.
const fn boundary_rule(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\''
                | '`'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | ','
                | ';'
                | '='
                | '|'
                | '&'
                | '*'
                | '!'
                | '?'
                | '#'
                | '$'
                | '%'
                | '^'
                | '~'
                | '+'
                | '@'
        )
}

/// [`boundary_rule`] of each ASCII character, looked up (every character of a transcript is
/// asked).
const ASCII_BOUNDARIES: [bool; 128] = {
    let mut table = [false; 128];
    let mut i = 0;
    while i < 128 {
        table[i] = boundary_rule(i as u8 as char);
        i += 1;
    }
    table
};

/// The token with what usually trails or leads it in prose taken off (`main.rs.` → `main.rs`).
pub fn trim_token(t: &str) -> &str {
    t.trim_start_matches(['.', ':'])
        .trim_end_matches(['.', ':', '-', '/', '\\'])
}

/// Whether `t` (already trimmed) is a code token.
pub fn is_code_token(t: &str) -> bool {
    if t.len() < 2 || t.len() > MAX_CODE_TOKEN_BYTES {
        return false;
    }
    // Prose, decided in one pass (most tokens): ASCII letters, lower-case after the first.
    let (first, rest) = t.as_bytes().split_at(1);
    if first[0].is_ascii_alphabetic() && rest.iter().all(u8::is_ascii_lowercase) {
        return false;
    }
    if t.is_ascii() {
        ascii_code_token(t.as_bytes())
    } else {
        code_token(t)
    }
}

/// [`is_code_token`]'s rule for any text.
fn code_token(t: &str) -> bool {
    if t.contains(is_boundary) {
        return false;
    }
    if let Some(flag) = t.strip_prefix("--").or_else(|| t.strip_prefix('-')) {
        return flag.starts_with(|c: char| c.is_ascii_alphabetic());
    }
    if !t.starts_with(|c: char| c.is_alphanumeric() || matches!(c, '_' | '/' | '.' | '\\')) {
        return false;
    }
    let mut chars = t.chars();
    chars.next();
    let inner = chars.as_str();
    let letters = t.chars().any(char::is_alphabetic);
    let digits = t.chars().any(|c| c.is_ascii_digit());
    let separated = t.contains(['_', '/', '\\']) || inner.contains(['.', ':']);
    // An address or a version (`127.0.0.1:5432`, `1.2.3`) is one token, as a path is.
    if !letters {
        return separated && digits;
    }
    let mixed = digits;
    let capital_inside = inner.chars().any(char::is_uppercase)
        && t.chars().filter(|c| c.is_alphabetic()).count() >= 3;
    separated || mixed || capital_inside
}

/// [`code_token`] for ASCII text, in one pass over its bytes.
fn ascii_code_token(t: &[u8]) -> bool {
    let (mut letters, mut digits, mut separated, mut capital_inside) =
        (0usize, false, false, false);
    for (i, b) in t.iter().enumerate() {
        if ASCII_BOUNDARIES[usize::from(*b)] {
            return false;
        }
        letters += usize::from(b.is_ascii_alphabetic());
        digits |= b.is_ascii_digit();
        separated |= matches!(b, b'_' | b'/' | b'\\') || (i > 0 && matches!(b, b'.' | b':'));
        capital_inside |= i > 0 && b.is_ascii_uppercase();
    }
    let flag = t.strip_prefix(b"--").or_else(|| t.strip_prefix(b"-"));
    if let Some(flag) = flag {
        return flag.first().is_some_and(u8::is_ascii_alphabetic);
    }
    let Some(first) = t.first() else {
        return false;
    };
    if !(first.is_ascii_alphanumeric() || matches!(first, b'_' | b'/' | b'.' | b'\\')) {
        return false;
    }
    if letters == 0 {
        return separated && digits;
    }
    separated || digits || (capital_inside && letters >= 3)
}

/// The code lexemes of `text`: each code token lower-cased, with its path suffixes and its
/// `:` parts; deduplicated, at most [`MAX_CODE_TOKENS_PER_ROW`].
pub fn code_tokens(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for raw in text.split(is_boundary) {
        if out.len() >= MAX_CODE_TOKENS_PER_ROW {
            break;
        }
        let t = trim_token(raw);
        if !is_code_token(t) {
            continue;
        }
        add_with_parts(t, &mut out);
    }
    out
}

fn add_with_parts(t: &str, out: &mut BTreeSet<String>) {
    out.insert(t.to_lowercase());
    if t.contains(':') && !t.contains("::") {
        for part in t.split(':').map(trim_token) {
            if part.len() < t.len() && is_code_token(part) {
                add_path(part, out);
            }
        }
    }
    add_path(t, out);
}

/// `t`'s shortest `/` suffixes that are themselves code tokens (the file's name first, so a
/// deep path is found by it).
fn add_path(t: &str, out: &mut BTreeSet<String>) {
    out.insert(t.to_lowercase());
    let mut head = t;
    for _ in 0..MAX_PATH_SUFFIXES {
        let Some(i) = head.rfind('/') else { break };
        let suffix = &t[i + 1..];
        if is_code_token(suffix) {
            out.insert(suffix.to_lowercase());
        }
        head = &t[..i];
    }
}

/// `t` as one quoted lexeme of a `tsquery` (quotes and backslashes escaped).
pub fn quoted_lexeme(t: &str) -> String {
    let mut s = String::with_capacity(t.len() + 2);
    s.push('\'');
    for c in t.to_lowercase().chars() {
        if c == '\'' || c == '\\' {
            s.push(c);
        }
        s.push(c);
    }
    s.push('\'');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boundary_table_is_the_rule_for_every_character() {
        let rule = |c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '"' | '\''
                        | '`'
                        | '('
                        | ')'
                        | '['
                        | ']'
                        | '{'
                        | '}'
                        | ','
                        | ';'
                        | '='
                        | '|'
                        | '&'
                        | '*'
                        | '!'
                        | '?'
                        | '#'
                        | '$'
                        | '%'
                        | '^'
                        | '~'
                        | '+'
                        | '@'
                )
        };
        for c in (0..0x3100).filter_map(char::from_u32) {
            assert_eq!(is_boundary(c), rule(c), "{c:?}");
        }
    }

    #[test]
    fn the_ascii_pass_decides_as_the_rule_does() {
        let alphabet = b"aZ09_/.:\\-x\" (Q";
        let mut seed = 34u64;
        for _ in 0..200_000 {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let len = 1 + (seed >> 60) as usize;
            let token: Vec<u8> = (0..len)
                .map(|i| alphabet[((seed >> (i * 4 % 56)) as usize) % alphabet.len()])
                .collect();
            let t = std::str::from_utf8(&token).unwrap_or_default();
            if t.len() >= 2 {
                assert_eq!(ascii_code_token(&token), code_token(t), "{t:?}");
            }
        }
    }

    #[test]
    fn prose_words_are_not_code_whatever_their_first_letter() {
        for w in ["the", "Connection", "refused", "Zz", "a", "I"] {
            assert!(!is_code_token(w), "{w}");
        }
        for w in [
            "ECONNREFUSED",
            "HashMap",
            "v2",
            "snake_case",
            "--flag",
            "Ab1",
        ] {
            assert!(is_code_token(w), "{w}");
        }
    }

    #[test]
    fn code_tokens_are_the_ones_a_dictionary_would_stem_or_split() {
        for code in [
            "ECONNREFUSED",
            "src/main.rs",
            "snake_case_name",
            "--flag",
            "-v2",
            "HashMap",
            "sha256",
            "std::io::Error",
            "C:\\Users\\x",
            "main.rs",
            "127.0.0.1:5432",
            "Arc<Mutex<State>>",
            "1.2.3",
        ] {
            assert!(is_code_token(code), "{code}");
        }
        for prose in [
            "3",
            "the",
            "error",
            "Connection",
            "a",
            "--",
            "-",
            "42",
            "...",
            "été",
            "Ünïcode",
        ] {
            assert!(!is_code_token(prose), "{prose}");
        }
    }

    #[test]
    fn any_text_is_read_without_a_panic() {
        for t in [
            "é_x",
            "ü/ß",
            "日本語:x",
            "\u{0}",
            "a\u{301}b",
            "€1",
            "ÉCONN",
        ] {
            let _ = is_code_token(t);
            let _ = code_tokens(t);
        }
        assert!(is_code_token("é_x") && !is_code_token("€1x"));
    }

    #[test]
    fn a_path_is_found_by_its_suffixes_and_a_location_by_its_file() {
        let t = code_tokens("error at /home/ada/app/src/main.rs:12:5, see `snake_case_name`.");
        // A path deeper than the suffixes it adds is found by its file's name.
        let deep = code_tokens("/home/dev/widgets/shared/src/webhook/signature.rs");
        for want in [
            "signature.rs",
            "webhook/signature.rs",
            "src/webhook/signature.rs",
        ] {
            assert!(deep.contains(want), "{want} in {deep:?}");
        }
        for want in [
            "/home/ada/app/src/main.rs:12:5",
            "/home/ada/app/src/main.rs",
            "src/main.rs",
            "main.rs",
            "snake_case_name",
        ] {
            assert!(t.contains(want), "{want} in {t:?}");
        }
        assert!(!t.contains("error"), "prose is the dictionary's");
    }

    #[test]
    fn a_lexeme_is_quoted_for_tsquery() {
        assert_eq!(quoted_lexeme("it's\\x"), "'it''s\\\\x'");
        assert_eq!(quoted_lexeme("ECONN"), "'econn'");
    }
}
