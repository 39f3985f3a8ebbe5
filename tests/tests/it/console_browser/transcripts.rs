//! Searching transcripts in the browser (issue 34 point 3), with the organization's read token:
//! a search box on the Sessions page and a way from the document search, the query and filters
//! in the URL, hits with the matched words marked, hostile transcript text (markup, `javascript:`
//! links, bidi controls) inert, and a hit's link opening the session at its line.

use super::{HOSTILE_TURN, SESSION, Site, TOKEN, count, go};

#[tokio::test]
async fn a_transcript_search_marks_matches_keeps_hostile_text_inert_and_opens_the_line() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, true).await;
    b.watch_csp().await;
    // From the document search, the query carried over.
    b.type_into("#sp-q", "hostile").await;
    b.click("#sp-to-transcripts").await;
    b.wait_js("location.hash === '#/transcripts?q=hostile'")
        .await;
    b.wait_js("document.querySelectorAll('main .hits li').length === 1")
        .await;
    let hit = b.text("main .hits li").await;
    assert!(
        hit.contains(SESSION) || hit.contains("Fix the deploy script"),
        "{hit}"
    );
    assert!(hit.contains(&format!("line {}", HOSTILE_TURN + 1)), "{hit}");
    // The snippet's only markup is <mark>: the prompt's script, links and bidi control are text.
    assert!(count(&b, "main .hits mark").await >= 1);
    assert_eq!(
        count(
            &b,
            "main .hits script, main .hits b, main .hits img, main .hits a[href^='javascript']"
        )
        .await,
        0
    );
    assert!(
        b.text("main .hits .snippet").await.contains("<script>"),
        "shown as text"
    );
    assert!(
        b.text("main .hits .snippet").await.contains("<U+202E>"),
        "bidi control shown, not obeyed"
    );
    // The link opens the session with that line marked and in view.
    b.click("main .hits li h2 a").await;
    b.wait_js("document.querySelector('main').dataset.ready === 'sessions'")
        .await;
    b.wait_js("document.querySelector('main .turn.target') !== null")
        .await;
    let target = b.text("main .turn.target").await;
    assert!(target.contains("window.ran=1"), "{target}");
    assert_eq!(
        count(&b, "main .turn.target .redacted").await,
        1,
        "a placeholder shown as such"
    );
    assert_eq!(b.js("return typeof window.ran;").await, "undefined");
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
    b.close().await;
}

#[tokio::test]
async fn filters_are_controls_whose_values_live_in_the_url() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, true).await;
    go(&b, "#/transcripts?q=deploy&role=user").await;
    b.wait_js("document.querySelectorAll('main .hits li').length > 0")
        .await;
    assert_eq!(
        b.js("return document.getElementById('ts-role').value;")
            .await,
        "user"
    );
    let roles = b
        .js("return [...document.querySelectorAll('main .hits .role')].map((e) => e.textContent);")
        .await;
    let roles = roles.as_array().unwrap();
    assert!(
        !roles.is_empty() && roles.iter().all(|r| r == "user"),
        "{roles:?}"
    );
    // From the Sessions page's box, beside what the archive keeps.
    go(&b, "#/sessions").await;
    b.wait_js("document.getElementById('ss-retention') !== null")
        .await;
    let kept = b.text("#ss-retention").await;
    assert!(
        kept.contains("1 sessions, 1 files") && kept.contains("kept until a retention is set"),
        "{kept}"
    );
    b.type_into("#ss-q", "deployed").await;
    b.click("main form.search button[type=submit]").await;
    b.wait_js("location.hash === '#/transcripts?q=deployed'")
        .await;
    b.wait_js("document.querySelectorAll('main .hits li').length === 20")
        .await;
    assert_eq!(
        count(&b, "main .more button").await,
        1,
        "more results page by keyset"
    );
    b.close().await;
}

/// What the page saved through `URL.createObjectURL`, captured (headless Chromium saves a
/// download nowhere a test can read).
const CAPTURE_BLOBS: &str = "window.saved = []; const made = URL.createObjectURL.bind(URL); \
     URL.createObjectURL = (b) => { b.text().then((t) => window.saved.push(t)); return made(b); }; return true;";

#[tokio::test]
async fn the_sessions_and_a_transcript_export_from_the_console_as_files() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, true).await;
    b.watch_csp().await;
    go(&b, "#/sessions").await;
    b.js(CAPTURE_BLOBS).await;
    b.click("main .exports button:first-of-type").await;
    b.wait_js("window.saved.length === 1").await;
    let csv = b.js("return window.saved[0];").await;
    let csv = csv.as_str().unwrap();
    assert!(csv.starts_with("computeTargetId,sessionId,title,"), "{csv}");
    assert!(csv.contains(SESSION), "{csv}");
    assert!(
        b.text("main .exports")
            .await
            .contains("Exported sessions.csv")
    );

    go(
        &b,
        &format!("#/sessions/{SESSION}?target={}", super::TARGET),
    )
    .await;
    b.js("window.saved = []; return true;").await;
    b.click("main .exports button").await;
    b.wait_js("window.saved.length === 1").await;
    let jsonl = b.js("return window.saved[0];").await;
    assert_eq!(
        jsonl.as_str().unwrap().as_bytes(),
        super::transcript().as_slice(),
        "the transcript as archived"
    );
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
    b.close().await;
}
