//! Sign-in (issue 22 "Sign-in"): the write token, the read token and a wrong one; the token kept
//! for the tab only, never in the address or a cookie; the sync button for the write token alone.

use super::{READ_TOKEN, Site, TOKEN, count, go, sign_in};

/// Where the token may be: sessionStorage only.
async fn token_only_in_session_storage(b: &syncplane_tests::browser::Browser, token: &str) {
    let kept = b
        .js("return sessionStorage.getItem('syncplane.token');")
        .await;
    assert_eq!(kept, token);
    let url = b.client.current_url().await.unwrap();
    assert!(!url.as_str().contains(token), "token in the address: {url}");
    assert_eq!(b.js("return document.cookie;").await, "");
    assert_eq!(b.js("return localStorage.length;").await, 0);
}

#[tokio::test]
async fn the_write_token_signs_in_with_write_access_and_its_sync_button_starts_a_run() {
    let site = Site::new().await;
    let b = site.signed_in(TOKEN, false).await;
    token_only_in_session_storage(&b, TOKEN).await;
    assert!(b.text("#sp-who").await.contains("write access"));
    go(&b, "#/runs").await;
    let before = super::count(&b, "main tbody tr").await;
    b.click("#sp-sync").await;
    b.wait_js("document.querySelector('main .ok[data-status]')")
        .await;
    let said = b
        .js("return document.querySelector('main .ok').dataset.status;")
        .await;
    assert_eq!(said, "202", "POST /api/sync answered 202");
    assert!(
        b.text("main .ok").await.starts_with("Sync"),
        "{}",
        b.text("main .ok").await
    );
    b.wait_js(&format!(
        "document.querySelectorAll('main tbody tr').length > {before}"
    ))
    .await;
    assert!(b.text("main tbody tr").await.contains("manual"));
    b.close().await;
}

#[tokio::test]
async fn a_read_only_token_sees_no_sync_button() {
    let site = Site::new().await;
    let b = site.signed_in(READ_TOKEN, false).await;
    token_only_in_session_storage(&b, READ_TOKEN).await;
    assert!(b.text("#sp-who").await.contains("read-only"));
    go(&b, "#/runs").await;
    assert_eq!(count(&b, "#sp-sync").await, 0);
    assert_eq!(
        count(&b, "main button").await,
        0,
        "no button that could start a sync"
    );
    assert!(b.text("main .note").await.contains("Read-only"));
    // The runs themselves are readable.
    assert_eq!(count(&b, "main tbody tr").await, 1);
    b.close().await;
}

#[tokio::test]
async fn a_wrong_token_is_refused_with_a_plain_message_and_is_not_kept() {
    let site = Site::new().await;
    let b = site.browser().await;
    sign_in(&b, "not-the-token", None).await;
    b.wait_js("document.querySelector('#sp-signin-msg [role=alert]')")
        .await;
    let said = b.text("#sp-signin-msg [role=alert]").await;
    assert!(said.contains("The API token was not accepted"), "{said}");
    assert!(said.contains("Check it and try again"), "{said}");
    assert_eq!(b.js("return sessionStorage.length;").await, 0);
    assert_eq!(b.js("return document.cookie;").await, "");
    let url = b.client.current_url().await.unwrap();
    assert!(!url.as_str().contains("not-the-token"));
    // A wrong organization token, too, is said plainly.
    sign_in(&b, TOKEN, Some("spr_wrong")).await;
    b.wait_js("document.querySelector('#sp-signin-msg [role=alert]')")
        .await;
    let said = b.text("#sp-signin-msg [role=alert]").await;
    assert!(
        said.contains("The organization token was not accepted"),
        "{said}"
    );
    b.close().await;
}
