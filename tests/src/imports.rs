//! The import analysis behind issue 19's "done when": which file of a crate imports which, read
//! from the source as a newcomer reads it, and what that graph says.
//!
//! - **Files and modules.** Every `.rs` file under a crate's source root is a module: `lib.rs` and
//!   `main.rs` the crate root, `a/mod.rs` and `a.rs` the module `a`, `a/b.rs` the module `a::b`
//!   (`src/bin/` holds other crates and is left out). A file declared `#[cfg(test)] mod x;` by its
//!   parent, and every file under it, is test code and left out.
//! - **Imports.** Comments, doc comments and string literals are blanked and `#[cfg(test)]` items
//!   dropped first. Then every `use` leaf (nested braces, `self`, globs, `as`, `pub use`, over many
//!   lines) and every path written in code (`crate::a::f(..)`, `super::x::Y`, `$crate::…`, a child
//!   module's or an imported module's name followed by `::`) that names a module of the same crate
//!   is resolved to the deepest existing file it names (`crate::jobs::sqs::SqsAdapter` is
//!   `jobs/sqs.rs` if that file exists, else `jobs/mod.rs`). A path to the file itself (or to an
//!   inline module in it) is no edge, nor is one from a file to a child module it declares
//!   (`pub use sqs::SqsAdapter;` in `jobs/mod.rs`); a `mod x;` declaration is no import; but
//!   `use super::Thing` from a child to its parent is an edge. Each edge keeps the line of its
//!   first reference.
//! - **What is reported.** File cycles (strongly connected components of two or more files,
//!   Tarjan); module groups that import each other (each file grouped by its top-level module, the
//!   crate root in no group); and imports that run up an ordered table of layers (docs/design.md):
//!   an edge from a module in a lower layer to one in a higher layer.
//!
//! `cargo run -p syncplane-tests --features tools --bin imports` prints all three for every crate of the workspace;
//! `tests/tests/it/architecture.rs` asserts them.

mod graph;
mod lex;
mod refs;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::Path;

use refs::Reference;

/// The layers inside `shared/core` (the floor crate), lowest first (docs/design.md "Crates"): a
/// module may import from its own layer (without a file cycle) and from the layers below it,
/// never from a layer above. Between crates, cargo holds the layers ([`crate::crates`]).
pub const CORE_LAYERS: &[&[&str]] = &[
    &["limits", "testing"],
    &["config"],
    &["telemetry", "metrics", "http", "params", "db"],
    &["schema"],
    &["start", "runtime"],
];

/// One source file: its path as displayed (`shared/src/jobs/mod.rs`) and its module path.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: String,
    pub module: Vec<String>,
}

impl SourceFile {
    /// The top-level module the file belongs to; `None` for the crate root.
    pub fn group(&self) -> Option<&str> {
        self.module.first().map(String::as_str)
    }
}

/// One file importing another, at the line of its first reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub line: usize,
    /// The first reference as written (`crate::jobs::sqs::SqsAdapter`).
    pub path: String,
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: imports {} -> {}",
            self.from, self.line, self.path, self.to
        )
    }
}

/// Files (or module groups) that import one another, with the imports between them.
#[derive(Debug, Clone)]
pub struct Cycle {
    pub members: Vec<String>,
    pub edges: Vec<Edge>,
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{}}}", self.members.join(", "))?;
        for edge in &self.edges {
            write!(f, "\n    {edge}")?;
        }
        Ok(())
    }
}

/// An import from a lower layer up into a higher one.
#[derive(Debug, Clone)]
pub struct Upward {
    pub edge: Edge,
    pub from_group: String,
    pub to_group: String,
    /// 1-based, lowest first.
    pub from_layer: usize,
    pub to_layer: usize,
}

impl fmt::Display for Upward {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: imports {} (layer {} {} -> layer {} {})",
            self.edge.from,
            self.edge.line,
            self.edge.path,
            self.from_layer,
            self.from_group,
            self.to_layer,
            self.to_group
        )
    }
}

/// The import graph of one crate's production files.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub files: Vec<SourceFile>,
    /// Sorted by file, then line.
    pub edges: Vec<Edge>,
}

/// Every `.rs` file under `dir` (but `dir/bin/`), by its path relative to `dir` (`/`-separated).
pub fn read_sources(dir: &Path) -> io::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, rel)) = pending.pop() {
        for entry in std::fs::read_dir(&path)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if entry.file_type()?.is_dir() {
                if child != "bin" {
                    pending.push((entry.path(), child));
                }
            } else if name.ends_with(".rs") {
                out.insert(child, std::fs::read_to_string(entry.path())?);
            }
        }
    }
    Ok(out)
}

/// The source roots (`shared/src`, `cli/src`, …) of the workspace's member crates under `root`,
/// but the test crate's own (`tests/src`: test support, as every measure of the issue excludes).
pub fn workspace_crates(root: &Path) -> anyhow::Result<Vec<String>> {
    let manifest: toml::Table = std::fs::read_to_string(root.join("Cargo.toml"))?.parse()?;
    let members = manifest
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(|m| m.as_array())
        .ok_or_else(|| anyhow::anyhow!("Cargo.toml has no [workspace] members"))?;
    let mut out = Vec::new();
    for member in members.iter().filter_map(|m| m.as_str()) {
        let dirs = match member.strip_suffix("/*") {
            Some(parent) => sorted_children(&root.join(parent))?
                .into_iter()
                .map(|c| format!("{parent}/{c}"))
                .collect(),
            None => vec![member.to_owned()],
        };
        out.extend(
            dirs.into_iter()
                // The tests and their fake GitHub (moved out of the tests crate, issue 32) are
                // test support, which the analysis leaves out as it always has.
                .filter(|d| !(d == "tests" || d.starts_with("tests/")))
                .filter(|d| root.join(d).join("src").is_dir())
                .map(|d| format!("{d}/src")),
        );
    }
    Ok(out)
}

fn sorted_children(dir: &Path) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// The module path of the file at `rel` (`None` for a file that is not Rust).
fn module_of(rel: &str) -> Option<Vec<String>> {
    let stem = rel.strip_suffix(".rs")?;
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if matches!(stem, "lib" | "main") || parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    Some(parts)
}

/// One parsed production file.
struct Parsed {
    path: String,
    module: Vec<String>,
    refs: refs::References,
}

/// The module tree's production files, lexed; the test-only ones dropped.
fn parse(label: &str, sources: &BTreeMap<String, String>) -> Vec<Parsed> {
    let mut lexed = Vec::new();
    let mut test_modules: BTreeSet<Vec<String>> = BTreeSet::new();
    for (rel, text) in sources {
        let Some(module) = module_of(rel) else {
            continue;
        };
        let production = lex::production(text);
        for name in &production.test_mods {
            test_modules.insert([module.clone(), vec![name.clone()]].concat());
        }
        if production.test_only {
            test_modules.insert(module.clone());
        }
        lexed.push((rel, module, production));
    }
    lexed
        .into_iter()
        .filter(|(_, module, p)| {
            !p.test_only && !(1..=module.len()).any(|k| test_modules.contains(&module[..k]))
        })
        .map(|(rel, module, p)| Parsed {
            path: if label.is_empty() {
                rel.clone()
            } else {
                format!("{label}/{rel}")
            },
            module,
            refs: refs::references(&p.tokens),
        })
        .collect()
}

/// Every module of the tree (files and inline modules) and the file that holds it.
fn module_map(parsed: &[Parsed]) -> BTreeMap<Vec<String>, usize> {
    let mut map = BTreeMap::new();
    // `lib.rs` before `main.rs` as the crate root: a binary next to a library uses it by name.
    let mut order: Vec<usize> = (0..parsed.len()).collect();
    order.sort_by_key(|&i| !parsed[i].path.ends_with("lib.rs"));
    for i in order {
        map.entry(parsed[i].module.clone()).or_insert(i);
        for scope in &parsed[i].refs.inline_modules {
            map.entry([parsed[i].module.clone(), scope.clone()].concat())
                .or_insert(i);
        }
    }
    map
}

/// The modules in scope by a name: `use crate::api::http;` makes `http` name `api::http`.
type Aliases = BTreeMap<String, Vec<String>>;

/// The absolute module path `segments` names from module `here`, if it is in this crate.
fn resolve(
    modules: &BTreeMap<Vec<String>, usize>,
    here: &[String],
    segments: &[String],
    aliases: &Aliases,
) -> Option<Vec<String>> {
    let (first, rest) = segments.split_first()?;
    let mut path = match first.as_str() {
        "crate" | "$crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => here.split_last()?.1.to_vec(),
        name => {
            let child = [here, &[name.to_owned()]].concat();
            match aliases.get(name) {
                Some(target) => target.clone(),
                None if modules.contains_key(&child) => child,
                None => return None,
            }
        }
    };
    for segment in rest {
        match segment.as_str() {
            "super" => {
                path.pop()?;
            }
            "self" => {}
            s => path.push(s.to_owned()),
        }
    }
    Some(path)
}

/// The file holding the deepest module `path` names.
fn deepest_file(modules: &BTreeMap<Vec<String>, usize>, path: &[String]) -> Option<usize> {
    (0..=path.len())
        .rev()
        .find_map(|k| modules.get(&path[..k]).copied())
}

/// The files file `from` imports: target -> (line, path as written) of the first reference.
fn imports_of(
    parsed: &[Parsed],
    modules: &BTreeMap<Vec<String>, usize>,
    from: usize,
) -> BTreeMap<usize, (usize, String)> {
    let file = &parsed[from];
    let here = |r: &Reference| [file.module.clone(), r.scope.clone()].concat();
    let mut aliases = Aliases::new();
    let mut found: BTreeMap<usize, (usize, String)> = BTreeMap::new();
    let mut note = |r: &Reference, aliases: &Aliases| {
        let path = resolve(modules, &here(r), &r.segments, aliases)?;
        let to = deepest_file(modules, &path)?;
        let first = found.entry(to).or_insert((r.line, r.text()));
        if r.line < first.0 {
            *first = (r.line, r.text());
        }
        Some(path)
    };
    for r in &file.refs.uses {
        if let (Some(path), Some(name)) = (note(r, &aliases), &r.name)
            && modules.contains_key(&path)
        {
            aliases.insert(name.clone(), path);
        }
    }
    for r in &file.refs.paths {
        note(r, &aliases);
    }
    // The file itself, and the children it declares (a parent's `pub use child::X`), are no edge.
    found.retain(|&to, _| {
        let module = &parsed[to].module;
        let child = module.len() == file.module.len() + 1 && module.starts_with(&file.module);
        to != from && !child
    });
    found
}

impl Analysis {
    /// Analyse the crate whose source root is `root/src` (`src` relative, as `shared/src`).
    pub fn of_dir(root: &Path, src: &str) -> io::Result<Analysis> {
        Ok(Self::of_sources(src, &read_sources(&root.join(src))?))
    }

    /// Analyse in-memory sources, by path relative to the source root; `label` prefixes the
    /// displayed paths.
    pub fn of_sources(label: &str, sources: &BTreeMap<String, String>) -> Analysis {
        let parsed = parse(label, sources);
        let modules = module_map(&parsed);
        let mut edges = Vec::new();
        for from in 0..parsed.len() {
            for (to, (line, path)) in imports_of(&parsed, &modules, from) {
                edges.push(Edge {
                    from: parsed[from].path.clone(),
                    to: parsed[to].path.clone(),
                    line,
                    path,
                });
            }
        }
        edges.sort_by(|a, b| (&a.from, a.line, &a.to).cmp(&(&b.from, b.line, &b.to)));
        let files = parsed
            .into_iter()
            .map(|p| SourceFile {
                path: p.path,
                module: p.module,
            })
            .collect();
        Analysis { files, edges }
    }

    fn file(&self, path: &str) -> Option<&SourceFile> {
        self.files.iter().find(|f| f.path == path)
    }

    fn group_of(&self, path: &str) -> Option<&str> {
        self.file(path).and_then(SourceFile::group)
    }

    /// The top-level modules (module groups).
    pub fn groups(&self) -> BTreeSet<String> {
        self.files
            .iter()
            .filter_map(|f| f.group().map(str::to_owned))
            .collect()
    }

    /// Files that import one another.
    pub fn file_cycles(&self) -> Vec<Cycle> {
        let names: Vec<String> = self.files.iter().map(|f| f.path.clone()).collect();
        let placed = self
            .edges
            .iter()
            .map(|e| (e.from.clone(), e.to.clone(), e.clone()))
            .collect();
        cycles_among(&names, placed)
    }

    /// Module groups that import one another (the crate root in none); each with the first
    /// import from each group of it into each other.
    pub fn group_cycles(&self) -> Vec<Cycle> {
        let names: Vec<String> = self.groups().into_iter().collect();
        let between: Vec<(Edge, String, String)> = self
            .edges
            .iter()
            .filter_map(|e| {
                let (a, b) = (self.group_of(&e.from)?, self.group_of(&e.to)?);
                (a != b).then(|| (e.clone(), a.to_owned(), b.to_owned()))
            })
            .collect();
        let mut first: BTreeMap<(String, String), Edge> = BTreeMap::new();
        for (edge, a, b) in between {
            first.entry((a, b)).or_insert(edge);
        }
        let placed = first.into_iter().map(|((a, b), e)| (a, b, e)).collect();
        cycles_among(&names, placed)
    }

    /// Every import from a module in a lower layer of `layers` (lowest first) into one in a
    /// higher layer. Modules in no layer are [`Analysis::unlayered`]'s to report.
    pub fn upward_imports(&self, layers: &[&[&str]]) -> Vec<Upward> {
        let layer = |g: &str| layers.iter().position(|l| l.contains(&g)).map(|i| i + 1);
        self.edges
            .iter()
            .filter_map(|e| {
                let (from_group, to_group) = (self.group_of(&e.from)?, self.group_of(&e.to)?);
                let (from_layer, to_layer) = (layer(from_group)?, layer(to_group)?);
                (from_layer < to_layer).then(|| Upward {
                    edge: e.clone(),
                    from_group: from_group.to_owned(),
                    to_group: to_group.to_owned(),
                    from_layer,
                    to_layer,
                })
            })
            .collect()
    }

    /// The module groups `layers` does not place.
    pub fn unlayered(&self, layers: &[&[&str]]) -> Vec<String> {
        self.groups()
            .into_iter()
            .filter(|g| !layers.iter().any(|l| l.contains(&g.as_str())))
            .collect()
    }
}

/// The cycles among `names` by `edges`, each given with the names it joins (from, to).
fn cycles_among(names: &[String], edges: Vec<(String, String, Edge)>) -> Vec<Cycle> {
    let index = |n: &str| names.iter().position(|x| x == n);
    let mut adjacent = vec![Vec::new(); names.len()];
    let mut placed = Vec::new();
    for (a, b, edge) in edges {
        if let (Some(a), Some(b)) = (index(&a), index(&b)) {
            adjacent[a].push(b);
            placed.push((a, b, edge));
        }
    }
    graph::cycles(&adjacent)
        .into_iter()
        .map(|component| Cycle {
            members: component.iter().map(|&i| names[i].clone()).collect(),
            edges: placed
                .iter()
                .filter(|(a, b, _)| component.contains(a) && component.contains(b))
                .map(|(_, _, e)| e.clone())
                .collect(),
        })
        .collect()
}
