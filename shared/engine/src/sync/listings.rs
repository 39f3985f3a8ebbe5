//! Stored tree listings: the directories the last plan read, one listing per directory, kept to
//! the entries selection can use (spec "One repository", step 3; issue 10, "plan from the docs
//! subtree").
//!
//! Git trees are content-addressed: a listing stored for a tree SHA is that tree's listing forever,
//! so the next plan asks GitHub only for the trees whose SHA it has not seen. Listings are kept
//! even when a plan is incomplete: unlike the head markers, they can never be stale.

use std::collections::{BTreeMap, HashMap};

use sqlx::{PgPool, Postgres, Transaction};

use crate::sync::selection::{CODEOWNERS_FILE_NAME, README_CANDIDATES, is_markdown};
use syncplane_github::{EntryKind, GithubError, Tree, TreeEntry};

/// One entry of one directory, by its name in that directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub mode: String,
    pub kind: EntryKind,
    pub sha: String,
    pub size: Option<u64>,
}

impl Entry {
    /// This entry as a recursive listing shows it, at `path` from the root.
    pub fn at(&self, path: &str) -> TreeEntry {
        TreeEntry {
            path: path.to_owned(),
            mode: self.mode.clone(),
            kind: self.kind,
            sha: self.sha.clone(),
            size: self.size,
        }
    }
}

/// One directory's own entries, in git order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub sha: String,
    pub entries: Vec<Entry>,
}

impl Listing {
    /// A non-recursive read of one tree. A name holding '/' is not a GitHub answer.
    pub(crate) fn from_level(tree: &Tree) -> Result<Self, GithubError> {
        let mut entries = Vec::new();
        for e in &tree.entries {
            if e.path.is_empty() || e.path.contains('/') {
                return Err(GithubError::Decode);
            }
            if usable(&e.path, e.kind) {
                entries.push(entry(&e.path, e));
            }
        }
        Ok(Self {
            sha: tree.sha.clone(),
            entries,
        })
    }

    /// Subdirectories: (name, sha).
    pub fn trees(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.kind == EntryKind::Tree)
    }
}

/// Whether selection can ever use an entry: trees (to descend into), and files named like a
/// document, a README or a CODEOWNERS file. Submodules and other files are not kept.
pub fn usable(name: &str, kind: EntryKind) -> bool {
    match kind {
        EntryKind::Tree => true,
        EntryKind::Commit => false,
        EntryKind::Blob => {
            is_markdown(name)
                || name.eq_ignore_ascii_case(CODEOWNERS_FILE_NAME)
                || README_CANDIDATES
                    .iter()
                    .any(|c| name.eq_ignore_ascii_case(c))
        }
    }
}

fn entry(name: &str, e: &TreeEntry) -> Entry {
    Entry {
        name: name.to_owned(),
        mode: e.mode.clone(),
        kind: e.kind,
        sha: e.sha.clone(),
        size: e.size,
    }
}

/// `parent/name`, the root being ''.
pub fn join(parent: &str, name: &str) -> String {
    match (parent.is_empty(), name.is_empty()) {
        (true, _) => name.to_owned(),
        (false, true) => parent.to_owned(),
        (false, false) => format!("{parent}/{name}"),
    }
}

/// A complete recursive read of the tree at `path` split into one listing per directory (paths
/// from the repository root). An entry whose folder the read does not list is not an answer
/// GitHub gives for a complete tree: `Decode`.
pub(crate) fn split_recursive(
    path: &str,
    tree: &Tree,
) -> Result<Vec<(String, Listing)>, GithubError> {
    let mut dirs: BTreeMap<&str, Listing> = BTreeMap::new();
    dirs.insert(
        "",
        Listing {
            sha: tree.sha.clone(),
            entries: Vec::new(),
        },
    );
    for e in tree.entries.iter().filter(|e| e.kind == EntryKind::Tree) {
        dirs.insert(
            e.path.as_str(),
            Listing {
                sha: e.sha.clone(),
                entries: Vec::new(),
            },
        );
    }
    for e in &tree.entries {
        let (parent, name) = e.path.rsplit_once('/').unwrap_or(("", e.path.as_str()));
        if name.is_empty() {
            return Err(GithubError::Decode);
        }
        let listing = dirs.get_mut(parent).ok_or(GithubError::Decode)?;
        if usable(name, e.kind) {
            listing.entries.push(entry(name, e));
        }
    }
    Ok(dirs
        .into_iter()
        .map(|(rel, listing)| (join(path, rel), listing))
        .collect())
}

/// Listings by directory path ('' is the root), with an index by tree SHA.
#[derive(Debug, Clone, Default)]
pub struct Listings {
    by_path: BTreeMap<String, Listing>,
    path_of_sha: HashMap<String, String>,
}

impl Listings {
    pub fn get(&self, path: &str) -> Option<&Listing> {
        self.by_path.get(path)
    }

    /// A listing of this tree SHA, wherever it was seen.
    pub(crate) fn by_sha(&self, sha: &str) -> Option<&Listing> {
        self.path_of_sha.get(sha).and_then(|p| self.by_path.get(p))
    }

    pub fn insert(&mut self, path: String, listing: Listing) {
        self.path_of_sha.insert(listing.sha.clone(), path.clone());
        if let Some(old) = self.by_path.insert(path.clone(), listing) {
            // The index must not lead from the replaced SHA to the new listing.
            if self.path_of_sha.get(&old.sha) == Some(&path) && self.by_path[&path].sha != old.sha {
                self.path_of_sha.remove(&old.sha);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Listing)> {
        self.by_path.iter()
    }

    /// Entries stored at `path` and below it: what reading it whole would list (about).
    pub(crate) fn subtree_size(&self, path: &str) -> usize {
        let prefix = format!("{path}/");
        self.by_path
            .iter()
            .filter(|(p, _)| p.as_str() == path || path.is_empty() || p.starts_with(&prefix))
            .map(|(_, l)| l.entries.len())
            .sum()
    }

    /// Every entry with its path from the root, depth first in git order: the part of the
    /// recursive tree these listings cover, in the order GitHub's `recursive=1` lists it.
    pub fn entries(&self) -> Vec<TreeEntry> {
        let mut out = Vec::new();
        self.walk("", &mut out);
        out
    }

    fn walk(&self, path: &str, out: &mut Vec<TreeEntry>) {
        let Some(listing) = self.by_path.get(path) else {
            return;
        };
        for e in &listing.entries {
            let full = join(path, &e.name);
            out.push(e.at(&full));
            if e.kind == EntryKind::Tree {
                self.walk(&full, out);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Storage: table plan_trees (migration 0008).

/// One entry as stored: [name, mode, type, sha, size].
type StoredEntry = (String, String, String, String, Option<u64>);

fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Blob => "blob",
        EntryKind::Tree => "tree",
        EntryKind::Commit => "commit",
    }
}

fn to_stored(listing: &Listing) -> serde_json::Value {
    let rows: Vec<StoredEntry> = listing
        .entries
        .iter()
        .map(|e| {
            (
                e.name.clone(),
                e.mode.clone(),
                kind_name(e.kind).to_owned(),
                e.sha.clone(),
                e.size,
            )
        })
        .collect();
    serde_json::to_value(rows).unwrap_or_else(|_| serde_json::json!([]))
}

fn from_stored(sha: String, value: serde_json::Value) -> Option<Listing> {
    let rows: Vec<StoredEntry> = serde_json::from_value(value).ok()?;
    let entries = rows
        .into_iter()
        .map(|(name, mode, kind, sha, size)| {
            let kind = match kind.as_str() {
                "blob" => EntryKind::Blob,
                "tree" => EntryKind::Tree,
                "commit" => EntryKind::Commit,
                _ => return None,
            };
            Some(Entry {
                name,
                mode,
                kind,
                sha,
                size,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Listing { sha, entries })
}

/// The listings the last plan of repository `repo_id` stored (none for a new repository).
/// A row that does not decode is left out: the tree is read from GitHub again.
pub async fn load(pool: &PgPool, repo_id: Option<i64>) -> Result<Listings, sqlx::Error> {
    let mut listings = Listings::default();
    let Some(repo_id) = repo_id else {
        return Ok(listings);
    };
    let rows: Vec<(String, String, serde_json::Value)> =
        sqlx::query_as("SELECT path, sha, entries FROM plan_trees WHERE repo_id = $1")
            .bind(repo_id)
            .fetch_all(pool)
            .await?;
    for (path, sha, value) in rows {
        match from_stored(sha, value) {
            Some(listing) => listings.insert(path, listing),
            None => tracing::warn!(repo_id, path = %path, "stored tree listing does not decode"),
        }
    }
    Ok(listings)
}

/// The stored root listing alone (what a probe compares with).
pub(crate) async fn load_root(pool: &PgPool, repo_id: i64) -> Result<Option<Listing>, sqlx::Error> {
    let row: Option<(String, serde_json::Value)> =
        sqlx::query_as("SELECT sha, entries FROM plan_trees WHERE repo_id = $1 AND path = ''")
            .bind(repo_id)
            .fetch_optional(pool)
            .await?;
    Ok(row.and_then(|(sha, value)| from_stored(sha, value)))
}

/// A git object id as the table stores it.
fn is_oid(sha: &str) -> bool {
    sha.len() == 40 && sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Store the listings a plan used in place of the ones stored before: rows no longer used are
/// deleted, rows whose SHA is unchanged are not touched. Returns the rows written.
pub async fn save(
    tx: &mut Transaction<'_, Postgres>,
    repo_id: i64,
    used: &Listings,
    stored: &Listings,
) -> Result<u64, sqlx::Error> {
    let keep: Vec<&str> = used.iter().map(|(p, _)| p.as_str()).collect();
    let mut written = sqlx::query("DELETE FROM plan_trees WHERE repo_id = $1 AND path <> ALL($2)")
        .bind(repo_id)
        .bind(&keep)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    let changed: Vec<(&String, &Listing)> = used
        .iter()
        .filter(|(p, l)| is_oid(&l.sha) && stored.get(p).map(|s| &s.sha) != Some(&l.sha))
        .collect();
    if changed.is_empty() {
        return Ok(written);
    }
    let paths: Vec<&str> = changed.iter().map(|(p, _)| p.as_str()).collect();
    let shas: Vec<&str> = changed.iter().map(|(_, l)| l.sha.as_str()).collect();
    let entries: Vec<serde_json::Value> = changed.iter().map(|(_, l)| to_stored(l)).collect();
    written += sqlx::query(
        "INSERT INTO plan_trees (repo_id, path, sha, entries)
         SELECT $1, p, s, e FROM unnest($2::text[], $3::text[], $4::jsonb[]) AS t(p, s, e)
         ON CONFLICT (repo_id, path) DO UPDATE SET sha = excluded.sha, entries = excluded.entries
         WHERE plan_trees.sha IS DISTINCT FROM excluded.sha",
    )
    .bind(repo_id)
    .bind(&paths)
    .bind(&shas)
    .bind(&entries)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(path: &str, kind: EntryKind, sha: &str) -> TreeEntry {
        TreeEntry {
            path: path.to_owned(),
            mode: if kind == EntryKind::Tree {
                "040000"
            } else {
                "100644"
            }
            .to_owned(),
            kind,
            sha: sha.to_owned(),
            size: (kind == EntryKind::Blob).then_some(3),
        }
    }

    #[test]
    fn a_recursive_read_splits_into_one_listing_per_directory_keeping_usable_entries() {
        let tree = Tree {
            sha: "d0".into(),
            truncated: false,
            entries: vec![
                raw("a.md", EntryKind::Blob, "b1"),
                raw("img", EntryKind::Tree, "t1"),
                raw("img/logo.png", EntryKind::Blob, "b2"),
                raw("guide", EntryKind::Tree, "t2"),
                raw("guide/x.mdx", EntryKind::Blob, "b3"),
                raw("CODEOWNERS", EntryKind::Blob, "b4"),
            ],
        };
        let split = split_recursive("docs", &tree).unwrap();
        let paths: Vec<&str> = split.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["docs", "docs/guide", "docs/img"]);
        let names = |i: usize| -> Vec<&str> {
            split[i].1.entries.iter().map(|e| e.name.as_str()).collect()
        };
        assert_eq!(names(0), ["a.md", "img", "guide", "CODEOWNERS"]);
        assert_eq!(names(1), ["x.mdx"]);
        assert!(names(2).is_empty(), "a picture is not kept");
        assert_eq!(split[1].1.sha, "t2");
    }

    #[test]
    fn an_entry_whose_folder_is_not_listed_does_not_decode() {
        let tree = Tree {
            sha: "d0".into(),
            truncated: false,
            entries: vec![raw("lost/a.md", EntryKind::Blob, "b1")],
        };
        assert_eq!(
            split_recursive("docs", &tree).unwrap_err(),
            GithubError::Decode
        );
    }

    #[test]
    fn a_level_read_holding_a_path_does_not_decode() {
        let tree = Tree {
            sha: "d0".into(),
            truncated: false,
            entries: vec![raw("a/b.md", EntryKind::Blob, "b1")],
        };
        assert_eq!(Listing::from_level(&tree).unwrap_err(), GithubError::Decode);
    }

    #[test]
    fn a_replaced_listing_is_no_longer_found_by_its_old_sha() {
        let mut listings = Listings::default();
        let listing = |sha: &str| Listing {
            sha: sha.into(),
            entries: Vec::new(),
        };
        listings.insert(String::new(), listing("old"));
        listings.insert(String::new(), listing("new"));
        assert!(listings.by_sha("old").is_none());
        assert_eq!(listings.by_sha("new").unwrap().sha, "new");
    }

    #[test]
    fn listings_compose_into_the_recursive_order() {
        let mut listings = Listings::default();
        let tree = Tree {
            sha: "r".into(),
            truncated: false,
            entries: vec![
                raw("README.md", EntryKind::Blob, "b0"),
                raw("docs", EntryKind::Tree, "d"),
                raw("docs/a", EntryKind::Tree, "da"),
                raw("docs/a/x.md", EntryKind::Blob, "b1"),
                raw("docs/b.md", EntryKind::Blob, "b2"),
                raw("src", EntryKind::Tree, "s"),
            ],
        };
        for (p, l) in split_recursive("", &tree).unwrap() {
            listings.insert(p, l);
        }
        let paths: Vec<String> = listings.entries().into_iter().map(|e| e.path).collect();
        assert_eq!(
            paths,
            [
                "README.md",
                "docs",
                "docs/a",
                "docs/a/x.md",
                "docs/b.md",
                "src"
            ]
        );
        assert_eq!(listings.by_sha("da").unwrap().entries[0].name, "x.md");
        assert_eq!(listings.subtree_size("docs"), 3);
    }

    #[test]
    fn stored_entries_round_trip() {
        let listing = Listing {
            sha: "a".repeat(40),
            entries: vec![Entry {
                name: "a.md".into(),
                mode: "100644".into(),
                kind: EntryKind::Blob,
                sha: "b".repeat(40),
                size: Some(7),
            }],
        };
        let back = from_stored(listing.sha.clone(), to_stored(&listing)).unwrap();
        assert_eq!(back, listing);
        assert!(
            from_stored(
                "x".into(),
                serde_json::json!([["a", "1", "tag", "s", null]])
            )
            .is_none()
        );
    }
}
