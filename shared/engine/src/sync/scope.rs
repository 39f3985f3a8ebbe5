//! Reading the docs scope: the part of a repository's tree that selection plans from (spec "One
//! repository", steps 1 and 3; issue 10, "plan from the docs subtree, descending only into what
//! changed").
//!
//! The root is read non-recursively, so a monorepo past GitHub's recursive limit (100,000
//! entries / 7 MB) still syncs. From the root the reader takes the docs folder (the `docsPath`
//! override, descended segment by segment, else the first of docs, doc, documentation), the
//! `.github` and `docs` folders (CODEOWNERS candidates) and the README candidates. Every tree whose
//! SHA a stored listing has is taken from it (git trees are content-addressed); the rest is read
//! from GitHub: a docs directory new to the plan, or one that held few entries, in one recursive
//! read; a large known one level by level, into the subtrees whose SHA changed only. Every listing
//! the plan uses is complete: a truncated read of the docs scope is `Truncated`.

use crate::sync::listings::{self, Entry, Listing, Listings, join};
use crate::sync::selection::{
    CODEOWNERS_FILE_NAME, CODEOWNERS_FOLDERS, DOCS_FOLDER_CANDIDATES, README_CANDIDATES,
    discover_docs_folder,
};
use syncplane_github::{EntryKind, GithubClient, GithubError, Probe, TreeEntry};

/// A changed directory whose stored subtree held at most this many entries is read in one
/// recursive request: no more bytes than a level or two of it, and fewer requests.
pub(crate) const RECURSIVE_READ_MAX_ENTRIES: usize = 256;
/// A directory read level by level whose changed subtrees exceed this count is read again in
/// one recursive request instead of one request per subtree.
pub(crate) const DESCEND_MAX_CHANGED: usize = 4;

/// Why the scope could not be read.
#[derive(Debug)]
pub enum ScopeError {
    /// A listing the plan needs came back truncated: never plan from it.
    Truncated,
    Github(GithubError),
}

impl From<GithubError> for ScopeError {
    fn from(e: GithubError) -> Self {
        Self::Github(e)
    }
}

/// What a plan is made from.
#[derive(Debug, Clone)]
pub struct Scope {
    /// Every listing the plan used, the root's included: the next plan's stored listings.
    pub used: Listings,
    /// The docs folder's tree SHA (`repos.docs_tree_sha`); `None` when there is no docs folder.
    pub docs_tree_sha: Option<String>,
}

impl Scope {
    /// The tree entries selection plans from, with paths from the root, in recursive order.
    pub fn entries(&self) -> Vec<TreeEntry> {
        self.used.entries()
    }
}

/// The root listing: the stored one when the root tree is the same, else one request.
pub async fn read_root(
    client: &GithubClient,
    owner: &str,
    name: &str,
    root_sha: &str,
    stored: &Listings,
) -> Result<Listing, ScopeError> {
    if let Some(listing) = stored.by_sha(root_sha) {
        return Ok(listing.clone());
    }
    read_level(client, owner, name, root_sha).await
}

/// The root entries the plan depends on: README and CODEOWNERS candidates, and the folders the
/// docs folder and the other CODEOWNERS candidates can be in. When these are the same as in the
/// stored root (and the fingerprint matches), every tree the plan read is the same: the
/// repository is unchanged in substance.
fn root_scope<'a>(root: &'a Listing, docs_path: Option<&str>) -> Vec<&'a Entry> {
    root.entries
        .iter()
        .filter(|e| in_root_scope(&e.name, e.kind, docs_path))
        .collect()
}

/// Whether a root entry of this name and kind is one the plan depends on.
fn in_root_scope(name: &str, kind: EntryKind, docs_path: Option<&str>) -> bool {
    let first_segment = docs_path.and_then(|p| p.split('/').next());
    match kind {
        EntryKind::Blob => {
            name.eq_ignore_ascii_case(CODEOWNERS_FILE_NAME)
                || README_CANDIDATES
                    .iter()
                    .any(|c| name.eq_ignore_ascii_case(c))
        }
        EntryKind::Tree => {
            Some(name) == first_segment
                || DOCS_FOLDER_CANDIDATES
                    .iter()
                    .chain(CODEOWNERS_FOLDERS.iter())
                    .any(|c| name.eq_ignore_ascii_case(c))
        }
        EntryKind::Commit => false,
    }
}

/// The paths a probe of another commit asks for (issue 23): the stored root scope's entries,
/// by their exact names, in the order [`unchanged_at`] expects them.
pub(crate) fn probe_paths(root: &Listing, docs_path: Option<&str>) -> Vec<String> {
    root_scope(root, docs_path)
        .iter()
        .map(|e| e.name.clone())
        .collect()
}

/// Whether the probed commit leaves the root scope as the stored `root` has it, so every tree
/// the stored plan read is the same: the same scope names and kinds in the probed root (a
/// candidate added or gone, in any spelling, shows there), and each asked path with the stored
/// entry's kind, mode and oid. `probe.files` answers [`probe_paths`] of the same root.
pub(crate) fn unchanged_at(probe: &Probe, root: &Listing, docs_path: Option<&str>) -> bool {
    let old = root_scope(root, docs_path);
    if probe.files.len() != old.len() {
        return false;
    }
    let mut old_names: Vec<(&str, EntryKind)> =
        old.iter().map(|e| (e.name.as_str(), e.kind)).collect();
    let mut new_names: Vec<(&str, EntryKind)> = probe
        .root
        .iter()
        .filter(|(name, kind)| in_root_scope(name, *kind, docs_path))
        .map(|(name, kind)| (name.as_str(), *kind))
        .collect();
    old_names.sort_by_key(|(name, _)| *name);
    new_names.sort_by_key(|(name, _)| *name);
    old_names == new_names
        && old.iter().zip(&probe.files).all(|(entry, file)| {
            file.as_ref()
                .is_some_and(|f| f.kind == entry.kind && f.mode == entry.mode && f.oid == entry.sha)
        })
}

/// Whether `root` leaves everything the stored plan read unchanged.
pub(crate) fn unchanged_in_substance(
    root: &Listing,
    stored: &Listings,
    docs_path: Option<&str>,
) -> bool {
    stored
        .get("")
        .is_some_and(|old| root_scope(old, docs_path) == root_scope(root, docs_path))
}

/// Read everything the plan needs below `root`.
pub async fn read(
    client: &GithubClient,
    owner: &str,
    name: &str,
    root: Listing,
    stored: &Listings,
    docs_path: Option<&str>,
) -> Result<Scope, ScopeError> {
    let mut reader = Reader {
        client,
        owner,
        name,
        stored,
        used: Listings::default(),
    };
    reader.used.insert(String::new(), root.clone());
    let docs = match docs_path {
        Some(path) => reader.descend_by_path(&root, path).await?,
        None => discovered(&root),
    };
    if let Some((path, sha)) = &docs {
        reader.subtree(path, sha).await?;
    }
    for folder in root.trees().filter(|e| {
        CODEOWNERS_FOLDERS
            .iter()
            .any(|c| e.name.eq_ignore_ascii_case(c))
    }) {
        if reader.used.get(&folder.name).is_none() {
            reader.level(&folder.name, &folder.sha).await?;
        }
    }
    Ok(Scope {
        used: reader.used,
        docs_tree_sha: docs.map(|(_, sha)| sha),
    })
}

/// The docs folder discovered from the root by the spec's rule: (path, tree SHA).
fn discovered(root: &Listing) -> Option<(String, String)> {
    let entries: Vec<TreeEntry> = root.entries.iter().map(|e| e.at(&e.name)).collect();
    let name = discover_docs_folder(&entries)?;
    root.trees()
        .find(|e| e.name == name)
        .map(|e| (name, e.sha.clone()))
}

async fn read_level(
    client: &GithubClient,
    owner: &str,
    name: &str,
    sha: &str,
) -> Result<Listing, ScopeError> {
    let tree = client.tree_level(owner, name, sha).await?;
    if tree.truncated {
        return Err(ScopeError::Truncated);
    }
    Ok(Listing::from_level(&tree)?)
}

struct Reader<'a> {
    client: &'a GithubClient,
    owner: &'a str,
    name: &'a str,
    stored: &'a Listings,
    used: Listings,
}

impl Reader<'_> {
    /// A listing of this SHA already known, stored or read during this plan.
    fn known(&self, sha: &str) -> Option<Listing> {
        self.stored
            .by_sha(sha)
            .or_else(|| self.used.by_sha(sha))
            .cloned()
    }

    fn is_known(&self, sha: &str) -> bool {
        self.stored.by_sha(sha).is_some() || self.used.by_sha(sha).is_some()
    }

    /// One directory's own listing, recorded as used.
    async fn level(&mut self, path: &str, sha: &str) -> Result<Listing, ScopeError> {
        let listing = match self.known(sha) {
            Some(l) => l,
            None => read_level(self.client, self.owner, self.name, sha).await?,
        };
        self.used.insert(path.to_owned(), listing.clone());
        Ok(listing)
    }

    /// A `docsPath` override, from the root one segment at a time (exact names, as the spec's
    /// comparison of the whole path is exact): (path, tree SHA), or `None` when it is missing.
    async fn descend_by_path(
        &mut self,
        root: &Listing,
        docs_path: &str,
    ) -> Result<Option<(String, String)>, ScopeError> {
        let segments: Vec<&str> = docs_path.split('/').collect();
        let mut listing = root.clone();
        let mut path = String::new();
        for (i, segment) in segments.iter().enumerate() {
            let Some(tree) = listing.trees().find(|e| e.name == *segment) else {
                return Ok(None);
            };
            let sha = tree.sha.clone();
            path = join(&path, segment);
            if i + 1 == segments.len() {
                return Ok(Some((path, sha)));
            }
            listing = self.level(&path, &sha).await?;
        }
        Ok(None)
    }

    /// Every directory at and below `path`: known trees from their listings, changed ones read.
    async fn subtree(&mut self, path: &str, sha: &str) -> Result<(), ScopeError> {
        let mut pending = vec![(path.to_owned(), sha.to_owned())];
        while let Some((path, sha)) = pending.pop() {
            let listing = match self.known(&sha) {
                Some(listing) => listing,
                None if self.prefers_recursive(&path) => {
                    self.recursive(&path, &sha).await?;
                    continue;
                }
                None => {
                    let listing = read_level(self.client, self.owner, self.name, &sha).await?;
                    let changed = listing.trees().filter(|e| !self.is_known(&e.sha)).count();
                    if changed > DESCEND_MAX_CHANGED {
                        self.recursive(&path, &sha).await?;
                        continue;
                    }
                    listing
                }
            };
            pending.extend(
                listing
                    .trees()
                    .map(|e| (join(&path, &e.name), e.sha.clone())),
            );
            self.used.insert(path, listing);
        }
        Ok(())
    }

    /// A directory the plan never listed, or one that held few entries, is cheapest whole.
    fn prefers_recursive(&self, path: &str) -> bool {
        self.stored.get(path).is_none()
            || self.stored.subtree_size(path) <= RECURSIVE_READ_MAX_ENTRIES
    }

    async fn recursive(&mut self, path: &str, sha: &str) -> Result<(), ScopeError> {
        let tree = self.client.tree(self.owner, self.name, sha).await?;
        if tree.truncated {
            return Err(ScopeError::Truncated);
        }
        for (p, listing) in listings::split_recursive(path, &tree)? {
            self.used.insert(p, listing);
        }
        Ok(())
    }
}
