//! Planning from the docs subtree (issue 10, build 3): the root is read non-recursively, and only
//! the trees whose SHA changed are read again; every rule of selection behaves as with the whole
//! recursive tree.

use shared::config::parse_sync_config;
use shared::github::TreeEntry;
use shared::sync::RepoOutcome;
use shared::sync::failure::RepoFailure;
use shared::sync::listings::Listings;
use shared::sync::scope;
use shared::sync::selection::{self, SelectionRules};
use syncplane_tests::fake_github::{Change, Endpoint};

use super::{World, synced};

fn put(path: &str, content: &str) -> Change {
    Change::Put(path.to_owned(), content.as_bytes().to_vec())
}

/// A small monorepo: a docs folder, a README, CODEOWNERS in .github, and code.
fn monorepo(code_files: usize) -> Vec<(String, String)> {
    let mut files = vec![
        ("docs/intro.md".to_owned(), "# Intro\n".to_owned()),
        ("docs/guide/usage.md".to_owned(), "# Usage\n".to_owned()),
        ("README.md".to_owned(), "# Mono\n".to_owned()),
        (
            ".github/CODEOWNERS".to_owned(),
            "*.md @acme/docs\n".to_owned(),
        ),
    ];
    for i in 0..code_files {
        files.push((format!("src/m{}/f{i}.rs", i % 7), format!("// {i}\n")));
    }
    files
}

fn add(w: &World, full_name: &str, files: &[(String, String)]) {
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    w.repo(full_name, &files);
}

/// The tree reads of the last sync: (tree SHA, recursive?).
fn tree_reads(w: &World) -> Vec<(String, bool)> {
    w.gh.requests()
        .into_iter()
        .filter(|r| r.endpoint == Endpoint::Tree)
        .map(|r| {
            let (path, query) = r.path.split_once('?').unwrap_or((r.path.as_str(), ""));
            let sha = path.rsplit('/').next().unwrap().to_owned();
            (sha, query.contains("recursive"))
        })
        .collect()
}

/// The SHA of the tree at `path` in the head commit (read outside the measured sync).
async fn tree_sha(w: &World, full_name: &str, path: &str) -> String {
    let (owner, name) = full_name.split_once('/').unwrap();
    let root = w.gh.head_tree(full_name).unwrap();
    if path.is_empty() {
        return root;
    }
    let tree = w.client.tree(owner, name, &root).await.unwrap();
    tree.entries
        .into_iter()
        .find(|e| e.path == path)
        .map(|e| e.sha)
        .unwrap_or_else(|| panic!("no tree {path}"))
}

/// Rows of documents, README and code owners with their versions: equal snapshots prove none
/// was written.
async fn content_versions(w: &World) -> Vec<(String, String, String)> {
    w.row_versions()
        .await
        .into_iter()
        .filter(|r| r.0 != "repos")
        .collect()
}

#[tokio::test]
async fn a_push_outside_the_docs_scope_writes_no_document_row_and_reads_only_the_root() {
    let w = World::new().await;
    add(&w, "acme/mono", &monorepo(40));
    synced(&w.sync("acme/mono").await.unwrap());
    let before = content_versions(&w).await;
    let warnings = w.repo_row("acme/mono").await.warnings;

    w.gh.push(
        "acme/mono",
        &[
            put("src/m1/new.rs", "// new\n"),
            Change::Delete("src/m2".into()),
        ],
    );
    let root = w.gh.head_tree("acme/mono").unwrap();
    let outcome = w.sync("acme/mono").await.unwrap();

    assert_eq!(outcome, RepoOutcome::Unchanged, "unchanged in substance");
    assert_eq!(w.gh.count(Endpoint::Branch), 1);
    assert_eq!(
        tree_reads(&w),
        [(root.clone(), false)],
        "only the root, non-recursively"
    );
    assert_eq!(w.gh.count(Endpoint::Blob), 0);
    assert_eq!(w.gh.total_requests(), 2);
    assert_eq!(content_versions(&w).await, before, "no content row written");
    let row = w.repo_row("acme/mono").await;
    assert_eq!(
        row.tree_sha.as_deref(),
        Some(root.as_str()),
        "the markers move"
    );
    assert_eq!(row.sync_status, "ok");
    assert_eq!(row.warnings, warnings);

    // And then an unchanged repository costs the head check alone, as before.
    assert_eq!(w.sync("acme/mono").await.unwrap(), RepoOutcome::Unchanged);
    assert_eq!(w.gh.total_requests(), 1);
}

#[tokio::test]
async fn a_truncated_root_no_longer_fails_the_repository() {
    let w = World::new().await;
    add(&w, "acme/mono", &monorepo(60));
    // GitHub cuts recursive reads past its limit; here the limit is 20 entries, so the whole
    // tree (70 entries and more) comes back truncated while the docs folder (3) does not.
    w.gh.set_tree_truncation(Some(20));
    let root = w.gh.head_tree("acme/mono").unwrap();
    assert!(
        w.client
            .tree("acme", "mono", &root)
            .await
            .unwrap()
            .truncated,
        "the premise: a recursive read of the root is truncated"
    );

    let counts = synced(&w.sync("acme/mono").await.unwrap());
    assert_eq!(counts.added, 2);
    assert_eq!(
        w.doc_paths("acme/mono").await,
        ["docs/guide/usage.md", "docs/intro.md"]
    );
    let row = w.repo_row("acme/mono").await;
    assert_eq!(
        (row.sync_status.as_str(), row.sync_error_code),
        ("ok", None)
    );
    let owners: i64 = sqlx::query_scalar("SELECT count(*) FROM code_owners")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(
        owners, 1,
        "CODEOWNERS found in .github without the whole tree"
    );
    assert!(tree_reads(&w).contains(&(root, false)));
}

#[tokio::test]
async fn a_truncated_docs_scope_still_fails_with_tree_truncated_and_keeps_content() {
    let w = World::new().await;
    let mut files = monorepo(10);
    for i in 0..8 {
        files.push((format!("docs/page{i}.md"), format!("# Page {i}\n")));
    }
    add(&w, "acme/mono", &files);
    synced(&w.sync("acme/mono").await.unwrap());
    let before = w.contents().await;
    let markers = w.repo_row("acme/mono").await;

    w.gh.push(
        "acme/mono",
        &[
            Change::Delete("docs/page0.md".into()),
            put("docs/new.md", "# New\n"),
        ],
    );
    w.gh.set_tree_truncation(Some(5));
    let outcome = w.sync("acme/mono").await.unwrap();
    assert!(
        matches!(
            outcome,
            RepoOutcome::Failed {
                failure: RepoFailure::TreeTruncated,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(w.contents().await, before, "nothing deleted or added");
    assert_eq!(w.gh.count(Endpoint::Blob), 0);
    let row = w.repo_row("acme/mono").await;
    assert_eq!(row.sync_error_code.as_deref(), Some("tree_truncated"));
    assert_eq!(
        row.tree_sha, markers.tree_sha,
        "markers describe the stored content"
    );

    w.gh.set_tree_truncation(None);
    synced(&w.sync("acme/mono").await.unwrap());
    assert!(
        w.doc_paths("acme/mono")
            .await
            .contains(&"docs/new.md".to_owned())
    );
    assert!(
        !w.doc_paths("acme/mono")
            .await
            .contains(&"docs/page0.md".to_owned())
    );
}

#[tokio::test]
async fn a_docs_path_override_descends_by_path() {
    let mut w = World::new().await;
    w.repo(
        "acme/site",
        &[
            ("site/handbook/a.md", "# A\n"),
            ("site/handbook/deep/b.md", "# B\n"),
            ("site/other/x.md", "# X\n"),
            ("docs/ignored.md", "# No fallback\n"),
        ],
    );
    w.config = parse_sync_config(
        "SYNC_CONFIG",
        r#"{"repos":[{"name":"acme/site","docsPath":"site/handbook"}]}"#,
    )
    .unwrap();
    synced(&w.sync("acme/site").await.unwrap());
    assert_eq!(
        w.doc_paths("acme/site").await,
        ["site/handbook/a.md", "site/handbook/deep/b.md"]
    );
    let mut reads = tree_reads(&w);
    let (root, site, handbook, docs) = (
        tree_sha(&w, "acme/site", "").await,
        tree_sha(&w, "acme/site", "site").await,
        tree_sha(&w, "acme/site", "site/handbook").await,
        tree_sha(&w, "acme/site", "docs").await,
    );
    reads.sort();
    let mut expected = vec![
        (root, false),
        (site, false),
        (handbook.clone(), true),
        // docs/CODEOWNERS is a candidate whatever the docs folder is.
        (docs, false),
    ];
    expected.sort();
    assert_eq!(
        reads, expected,
        "root → site → handbook, never the whole tree"
    );

    // A change beside the docs folder reads the levels down to it, and nothing below.
    let before = content_versions(&w).await;
    w.gh.push("acme/site", &[put("site/other/y.md", "# Y\n")]);
    let (root, site) = (
        tree_sha(&w, "acme/site", "").await,
        tree_sha(&w, "acme/site", "site").await,
    );
    assert_eq!(tree_sha(&w, "acme/site", "site/handbook").await, handbook);
    let counts = synced(&w.sync("acme/site").await.unwrap());
    assert_eq!(tree_reads(&w), [(root.clone(), false), (site, false)]);
    assert_eq!(w.gh.count(Endpoint::Blob), 0);
    assert_eq!(
        counts.rows_written, 1,
        "the repository row only: {counts:?}"
    );
    assert_eq!(content_versions(&w).await, before);
    let row = w.repo_row("acme/site").await;
    assert_eq!(row.tree_sha.as_deref(), Some(root.as_str()));

    // A missing segment is a missing docs folder, reported as before.
    w.config = parse_sync_config(
        "SYNC_CONFIG",
        r#"{"repos":[{"name":"acme/site","docsPath":"site/nope/handbook"}]}"#,
    )
    .unwrap();
    synced(&w.sync("acme/site").await.unwrap());
    assert!(w.doc_paths("acme/site").await.is_empty(), "no fallback");
    assert!(
        w.repo_row("acme/site")
            .await
            .warnings
            .to_string()
            .contains("docs_folder_missing")
    );
}

#[tokio::test]
async fn a_one_document_change_reads_only_the_changed_subtree() {
    let w = World::new().await;
    // 6 sections of 50 documents: more than one recursive read is worth re-reading whole.
    let mut files = monorepo(5);
    for i in 0..300 {
        files.push((
            format!("docs/s{}/d{i:03}.md", i % 6),
            format!("# Doc {i}\n"),
        ));
    }
    add(&w, "acme/mono", &files);
    synced(&w.sync("acme/mono").await.unwrap());
    let before = content_versions(&w).await;

    w.gh.push("acme/mono", &[put("docs/s3/d009.md", "# Doc 9, edited\n")]);
    let (root, docs, section) = (
        tree_sha(&w, "acme/mono", "").await,
        tree_sha(&w, "acme/mono", "docs").await,
        tree_sha(&w, "acme/mono", "docs/s3").await,
    );
    let counts = synced(&w.sync("acme/mono").await.unwrap());
    assert_eq!((counts.added, counts.changed, counts.removed), (0, 1, 0));
    assert_eq!(
        tree_reads(&w),
        [(root, false), (docs, false), (section, true)],
        "the root and docs levels, then the changed section whole"
    );
    assert_eq!(w.gh.count(Endpoint::Blob), 1);
    assert_eq!(w.gh.total_requests(), 5);
    let after = content_versions(&w).await;
    let written: Vec<_> = after.iter().filter(|r| !before.contains(r)).collect();
    assert_eq!(written.len(), 1, "one document row: {written:?}");
    assert!(written[0].1.ends_with(":docs/s3/d009.md"));
}

#[tokio::test]
async fn the_plan_from_the_docs_scope_equals_the_plan_from_the_whole_recursive_tree() {
    let w = World::new().await;
    let big = "x".repeat(300);
    let files: Vec<(&str, &str)> = vec![
        ("Docs/a.md", "# A"),
        ("Docs/.hidden/b.md", "# B"),
        ("Docs/node_modules/c.md", "# C"),
        ("Docs/big.md", &big),
        ("Docs/sub/d.mdx", "# D"),
        ("Docs/sub/e.md", "# E"),
        ("Docs/sub/f.md", "# F"),
        ("Docs/CODEOWNERS", "* @docs"),
        ("doc/ignored.md", "# I"),
        ("readme.MD", "# R"),
        ("README", "# R2"),
        (".GitHub/codeowners", &big),
        ("CODEOWNERS", "* @root"),
        ("src/lib.rs", ""),
    ];
    w.repo("acme/tricky", &files);
    w.gh.push(
        "acme/tricky",
        &[Change::Symlink("Docs/link.md".into(), "a.md".into())],
    );
    let root = w.gh.head_tree("acme/tricky").unwrap();
    let whole = w
        .client
        .tree("acme", "tricky", &root)
        .await
        .unwrap()
        .entries;
    for docs_path in [None, Some("Docs/sub"), Some("docs")] {
        let rules = SelectionRules {
            docs_path,
            max_file_bytes: 100,
            max_docs: 3,
        };
        let stored = Listings::default();
        let root_listing = scope::read_root(&w.client, "acme", "tricky", &root, &stored)
            .await
            .unwrap();
        let read = scope::read(
            &w.client,
            "acme",
            "tricky",
            root_listing,
            &stored,
            docs_path,
        )
        .await
        .unwrap();
        let from_scope: Vec<TreeEntry> = read.entries();
        assert_eq!(
            selection::plan(&from_scope, &rules),
            selection::plan(&whole, &rules),
            "docsPath {docs_path:?}"
        );
    }
}
