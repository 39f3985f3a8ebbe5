//! Head check, fingerprint, selection, diff and fetch, parse, persist, idempotence.

use shared::sync::RepoOutcome;
use shared::sync::fingerprint::{SelectionSettings, fingerprint};
use syncplane_tests::fake_github::{Change, Endpoint, FakeGithub};

use super::{World, synced};

fn put(path: &str, content: &str) -> Change {
    Change::Put(path.to_owned(), content.as_bytes().to_vec())
}

const HANDBOOK: &[(&str, &str)] = &[
    (
        "docs/intro.md",
        "---\ntitle: Welcome\ntags: [a, b]\n---\n# Intro\n\nHello **world**.\n\n## Setup\n",
    ),
    ("docs/guide/usage.md", "# Usage\n\nRun it.\n"),
    (
        "docs/guide/api.mdx",
        "import X from './x'\n\n# API\n\n<X prop={1} />\n\nText.\n",
    ),
    ("README.md", "# Handbook\n\nThe readme.\n"),
    (
        ".github/CODEOWNERS",
        "# owners\n*.md @acme/docs\n/docs/ @alice bob@example.com\nbad-line notanowner\n",
    ),
    ("src/main.rs", "fn main() {}\n"),
];

#[tokio::test]
async fn an_initial_sync_stores_documents_readme_and_code_owners() {
    let w = World::new().await;
    w.repo("acme/handbook", HANDBOOK);
    let counts = synced(&w.sync("acme/handbook").await.unwrap());
    assert_eq!(counts.added, 3);
    assert_eq!(
        w.doc_paths("acme/handbook").await,
        ["docs/guide/api.mdx", "docs/guide/usage.md", "docs/intro.md"]
    );
    let (title, frontmatter, headings): (String, serde_json::Value, serde_json::Value) =
        sqlx::query_as(
            "SELECT title, frontmatter, headings FROM documents WHERE path = 'docs/intro.md'",
        )
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(title, "Welcome", "frontmatter title wins");
    assert_eq!(frontmatter["tags"], serde_json::json!(["a", "b"]));
    assert_eq!(headings[1]["anchor"], "setup");
    let found: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM documents WHERE search_vector @@ plainto_tsquery('english', 'hello world')",
    )
    .fetch_one(&w.db.pool)
    .await
    .unwrap();
    assert_eq!(found, 1, "the search vector finds the body text");
    let mdx_title: String =
        sqlx::query_scalar("SELECT title FROM documents WHERE path = 'docs/guide/api.mdx'")
            .fetch_one(&w.db.pool)
            .await
            .unwrap();
    assert_eq!(
        mdx_title, "API",
        "MDX that is not plain markdown still yields a document"
    );
    let readme: String = sqlx::query_scalar("SELECT title FROM readmes")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(readme, "Handbook");
    let rules: Vec<(i32, String, Vec<String>)> =
        sqlx::query_as("SELECT line, pattern, owners FROM code_owners ORDER BY line")
            .fetch_all(&w.db.pool)
            .await
            .unwrap();
    assert_eq!(
        rules,
        [
            (2, "*.md".to_owned(), vec!["@acme/docs".to_owned()]),
            (
                3,
                "/docs/".to_owned(),
                vec!["@alice".to_owned(), "bob@example.com".to_owned()]
            )
        ]
    );
    let row = w.repo_row("acme/handbook").await;
    assert_eq!(row.sync_status, "ok");
    assert!(
        row.tree_sha.is_some() && row.head_etag.is_some() && row.selection_fingerprint.is_some()
    );
    let warned = row.warnings.to_string();
    assert!(
        warned.contains(".github/CODEOWNERS:4"),
        "an invalid CODEOWNERS line is a warning: {warned}"
    );
}

#[tokio::test]
async fn an_unchanged_repository_costs_exactly_one_request_and_writes_nothing() {
    let w = World::new().await;
    w.repo("acme/handbook", HANDBOOK);
    synced(&w.sync("acme/handbook").await.unwrap());
    let before = w.row_versions().await;
    let info = w.info("acme/handbook").await;
    let budget = w.gh.rate_limit_remaining();

    let outcome = w.sync_known(&info).await.unwrap();
    assert_eq!(outcome, RepoOutcome::Unchanged);
    assert_eq!(
        w.gh.total_requests(),
        1,
        "one request: {:?}",
        w.gh.requests()
    );
    assert_eq!(w.gh.count(Endpoint::Branch), 1);
    assert_eq!(
        w.gh.rate_limit_remaining(),
        budget,
        "a 304 costs no rate limit"
    );
    assert_eq!(w.row_versions().await, before, "nothing written");
}

#[tokio::test]
async fn a_second_identical_plan_writes_no_content_rows() {
    let w = World::new().await;
    w.repo("acme/handbook", HANDBOOK);
    synced(&w.sync("acme/handbook").await.unwrap());
    // Forget the head-check markers so the engine re-plans the same tree in full.
    sqlx::query("UPDATE repos SET head_etag = NULL, tree_sha = NULL")
        .execute(&w.db.pool)
        .await
        .unwrap();
    let before: Vec<_> = w
        .row_versions()
        .await
        .into_iter()
        .filter(|r| r.0 != "repos")
        .collect();

    let counts = synced(&w.sync("acme/handbook").await.unwrap());
    assert_eq!((counts.added, counts.changed, counts.removed), (0, 0, 0));
    assert_eq!(
        w.gh.count(Endpoint::Blob),
        0,
        "stored blob SHAs match: nothing fetched"
    );
    let after: Vec<_> = w
        .row_versions()
        .await
        .into_iter()
        .filter(|r| r.0 != "repos")
        .collect();
    assert_eq!(after, before, "documents, README and code owners untouched");
    // And the very same sync a third time writes nothing at all.
    let all = w.row_versions().await;
    assert_eq!(
        w.sync("acme/handbook").await.unwrap(),
        RepoOutcome::Unchanged
    );
    assert_eq!(w.row_versions().await, all);
}

#[tokio::test]
async fn a_config_change_with_the_same_tree_replans() {
    let mut w = World::new().await;
    w.repo("acme/handbook", HANDBOOK);
    synced(&w.sync("acme/handbook").await.unwrap());
    assert_eq!(w.doc_paths("acme/handbook").await.len(), 3);

    w.config.max_docs_per_repo = 1;
    let counts = synced(&w.sync("acme/handbook").await.unwrap());
    assert_eq!(w.gh.count(Endpoint::Branch), 1);
    assert_eq!(
        w.gh.count(Endpoint::Tree),
        0,
        "the same tree is planned again from its stored listings (git trees are content-addressed)"
    );
    assert_eq!(w.gh.count(Endpoint::Blob), 0, "no blob changed");
    assert_eq!(counts.removed, 2);
    assert_eq!(w.doc_paths("acme/handbook").await, ["docs/guide/api.mdx"]);
    let row = w.repo_row("acme/handbook").await;
    let expected = fingerprint(&SelectionSettings {
        docs_path: None,
        max_file_bytes: 262_144,
        max_docs: 1,
    });
    assert_eq!(
        row.selection_fingerprint.as_deref(),
        Some(expected.as_str())
    );
}

#[tokio::test]
async fn only_changed_blobs_are_fetched() {
    let w = World::new().await;
    w.repo("acme/handbook", HANDBOOK);
    synced(&w.sync("acme/handbook").await.unwrap());
    w.gh.push(
        "acme/handbook",
        &[
            put("docs/guide/usage.md", "# Usage\n\nRun it twice.\n"),
            put("src/lib.rs", ""),
        ],
    );

    let counts = synced(&w.sync("acme/handbook").await.unwrap());
    assert_eq!(w.gh.count(Endpoint::Blob), 1, "{:?}", w.gh.requests());
    assert_eq!(
        w.gh.count(Endpoint::Tree),
        2,
        "the root level, then the changed docs folder once; src/ and .github/ are not read"
    );
    assert_eq!((counts.added, counts.changed, counts.removed), (0, 1, 0));
}

#[tokio::test]
async fn a_rename_is_a_removal_plus_an_addition() {
    let w = World::new().await;
    w.repo("acme/handbook", HANDBOOK);
    synced(&w.sync("acme/handbook").await.unwrap());
    w.gh.push(
        "acme/handbook",
        &[
            Change::Delete("docs/guide/usage.md".to_owned()),
            put("docs/guide/running.md", "# Usage\n\nRun it.\n"),
        ],
    );
    let counts = synced(&w.sync("acme/handbook").await.unwrap());
    assert_eq!((counts.added, counts.removed), (1, 1));
    assert_eq!(
        w.doc_paths("acme/handbook").await,
        [
            "docs/guide/api.mdx",
            "docs/guide/running.md",
            "docs/intro.md"
        ]
    );
}

#[tokio::test]
async fn the_docs_folder_is_matched_case_insensitively() {
    let w = World::new().await;
    w.repo(
        "acme/a",
        &[("Documentation/x.md", "# X"), ("DOC/y.md", "# Y")],
    );
    synced(&w.sync("acme/a").await.unwrap());
    assert_eq!(
        w.doc_paths("acme/a").await,
        ["DOC/y.md"],
        "doc comes before documentation"
    );
}

#[tokio::test]
async fn a_docs_path_override_is_authoritative_without_fallback() {
    let mut w = World::new().await;
    w.repo("acme/a", &[("docs/x.md", "# X"), ("handbook/y.md", "# Y")]);
    w.config = shared::config::parse_sync_config(
        "SYNC_CONFIG",
        r#"{"repos":[{"name":"acme/a","docsPath":"handbook"}]}"#,
    )
    .unwrap();
    synced(&w.sync("acme/a").await.unwrap());
    assert_eq!(w.doc_paths("acme/a").await, ["handbook/y.md"]);

    w.config = shared::config::parse_sync_config(
        "SYNC_CONFIG",
        r#"{"repos":[{"name":"acme/a","docsPath":"missing"}]}"#,
    )
    .unwrap();
    synced(&w.sync("acme/a").await.unwrap());
    assert!(
        w.doc_paths("acme/a").await.is_empty(),
        "no fallback to docs/"
    );
    assert!(
        w.repo_row("acme/a")
            .await
            .warnings
            .to_string()
            .contains("docs_folder_missing")
    );
}

#[tokio::test]
async fn the_document_cap_keeps_the_first_files_in_path_order() {
    let mut w = World::new().await;
    w.repo(
        "acme/a",
        &[("docs/c.md", "c"), ("docs/a.md", "a"), ("docs/b/z.md", "z")],
    );
    w.config.max_docs_per_repo = 2;
    synced(&w.sync("acme/a").await.unwrap());
    assert_eq!(w.doc_paths("acme/a").await, ["docs/a.md", "docs/b/z.md"]);
    let warnings = w.repo_row("acme/a").await.warnings;
    assert_eq!(
        warnings,
        serde_json::json!([{"path": "docs/c.md", "reason": "document_cap"}])
    );
}

#[tokio::test]
async fn every_skipped_file_is_a_warning_with_its_path_and_reason() {
    let mut w = World::new().await;
    let big = "x".repeat(101);
    w.repo(
        "acme/a",
        &[
            ("docs/ok.md", "ok"),
            ("docs/big.md", big.as_str()),
            ("docs/.hidden.md", "h"),
            ("docs/.vitepress/theme.md", "t"),
            ("docs/node_modules/pkg/readme.md", "n"),
        ],
    );
    w.gh.push(
        "acme/a",
        &[Change::Symlink(
            "docs/link.md".to_owned(),
            "ok.md".to_owned(),
        )],
    );
    w.config.max_file_bytes = 100;
    synced(&w.sync("acme/a").await.unwrap());
    assert_eq!(w.doc_paths("acme/a").await, ["docs/ok.md"]);
    let mut warnings: Vec<(String, String)> = w
        .repo_row("acme/a")
        .await
        .warnings
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["path"].as_str().unwrap().to_owned(),
                v["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    warnings.sort();
    let expected: Vec<(String, String)> = [
        ("docs/.hidden.md", "dot_prefixed"),
        ("docs/.vitepress/theme.md", "dot_prefixed"),
        ("docs/big.md", "too_large"),
        ("docs/link.md", "symlink"),
        ("docs/node_modules/pkg/readme.md", "node_modules"),
    ]
    .iter()
    .map(|(p, r)| ((*p).to_owned(), (*r).to_owned()))
    .collect();
    assert_eq!(warnings, expected);
}

#[tokio::test]
async fn an_empty_repository_is_synced_as_having_no_documents() {
    let w = World::new().await;
    w.repo("acme/empty", &[]);
    let counts = synced(&w.sync("acme/empty").await.unwrap());
    assert_eq!(counts.added, 0);
    let row = w.repo_row("acme/empty").await;
    assert_eq!(row.sync_status, "ok");
    assert!(w.doc_paths("acme/empty").await.is_empty());
}

#[tokio::test]
async fn a_file_postgres_would_refuse_is_a_warning_for_that_document_only() {
    let w = World::new().await;
    w.repo(
        "acme/a",
        &[
            ("docs/good.md", "# Good"),
            ("docs/nul.md", "bad\0bytes"),
            ("docs/latin1.md", "caf\u{e9}"),
        ],
    );
    w.gh.push(
        "acme/a",
        &[Change::Put(
            "docs/latin1.md".to_owned(),
            b"caf\xe9".to_vec(),
        )],
    );
    synced(&w.sync("acme/a").await.unwrap());
    assert_eq!(w.doc_paths("acme/a").await, ["docs/good.md"]);
    let row = w.repo_row("acme/a").await;
    assert_eq!(row.sync_status, "ok");
    let warnings = row.warnings.to_string();
    assert!(
        warnings.contains("docs/nul.md") && warnings.contains("docs/latin1.md"),
        "{warnings}"
    );
}

#[tokio::test]
async fn one_document_postgres_refuses_leaves_the_others_written() {
    use shared::sync::persist::{
        self, CodeOwnersWrite, DocumentWrite, Markers, ReadmeWrite, Status, Write,
    };
    // The parser already keeps NUL characters out, so only a document built past it can reach
    // Postgres with one: this drives the persist step's savepoint per document directly.
    let w = World::new().await;
    w.repo("acme/a", &[("docs/a.md", "# A")]);
    let info = w.info("acme/a").await;
    let doc = |path: &str, title: &str| {
        let mut parsed = shared::sync::parse::parse_document(path, b"# Body").unwrap();
        parsed.title = title.to_owned();
        DocumentWrite {
            path: path.to_owned(),
            blob_sha: FakeGithub::blob_sha(path.as_bytes()),
            size: 6,
            parsed,
        }
    };
    let documents = vec![
        doc("docs/a.md", "A"),
        doc("docs/b.md", "bad\0title"),
        doc("docs/c.md", "C"),
    ];
    let keep = documents.iter().map(|d| d.path.clone()).collect();
    let (counts, refused) = persist::write(
        &w.db.pool,
        Write {
            repo: &info,
            docs_folder: Some("docs".into()),
            documents,
            keep_paths: Some(keep),
            readme: ReadmeWrite::Absent,
            codeowners: CodeOwnersWrite::Absent,
            markers: Markers::default(),
            status: Status {
                error: None,
                warnings: Vec::new(),
            },
            trees: None,
        },
    )
    .await
    .unwrap();
    assert_eq!((counts.added, counts.refused), (2, 1));
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].path, "docs/b.md");
    assert_eq!(w.doc_paths("acme/a").await, ["docs/a.md", "docs/c.md"]);
    assert!(
        w.repo_row("acme/a")
            .await
            .warnings
            .to_string()
            .contains("docs/b.md")
    );

    // The same inside the batch call: a row that breaks a table constraint is refused in its
    // own subtransaction while its neighbours are written.
    let documents = vec![
        doc("docs/a.md", "A2"),
        doc("/docs/abs.md", "X"),
        doc("docs/d.md", "D"),
    ];
    let keep = documents.iter().map(|d| d.path.clone()).collect();
    let (counts, refused) = persist::write(
        &w.db.pool,
        Write {
            repo: &info,
            docs_folder: Some("docs".into()),
            documents,
            keep_paths: Some(keep),
            readme: ReadmeWrite::Absent,
            codeowners: CodeOwnersWrite::Absent,
            markers: Markers::default(),
            status: Status {
                error: None,
                warnings: Vec::new(),
            },
            trees: None,
        },
    )
    .await
    .unwrap();
    assert_eq!((counts.added, counts.changed, counts.refused), (1, 1, 1));
    assert_eq!(refused[0].path, "/docs/abs.md");
    assert_eq!(w.doc_paths("acme/a").await, ["docs/a.md", "docs/d.md"]);
}

#[tokio::test]
async fn the_fake_blob_sha_is_what_the_engine_stores() {
    let w = World::new().await;
    w.repo("acme/a", &[("docs/a.md", "# A\n")]);
    synced(&w.sync("acme/a").await.unwrap());
    let sha: String = sqlx::query_scalar("SELECT blob_sha FROM documents")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(sha, FakeGithub::blob_sha(b"# A\n"));
}

#[tokio::test]
async fn blobs_are_fetched_eight_at_a_time() {
    let w = World::new().await;
    let files: Vec<(String, String)> = (0..40)
        .map(|i| (format!("docs/d{i:02}.md"), format!("# D{i}")))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    w.repo("acme/a", &refs);
    w.gh.set_latency(std::time::Duration::from_millis(30));
    synced(&w.sync("acme/a").await.unwrap());
    assert_eq!(w.gh.count(Endpoint::Blob), 40);
    assert_eq!(
        w.gh.max_in_flight(Endpoint::Blob),
        shared::sync::fetch::BLOBS_IN_FLIGHT
    );
    assert_eq!(shared::sync::fetch::BLOBS_IN_FLIGHT, 8);
}

#[tokio::test]
async fn files_past_the_fetch_budget_wait_for_the_next_pass() {
    use shared::sync::selection::PlannedFile;
    let w = World::new().await;
    w.repo(
        "acme/a",
        &[
            ("docs/a.md", "aaaa"),
            ("docs/b.md", "bbbb"),
            ("docs/c.md", "cccc"),
        ],
    );
    let planned: Vec<PlannedFile> = ["docs/a.md", "docs/b.md", "docs/c.md"]
        .iter()
        .map(|p| PlannedFile {
            path: (*p).to_owned(),
            blob_sha: FakeGithub::blob_sha(p[5..6].repeat(4).as_bytes()),
            size: 4,
        })
        .collect();
    let refs: Vec<&PlannedFile> = planned.iter().collect();
    let fetched = shared::sync::fetch::fetch_blobs_within(&w.client, "acme", "a", &refs, 8).await;
    assert_eq!(
        fetched.blobs.len(),
        2,
        "two 4-byte files fit an 8-byte budget"
    );
    assert_eq!(fetched.deferred, ["docs/c.md"]);
    assert!(fetched.failed.is_empty() && fetched.run_stop.is_none());
    let one = shared::sync::fetch::fetch_blobs_within(&w.client, "acme", "a", &refs, 1).await;
    assert_eq!(
        one.blobs.len(),
        1,
        "a pass always makes progress, even past the budget"
    );
    assert_eq!(shared::sync::fetch::FETCH_BUDGET_BYTES, 64 * 1024 * 1024);
}
