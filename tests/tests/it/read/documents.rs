//! Repositories, documents and READMEs on the read API (issue 11 "Documents"), and renamed
//! repositories answering under their new name only.

use serde_json::json;

use super::{read, synced};
use crate::functions::support::state;

const GUIDE: &str = "---\ntitle: The Guide\ntags: [a, b]\n---\n\n# Ignored H1\n\nFirst words.\n\n## Step one\n\nDo it.\n\n## Step one\n\nAgain.\n";

fn handbook() -> Vec<(&'static str, &'static str)> {
    vec![
        ("README.md", "# Handbook\n\nWelcome.\n"),
        ("CODEOWNERS", "* @acme/docs\n/docs/private/ \n"),
        ("docs/guide.md", GUIDE),
        ("docs/intro.md", "# Intro\n"),
        ("docs/private/notes.md", "# Notes\n"),
    ]
}

#[tokio::test]
async fn a_repository_answers_with_its_sync_state_and_warnings() {
    let files = handbook();
    let (w, st) = synced(&[("acme/handbook", &files[..])]).await;
    let r = read(&st, "/api/repos/acme/handbook").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let d = r.data();
    assert_eq!(d["fullName"], "acme/handbook");
    assert_eq!(d["syncStatus"], "ok");
    assert_eq!(d["documentCount"], 3);
    assert_eq!(d["hasReadme"], true);
    assert_eq!(d["codeownersPath"], "CODEOWNERS");
    assert!(d["warnings"].is_array());
    assert_eq!(
        d["headCommitSha"].as_str(),
        w.gh.branch_head("acme/handbook", "main").as_deref()
    );
}

#[tokio::test]
async fn documents_list_in_path_order_with_title_outline_and_sha_in_keyset_pages() {
    let files = handbook();
    let (_w, st) = synced(&[("acme/handbook", &files[..])]).await;
    let mut paths = Vec::new();
    let mut url = "/api/repos/acme/handbook/documents?limit=2".to_owned();
    loop {
        let r = read(&st, &url).await;
        assert_eq!(r.status, 200, "{}", r.body);
        for d in r.data()["documents"].as_array().unwrap() {
            assert!(d["blobSha"].as_str().unwrap().len() == 40);
            paths.push(d["path"].as_str().unwrap().to_owned());
        }
        match r.data()["nextCursor"].as_str() {
            Some(c) => url = format!("/api/repos/acme/handbook/documents?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(
        paths,
        ["docs/guide.md", "docs/intro.md", "docs/private/notes.md"]
    );
    let r = read(&st, "/api/repos/acme/handbook/documents").await;
    let guide = &r.data()["documents"][0];
    assert_eq!(guide["title"], "The Guide");
    assert_eq!(guide["headings"][1]["anchor"], "step-one");
    assert_eq!(guide["headings"][2]["anchor"], "step-one-1");
}

#[tokio::test]
async fn a_document_has_frontmatter_headings_body_sha_owners_and_a_link_at_the_synced_commit() {
    let files = handbook();
    let (w, st) = synced(&[("acme/handbook", &files[..])]).await;
    let r = read(&st, "/api/repos/acme/handbook/documents/docs/guide.md").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let d = r.data();
    assert_eq!(d["kind"], "document");
    assert_eq!(d["title"], "The Guide");
    assert_eq!(
        d["frontmatter"],
        json!({"title": "The Guide", "tags": ["a", "b"]})
    );
    assert_eq!(
        d["headings"][0],
        json!({"level": 1, "text": "Ignored H1", "anchor": "ignored-h1"})
    );
    assert!(d["body"].as_str().unwrap().contains("First words."));
    assert_eq!(
        d["blobSha"],
        syncplane_tests::fake_github::FakeGithub::blob_sha(GUIDE.as_bytes())
    );
    assert_eq!(d["codeOwners"], json!(["@acme/docs"]));
    let head = w.gh.branch_head("acme/handbook", "main").unwrap();
    assert!(
        d["githubUrl"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/acme/handbook/blob/{head}/docs/guide.md")),
        "{}",
        d["githubUrl"]
    );
    // The un-owning rule: /docs/private/ has no owners.
    let r = read(
        &st,
        "/api/repos/acme/handbook/documents/docs/private/notes.md",
    )
    .await;
    assert_eq!(r.data()["codeOwners"], json!([]));
}

#[tokio::test]
async fn the_readme_answers_like_a_document() {
    let files = handbook();
    let (w, st) = synced(&[
        ("acme/handbook", &files[..]),
        ("acme/bare", &[("docs/a.md", "# A\n")]),
    ])
    .await;
    let r = read(&st, "/api/repos/acme/handbook/readme").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.data()["kind"], "readme");
    assert_eq!(r.data()["path"], "README.md");
    assert_eq!(r.data()["title"], "Handbook");
    let r = read(&st, "/api/repos/acme/bare/readme").await;
    assert_eq!((r.status, r.code()), (404, Some("readme_not_found")));
    drop(w);
}

#[tokio::test]
async fn missing_documents_and_folders_are_404_with_their_codes() {
    let files = handbook();
    let (_w, st) = synced(&[("acme/handbook", &files[..])]).await;
    let r = read(&st, "/api/repos/acme/handbook/documents/docs/nope.md").await;
    assert_eq!((r.status, r.code()), (404, Some("document_not_found")));
    for folder in ["docs", "docs/private"] {
        let r = read(&st, &format!("/api/repos/acme/handbook/documents/{folder}")).await;
        assert_eq!(
            (r.status, r.code()),
            (404, Some("path_is_folder")),
            "{folder}"
        );
    }
    let r = read(&st, "/api/repos/acme/nope").await;
    assert_eq!((r.status, r.code()), (404, Some("unknown_repository")));
}

#[tokio::test]
async fn a_renamed_repository_is_found_under_its_new_name_and_the_old_name_is_404() {
    let w = crate::engine::World::new().await;
    w.repo("acme/handbook", &[("docs/a.md", "# A\n\nplatypus\n")]);
    w.sync("acme/handbook").await.unwrap();
    w.gh.rename_repo("acme/handbook", "acme/manual");
    w.sync("acme/manual").await.unwrap();
    let st = state(&w);
    let r = read(&st, "/api/repos/acme/manual/documents/docs/a.md").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.data()["repository"], "acme/manual");
    for old in [
        "/api/repos/acme/handbook",
        "/api/repos/acme/handbook/documents/docs/a.md",
        "/api/search?q=platypus&repo=acme/handbook",
    ] {
        let r = read(&st, old).await;
        assert_eq!(
            (r.status, r.code()),
            (404, Some("unknown_repository")),
            "{old}"
        );
    }
    let r = read(&st, "/api/search?q=platypus").await;
    assert_eq!(r.data()["hits"][0]["repository"], "acme/manual");
}

#[tokio::test]
async fn the_repository_listing_pages_by_name_without_gaps_or_repeats() {
    let w = crate::engine::World::new().await;
    let names = [
        "acme/delta",
        "acme/Alpha",
        "acme/charlie",
        "acme/bravo",
        "acme/echo",
    ];
    for n in names {
        w.repo(n, &[("docs/a.md", "# A\n")]);
        w.sync(n).await.unwrap();
    }
    let st = state(&w);
    let mut seen = Vec::new();
    let mut url = "/api/repos?limit=2".to_owned();
    loop {
        let r = read(&st, &url).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let page = r.data()["repositories"].as_array().unwrap();
        assert!(page.len() <= 2);
        seen.extend(
            page.iter()
                .map(|p| p["fullName"].as_str().unwrap().to_owned()),
        );
        match r.data()["nextCursor"].as_str() {
            Some(c) => url = format!("/api/repos?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(
        seen,
        [
            "acme/Alpha",
            "acme/bravo",
            "acme/charlie",
            "acme/delta",
            "acme/echo"
        ]
    );
}
