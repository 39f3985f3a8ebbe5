//! What a persist step carries: the stored state a sync starts from, everything one sync writes
//! (documents, README, code owners, markers, status) and the counts of what it changed.

use std::collections::{HashMap, HashSet};

use crate::sync::listings::Listings;
use crate::sync::parse::{CodeOwnersRule, ParsedDocument};
use crate::sync::selection::Warning;
use syncplane_github::RepoInfo;

/// What is stored for a repository, as the head check and the diff need it.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    pub id: Option<i64>,
    pub tree_sha: Option<String>,
    pub head_etag: Option<String>,
    pub fingerprint: Option<String>,
    pub head_commit_sha: Option<String>,
    /// The run recorded as failed during which this row was last written, when no successful run
    /// has covered the repository since: that run's write committed although it was recorded
    /// failed (a lost COMMIT reply, or a process that died after committing).
    pub written_by_failed_run: Option<i64>,
    /// The docs folder's tree SHA the last complete plan used.
    pub docs_tree_sha: Option<String>,
    /// path → blob SHA of every stored document.
    pub documents: HashMap<String, String>,
    pub readme: Option<(String, String)>,
    pub codeowners: Option<(String, String)>,
}

/// The head-check markers stored after a sync; all `None` clears them (the next sync re-plans).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Markers {
    pub head_commit_sha: Option<String>,
    pub tree_sha: Option<String>,
    pub head_etag: Option<String>,
    pub fingerprint: Option<String>,
    /// `repos.docs_tree_sha`: cleared with the others.
    pub docs_tree_sha: Option<String>,
}

/// The repository row's status after a sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// `None` is ok; otherwise (code, fixed message).
    pub error: Option<(&'static str, &'static str)>,
    pub warnings: Vec<Warning>,
}

/// A parsed document ready to store.
pub struct DocumentWrite {
    pub path: String,
    pub blob_sha: String,
    pub size: u64,
    pub parsed: ParsedDocument,
}

/// CODEOWNERS as planned: absent, unchanged, or new rules.
pub enum CodeOwnersWrite {
    /// The plan has no CODEOWNERS file: delete stored rules.
    Absent,
    /// Same blob as stored, or not fetched this time: leave stored rules.
    Keep,
    Replace {
        path: String,
        blob_sha: String,
        rules: Vec<CodeOwnersRule>,
    },
}

/// The README as planned.
pub enum ReadmeWrite {
    Absent,
    Keep,
    /// Boxed: a parsed document (its text and source) is large beside the other variants.
    Replace(Box<DocumentWrite>),
}

/// Everything one sync writes.
pub struct Write<'a> {
    pub repo: &'a RepoInfo,
    pub docs_folder: Option<String>,
    pub documents: Vec<DocumentWrite>,
    /// Paths the plan keeps (fetched or unchanged); stored documents outside it are deleted.
    /// `None` keeps every stored document (a failure path that must not delete).
    pub keep_paths: Option<HashSet<String>>,
    pub readme: ReadmeWrite,
    pub codeowners: CodeOwnersWrite,
    pub markers: Markers,
    pub status: Status,
    /// The tree listings the plan used, and the ones stored before it (`None`: leave them).
    pub trees: Option<(&'a Listings, &'a Listings)>,
}

/// Counts of what a write changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub added: u32,
    pub changed: u32,
    pub removed: u32,
    /// Documents Postgres refused (each became a warning).
    pub refused: u32,
    /// Rows of any table actually written (0 for an idempotent re-sync).
    pub rows_written: u64,
    /// Wall time spent in Postgres reading the stored state and writing (benchmarks report it).
    pub db_time: std::time::Duration,
}
