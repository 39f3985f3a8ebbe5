//! The import analyser's lexer: comments (line, block, doc) and literals (strings, raw and byte
//! strings, chars) blanked so nothing written in them counts; the rest cut into tokens that carry
//! their line; and the items under `#[cfg(test)]` dropped, noting the test-only `mod x;`
//! declarations (their files are test code too).

/// A token: an identifier (`$crate` and raw identifiers included), `::`, or one other character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// A token and the 1-based line it starts on.
#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
}

impl Token {
    /// This token is the identifier `name`.
    pub fn is_ident(&self, name: &str) -> bool {
        matches!(&self.tok, Tok::Ident(s) if s == name)
    }

    pub fn is_punct(&self, c: char) -> bool {
        self.tok == Tok::Punct(c)
    }

    pub fn ident(&self) -> Option<&str> {
        match &self.tok {
            Tok::Ident(s) => Some(s),
            _ => None,
        }
    }
}

/// A file's production code: its tokens with every `#[cfg(test)]` item taken out.
#[derive(Debug, Default)]
pub struct Production {
    pub tokens: Vec<Token>,
    /// The names of the modules declared `#[cfg(test)] mod x;` here (test-only files).
    pub test_mods: Vec<String>,
    /// The file is `#![cfg(test)]` as a whole.
    pub test_only: bool,
}

/// Lex `src` into its production tokens.
pub fn production(src: &str) -> Production {
    drop_test_items(tokenize(&strip(src)))
}

/// `src` with comments and literals replaced by spaces (newlines kept, so lines still count).
pub fn strip(src: &str) -> String {
    let s: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < s.len() {
        match literal_end(&s, i) {
            Some(end) => {
                let end = end.min(s.len());
                out.extend(
                    s[i..end]
                        .iter()
                        .map(|&c| if c == '\n' { '\n' } else { ' ' }),
                );
                i = end;
            }
            None => {
                out.push(s[i]);
                i += 1;
            }
        }
    }
    out
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Where the comment or literal starting at `i` ends (exclusive), if one starts there.
fn literal_end(s: &[char], i: usize) -> Option<usize> {
    let next = s.get(i + 1).copied();
    let after_ident = i > 0 && is_ident_char(s[i - 1]);
    match s[i] {
        '/' if next == Some('/') => Some(
            s[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(s.len(), |p| i + p),
        ),
        '/' if next == Some('*') => Some(block_comment_end(s, i)),
        '"' => Some(string_end(s, i + 1)),
        'r' | 'b' | 'c' if !after_ident => raw_string_end(s, i),
        '\'' => char_end(s, i),
        _ => None,
    }
}

/// Block comments nest in Rust.
fn block_comment_end(s: &[char], i: usize) -> usize {
    let (mut depth, mut j) = (0usize, i);
    while j + 1 < s.len() {
        if s[j] == '/' && s[j + 1] == '*' {
            depth += 1;
            j += 2;
        } else if s[j] == '*' && s[j + 1] == '/' {
            depth -= 1;
            j += 2;
            if depth == 0 {
                return j;
            }
        } else {
            j += 1;
        }
    }
    s.len()
}

/// The end of a string whose body starts at `j` (escapes skipped).
fn string_end(s: &[char], mut j: usize) -> usize {
    while j < s.len() {
        match s[j] {
            '\\' => j += 2,
            '"' => return j + 1,
            _ => j += 1,
        }
    }
    s.len()
}

/// `r"…"`, `r#"…"#`, `br"…"`, `cr#"…"#`; `None` for anything else (an identifier, `r#ident`).
fn raw_string_end(s: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if s[j] != 'r' {
        j += 1;
        if s.get(j) != Some(&'r') {
            return None;
        }
    }
    j += 1;
    let hashes = s[j..].iter().take_while(|&&c| c == '#').count();
    j += hashes;
    if s.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < s.len() {
        if s[j] == '"'
            && s[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(s.len())
}

/// A char literal (`'x'`, `'\n'`, `'\''`, `'\u{1F600}'`); `None` for a lifetime or a label.
fn char_end(s: &[char], i: usize) -> Option<usize> {
    match (s.get(i + 1), s.get(i + 2)) {
        (Some('\\'), _) => {
            let close = s.get(i + 3..)?.iter().position(|&c| c == '\'')?;
            Some(i + 3 + close + 1)
        }
        (Some(&c), Some('\'')) if c != '\'' => Some(i + 3),
        _ => None,
    }
}

/// Cut stripped code into tokens (numbers and lifetimes dropped: no path starts with them).
pub fn tokenize(code: &str) -> Vec<Token> {
    let s: Vec<char> = code.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < s.len() {
        let c = s[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            let (tok, len) = lex_one(&s, i);
            if let Some(tok) = tok {
                out.push(Token { tok, line });
            }
            i += len;
        }
    }
    out
}

fn ident_len(s: &[char], i: usize) -> usize {
    s[i..].iter().take_while(|&&c| is_ident_char(c)).count()
}

fn word(s: &[char], from: usize, len: usize) -> String {
    s[from..from + len].iter().collect()
}

/// The token at `i` and how many characters it takes.
fn lex_one(s: &[char], i: usize) -> (Option<Tok>, usize) {
    let c = s[i];
    let starts_ident = |k: usize| s.get(k).is_some_and(|&c| is_ident_start(c));
    if c == ':' && s.get(i + 1) == Some(&':') {
        (Some(Tok::PathSep), 2)
    } else if c == '$' && starts_ident(i + 1) {
        let n = ident_len(s, i + 1);
        (Some(Tok::Ident(format!("${}", word(s, i + 1, n)))), n + 1)
    } else if c == 'r' && s.get(i + 1) == Some(&'#') && starts_ident(i + 2) {
        let n = ident_len(s, i + 2);
        (Some(Tok::Ident(word(s, i + 2, n))), n + 2)
    } else if is_ident_start(c) {
        let n = ident_len(s, i);
        (Some(Tok::Ident(word(s, i, n))), n)
    } else if c.is_ascii_digit() {
        (None, ident_len(s, i))
    } else if c == '\'' && starts_ident(i + 1) {
        (None, ident_len(s, i + 1) + 1)
    } else {
        (Some(Tok::Punct(c)), 1)
    }
}

/// `#[cfg(test)]` (or, with `inner`, `#![cfg(test)]`) starting at `i`: the index after it.
fn cfg_test_at(t: &[Token], i: usize, inner: bool) -> Option<usize> {
    let mut k = i;
    let mut expect = |ok: &dyn Fn(&Token) -> bool| {
        let hit = t.get(k).is_some_and(ok);
        k += 1;
        hit
    };
    let head = expect(&|x| x.is_punct('#')) && (!inner || expect(&|x| x.is_punct('!')));
    let attr = head
        && expect(&|x| x.is_punct('['))
        && expect(&|x| x.is_ident("cfg"))
        && expect(&|x| x.is_punct('('))
        && expect(&|x| x.is_ident("test"))
        && expect(&|x| x.is_punct(')'))
        && expect(&|x| x.is_punct(']'));
    attr.then_some(k)
}

/// The index of the bracket closing the one opened at `open` (or the end).
pub fn matching(t: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, token) in t.iter().enumerate().skip(open) {
        match token.tok {
            Tok::Punct('{' | '(' | '[') => depth += 1,
            Tok::Punct('}' | ')' | ']') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    t.len().saturating_sub(1)
}

/// The end (exclusive) of the item starting at `i`: its `;`, its `{ … }` block, or, for a field
/// or an arm, the `,` or the closing bracket around it.
fn item_end(t: &[Token], mut i: usize) -> usize {
    while i < t.len() {
        match t[i].tok {
            Tok::Punct(';' | ',') => return i + 1,
            Tok::Punct('}' | ')' | ']') => return i,
            Tok::Punct('{' | '(' | '[') => {
                let close = matching(t, i);
                if t[i].is_punct('{') {
                    return close + 1;
                }
                i = close + 1;
            }
            _ => i += 1,
        }
    }
    t.len()
}

/// The name declared by `[pub[(…)]] mod name;` at `i`.
fn mod_declaration(t: &[Token], mut i: usize) -> Option<String> {
    if t.get(i)?.is_ident("pub") {
        i += 1;
        if t.get(i)?.is_punct('(') {
            i = matching(t, i) + 1;
        }
    }
    let name = t.get(i)?.is_ident("mod").then(|| t.get(i + 1)?.ident())??;
    t.get(i + 2)?.is_punct(';').then(|| name.to_owned())
}

/// Drop every item under `#[cfg(test)]` (other attributes after it go with it).
fn drop_test_items(t: Vec<Token>) -> Production {
    let mut p = Production::default();
    let mut i = 0;
    while i < t.len() {
        if cfg_test_at(&t, i, true).is_some() {
            p.test_only = true;
            return p;
        }
        let Some(mut j) = cfg_test_at(&t, i, false) else {
            p.tokens.push(t[i].clone());
            i += 1;
            continue;
        };
        while t.get(j).is_some_and(|x| x.is_punct('#'))
            && t.get(j + 1).is_some_and(|x| x.is_punct('['))
        {
            j = matching(&t, j + 1) + 1;
        }
        p.test_mods.extend(mod_declaration(&t, j));
        i = item_end(&t, j);
    }
    p
}
