//! The images a synced document references (issue 31 point 6: images in the console, without
//! loading anything from another origin): which references a document makes, which of them point
//! into the repository, the repository path each names, and raw HTML `<img>` tags rewritten so a
//! browser asks nothing until the console fetches the image itself.
//!
//! A reference is what the document wrote: a Markdown image's destination (`![alt](img/a.png)`)
//! or a raw HTML `<img src="...">`. Only a relative one (no scheme, not `//host`) names a file
//! of the repository; it resolves against the document's folder, or the repository root when it
//! starts with `/`, its query and fragment dropped and its percent-escapes decoded, and never
//! above the root.

use std::borrow::Cow;
use std::sync::LazyLock;

use comrak::arena_tree::NodeEdge;
use comrak::nodes::NodeValue;
use comrak::{Arena, Options};
use regex::Regex;

use super::escape::push_escaped;
use super::markdown;
use super::{frontmatter, markdown_of};

/// A raw `<img ...>` tag.
static IMG_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?is)<img\b(?:[^>"']|"[^"]*"|'[^']*')*>"#).expect("the built-in pattern compiles")
});
/// One attribute of a tag: name and value (quoted or bare).
static ATTRIBUTE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?is)([a-z][a-z0-9_:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))"#)
        .expect("the built-in pattern compiles")
});

/// Whether `src` names a file of the repository: not empty, no scheme, not `//host`, not `#x`.
pub(crate) fn is_relative(src: &str) -> bool {
    let scheme = src.split_once(':').is_some_and(|(s, _)| {
        s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    !src.trim().is_empty() && !scheme && !src.starts_with("//") && !src.starts_with('#')
}

/// The repository path `src` (a relative reference) names from the document at `doc_path`:
/// `None` when it is not relative, climbs above the root, or is not a clean path.
pub fn resolve(doc_path: &str, src: &str) -> Option<String> {
    if !is_relative(src) {
        return None;
    }
    let bare = src.split(['?', '#']).next().unwrap_or_default();
    let decoded = percent_decode(bare)?;
    if decoded.contains(['\0', '\\']) {
        return None;
    }
    let (mut parts, rest): (Vec<&str>, &str) = match decoded.strip_prefix('/') {
        Some(from_root) => (Vec::new(), from_root),
        None => (
            doc_path
                .rsplit_once('/')
                .map_or(Vec::new(), |(folder, _)| folder.split('/').collect()),
            decoded.as_str(),
        ),
    };
    for seg in rest.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// `%XX` escapes decoded (a `%` not followed by two hex digits is refused); `None` when the
/// result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// An image the console may show: `<img data-src="..." alt="...">` (no `src`: the browser asks
/// for nothing; the console fetches the image through the sync API and shows it, or the alt
/// text). An image that is not relative is its alt text.
pub fn tag(src: &str, alt: &str, title: Option<&str>) -> String {
    if !is_relative(src) {
        let mut out = String::new();
        push_escaped(&mut out, alt);
        return out;
    }
    let mut out = String::from("<img data-src=\"");
    push_escaped(&mut out, src);
    out.push_str("\" alt=\"");
    push_escaped(&mut out, alt);
    out.push('"');
    if let Some(t) = title.filter(|t| !t.is_empty()) {
        out.push_str(" title=\"");
        push_escaped(&mut out, t);
        out.push('"');
    }
    out.push('>');
    out
}

/// The attributes of one raw `<img ...>` tag, decoded of the entities an attribute may use.
fn attributes(tag: &str) -> Vec<(String, String)> {
    ATTRIBUTE
        .captures_iter(tag)
        .map(|c| {
            let value = c
                .get(2)
                .or(c.get(3))
                .or(c.get(4))
                .map_or("", |m| m.as_str());
            (c[1].to_ascii_lowercase(), unescape(value))
        })
        .collect()
}

fn unescape(value: &str) -> String {
    value
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Raw HTML with each `<img>` rewritten by [`tag`] (its `src`, `alt` and `title` kept, nothing
/// else); borrowed when it has none.
pub(crate) fn rewrite_raw(html: &str) -> Cow<'_, str> {
    if !IMG_TAG.is_match(html) {
        return Cow::Borrowed(html);
    }
    IMG_TAG.replace_all(html, |c: &regex::Captures<'_>| {
        let attrs = attributes(&c[0]);
        let get = |name: &str| {
            attrs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        tag(
            get("src").unwrap_or_default(),
            get("alt").unwrap_or_default(),
            get("title"),
        )
    })
}

/// The `src` of every raw `<img>` of `html`.
fn raw_sources(html: &str, out: &mut Vec<String>) {
    for m in IMG_TAG.find_iter(html) {
        if let Some((_, src)) = attributes(m.as_str()).into_iter().find(|(n, _)| n == "src") {
            out.push(src);
        }
    }
}

/// Every image reference of the document at `path` with the stored `source`, in document order
/// (Markdown images and raw HTML `<img>` alike, relative or not); none past the parser's limits.
pub fn references(path: &str, source: &str) -> Vec<String> {
    let markdown = markdown_of(path, frontmatter::body(source));
    let arena = Arena::new();
    let mut options: Options = markdown::options();
    options.render.r#unsafe = true;
    let Some(root) = markdown::parse_bounded(&arena, &markdown, &options) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for edge in root.traverse() {
        let NodeEdge::Start(node) = edge else {
            continue;
        };
        match &node.data().value {
            NodeValue::Image(link) => out.push(link.url.clone()),
            NodeValue::HtmlBlock(block) => raw_sources(&block.literal, &mut out),
            NodeValue::HtmlInline(html) => raw_sources(html, &mut out),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_reference_resolves_against_the_documents_folder_and_never_above_the_root() {
        assert_eq!(
            resolve("docs/guide.md", "img/a.png").as_deref(),
            Some("docs/img/a.png")
        );
        assert_eq!(
            resolve("docs/guide.md", "./img/a.png").as_deref(),
            Some("docs/img/a.png")
        );
        assert_eq!(
            resolve("docs/a/b.md", "../x.png").as_deref(),
            Some("docs/x.png")
        );
        assert_eq!(
            resolve("docs/guide.md", "/assets/logo.svg").as_deref(),
            Some("assets/logo.svg")
        );
        assert_eq!(
            resolve("README.md", "docs/a%20b.png?raw=true#top").as_deref(),
            Some("docs/a b.png")
        );
        for bad in [
            "../../etc/passwd",
            "https://evil.example/x.png",
            "//evil.example/x.png",
            "data:image/png;base64,AAAA",
            "javascript:alert(1)",
            "#frag",
            "",
            "a%00.png",
            "a\\b.png",
        ] {
            assert_eq!(resolve("docs/guide.md", bad), None, "{bad}");
        }
    }

    #[test]
    fn raw_img_tags_become_data_src_or_their_alt_text() {
        let html = r#"<p><img src="img/a.png" alt="A &amp; B" width="20" onerror="x()"> <IMG SRC='https://evil.example/x.png' alt=remote></p>"#;
        assert_eq!(
            rewrite_raw(html),
            r#"<p><img data-src="img/a.png" alt="A &amp; B"> remote</p>"#
        );
        assert!(matches!(rewrite_raw("<p>no image</p>"), Cow::Borrowed(_)));
    }

    #[test]
    fn references_are_markdown_images_and_raw_img_sources_in_order() {
        let source = "---\ntitle: T\n---\n# T\n\n![a](img/a.png \"t\") text ![b](https://x.example/b.png)\n\n<img src=\"raw.png\" alt=\"r\">\n\n[not an image](c.png)\n";
        assert_eq!(
            references("docs/t.md", source),
            ["img/a.png", "https://x.example/b.png", "raw.png"]
        );
    }
}
