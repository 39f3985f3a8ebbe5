//! The web console (issue 22): one HTML page, one script and one style sheet, compiled into the
//! binary and served by the sync API (`GET /`, `GET /console/app.js`, `GET /console/app.css`),
//! deployed with it and served by `syncplane serve` and `cargo lambda watch`. The page names its
//! files and the API relative to where it was loaded, so it works at `/`, under an API stage and
//! at `/lambda-url/sync-api/` (where the script sends ingest's routes to `/lambda-url/ingest/`). The page reads the same JSON routes as any
//! client, with the token the reader typed (kept for the tab in `sessionStorage`, sent as the
//! Bearer header; never in a URL or a cookie).
//!
//! Every answer here carries the security headers in [`SECURITY_HEADERS`]: a Content-Security-
//! Policy with no inline script or style and no other origin (`connect-src 'self'`), no framing,
//! `nosniff` and no referrer. No asset is fetched from another origin: there are none.

use http::StatusCode;
use lambda_http::{Body, Response};

/// The console's paths.
pub(crate) const INDEX_PATH: &str = "/";
pub(crate) const SCRIPT_PATH: &str = "/console/app.js";
pub(crate) const STYLE_PATH: &str = "/console/app.css";

const INDEX_HTML: &str = include_str!("index.html");
const APP_JS: &str = include_str!("app.js");
const APP_CSS: &str = include_str!("app.css");

/// The policy: the page's own script and styles only, JSON from its own origin, images only
/// from itself or `data:` (charts are inline SVG built by the script), nothing framed, no base
/// or form target elsewhere.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// Sent with every console answer.
pub(crate) const SECURITY_HEADERS: [(&str, &str); 5] = [
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cross-origin-opener-policy", "same-origin"),
];

/// One of the console's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asset {
    pub content_type: &'static str,
    pub body: &'static str,
}

/// The asset at `path`, if the path is the console's.
pub(crate) fn asset(path: &str) -> Option<Asset> {
    let (content_type, body) = match path {
        INDEX_PATH => ("text/html; charset=utf-8", INDEX_HTML),
        SCRIPT_PATH => ("text/javascript; charset=utf-8", APP_JS),
        STYLE_PATH => ("text/css; charset=utf-8", APP_CSS),
        _ => return None,
    };
    Some(Asset { content_type, body })
}

/// The answer for `asset` (an empty body for HEAD). Revalidated on every load (`no-cache`), so a
/// deployment's new console is what the next page load runs.
pub fn response(asset: Asset, head: bool) -> Response<Body> {
    let mut builder = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", asset.content_type)
        .header("cache-control", "no-cache");
    for (name, value) in SECURITY_HEADERS {
        builder = builder.header(name, value);
    }
    let body = if head {
        Body::Empty
    } else {
        Body::Text(asset.body.to_owned())
    };
    builder
        .body(body)
        .unwrap_or_else(|_| Response::new(Body::Empty))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_its_own_script_and_style() {
        // Relative, so the page works under any prefix: `/`, an API stage, or
        // `/lambda-url/sync-api/` under `cargo lambda watch`.
        assert!(INDEX_HTML.contains(&format!("src=\"{}\"", &SCRIPT_PATH[1..])));
        assert!(INDEX_HTML.contains(&format!("href=\"{}\"", &STYLE_PATH[1..])));
        assert!(!INDEX_HTML.contains("<script>"), "no inline script");
        assert!(!INDEX_HTML.contains("style="), "no inline style");
        for text in [INDEX_HTML, APP_JS, APP_CSS] {
            // The SVG namespace is a name, not a request.
            let text = text.replace("http://www.w3.org/", "");
            assert!(
                !text.contains("http://") && !text.contains("https://"),
                "no other origin"
            );
        }
    }

    #[test]
    fn the_page_script_and_style_together_stay_under_100_kb() {
        let total = INDEX_HTML.len() + APP_JS.len() + APP_CSS.len();
        assert!(total <= 100 * 1024, "{total} bytes");
    }

    #[test]
    fn every_answer_carries_the_security_headers() {
        for path in [INDEX_PATH, SCRIPT_PATH, STYLE_PATH] {
            let response = response(asset(path).unwrap(), false);
            let csp = response.headers()["content-security-policy"]
                .to_str()
                .unwrap();
            assert!(csp.contains("frame-ancestors 'none'"));
            assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"));
            assert_eq!(response.headers()["x-content-type-options"], "nosniff");
            assert_eq!(response.headers()["referrer-policy"], "no-referrer");
        }
        assert_eq!(asset("/console/other.js"), None);
    }
}
