//! Search, repositories and documents in the browser (issue 22 points 1 to 3): hits with their
//! marked snippet, paging by cursor, opening a hit, the failed repository first with its code,
//! and a hostile document rendered inertly (no script ran, nothing fetched from another origin).

use super::{FAILED_CODE, FAILED_MESSAGE, PAGED, PAGED_WORD, Site, TOKEN, count, go};

#[tokio::test]
async fn a_search_shows_hits_with_marked_snippets_and_owners_and_a_hit_opens_its_document() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, false).await;
    b.type_into("#sp-q", "deploy").await;
    b.wait_js("document.querySelector('#sp-results .hit')")
        .await;
    let first = b.text("#sp-results .hit").await;
    assert!(first.contains("Deploying the handbook"), "{first}");
    assert!(
        first.contains("acme/handbook") && first.contains("docs/guide.md"),
        "{first}"
    );
    assert!(first.contains("@acme/docs-team"), "code owners: {first}");
    assert!(
        count(&b, "#sp-results .hit .snippet mark").await >= 1,
        "matches in <mark>"
    );
    // The query is in the hash (not the token), so a reload or a link keeps it.
    let url = b.client.current_url().await.unwrap();
    assert!(url.fragment().unwrap_or("").contains("q=deploy"), "{url}");
    b.click("#sp-results .hit .hit-title a").await;
    b.wait_js("document.querySelector('main .doc-body')").await;
    assert_eq!(b.text("main h1").await, "Deploying the handbook");
    assert!(b.text("main .doc-body").await.contains("Before you deploy"));
    assert!(count(&b, "main .doc-body h2").await >= 2);
    assert!(
        count(&b, "main .doc-body table").await == 1,
        "GitHub tables render"
    );
    let link = b
        .js("return document.querySelector('main .meta a[rel~=noreferrer]').getAttribute('href');")
        .await;
    assert!(link.as_str().unwrap().ends_with("/docs/guide.md"), "{link}");
    assert!(b.text("main .frontmatter").await.contains("Frontmatter"));
    b.close().await;
}

#[tokio::test]
async fn search_results_page_by_cursor_and_filter_by_repository_and_path() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, false).await;
    b.type_into("#sp-q", PAGED_WORD).await;
    b.wait_js("document.querySelectorAll('#sp-results .hit').length === 20")
        .await;
    b.click("#sp-results .more button").await;
    b.wait_js(&format!(
        "document.querySelectorAll('#sp-results .hit').length === {PAGED}"
    ))
    .await;
    assert_eq!(
        count(&b, "#sp-results .more button").await,
        0,
        "the last page"
    );
    // A path prefix narrows the hits; another repository has none.
    b.type_into("#sp-path", "docs/birds/b0").await;
    b.wait_js("document.querySelectorAll('#sp-results .hit').length === 10")
        .await;
    b.type_into("#sp-repo", "acme/broken").await;
    b.wait_js("document.querySelector('#sp-results .empty')")
        .await;
    assert!(
        b.text("#sp-results .empty")
            .await
            .contains("clear the filters")
    );
    b.close().await;
}

#[tokio::test]
async fn a_failed_repository_is_listed_first_with_its_stable_code_and_message() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, false).await;
    go(&b, "#/repos").await;
    let first = b.text("main tbody tr").await;
    assert!(first.contains("acme/broken"), "{first}");
    assert!(first.contains("error"), "{first}");
    assert_eq!(b.text("main tbody tr code.code").await, FAILED_CODE);
    assert!(first.contains(FAILED_MESSAGE), "{first}");
    assert!(
        b.text("main tbody tr:nth-child(2)")
            .await
            .contains("acme/handbook")
    );
    // Its page says the same; the healthy one lists its documents, paged.
    go(&b, "#/repos/acme/broken").await;
    assert_eq!(b.text("main dl code.code").await, FAILED_CODE);
    go(&b, "#/repos/acme/handbook").await;
    assert_eq!(count(&b, "main ul.docs > li").await, 27);
    assert!(b.text("main").await.contains("Head commit"));
    assert!(
        count(&b, "main ul.docs details.outline").await >= 1,
        "outline by headings"
    );
    b.close().await;
}

#[tokio::test]
async fn a_document_with_raw_html_script_javascript_links_onerror_and_mdx_renders_inertly() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, false).await;
    b.watch_csp().await;
    for path in ["docs/hostile.md", "docs/page.mdx"] {
        go(&b, &format!("#/doc/acme/handbook/{path}")).await;
        b.wait_js("document.querySelector('main .doc-body')").await;
        // Give anything that would run a moment to run: handlers, loads, timers.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        for css in [
            "main .doc-body script",
            "main .doc-body iframe",
            "main .doc-body img",
            "main .doc-body form",
            "main .doc-body link",
            "main .doc-body [onerror], main .doc-body [onload], main .doc-body [onmouseover]",
            "main .doc-body [style]",
            "main .doc-body a[href^='javascript:' i]",
        ] {
            assert_eq!(count(&b, css).await, 0, "{path}: {css}");
        }
        assert_eq!(
            b.js("return typeof window.ran;").await,
            "undefined",
            "{path}: a script ran"
        );
        assert_eq!(
            b.other_origin_requests().await,
            Vec::<String>::new(),
            "{path}"
        );
        assert_eq!(b.csp_violations().await, Vec::<String>::new(), "{path}");
    }
    // The in-page link scrolls to its heading and keeps the route.
    go(&b, "#/doc/acme/handbook/docs/hostile.md").await;
    b.click("main .doc-body a[href='#next-step']").await;
    let hash = b.js("return location.hash;").await;
    assert_eq!(hash, "#/doc/acme/handbook/docs/hostile.md");
    b.close().await;
}

/// Issue 31 point 6: a document's frontmatter, once its disclosure is opened, lists its keys and
/// values (not `[object HTMLElement]`).
#[tokio::test]
async fn a_documents_frontmatter_lists_its_keys_and_values_once_opened() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, false).await;
    go(&b, "#/doc/acme/handbook/docs/guide.md").await;
    b.click("main details.frontmatter summary").await;
    let keys = b
        .js("return [...document.querySelectorAll('main details.frontmatter dt')].map(e => e.textContent);")
        .await;
    let values = b
        .js("return [...document.querySelectorAll('main details.frontmatter dd')].map(e => e.textContent);")
        .await;
    assert_eq!(
        keys,
        serde_json::json!(["owner", "tags", "title"]),
        "{keys}"
    );
    assert_eq!(
        values,
        serde_json::json!([
            "docs-team",
            "[\"ops\",\"deploy\"]",
            "Deploying the handbook"
        ]),
        "{values}"
    );
    assert!(!b.text("main details.frontmatter").await.contains("[object"));
    b.close().await;
}

/// Issue 31 point 6: a document without frontmatter (most documents) shows no `null`, and a title
/// that is the document's first heading is printed once.
#[tokio::test]
async fn a_document_without_frontmatter_shows_no_null_and_its_title_once() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, false).await;
    for (path, title) in [
        ("docs/birds/b00.md", "Bird 00"),
        ("docs/guide.md", "Deploying the handbook"),
    ] {
        go(&b, &format!("#/doc/acme/handbook/{path}")).await;
        let text = b.text("main").await;
        assert!(
            !text.split_whitespace().any(|w| w == "null"),
            "{path}: {text}"
        );
        let shown = b
            .js(&format!(
                "return [...document.querySelectorAll('main h1, main h2, main h3')].filter(e => e.textContent.trim() === {}).length;",
                serde_json::to_string(title).unwrap()
            ))
            .await;
        assert_eq!(shown, 1, "{path}: the title once");
        if path.contains("birds") {
            assert_eq!(
                count(&b, "main details.frontmatter").await,
                0,
                "no frontmatter to show"
            );
        }
    }
    b.close().await;
}

/// Issue 31 point 6: images of the repository show as images, loaded from the console's own
/// origin under its strict CSP (nothing from another origin, the SVG's script never runs); a
/// missing, oversized or non-image file shows its alt text; an image elsewhere stays a link.
#[tokio::test]
async fn a_documents_images_show_from_the_consoles_origin_and_the_rest_as_alt_text() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, false).await;
    b.watch_csp().await;
    go(&b, "#/doc/acme/pictures/docs/gallery.md").await;
    let shown = b
        .js("return [...document.querySelectorAll('main .doc-body img')].map(i => [i.alt, i.src.slice(0, 11), i.complete && i.naturalWidth > 0]);")
        .await;
    assert_eq!(
        shown,
        serde_json::json!([
            ["A diagram", "data:image/", true],
            ["The logo", "data:image/", true],
            ["raw diagram", "data:image/", true]
        ]),
        "{shown}"
    );
    let alt = b
        .js("return [...document.querySelectorAll('main .doc-body .img-alt')].map(e => e.textContent);")
        .await;
    assert_eq!(
        alt,
        serde_json::json!(["Nothing here", "Too big", "Not an image"])
    );
    assert_eq!(
        count(&b, "main .doc-body a[href='https://evil.example/x.png']").await,
        1,
        "an image elsewhere is a link"
    );
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(b.js("return typeof window.ran;").await, "undefined");
    assert_eq!(b.other_origin_requests().await, Vec::<String>::new());
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
    // The README's image, from the repository's root.
    go(&b, "#/readme/acme/pictures").await;
    assert_eq!(
        b.js("return [...document.querySelectorAll('main .doc-body img')].map(i => i.naturalWidth > 0);")
            .await,
        serde_json::json!([true])
    );
    b.close().await;
}
