//! Every page of the console under axe-core (no serious or critical violation) at a desktop
//! width and at 360 px, with no horizontal scrolling at 360 px, no request to another origin,
//! and a screenshot of each (`syncplane_tests::browser::screens_dir`).

use super::{SESSION, Site, TARGET, TOKEN, go};
use syncplane_tests::browser::{DESKTOP, MOBILE_WIDTH};

/// The pages: name (the screenshot's), hash, and a selector that says the page's data is in.
const PAGES: [(&str, &str, &str); 9] = [
    ("search", "#/search?q=deploy", "#sp-results .hit"),
    ("repos", "#/repos", "main tbody tr"),
    ("repository", "#/repos/acme/handbook", "main ul.docs li"),
    (
        "document",
        "#/doc/acme/handbook/docs/guide.md",
        "main .doc-body h2",
    ),
    ("runs", "#/runs", "main tbody tr"),
    ("sessions", "#/sessions", "main tbody tr"),
    ("transcript", "", "main .turn"),
    ("insights", "#/insights", "main svg.chart"),
    ("transcripts", "#/transcripts?q=deployed", "main .hits li"),
];

#[tokio::test]
async fn every_page_has_no_serious_or_critical_axe_violation_on_a_desktop_and_at_360_px() {
    let site = Site::new().await;
    let mut b = site.signed_in(TOKEN, true).await;
    let transcript = format!("#/sessions/{SESSION}?target={TARGET}");
    let mut failures = Vec::new();
    for (width, height, suffix) in [(DESKTOP.0, DESKTOP.1, ""), (MOBILE_WIDTH, 780, "-360")] {
        b.resize(width, height).await;
        for (name, hash, ready) in PAGES {
            let hash = if hash.is_empty() {
                transcript.as_str()
            } else {
                hash
            };
            go(&b, hash).await;
            let css = serde_json::to_string(ready).unwrap();
            b.wait_js(&format!("document.querySelector({css})")).await;
            let found = b.axe().await;
            if !found.is_empty() {
                failures.push(format!("{name} at {width} px: {found:#?}"));
            }
            if width == MOBILE_WIDTH && b.overflows_horizontally().await {
                failures.push(format!("{name} scrolls sideways at {width} px"));
            }
            b.screenshot(&format!("{name}{suffix}")).await;
        }
    }
    // The sign-in page too, signed out.
    b.resize(DESKTOP.0, DESKTOP.1).await;
    b.click("#sp-signout").await;
    b.wait_js("document.querySelector('main').dataset.ready === 'signin'")
        .await;
    let found = b.axe().await;
    if !found.is_empty() {
        failures.push(format!("signin: {found:#?}"));
    }
    b.screenshot("signin").await;
    assert_eq!(b.other_origin_requests().await, Vec::<String>::new());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    b.close().await;
}

#[tokio::test]
async fn every_page_is_reachable_by_keyboard_from_a_skip_link() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, false).await;
    // A fresh load (the token stays for the tab): the first Tab lands on the skip link, Enter
    // moves the focus to the main content.
    go(&b, "#/repos").await;
    b.client.refresh().await.unwrap();
    b.wait_js("document.querySelector('main').dataset.ready === 'repos'")
        .await;
    b.press('\u{e004}').await;
    let active = b.js("return document.activeElement.className;").await;
    assert_eq!(active, "skip");
    b.press('\u{e007}').await;
    let active = b.js("return document.activeElement.id;").await;
    assert_eq!(active, "sp-main");
    // Tab from there reaches the first repository's link.
    b.press('\u{e004}').await;
    let active = b.js("return document.activeElement.textContent;").await;
    assert!(active.as_str().unwrap_or("").contains("acme/"), "{active}");
    // Every control has a name.
    let unnamed = b
        .js("return [...document.querySelectorAll('a, button, input')]
               .filter((e) => !(e.labels?.length || e.getAttribute('aria-label') || e.textContent.trim()))
               .map((e) => e.outerHTML);")
        .await;
    assert_eq!(unnamed, serde_json::json!([]));
    b.close().await;
}
