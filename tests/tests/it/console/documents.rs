//! A document as the console reads it (issue 22 "A document"): `?format=markdown` is the file as
//! synced, `?format=html` is it rendered with GitHub's extensions and sanitized, so raw HTML,
//! `<script>`, `javascript:` links and MDX in a document never run script in the console.

use syncplane_tests::fake_github::Change;

use crate::read::{read, synced};

const HOSTILE: &str = "---\ntitle: Hostile\n---\n# Hostile\n\n<script>window.ran = 1</script>\n\n<img src=\"https://evil.example/x.png\" onerror=\"window.ran = 1\">\n\n[click](javascript:window.ran=1) <a href=\"javascript:void(window.ran=1)\">raw</a>\n\n<iframe src=\"https://evil.example/\"></iframe>\n\n<div style=\"background:url(https://evil.example/y)\" onmouseover=\"window.ran=1\">hover</div>\n\n## Next step\n\nSee [the intro](intro.md), [the root](/README.md) and [below](#next-step).\n\n![diagram](img/d.png)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";

const MDX: &str = "import Tabs from '@site/tabs'\n\n# Mdx page\n\n<Tabs onClick={() => window.ran = 1}>inside</Tabs>\n\nexport const x = () => { window.ran = 1 }\n\n<script>{`window.ran = 1`}</script>\n";

fn files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("README.md", "# Handbook\n\nSee [docs](docs/hostile.md).\n"),
        ("docs/hostile.md", HOSTILE),
        ("docs/intro.md", "# Intro\n"),
        ("docs/page.mdx", MDX),
    ]
}

#[tokio::test]
async fn format_markdown_is_the_file_as_synced() {
    let files = files();
    let (_w, st) = synced(&[("acme/handbook", &files[..])]).await;
    let r = read(
        &st,
        "/api/repos/acme/handbook/documents/docs/hostile.md?format=markdown",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.data()["markdown"], HOSTILE);
    assert!(r.data().get("html").is_none());
    let r = read(&st, "/api/repos/acme/handbook/readme?format=markdown").await;
    assert_eq!(
        r.data()["markdown"],
        "# Handbook\n\nSee [docs](docs/hostile.md).\n"
    );
}

#[tokio::test]
async fn format_html_is_sanitized_script_handlers_frames_and_javascript_links_never_survive() {
    let files = files();
    let (_w, st) = synced(&[("acme/handbook", &files[..])]).await;
    for path in ["docs/hostile.md", "docs/page.mdx"] {
        let r = read(
            &st,
            &format!("/api/repos/acme/handbook/documents/{path}?format=html"),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let html = r.data()["html"].as_str().unwrap();
        for banned in [
            "<script",
            "window.ran",
            "onerror",
            "onclick",
            "onmouseover",
            "javascript:",
            "<iframe",
            " src=",
            "style=",
            "evil.example",
        ] {
            assert!(!html.contains(banned), "{path}: {banned} in {html}");
        }
        // The only images are the repository's, which the console fetches itself (issue 31).
        assert_eq!(
            html.matches("<img").count(),
            html.matches("<img data-src=\"img/").count(),
            "{path}: {html}"
        );
    }
}

#[tokio::test]
async fn format_html_resolves_links_to_the_synced_commit_and_anchors_headings_like_the_outline() {
    let files = files();
    let (_w, st) = synced(&[("acme/handbook", &files[..])]).await;
    let r = read(
        &st,
        "/api/repos/acme/handbook/documents/docs/hostile.md?format=html",
    )
    .await;
    let d = r.data();
    let html = d["html"].as_str().unwrap();
    // githubUrl is {html_url}/blob/{sha}/docs/hostile.md: links resolve beside it.
    let base = d["githubUrl"]
        .as_str()
        .unwrap()
        .trim_end_matches("docs/hostile.md");
    assert!(
        html.contains(&format!("href=\"{base}docs/intro.md\"")),
        "{html}"
    );
    assert!(
        html.contains(&format!("href=\"{base}README.md\"")),
        "{html}"
    );
    assert!(
        html.contains(r#"<img data-src="img/d.png" alt="diagram">"#),
        "an image of the repository waits for the console: {html}"
    );
    assert!(html.contains("href=\"#next-step\""), "{html}");
    for h in d["headings"].as_array().unwrap() {
        let id = format!("id=\"user-content-{}\"", h["anchor"].as_str().unwrap());
        assert!(html.contains(&id), "{id} in {html}");
    }
    assert!(html.contains("<table>"), "GitHub's tables: {html}");
    assert!(
        !html.contains("title: Hostile"),
        "frontmatter is not rendered"
    );
}

#[tokio::test]
async fn a_format_the_route_does_not_know_is_invalid_format() {
    let files = files();
    let (_w, st) = synced(&[("acme/handbook", &files[..])]).await;
    for url in [
        "/api/repos/acme/handbook/documents/docs/intro.md?format=pdf",
        "/api/repos/acme/handbook/readme?format=",
    ] {
        let r = read(&st, url).await;
        assert_eq!((r.status, r.code()), (400, Some("invalid_format")), "{url}");
    }
}

#[tokio::test]
async fn a_row_synced_before_sources_were_stored_answers_null_until_the_file_changes() {
    let files = files();
    let (w, st) = synced(&[("acme/handbook", &files[..])]).await;
    sqlx::query("UPDATE documents SET source = NULL")
        .execute(&w.db.pool)
        .await
        .unwrap();
    let r = read(
        &st,
        "/api/repos/acme/handbook/documents/docs/intro.md?format=html",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.data()["html"].is_null());
    assert_eq!(r.data()["title"], "Intro");
    let change = Change::Put("docs/intro.md".into(), b"# Intro\n\nNew words.\n".to_vec());
    w.gh.push("acme/handbook", &[change]);
    w.sync("acme/handbook").await.unwrap();
    let r = read(
        &st,
        "/api/repos/acme/handbook/documents/docs/intro.md?format=html",
    )
    .await;
    assert!(
        r.data()["html"].as_str().unwrap().contains("New words."),
        "{}",
        r.body
    );
}
