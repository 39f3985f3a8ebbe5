//! Bad input on the read API (issue 11 "Bad input"): every parameter bounded and typed, answered
//! 400 or 404 with a stable code, never a 500 (each answer is also checked against openapi.json).

use base64::Engine;

use super::{read, synced};

#[tokio::test]
async fn bad_parameters_are_400_or_404_with_a_stable_code_never_500() {
    let (_w, st) = synced(&[(
        "acme/handbook",
        &[("docs/guide/a.md", "# A\n\nemu\n"), ("README.md", "# R\n")],
    )])
    .await;
    let other_query_cursor = {
        let r = read(&st, "/api/search?q=emu&limit=1").await;
        // One hit only: ask for a cursor from a two-hit listing instead.
        assert!(r.data()["nextCursor"].is_null());
        let r = read(&st, "/api/repos/acme/handbook/documents?limit=1").await;
        r.data()["nextCursor"].as_str().map(str::to_owned)
    };
    let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(br#"{"k":"search","f":"0000000000000000","v":{"rank":1,"kind":0,"id":"1; DROP TABLE documents"}}"#);
    let long_query = format!("/api/search?q={}", "word+".repeat(2048));
    let cases: Vec<(String, u16, &str)> = vec![
        // limit
        ("/api/search?q=emu&limit=0".into(), 400, "invalid_limit"),
        ("/api/search?q=emu&limit=51".into(), 400, "invalid_limit"),
        ("/api/search?q=emu&limit=ten".into(), 400, "invalid_limit"),
        ("/api/repos?limit=-1".into(), 400, "invalid_limit"),
        (
            "/api/repos/acme/handbook/documents?limit=100000".into(),
            400,
            "invalid_limit",
        ),
        // cursor
        ("/api/search?q=emu&cursor=%%%".into(), 400, "invalid_cursor"),
        (
            format!("/api/search?q=emu&cursor={forged}"),
            400,
            "invalid_cursor",
        ),
        (
            "/api/repos?cursor=bm90IGpzb24".into(),
            400,
            "invalid_cursor",
        ),
        // path
        // `..`, literal or encoded as %2e%2e, is resolved by the URL layer before routing: it
        // can only name another path inside the repository (a key lookup, never a file).
        (
            "/api/repos/acme/handbook/documents/docs/../etc/passwd".into(),
            404,
            "document_not_found",
        ),
        (
            "/api/repos/acme/handbook/documents/docs/%2e%2e/a.md".into(),
            404,
            "document_not_found",
        ),
        (
            "/api/repos/acme/handbook/documents/docs/a%00.md".into(),
            400,
            "invalid_path",
        ),
        (
            "/api/repos/acme/handbook/documents/docs/%zz.md".into(),
            400,
            "invalid_path",
        ),
        (
            "/api/repos/acme/handbook/documents/docs/%ff.md".into(),
            400,
            "invalid_path",
        ),
        (
            "/api/repos/acme/handbook/owners?path=../x".into(),
            400,
            "invalid_path",
        ),
        (
            "/api/repos/acme/handbook/owners?path=a%00b".into(),
            400,
            "invalid_path",
        ),
        ("/api/search?q=emu&path=/docs".into(), 400, "invalid_path"),
        ("/api/search?q=emu&path=docs/..".into(), 400, "invalid_path"),
        // the query
        (long_query, 400, "invalid_query"),
        ("/api/search?q=a%00b".into(), 400, "invalid_query"),
        ("/api/search".into(), 400, "empty_query"),
        ("/api/search?q=+++".into(), 400, "empty_query"),
        ("/api/search?q=the+of".into(), 400, "empty_query"),
        ("/api/search?q=emu&q=emu".into(), 400, "unknown_parameter"),
        (
            "/api/search?q=emu&sort=rank".into(),
            400,
            "unknown_parameter",
        ),
        // repositories
        (
            "/api/search?q=emu&repo=acme".into(),
            400,
            "invalid_repository",
        ),
        (
            "/api/search?q=emu&repo=acme/nope".into(),
            404,
            "unknown_repository",
        ),
        (
            "/api/repos/acme/nope/documents".into(),
            404,
            "unknown_repository",
        ),
        (
            "/api/repos/acme/nope/readme".into(),
            404,
            "unknown_repository",
        ),
        (
            "/api/repos/acme/nope/owners?path=a".into(),
            404,
            "unknown_repository",
        ),
        ("/api/repos/acme/handbook/unknown".into(), 404, "not_found"),
        ("/api/repos/acme%2Fx/handbook".into(), 404, "not_found"),
        // a folder is not a document
        (
            "/api/repos/acme/handbook/documents/docs/guide".into(),
            404,
            "path_is_folder",
        ),
    ];
    let mut cases = cases;
    if let Some(c) = other_query_cursor {
        cases.push((
            format!("/api/search?q=emu&cursor={c}"),
            400,
            "invalid_cursor",
        ));
    }
    for (url, status, code) in &cases {
        let r = read(&st, url).await;
        let shown: String = url.chars().take(120).collect();
        assert_eq!(
            (r.status, r.code()),
            (*status, Some(*code)),
            "{shown}: {}",
            r.body
        );
    }
}

/// Issue 21 point 14: an error names what was wrong (the unknown or repeated parameter, the
/// limit's range, the missing parameter) in a fixed message that leaks no internal detail.
#[tokio::test]
async fn api_errors_name_the_parameter_the_limit_range_and_a_missing_parameter() {
    let (_w, st) = synced(&[("acme/handbook", &[("docs/a.md", "# A\n\nemu\n")])]).await;
    let cases: Vec<(&str, &str, &str)> = vec![
        (
            "/api/search?q=emu&sort=rank",
            "unknown_parameter",
            r#"unknown query parameter "sort"; this route takes q, repo, path, limit, cursor (and tenant)"#,
        ),
        (
            "/api/repos?page=2",
            "unknown_parameter",
            r#"unknown query parameter "page"; this route takes limit, cursor (and tenant)"#,
        ),
        (
            "/api/repos/acme/handbook/readme?path=x",
            "unknown_parameter",
            r#"unknown query parameter "path"; this route takes format (and tenant)"#,
        ),
        (
            "/api/repos/acme/handbook?path=x",
            "unknown_parameter",
            r#"unknown query parameter "path"; this route takes none but tenant"#,
        ),
        (
            "/api/search?q=emu&%3Cb%3E=1",
            "unknown_parameter",
            "unknown query parameter; this route takes q, repo, path, limit, cursor (and tenant)",
        ),
        (
            "/api/search?q=emu&q=emu",
            "unknown_parameter",
            r#"the query parameter "q" is given more than once"#,
        ),
        (
            "/api/search?q=emu&limit=51",
            "invalid_limit",
            "limit must be a whole number from 1 to 50",
        ),
        (
            "/api/repos?limit=0",
            "invalid_limit",
            "limit must be a whole number from 1 to 500",
        ),
        (
            "/api/repos/acme/handbook/documents?limit=ten",
            "invalid_limit",
            "limit must be a whole number from 1 to 500",
        ),
        (
            "/api/repos/acme/handbook/owners",
            "missing_parameter",
            r#"the query parameter "path" is required"#,
        ),
    ];
    for (url, code, message) in cases {
        let r = read(&st, url).await;
        assert_eq!(
            (r.status, r.code(), r.body["error"]["message"].as_str()),
            (400, Some(code), Some(message)),
            "{url}: {}",
            r.body
        );
    }
    // An empty `path` is present, so it is a bad path rather than a missing one.
    let r = read(&st, "/api/repos/acme/handbook/owners?path=").await;
    assert_eq!((r.status, r.code()), (400, Some("invalid_path")));
}

/// Query syntax that tsquery parsing dislikes is still a query, never a 500.
#[tokio::test]
async fn odd_query_syntax_never_fails() {
    let (_w, st) = synced(&[("acme/handbook", &[("docs/a.md", "# A\n\nemu\n")])]).await;
    for q in [
        "%22",
        "-",
        "emu+or",
        "or+or+emu",
        "!%26|():*",
        "%27;+DROP+TABLE+documents;--",
        "%E2%80%94",
    ] {
        let r = read(&st, &format!("/api/search?q={q}")).await;
        assert!(
            r.status == 200 || (r.status, r.code()) == (400, Some("empty_query")),
            "{q}: {}",
            r.body
        );
    }
}
