//! Sessions and Insights in the browser (issue 22 points 4 and 5), with the organization's read
//! token: the sessions newest first, one transcript turn by turn with tool calls collapsed and
//! paged, charts drawn as SVG with their numbers one click away.

use super::{SESSION, Site, TOKEN, TURNS, count, go};

#[tokio::test]
async fn an_orgs_sessions_list_newest_first_and_a_transcript_renders_turn_by_turn_paged() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, true).await;
    b.watch_csp().await;
    go(&b, "#/sessions").await;
    assert_eq!(count(&b, "main tbody tr").await, 4);
    let first = b.text("main tbody tr").await;
    assert!(
        first.contains("Fix the deploy script") && first.contains("claude-opus-4"),
        "{first}"
    );
    assert!(
        b.text("main tbody tr:last-child")
            .await
            .contains("Explain the sync engine")
    );
    b.click("main tbody tr th a").await;
    b.wait_js("document.querySelector('main').dataset.ready === 'sessions'")
        .await;
    b.wait_js("document.querySelectorAll('main .turn').length === 100")
        .await;
    // The session's title heads its page; its facts name it, its computer and its files.
    assert!(b.text("main h1").await.contains("Fix the deploy script"));
    let facts = b.text("main dl.facts").await;
    assert!(
        facts.contains(SESSION) && facts.contains("main.jsonl"),
        "{facts}"
    );
    // Tool calls and results are collapsed; the text of each turn is shown.
    let tools = count(&b, "main .turn details.tool").await;
    assert!(tools >= 60, "{tools}");
    assert_eq!(count(&b, "main .turn details.tool[open]").await, 0);
    assert!(
        b.text("main .turn")
            .await
            .contains("please deploy <b>now</b>"),
        "text, not HTML"
    );
    b.click("main .transcript .more button").await;
    b.wait_js(&format!(
        "document.querySelectorAll('main .turn').length === {TURNS}"
    ))
    .await;
    assert_eq!(count(&b, "main .transcript .more button").await, 0);
    // Transcript text is never markup: no element came from it, no handler ran.
    assert_eq!(count(&b, "main .turn img, main .turn b").await, 0);
    assert_eq!(b.js("return typeof window.ran;").await, "undefined");
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
    b.close().await;
}

#[tokio::test]
async fn insights_draw_svg_charts_with_the_numbers_behind_each_one_click_away() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, true).await;
    b.watch_csp().await;
    go(&b, "#/insights").await;
    // Per day, tokens by model, per repository, and frustration (the org opted in).
    assert_eq!(count(&b, "main svg.chart").await, 4);
    assert!(count(&b, "main svg.chart rect.bar").await >= 4);
    assert_eq!(count(&b, "main [style]").await, 0, "no inline style");
    let numbers = count(&b, "main details.numbers").await;
    assert_eq!(numbers, 4);
    b.click("#sp-f-model ~ details summary").await;
    b.wait_js("document.querySelector('#sp-f-model ~ details[open] tbody tr')")
        .await;
    let models = b.text("#sp-f-model ~ details table").await;
    assert!(models.contains("claude-opus-4"), "{models}");
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
    b.close().await;
}

#[tokio::test]
async fn sessions_without_an_organization_token_say_which_token_to_sign_in_with() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, false).await;
    go(&b, "#/sessions").await;
    assert!(b.text("main").await.contains("starts with spr_"));
    b.close().await;
}

/// Under `cargo lambda watch` each function has its own prefix (`/lambda-url/sync-api/`,
/// `/lambda-url/ingest/`), as `syncplane serve` also answers: the page loads its files relative
/// to itself and sends ingest's routes to ingest's prefix.
#[tokio::test]
async fn the_console_works_under_the_lambda_watch_prefixes_with_sessions_from_ingests_prefix() {
    let site = Site::new().await;
    let b = syncplane_tests::browser::Browser::start().await;
    b.open(&format!("{}/lambda-url/sync-api/#/signin", site.base))
        .await;
    b.find("#sp-token").await;
    super::sign_in(&b, TOKEN, Some(&site.org_token)).await;
    b.wait_js("document.querySelector('main').dataset.ready === 'search'")
        .await;
    assert!(b.text("#sp-who").await.contains("write access"));
    go(&b, "#/sessions").await;
    assert_eq!(count(&b, "main tbody tr").await, 4);
    let asked: Vec<String> = b
        .performance("resource")
        .await
        .iter()
        .filter_map(|e| e["name"].as_str().map(str::to_owned))
        .collect();
    assert!(
        asked
            .iter()
            .any(|u| u.contains("/lambda-url/ingest/api/agent-sessions/sessions")),
        "{asked:?}"
    );
    assert!(
        asked
            .iter()
            .any(|u| u.contains("/lambda-url/sync-api/console/app.js")),
        "{asked:?}"
    );
    b.close().await;
}
