//! Selection (spec "One repository", step 3): which files of a repository's tree are synced.
//!
//! - Docs folder: the per-repository `docsPath` override if set (authoritative, no fallback),
//!   else the first of `docs`, `doc`, `documentation` that exists at the root, matched
//!   case-insensitively.
//! - Documents: regular files ending in `.md` or `.mdx` below it.
//! - Skipped, each reported as a warning with its path and reason: files over the size cap,
//!   dot-prefixed files and folders, `node_modules`, symlinks, and everything past the document
//!   cap (the first files in path order are kept).
//! - The root README (README.md, .markdown, .mdx or no extension) and the CODEOWNERS file
//!   (.github/CODEOWNERS, then CODEOWNERS, then docs/CODEOWNERS) are picked the same way.

use serde::Serialize;

use syncplane_github::{EntryKind, TreeEntry};

/// Folders tried, in order, when no override is configured.
pub(crate) const DOCS_FOLDER_CANDIDATES: [&str; 3] = ["docs", "doc", "documentation"];
/// README names tried, in order.
pub(crate) const README_CANDIDATES: [&str; 4] =
    ["README.md", "README.markdown", "README.mdx", "README"];
/// CODEOWNERS locations tried, in order.
pub(crate) const CODEOWNERS_CANDIDATES: [&str; 3] =
    [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];
/// The file name every CODEOWNERS candidate has, and the folders other than the root that hold one.
pub(crate) const CODEOWNERS_FILE_NAME: &str = "CODEOWNERS";
pub(crate) const CODEOWNERS_FOLDERS: [&str; 2] = [".github", "docs"];
/// At most this many warnings are kept per repository; the last one counts the rest.
pub(crate) const MAX_WARNINGS: usize = 500;

const MODE_SYMLINK: &str = "120000";

/// Why a file was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    TooLarge,
    DotPrefixed,
    NodeModules,
    Symlink,
    DocumentCap,
    /// The file could not be stored (NUL bytes, invalid UTF-8): set by the parse step.
    Unstorable,
    /// A CODEOWNERS line that is not a valid rule: set by the parse step.
    InvalidCodeownersLine,
    /// The docs folder override names a folder the tree does not have.
    DocsFolderMissing,
    /// Omitted from the warnings list because of [`MAX_WARNINGS`].
    MoreWarnings,
}

/// One warning: a path and why it was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub path: String,
    pub reason: SkipReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Warning {
    pub fn new(path: impl Into<String>, reason: SkipReason) -> Self {
        Self {
            path: path.into(),
            reason,
            detail: None,
        }
    }
}

/// A file the plan keeps: where it is and which blob it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    pub path: String,
    pub blob_sha: String,
    pub size: u64,
}

/// The plan for one repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The docs folder used, if any exists.
    pub docs_folder: Option<String>,
    /// Documents in path order, at most the document cap.
    pub documents: Vec<PlannedFile>,
    pub readme: Option<PlannedFile>,
    pub codeowners: Option<PlannedFile>,
    pub warnings: Vec<Warning>,
}

/// Settings that decide the plan (the same ones the fingerprint covers).
#[derive(Debug, Clone, Copy)]
pub struct SelectionRules<'a> {
    pub docs_path: Option<&'a str>,
    pub max_file_bytes: u32,
    pub max_docs: u32,
}

/// Plan a repository from its complete (never truncated) recursive tree.
pub fn plan(entries: &[TreeEntry], rules: &SelectionRules<'_>) -> Plan {
    let mut warnings = Vec::new();
    let docs_folder = match rules.docs_path {
        Some(path) => {
            let exists = entries
                .iter()
                .any(|e| e.kind == EntryKind::Tree && e.path == path);
            if !exists {
                warnings.push(Warning::new(path, SkipReason::DocsFolderMissing));
            }
            exists.then(|| path.to_owned())
        }
        None => discover_docs_folder(entries),
    };

    let mut candidates: Vec<&TreeEntry> = Vec::new();
    if let Some(folder) = &docs_folder {
        let prefix = format!("{folder}/");
        for entry in entries {
            let Some(rest) = entry.path.strip_prefix(&prefix) else {
                continue;
            };
            if entry.kind != EntryKind::Blob || !is_markdown(rest) {
                continue;
            }
            if let Some(reason) = skip_reason(entry, rest, rules.max_file_bytes) {
                warnings.push(Warning::new(&entry.path, reason));
                continue;
            }
            candidates.push(entry);
        }
    }
    // Path order (byte-wise, as git sorts), so the cap keeps the same files every time.
    candidates.sort_by(|a, b| a.path.cmp(&b.path));
    let cap = rules.max_docs as usize;
    for skipped in candidates.iter().skip(cap) {
        warnings.push(Warning::new(&skipped.path, SkipReason::DocumentCap));
    }
    let documents = candidates.into_iter().take(cap).map(planned).collect();

    let readme = pick_single(
        entries,
        &README_CANDIDATES,
        rules.max_file_bytes,
        &mut warnings,
    );
    let codeowners = pick_single(
        entries,
        &CODEOWNERS_CANDIDATES,
        rules.max_file_bytes,
        &mut warnings,
    );

    Plan {
        docs_folder,
        documents,
        readme,
        codeowners,
        warnings: cap_warnings(warnings),
    }
}

/// The first of the candidate folders that exists at the root, case-insensitively; an exact-case
/// match wins over other spellings of the same candidate.
pub(crate) fn discover_docs_folder(entries: &[TreeEntry]) -> Option<String> {
    DOCS_FOLDER_CANDIDATES.iter().find_map(|candidate| {
        let mut matches: Vec<&str> = entries
            .iter()
            .filter(|e| e.kind == EntryKind::Tree && !e.path.contains('/'))
            .filter(|e| e.path.eq_ignore_ascii_case(candidate))
            .map(|e| e.path.as_str())
            .collect();
        matches.sort_by_key(|p| (*p != *candidate, p.to_string()));
        matches.first().map(|p| (*p).to_owned())
    })
}

pub(crate) fn is_markdown(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".md") || lower.ends_with(".mdx")
}

/// Why a markdown file below the docs folder is left out, if it is. `rest` is its path below the
/// docs folder (dot-prefixed and `node_modules` rules apply to it, not to the folder itself).
fn skip_reason(entry: &TreeEntry, rest: &str, max_file_bytes: u32) -> Option<SkipReason> {
    let segments: Vec<&str> = rest.split('/').collect();
    if segments.iter().any(|s| s.starts_with('.')) {
        return Some(SkipReason::DotPrefixed);
    }
    if segments.contains(&"node_modules") {
        return Some(SkipReason::NodeModules);
    }
    if entry.mode == MODE_SYMLINK {
        return Some(SkipReason::Symlink);
    }
    if entry.size.unwrap_or(0) > u64::from(max_file_bytes) {
        return Some(SkipReason::TooLarge);
    }
    None
}

/// README and CODEOWNERS: the first candidate path that exists (case-insensitively, exact case
/// preferred) and passes the same file rules; a candidate that exists but is skipped is reported.
fn pick_single(
    entries: &[TreeEntry],
    candidates: &[&str],
    max_file_bytes: u32,
    warnings: &mut Vec<Warning>,
) -> Option<PlannedFile> {
    for candidate in candidates {
        let mut found: Vec<&TreeEntry> = entries
            .iter()
            .filter(|e| e.kind == EntryKind::Blob && e.path.eq_ignore_ascii_case(candidate))
            .collect();
        found.sort_by_key(|e| (e.path != *candidate, e.path.clone()));
        let Some(entry) = found.first() else {
            continue;
        };
        let reason = if entry.mode == MODE_SYMLINK {
            Some(SkipReason::Symlink)
        } else if entry.size.unwrap_or(0) > u64::from(max_file_bytes) {
            Some(SkipReason::TooLarge)
        } else {
            None
        };
        match reason {
            Some(reason) => warnings.push(Warning::new(&entry.path, reason)),
            None => return Some(planned(entry)),
        }
    }
    None
}

fn planned(entry: &TreeEntry) -> PlannedFile {
    PlannedFile {
        path: entry.path.clone(),
        blob_sha: entry.sha.clone(),
        size: entry.size.unwrap_or(0),
    }
}

/// Keep at most [`MAX_WARNINGS`]; the last entry says how many more there were.
pub(crate) fn cap_warnings(mut warnings: Vec<Warning>) -> Vec<Warning> {
    if warnings.len() > MAX_WARNINGS {
        let more = warnings.len() - (MAX_WARNINGS - 1);
        warnings.truncate(MAX_WARNINGS - 1);
        warnings.push(Warning {
            path: String::new(),
            reason: SkipReason::MoreWarnings,
            detail: Some(format!("{more} more warnings not listed")),
        });
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(path: &str, size: u64) -> TreeEntry {
        TreeEntry {
            path: path.to_owned(),
            mode: "100644".to_owned(),
            kind: EntryKind::Blob,
            sha: format!("{:040x}", path.len() as u64 * 7 + size),
            size: Some(size),
        }
    }
    fn tree(path: &str) -> TreeEntry {
        TreeEntry {
            path: path.to_owned(),
            mode: "040000".to_owned(),
            kind: EntryKind::Tree,
            sha: "0".repeat(40),
            size: None,
        }
    }
    fn symlink(path: &str) -> TreeEntry {
        TreeEntry {
            mode: MODE_SYMLINK.to_owned(),
            ..blob(path, 10)
        }
    }
    const RULES: SelectionRules<'static> = SelectionRules {
        docs_path: None,
        max_file_bytes: 1000,
        max_docs: 2000,
    };
    fn paths(plan: &Plan) -> Vec<&str> {
        plan.documents.iter().map(|d| d.path.as_str()).collect()
    }
    fn warned(plan: &Plan, reason: SkipReason) -> Vec<&str> {
        plan.warnings
            .iter()
            .filter(|w| w.reason == reason)
            .map(|w| w.path.as_str())
            .collect()
    }

    #[test]
    fn docs_folder_is_the_first_candidate_that_exists_case_insensitively() {
        let entries = vec![
            tree("Documentation"),
            blob("Documentation/a.md", 1),
            tree("DOC"),
            blob("DOC/b.md", 1),
        ];
        let p = plan(&entries, &RULES);
        assert_eq!(
            p.docs_folder.as_deref(),
            Some("DOC"),
            "doc comes before documentation"
        );
        assert_eq!(paths(&p), ["DOC/b.md"]);
    }

    #[test]
    fn docs_path_override_is_authoritative_without_fallback() {
        let entries = vec![tree("docs"), blob("docs/a.md", 1)];
        let rules = SelectionRules {
            docs_path: Some("handbook"),
            ..RULES
        };
        let p = plan(&entries, &rules);
        assert_eq!(p.docs_folder, None);
        assert!(p.documents.is_empty(), "no fallback to docs/");
        assert_eq!(warned(&p, SkipReason::DocsFolderMissing), ["handbook"]);

        let entries = vec![
            tree("docs"),
            blob("docs/a.md", 1),
            tree("site/handbook"),
            blob("site/handbook/x.mdx", 1),
        ];
        let rules = SelectionRules {
            docs_path: Some("site/handbook"),
            ..RULES
        };
        assert_eq!(paths(&plan(&entries, &rules)), ["site/handbook/x.mdx"]);
    }

    #[test]
    fn documents_are_regular_md_and_mdx_files_below_the_folder() {
        let entries = vec![
            tree("docs"),
            blob("docs/a.md", 1),
            blob("docs/deep/b.MDX", 1),
            blob("docs/c.txt", 1),
            blob("docs/img.png", 1),
            blob("notdocs.md", 1),
            TreeEntry {
                kind: EntryKind::Commit,
                mode: "160000".into(),
                ..blob("docs/sub.md", 0)
            },
        ];
        assert_eq!(
            paths(&plan(&entries, &RULES)),
            ["docs/a.md", "docs/deep/b.MDX"]
        );
    }

    #[test]
    fn every_skip_is_a_warning_with_its_path_and_reason() {
        let entries = vec![
            tree("docs"),
            blob("docs/ok.md", 1000),
            blob("docs/big.md", 1001),
            blob("docs/.hidden.md", 1),
            blob("docs/.vuepress/x.md", 1),
            blob("docs/node_modules/pkg/readme.md", 1),
            symlink("docs/link.md"),
        ];
        let p = plan(&entries, &RULES);
        assert_eq!(
            paths(&p),
            ["docs/ok.md"],
            "a file at exactly the cap is kept"
        );
        assert_eq!(warned(&p, SkipReason::TooLarge), ["docs/big.md"]);
        assert_eq!(
            warned(&p, SkipReason::DotPrefixed),
            ["docs/.hidden.md", "docs/.vuepress/x.md"]
        );
        assert_eq!(
            warned(&p, SkipReason::NodeModules),
            ["docs/node_modules/pkg/readme.md"]
        );
        assert_eq!(warned(&p, SkipReason::Symlink), ["docs/link.md"]);
    }

    #[test]
    fn the_document_cap_keeps_the_first_files_in_path_order() {
        let entries = vec![
            tree("docs"),
            blob("docs/c.md", 1),
            blob("docs/a.md", 1),
            blob("docs/b/z.md", 1),
        ];
        let rules = SelectionRules {
            max_docs: 2,
            ..RULES
        };
        let p = plan(&entries, &rules);
        assert_eq!(paths(&p), ["docs/a.md", "docs/b/z.md"]);
        assert_eq!(warned(&p, SkipReason::DocumentCap), ["docs/c.md"]);
    }

    #[test]
    fn readme_and_codeowners_are_picked_in_their_order() {
        let entries = vec![
            blob("README", 1),
            blob("readme.markdown", 1),
            blob("CODEOWNERS", 1),
            tree("docs"),
            blob("docs/CODEOWNERS", 1),
        ];
        let p = plan(&entries, &RULES);
        assert_eq!(
            p.readme.as_ref().unwrap().path,
            "readme.markdown",
            "README.markdown before README"
        );
        assert_eq!(
            p.codeowners.unwrap().path,
            "CODEOWNERS",
            "root before docs/"
        );

        let entries = vec![
            symlink("README.md"),
            blob("README", 1),
            tree(".github"),
            blob(".github/CODEOWNERS", 2000),
        ];
        let p = plan(&entries, &RULES);
        assert_eq!(
            p.readme.as_ref().unwrap().path,
            "README",
            "a symlinked README is skipped"
        );
        assert!(p.codeowners.is_none());
        assert_eq!(warned(&p, SkipReason::Symlink), ["README.md"]);
        assert_eq!(warned(&p, SkipReason::TooLarge), [".github/CODEOWNERS"]);
    }

    #[test]
    fn every_codeowners_candidate_is_the_file_name_at_the_root_or_in_a_codeowners_folder() {
        // The scope reader lists exactly these folders to find the candidates.
        for candidate in CODEOWNERS_CANDIDATES {
            match candidate.rsplit_once('/') {
                Some((folder, name)) => {
                    assert!(CODEOWNERS_FOLDERS.contains(&folder), "{candidate}");
                    assert_eq!(name, CODEOWNERS_FILE_NAME);
                }
                None => assert_eq!(candidate, CODEOWNERS_FILE_NAME),
            }
        }
    }

    #[test]
    fn warnings_are_capped_with_a_count_of_the_rest() {
        let mut entries = vec![tree("docs")];
        for i in 0..(MAX_WARNINGS + 10) {
            entries.push(blob(&format!("docs/.h{i}.md"), 1));
        }
        let p = plan(&entries, &RULES);
        assert_eq!(p.warnings.len(), MAX_WARNINGS);
        let last = p.warnings.last().unwrap();
        assert_eq!(last.reason, SkipReason::MoreWarnings);
        assert_eq!(last.detail.as_deref(), Some("11 more warnings not listed"));
    }
}
