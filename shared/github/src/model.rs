//! What the client returns, and the documented GitHub shapes it reads them from.

use serde::Deserialize;
use sha1::{Digest, Sha1};

use super::error::GithubError;

/// `GET /app/installations/{id}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    pub id: u64,
    pub account: String,
    pub suspended: bool,
}

impl Installation {
    /// The installation as a run can use it: a suspended one stops the run
    /// (`InstallationUnavailable { suspended: true }`), like the token exchange's 403 does.
    pub fn require_active(self) -> Result<Self, GithubError> {
        if self.suspended {
            Err(GithubError::InstallationUnavailable { suspended: true })
        } else {
            Ok(self)
        }
    }
}

/// A repository as the installation sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoInfo {
    pub github_id: i64,
    pub owner: String,
    pub name: String,
    pub private: bool,
    pub archived: bool,
    /// `None` for a repository GitHub reports without one.
    pub default_branch: Option<String>,
    pub html_url: Option<String>,
    pub description: Option<String>,
    /// GitHub's global node id (GraphQL `nodes(ids:)` reads heads by it).
    pub node_id: Option<String>,
}

impl RepoInfo {
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

/// The answer to a conditional branch-head request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadCheck {
    /// 304: the stored ETag still matches (costs no rate limit).
    NotModified,
    Head {
        commit_sha: String,
        tree_sha: String,
        /// Send it back next time as `If-None-Match`.
        etag: Option<String>,
    },
}

/// A recursive tree listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    pub sha: String,
    /// GitHub cut the listing short: planning from it would delete what it left out.
    pub truncated: bool,
    pub entries: Vec<TreeEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    pub path: String,
    /// `100644` file, `100755` executable, `120000` symlink, `160000` submodule, `040000` tree.
    pub mode: String,
    pub kind: EntryKind,
    pub sha: String,
    /// Blobs only.
    pub size: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Blob,
    Tree,
    /// A submodule's commit.
    Commit,
}

/// `git hash-object`: SHA-1 of `"blob <len>\0"` followed by the bytes, lowercase hex.
pub fn git_blob_sha(content: &[u8]) -> String {
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {}\0", content.len()).as_bytes());
    hasher.update(content);
    hex::encode(hasher.finalize())
}

/// Integrity: the bytes GitHub sent must be the blob that was asked for.
pub(crate) fn verify_blob(requested_sha: &str, content: &[u8]) -> Result<(), GithubError> {
    if git_blob_sha(content).eq_ignore_ascii_case(requested_sha) {
        Ok(())
    } else {
        Err(GithubError::Decode)
    }
}

// ---------------------------------------------------------------------------------------------
// Documented GitHub shapes (only the fields used).

#[derive(Deserialize)]
pub(crate) struct RawInstallation {
    pub id: u64,
    pub account: Option<RawAccount>,
    pub suspended_at: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct RawAccount {
    pub login: String,
}

#[derive(Deserialize)]
pub(crate) struct RawAccessToken {
    pub token: String,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

#[derive(Deserialize)]
pub(crate) struct RawInstallationRepos {
    pub repositories: Vec<RawRepo>,
    #[serde(default)]
    pub total_count: Option<u64>,
}

#[derive(Deserialize)]
pub(crate) struct RawRepo {
    pub id: i64,
    pub node_id: Option<String>,
    pub name: String,
    pub owner: RawAccount,
    #[serde(default)]
    pub private: bool,
    #[serde(default)]
    pub archived: bool,
    pub default_branch: Option<String>,
    pub html_url: Option<String>,
    pub description: Option<String>,
}

impl From<RawRepo> for RepoInfo {
    fn from(r: RawRepo) -> Self {
        RepoInfo {
            github_id: r.id,
            owner: r.owner.login,
            name: r.name,
            private: r.private,
            archived: r.archived,
            default_branch: r.default_branch.filter(|b| !b.is_empty()),
            html_url: r.html_url,
            description: r.description,
            node_id: r.node_id.filter(|n| !n.is_empty()),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct RawBranch {
    pub commit: RawBranchCommit,
}

#[derive(Deserialize)]
pub(crate) struct RawBranchCommit {
    pub sha: String,
    pub commit: RawCommitDetail,
}

#[derive(Deserialize)]
pub(crate) struct RawCommitDetail {
    pub tree: RawShaRef,
}

#[derive(Deserialize)]
pub(crate) struct RawShaRef {
    pub sha: String,
}

#[derive(Deserialize)]
pub(crate) struct RawTree {
    pub sha: String,
    #[serde(default)]
    pub truncated: bool,
    pub tree: Vec<RawTreeEntry>,
}

#[derive(Deserialize)]
pub(crate) struct RawTreeEntry {
    pub path: String,
    pub mode: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub sha: String,
    pub size: Option<u64>,
}

impl TryFrom<RawTree> for Tree {
    type Error = GithubError;
    fn try_from(raw: RawTree) -> Result<Self, GithubError> {
        let entries = raw
            .tree
            .into_iter()
            .map(|e| {
                let kind = match e.kind.as_str() {
                    "blob" => EntryKind::Blob,
                    "tree" => EntryKind::Tree,
                    "commit" => EntryKind::Commit,
                    _ => return Err(GithubError::Decode),
                };
                Ok(TreeEntry {
                    path: e.path,
                    mode: e.mode,
                    kind,
                    sha: e.sha,
                    size: e.size,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Tree {
            sha: raw.sha,
            truncated: raw.truncated,
            entries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_blob_sha_matches_git_hash_object() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            git_blob_sha(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        // The empty blob.
        assert_eq!(
            git_blob_sha(b""),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
    }

    #[test]
    fn a_blob_whose_bytes_do_not_hash_to_the_requested_sha_is_refused() {
        let sha = git_blob_sha(b"# Title\n");
        assert_eq!(verify_blob(&sha, b"# Title\n"), Ok(()));
        assert_eq!(verify_blob(&sha.to_uppercase(), b"# Title\n"), Ok(()));
        assert_eq!(verify_blob(&sha, b"# Tampered\n"), Err(GithubError::Decode));
    }

    #[test]
    fn a_tree_with_an_unknown_entry_type_does_not_decode() {
        let raw: RawTree = serde_json::from_str(
            r#"{"sha":"t","truncated":false,"tree":[{"path":"a","mode":"100644","type":"tag","sha":"x"}]}"#,
        )
        .unwrap();
        assert_eq!(Tree::try_from(raw).unwrap_err(), GithubError::Decode);
    }

    #[test]
    fn tree_entries_keep_mode_kind_and_size() {
        let raw: RawTree = serde_json::from_str(
            r#"{"sha":"t","truncated":true,"tree":[
                {"path":"docs","mode":"040000","type":"tree","sha":"d"},
                {"path":"docs/a.md","mode":"100644","type":"blob","sha":"b","size":12},
                {"path":"vendor/x","mode":"160000","type":"commit","sha":"c"}]}"#,
        )
        .unwrap();
        let tree = Tree::try_from(raw).unwrap();
        assert!(tree.truncated);
        assert_eq!(tree.entries[0].kind, EntryKind::Tree);
        assert_eq!(tree.entries[1].size, Some(12));
        assert_eq!(tree.entries[2].kind, EntryKind::Commit);
        assert_eq!(tree.entries[2].size, None);
    }

    #[test]
    fn a_suspended_installation_is_not_active() {
        let inst = Installation {
            id: 1,
            account: "acme".into(),
            suspended: true,
        };
        assert_eq!(
            inst.require_active().unwrap_err(),
            GithubError::InstallationUnavailable { suspended: true }
        );
    }
}
