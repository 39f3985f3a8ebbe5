//! The paths a file names, read from its production tokens: every leaf of every `use` tree
//! (nested braces, `self`, globs, `as` renames, `pub use`, over any number of lines) and every
//! path of two or more segments written in code (`crate::a::f(..)`, `super::x::Y`,
//! `module::item`). Which of them name a module of the same crate is decided by the caller, who
//! knows the module tree.

use super::lex::{Tok, Token, matching};

/// One path as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The inline modules (`mod m { … }`) the path is written in, outermost first.
    pub scope: Vec<String>,
    /// The segments, `crate`/`self`/`super` included; a `use` leaf `a::{self}` ends in `self`.
    pub segments: Vec<String>,
    /// For a `use` leaf, the name it brings into scope (the rename, or the last segment).
    pub name: Option<String>,
    /// The line of the path's last segment.
    pub line: usize,
}

impl Reference {
    /// The path as written, `::`-joined (`a::{self}` as `a`).
    pub fn text(&self) -> String {
        let n = self.segments.len();
        let trailing_self = n >= 2 && self.segments[n - 1] == "self";
        self.segments[..n - usize::from(trailing_self)].join("::")
    }
}

/// What a file names: `use` leaves and paths in code, and its inline modules (as scopes).
#[derive(Debug, Default)]
pub struct References {
    pub uses: Vec<Reference>,
    pub paths: Vec<Reference>,
    pub inline_modules: Vec<Vec<String>>,
}

/// Read the references out of a file's production tokens.
pub fn references(t: &[Token]) -> References {
    let mut r = References::default();
    let mut scope: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < t.len() {
        match &t[i].tok {
            Tok::Ident(w) if w == "use" => {
                let end = use_end(t, i);
                let mut leaves = Vec::new();
                use_tree(&t[i + 1..end], 0, &[], &mut leaves);
                r.uses.extend(leaves.into_iter().map(|mut l| {
                    l.scope = names(&scope);
                    l
                }));
                i = end;
                continue;
            }
            Tok::Ident(w) if w == "mod" => {
                pending_mod = t.get(i + 1).and_then(Token::ident).map(str::to_owned);
            }
            Tok::Punct('{') => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    scope.push((name, depth));
                    r.inline_modules.push(names(&scope));
                }
            }
            Tok::Punct('}') => {
                if scope.last().is_some_and(|(_, d)| *d == depth) {
                    scope.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Punct(';') => pending_mod = None,
            Tok::Ident(_) if path_starts(t, i) => {
                let (segments, line, next) = code_path(t, i);
                if segments.len() >= 2 {
                    r.paths.push(Reference {
                        scope: names(&scope),
                        segments,
                        name: None,
                        line,
                    });
                }
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    r
}

fn names(scope: &[(String, usize)]) -> Vec<String> {
    scope.iter().map(|(n, _)| n.clone()).collect()
}

/// The index of the `;` closing the `use` at `i` (braces inside skipped).
fn use_end(t: &[Token], mut i: usize) -> usize {
    while i < t.len() && !t[i].is_punct(';') {
        i = if t[i].is_punct('{') {
            matching(t, i) + 1
        } else {
            i + 1
        };
    }
    i.min(t.len())
}

/// A path starts at `i` when nothing joins it to what comes before (`::`, a field's `.`).
fn path_starts(t: &[Token], i: usize) -> bool {
    let joined = i > 0 && (t[i - 1].tok == Tok::PathSep || t[i - 1].is_punct('.'));
    let continues = t.get(i + 1).is_some_and(|x| x.tok == Tok::PathSep);
    !joined && continues
}

/// The segments of the code path at `i` (stopping at a turbofish), its last line, and the index
/// after it.
fn code_path(t: &[Token], mut i: usize) -> (Vec<String>, usize, usize) {
    let mut segments = Vec::new();
    let mut line = t[i].line;
    while let Some(w) = t.get(i).and_then(Token::ident) {
        segments.push(w.to_owned());
        line = t[i].line;
        let more = t.get(i + 1).is_some_and(|x| x.tok == Tok::PathSep)
            && t.get(i + 2).is_some_and(|x| x.ident().is_some());
        i += if more { 2 } else { 1 };
        if !more {
            break;
        }
    }
    (segments, line, i)
}

/// Parse the use tree starting at `i` under `prefix`, pushing its leaves; the index after it.
fn use_tree(t: &[Token], mut i: usize, prefix: &[String], out: &mut Vec<Reference>) -> usize {
    let mut segments = prefix.to_vec();
    if prefix.is_empty() && t.get(i).is_some_and(|x| x.tok == Tok::PathSep) {
        // `::name`: an extern crate, never this crate's module.
        segments.push("::".to_owned());
        i += 1;
    }
    while let Some(token) = t.get(i) {
        match &token.tok {
            Tok::Ident(w) => {
                segments.push(w.clone());
                i += 1;
                if t.get(i).is_some_and(|x| x.tok == Tok::PathSep) {
                    i += 1;
                    continue;
                }
                let mut name = Some(leaf_name(&segments));
                if t.get(i).is_some_and(|x| x.is_ident("as")) {
                    name = t.get(i + 1).and_then(Token::ident).map(str::to_owned);
                    i += 2;
                }
                let name = name.filter(|n| n != "_");
                out.push(leaf(segments, name, token.line));
                return i;
            }
            Tok::Punct('*') => {
                out.push(leaf(segments, None, token.line));
                return i + 1;
            }
            Tok::Punct('{') => return use_group(t, i + 1, &segments, out),
            _ => return i + 1,
        }
    }
    i
}

/// The trees of a `{ … }` group whose first tree starts at `i`; the index after the `}`.
fn use_group(t: &[Token], mut i: usize, prefix: &[String], out: &mut Vec<Reference>) -> usize {
    while let Some(token) = t.get(i) {
        if token.is_punct('}') {
            return i + 1;
        }
        if token.is_punct(',') {
            i += 1;
            continue;
        }
        i = use_tree(t, i, prefix, out);
    }
    i
}

/// The name a leaf brings into scope: its last segment (`a::{self}` brings `a`).
fn leaf_name(segments: &[String]) -> String {
    match segments {
        [.., before, last] if last == "self" => before.clone(),
        [.., last] => last.clone(),
        [] => String::new(),
    }
}

fn leaf(segments: Vec<String>, name: Option<String>, line: usize) -> Reference {
    Reference {
        scope: Vec::new(),
        segments,
        name,
        line,
    }
}
