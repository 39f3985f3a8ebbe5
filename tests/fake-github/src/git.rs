//! Git objects with the ids real git gives them: `sha1("<kind> <len>\0" + body)` for blobs,
//! trees (entries in git's order, raw 20-byte ids) and commits.

use std::collections::{BTreeMap, HashMap};

use sha1::{Digest, Sha1};

pub type Oid = [u8; 20];

/// The object id git computes for `content` stored as an object of `kind`.
pub fn hash_object(kind: &str, content: &[u8]) -> Oid {
    let mut hasher = Sha1::new();
    hasher.update(format!("{kind} {}\0", content.len()).as_bytes());
    hasher.update(content);
    hasher.finalize().into()
}

pub fn to_hex(oid: &Oid) -> String {
    hex::encode(oid)
}

pub fn from_hex(text: &str) -> Option<Oid> {
    let mut oid = [0u8; 20];
    hex::decode_to_slice(text, &mut oid).ok()?;
    Some(oid)
}

/// A tree entry's mode, as git writes it and as the GitHub API shows it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    File,
    Executable,
    Symlink,
    Submodule,
    Tree,
}

impl Mode {
    /// Mode inside git's tree object (trees are written without the leading zero).
    fn in_tree_object(self) -> &'static str {
        match self {
            Mode::File => "100644",
            Mode::Executable => "100755",
            Mode::Symlink => "120000",
            Mode::Submodule => "160000",
            Mode::Tree => "40000",
        }
    }

    /// Mode in GitHub's JSON (and in `git ls-tree`): six digits.
    pub fn api(self) -> &'static str {
        match self {
            Mode::Tree => "040000",
            other => other.in_tree_object(),
        }
    }

    /// The `type` GitHub reports for an entry with this mode.
    pub fn kind(self) -> &'static str {
        match self {
            Mode::Tree => "tree",
            Mode::Submodule => "commit",
            _ => "blob",
        }
    }
}

#[derive(Clone, Debug)]
pub struct TreeEntry {
    pub mode: Mode,
    pub name: String,
    pub oid: Oid,
}

#[derive(Clone, Debug)]
pub struct Signature {
    pub name: String,
    pub email: String,
    /// Unix seconds, written with a +0000 offset.
    pub time: i64,
}

#[derive(Clone, Debug)]
pub struct Commit {
    pub tree: Oid,
    pub parent: Option<Oid>,
    pub author: Signature,
    pub committer: Signature,
    /// Without the trailing newline git adds (`git commit -m` stores "message\n").
    pub message: String,
}

impl Commit {
    fn encode(&self) -> Vec<u8> {
        let mut out = format!("tree {}\n", to_hex(&self.tree));
        if let Some(parent) = &self.parent {
            out.push_str(&format!("parent {}\n", to_hex(parent)));
        }
        for (role, who) in [("author", &self.author), ("committer", &self.committer)] {
            out.push_str(&format!(
                "{role} {} <{}> {} +0000\n",
                who.name, who.email, who.time
            ));
        }
        out.push('\n');
        out.push_str(&self.message);
        out.push('\n');
        out.into_bytes()
    }
}

#[derive(Clone, Debug)]
pub enum Object {
    Blob(Vec<u8>),
    Tree(Vec<TreeEntry>),
    Commit(Commit),
}

/// What one path of a working tree holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileEntry {
    Regular(Vec<u8>),
    Executable(Vec<u8>),
    /// A symlink is stored as a blob holding the target path.
    Symlink(String),
    /// A submodule is a gitlink: the commit id of the other repository, no object here.
    Submodule(Oid),
}

/// One entry of a recursive listing: path from the root, mode, id.
#[derive(Clone, Debug)]
pub struct Listed {
    pub path: String,
    pub mode: Mode,
    pub oid: Oid,
}

enum Node {
    Dir(BTreeMap<String, Node>),
    Leaf(FileEntry),
}

/// Git's tree order: byte order of names, a tree's name compared as if it ended in '/'.
fn git_sort(entries: &mut [TreeEntry]) {
    fn key(entry: &TreeEntry) -> Vec<u8> {
        let mut key = entry.name.as_bytes().to_vec();
        if entry.mode == Mode::Tree {
            key.push(b'/');
        }
        key
    }
    entries.sort_by_key(key);
}

/// A content-addressed object database (one per repository, as on GitHub).
#[derive(Default)]
pub struct ObjectStore {
    objects: HashMap<Oid, Object>,
}

impl ObjectStore {
    pub fn get(&self, oid: &Oid) -> Option<&Object> {
        self.objects.get(oid)
    }

    pub fn write_blob(&mut self, data: &[u8]) -> Oid {
        let oid = hash_object("blob", data);
        self.objects
            .entry(oid)
            .or_insert_with(|| Object::Blob(data.to_vec()));
        oid
    }

    pub fn write_commit(&mut self, commit: Commit) -> Oid {
        let oid = hash_object("commit", &commit.encode());
        self.objects.insert(oid, Object::Commit(commit));
        oid
    }

    fn write_tree_entries(&mut self, mut entries: Vec<TreeEntry>) -> Oid {
        git_sort(&mut entries);
        let mut body = Vec::new();
        for entry in &entries {
            body.extend_from_slice(entry.mode.in_tree_object().as_bytes());
            body.push(b' ');
            body.extend_from_slice(entry.name.as_bytes());
            body.push(0);
            body.extend_from_slice(&entry.oid);
        }
        let oid = hash_object("tree", &body);
        self.objects.insert(oid, Object::Tree(entries));
        oid
    }

    /// Writes the nested trees for a flat map of paths; returns the root tree id.
    /// A path that passes through a file replaces that file, as a checkout would.
    pub fn write_tree(&mut self, files: &BTreeMap<String, FileEntry>) -> Oid {
        let mut root = BTreeMap::new();
        for (path, entry) in files {
            let parts: Vec<&str> = path.split('/').collect();
            assert!(
                parts
                    .iter()
                    .all(|p| !p.is_empty() && *p != "." && *p != ".."),
                "fake GitHub: invalid path {path:?}"
            );
            let mut dir = &mut root;
            for part in &parts[..parts.len() - 1] {
                let node = dir
                    .entry((*part).to_owned())
                    .or_insert_with(|| Node::Dir(BTreeMap::new()));
                if let Node::Leaf(_) = node {
                    *node = Node::Dir(BTreeMap::new());
                }
                let Node::Dir(inner) = node else {
                    unreachable!("just made a directory")
                };
                dir = inner;
            }
            dir.insert(parts[parts.len() - 1].to_owned(), Node::Leaf(entry.clone()));
        }
        self.write_dir(root)
    }

    fn write_dir(&mut self, dir: BTreeMap<String, Node>) -> Oid {
        let mut entries = Vec::with_capacity(dir.len());
        for (name, node) in dir {
            let (mode, oid) = match node {
                Node::Dir(inner) => (Mode::Tree, self.write_dir(inner)),
                Node::Leaf(FileEntry::Regular(data)) => (Mode::File, self.write_blob(&data)),
                Node::Leaf(FileEntry::Executable(data)) => {
                    (Mode::Executable, self.write_blob(&data))
                }
                Node::Leaf(FileEntry::Symlink(target)) => {
                    (Mode::Symlink, self.write_blob(target.as_bytes()))
                }
                Node::Leaf(FileEntry::Submodule(commit)) => (Mode::Submodule, commit),
            };
            entries.push(TreeEntry { mode, name, oid });
        }
        self.write_tree_entries(entries)
    }

    /// Every entry below `tree`, trees included, depth-first in git order
    /// (what `git ls-tree -r -t` prints and GitHub's `recursive=1` returns).
    pub fn list_recursive(&self, tree: &Oid) -> Vec<Listed> {
        let mut out = Vec::new();
        self.list_into(tree, "", true, &mut out);
        out
    }

    /// The direct entries of `tree`.
    pub fn list_flat(&self, tree: &Oid) -> Vec<Listed> {
        let mut out = Vec::new();
        self.list_into(tree, "", false, &mut out);
        out
    }

    fn list_into(&self, tree: &Oid, prefix: &str, recursive: bool, out: &mut Vec<Listed>) {
        let Some(Object::Tree(entries)) = self.objects.get(tree) else {
            return;
        };
        for entry in entries {
            let path = format!("{prefix}{}", entry.name);
            out.push(Listed {
                path: path.clone(),
                mode: entry.mode,
                oid: entry.oid,
            });
            if recursive && entry.mode == Mode::Tree {
                self.list_into(&entry.oid, &format!("{path}/"), true, out);
            }
        }
    }

    /// The flat path map a tree holds (the inverse of `write_tree`).
    pub fn files_of(&self, tree: &Oid) -> BTreeMap<String, FileEntry> {
        let mut files = BTreeMap::new();
        for listed in self.list_recursive(tree) {
            let blob = || match self.objects.get(&listed.oid) {
                Some(Object::Blob(data)) => data.clone(),
                _ => Vec::new(),
            };
            let entry = match listed.mode {
                Mode::Tree => continue,
                Mode::File => FileEntry::Regular(blob()),
                Mode::Executable => FileEntry::Executable(blob()),
                Mode::Symlink => FileEntry::Symlink(String::from_utf8_lossy(&blob()).into_owned()),
                Mode::Submodule => FileEntry::Submodule(listed.oid),
            };
            files.insert(listed.path, entry);
        }
        files
    }

    pub fn blob_size(&self, oid: &Oid) -> Option<usize> {
        match self.objects.get(oid) {
            Some(Object::Blob(data)) => Some(data.len()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_blob_and_tree_have_gits_well_known_ids() {
        assert_eq!(
            to_hex(&hash_object("blob", b"")),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        let mut store = ObjectStore::default();
        assert_eq!(
            to_hex(&store.write_tree(&BTreeMap::new())),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        );
    }
}
