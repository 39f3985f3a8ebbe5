//! The image route (issue 31 point 6): `GET /api/repos/{owner}/{name}/images?path=&src=` serves an
//! image a synced document references, fetched from the repository at the synced commit on first
//! view with the installation token, kept by blob SHA, capped, typed by its bytes, and readable
//! by exactly who may read the document.

use lambda_http::{Body, Response};
use shared::app::AppState;
use syncplane_tests::fake_github::{Change, Endpoint, FakeGithub};
use syncplane_tests::images::{HOSTILE_SVG, oversized_png, png};

use super::get;
use crate::engine::World;
use crate::functions::support::{READ_TOKEN, TOKEN, apigw, state};

const PICTURES: &str = "# Pictures\n\n![A diagram](img/diagram.png)\n\n![Nothing here](img/none.png)\n\n![Too big](img/huge.png)\n\n![Not an image](img/fake.png)\n\n![Remote](https://evil.example/x.png)\n\n<img src=\"./img/diagram.png\" alt=\"raw diagram\">\n";

struct Gallery {
    w: World,
    st: AppState,
    diagram: Vec<u8>,
}

async fn gallery() -> Gallery {
    let w = World::new().await;
    let diagram = png(4, 3, [200, 30, 30]);
    let huge = oversized_png(5 * 1024 * 1024 + 1);
    w.repo_bytes(
        "acme/gallery",
        &[
            ("README.md", b"# Gallery\n\n![Logo](assets/logo.svg)\n"),
            ("docs/pictures.md", PICTURES.as_bytes()),
            (
                "docs/other.md",
                b"# Other\n\n![Same diagram](img/diagram.png)\n",
            ),
            ("docs/img/diagram.png", &diagram),
            ("docs/img/huge.png", &huge),
            ("docs/img/fake.png", b"not really a png\n"),
            ("assets/logo.svg", HOSTILE_SVG.as_bytes()),
        ],
    );
    w.sync("acme/gallery").await.expect("sync");
    let st = state(&w);
    Gallery { w, st, diagram }
}

fn url(doc: &str, src: &str) -> String {
    let q = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    format!(
        "/api/repos/acme/gallery/images?path={}&src={}",
        q(doc),
        q(src)
    )
}

/// The raw answer (an image is bytes, not an envelope).
async fn raw(st: &AppState, path: &str, headers: &[(&str, &str)]) -> Response<Body> {
    shared::api::handle(st, apigw("GET", path, headers, None)).await
}

fn bytes_of(resp: &Response<Body>) -> Vec<u8> {
    match resp.body() {
        Body::Binary(b) => b.clone(),
        Body::Text(t) => t.as_bytes().to_vec(),
        _ => Vec::new(),
    }
}

fn header<'r>(resp: &'r Response<Body>, name: &str) -> &'r str {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

fn github_requests(w: &World) -> usize {
    w.gh.requests().len()
}

#[tokio::test]
async fn an_image_a_document_references_is_fetched_once_then_kept_by_blob_sha() {
    let g = gallery().await;
    let auth = format!("Bearer {READ_TOKEN}");
    let before = g.w.gh.count(Endpoint::Blob);
    let resp = raw(
        &g.st,
        &url("docs/pictures.md", "img/diagram.png"),
        &[("authorization", &auth)],
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(bytes_of(&resp), g.diagram);
    assert_eq!(header(&resp, "content-type"), "image/png");
    assert_eq!(header(&resp, "x-content-type-options"), "nosniff");
    assert!(header(&resp, "content-security-policy").contains("sandbox"));
    let etag = format!("\"{}\"", FakeGithub::blob_sha(&g.diagram));
    assert_eq!(header(&resp, "etag"), etag);
    assert_eq!(
        g.w.gh.count(Endpoint::Blob),
        before + 1,
        "fetched on first view"
    );

    // Kept: the same view, and the same file from another document, ask GitHub nothing.
    let asked = github_requests(&g.w);
    for (doc, src) in [
        ("docs/pictures.md", "img/diagram.png"),
        ("docs/pictures.md", "./img/diagram.png"),
        ("docs/other.md", "img/diagram.png"),
    ] {
        let resp = raw(&g.st, &url(doc, src), &[("authorization", &auth)]).await;
        assert_eq!(
            (resp.status().as_u16(), bytes_of(&resp)),
            (200, g.diagram.clone()),
            "{doc} {src}"
        );
    }
    assert_eq!(github_requests(&g.w), asked, "answered from what was kept");
    let resp = raw(
        &g.st,
        &url("docs/pictures.md", "img/diagram.png"),
        &[("authorization", &auth), ("if-none-match", &etag)],
    )
    .await;
    assert_eq!(resp.status(), 304);
    assert!(bytes_of(&resp).is_empty());
}

#[tokio::test]
async fn who_may_read_the_document_may_read_its_images_and_nobody_else() {
    let g = gallery().await;
    let path = url("docs/pictures.md", "img/diagram.png");
    for token in [None, Some("wrong-token")] {
        let r = get(&g.st, &path, token).await;
        assert_eq!(
            (r.status, r.code()),
            (401, Some("unauthenticated")),
            "{token:?}"
        );
    }
    for token in [READ_TOKEN, TOKEN] {
        let auth = format!("Bearer {token}");
        assert_eq!(
            raw(&g.st, &path, &[("authorization", &auth)])
                .await
                .status(),
            200
        );
    }
}

#[tokio::test]
async fn only_an_image_of_the_repository_the_document_references_is_served() {
    let g = gallery().await;
    let asked = github_requests(&g.w);
    for (doc, src, status, code) in [
        ("docs/pictures.md", "img/other.png", 404, "image_not_found"),
        (
            "docs/pictures.md",
            "../../../etc/passwd",
            404,
            "image_not_found",
        ),
        (
            "docs/pictures.md",
            "https://evil.example/x.png",
            404,
            "image_not_found",
        ),
        ("docs/other.md", "img/huge.png", 404, "image_not_found"),
        (
            "docs/missing.md",
            "img/diagram.png",
            404,
            "document_not_found",
        ),
        ("docs/../README.md", "assets/logo.svg", 400, "invalid_path"),
    ] {
        let r = get(&g.st, &url(doc, src), Some(READ_TOKEN)).await;
        assert_eq!(
            (r.status, r.code()),
            (status, Some(code)),
            "{doc} {src}: {}",
            r.body
        );
    }
    assert_eq!(
        github_requests(&g.w),
        asked,
        "nothing asked of GitHub for them"
    );
    for (query, code) in [
        ("?path=docs/pictures.md", "missing_parameter"),
        ("?src=img/diagram.png", "missing_parameter"),
        (
            "?path=docs/pictures.md&src=img/diagram.png&size=2",
            "unknown_parameter",
        ),
    ] {
        let r = get(
            &g.st,
            &format!("/api/repos/acme/gallery/images{query}"),
            Some(READ_TOKEN),
        )
        .await;
        assert_eq!((r.status, r.code()), (400, Some(code)), "{query}");
    }
}

#[tokio::test]
async fn a_missing_oversized_or_non_image_file_is_refused_with_its_code_once_asked() {
    let g = gallery().await;
    let blobs = g.w.gh.count(Endpoint::Blob);
    for (src, status, code) in [
        ("img/none.png", 404, "image_not_found"),
        ("img/huge.png", 413, "image_too_large"),
        ("img/fake.png", 415, "image_type_unsupported"),
    ] {
        let r = get(&g.st, &url("docs/pictures.md", src), Some(READ_TOKEN)).await;
        assert_eq!(
            (r.status, r.code()),
            (status, Some(code)),
            "{src}: {}",
            r.body
        );
    }
    assert_eq!(
        g.w.gh.count(Endpoint::Blob),
        blobs + 1,
        "the oversized one is refused from its tree entry, before a byte is fetched"
    );
    let asked = github_requests(&g.w);
    let r = get(
        &g.st,
        &url("docs/pictures.md", "img/huge.png"),
        Some(READ_TOKEN),
    )
    .await;
    assert_eq!(r.code(), Some("image_too_large"));
    assert_eq!(github_requests(&g.w), asked, "the refusal is kept too");
}

#[tokio::test]
async fn a_readmes_svg_is_served_inert_and_a_new_commit_serves_the_new_bytes() {
    let g = gallery().await;
    let auth = format!("Bearer {READ_TOKEN}");
    let resp = raw(
        &g.st,
        &url("README.md", "assets/logo.svg"),
        &[("authorization", &auth)],
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "content-type"), "image/svg+xml");
    let csp = header(&resp, "content-security-policy");
    assert!(
        csp.contains("sandbox") && csp.contains("default-src 'none'"),
        "{csp}"
    );

    let first = raw(
        &g.st,
        &url("docs/pictures.md", "img/diagram.png"),
        &[("authorization", &auth)],
    )
    .await;
    assert_eq!(bytes_of(&first), g.diagram);
    let blue = png(4, 3, [10, 10, 220]);
    g.w.gh.push(
        "acme/gallery",
        &[Change::Put("docs/img/diagram.png".into(), blue.clone())],
    );
    g.w.sync("acme/gallery").await.expect("sync");
    let second = raw(
        &g.st,
        &url("docs/pictures.md", "img/diagram.png"),
        &[("authorization", &auth)],
    )
    .await;
    assert_eq!(bytes_of(&second), blue, "the image at the synced commit");
    let (old_rows, old_blobs): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM document_images WHERE blob_sha = $1),
                (SELECT count(*) FROM image_blobs WHERE blob_sha = $1)",
    )
    .bind(FakeGithub::blob_sha(&g.diagram))
    .fetch_one(&g.w.db.pool)
    .await
    .unwrap();
    assert_eq!(
        (old_rows, old_blobs),
        (0, 0),
        "the older commit's image is forgotten"
    );
}
