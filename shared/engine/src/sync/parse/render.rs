//! A synced document as HTML for the web console (issue 22 "A document"): the stored source
//! through the same frontmatter split, MDX rewrite and comrak options the engine parses with, then
//! an allow-list sanitizer (ammonia). Raw HTML and MDX in a document never run script and never
//! make the reader's browser ask another origin for anything:
//!
//! - `<script>`/`<style>` go with their content; event handlers, `style`, forms, frames and
//!   embedded media other than the images below are not on the allow-list; link schemes are
//!   http, https and mailto (a `javascript:` link loses its `href`);
//! - an image of the repository (a Markdown image or a raw `<img>` with a relative reference)
//!   becomes `<img data-src="..." alt="...">` without a `src` ([`super::images`]): the browser
//!   asks for nothing, and the console fetches the image through the sync API's same-origin
//!   image route, or shows the alt text; an image on another origin becomes a link to it (the
//!   alt text is the link's text, a raw one its alt text), so the page loads nothing from
//!   elsewhere;
//! - relative links resolve to the repository at the synced commit (`{blob_base}/{path}`);
//!   without a synced commit they are dropped rather than left pointing at the console;
//! - each heading gets `<a id="user-content-{anchor}">`, the outline's anchor (GitHub's, and
//!   GitHub's `user-content-` prefix on every id from the document, so no id clobbers the page's);
//!   in-page links stay `#{anchor}`.
//!
//! Bounded like the parse: the source is at most the file cap, comrak stops at the parser's node
//! and step limits, and a document past them renders as escaped preformatted text.

use std::borrow::Cow;

use ammonia::{Builder, UrlRelative};
use comrak::arena_tree::NodeEdge;
use comrak::nodes::{AstNode, NodeValue};
use comrak::{Arena, Options};

use super::escape::push_escaped;
use super::markdown;
use super::{frontmatter, images, markdown_of};

/// Where a document's relative links point: the repository's files at the synced commit,
/// `https://github.com/{owner}/{name}/blob/{sha}/` (ending in `/`).
#[derive(Debug, Clone)]
pub struct LinkBase {
    pub blob_base: String,
}

/// The prefix GitHub gives every id from a document's HTML; the console scrolls `#x` to it.
pub const ID_PREFIX: &str = "user-content-";

/// `source` (the stored file text of `path`) as sanitized HTML. `anchors`: the stored outline's
/// anchors, in document order (what the sync read from this same source), given to the headings
/// in turn, so the page's ids are the outline's without parsing the document a second time.
pub fn render_html(
    path: &str,
    source: &str,
    anchors: &[String],
    base: Option<&LinkBase>,
) -> String {
    let markdown = markdown_of(path, frontmatter::body(source));
    let raw = to_html(&markdown, anchors).unwrap_or_else(|| {
        let mut pre = String::from("<pre>");
        push_escaped(&mut pre, &markdown);
        pre.push_str("</pre>");
        pre
    });
    sanitizer(path, base).clean(&raw).to_string()
}

/// comrak's HTML (raw HTML passed through, to the sanitizer), `None` past the parser's limits.
fn to_html(markdown: &str, anchors: &[String]) -> Option<String> {
    let arena = Arena::new();
    let mut options: Options = markdown::options();
    options.render.r#unsafe = true;
    let root = markdown::parse_bounded(&arena, markdown, &options)?;
    let mut headings = 0;
    let mut found = Vec::new();
    for edge in root.traverse() {
        let NodeEdge::Start(node) = edge else {
            continue;
        };
        let is_heading = matches!(node.data().value, NodeValue::Heading(_));
        if is_heading {
            if let Some(anchor) = anchors.get(headings) {
                let mut tag = String::from("<a id=\"");
                push_escaped(&mut tag, anchor);
                tag.push_str("\"></a>");
                node.prepend(arena.alloc(AstNode::from(NodeValue::HtmlInline(tag))));
            }
            headings += 1;
        }
        let mut data = node.data_mut();
        let raw = match &mut data.value {
            NodeValue::Image(_) => {
                found.push(node);
                None
            }
            NodeValue::HtmlBlock(block) => Some(&mut block.literal),
            NodeValue::HtmlInline(html) => Some(html),
            _ => None,
        };
        if let Some(literal) = raw
            && let Cow::Owned(rewritten) = images::rewrite_raw(literal)
        {
            *literal = rewritten;
        }
    }
    for node in found {
        image_node(&arena, node);
    }
    let mut html = String::new();
    comrak::format_html(root, &options, &mut html).ok()?;
    Some(html)
}

/// An image of the repository becomes [`images::tag`]; one elsewhere a link to it (an image
/// without alt text gets "image" as its text).
fn image_node<'a>(arena: &'a Arena<'a>, node: &'a AstNode<'a>) {
    let mut data = node.data_mut();
    let value = std::mem::replace(&mut data.value, NodeValue::Paragraph);
    data.value = match value {
        NodeValue::Image(link) if images::is_relative(&link.url) => {
            let alt = alt_text(node);
            let title = (!link.title.is_empty()).then_some(link.title.as_str());
            NodeValue::HtmlInline(images::tag(&link.url, &alt, title))
        }
        NodeValue::Image(link) => NodeValue::Link(link),
        other => other,
    };
    let inline = matches!(data.value, NodeValue::HtmlInline(_));
    drop(data);
    if inline {
        while let Some(child) = node.first_child() {
            child.detach();
        }
    } else if node.first_child().is_none() {
        node.append(arena.alloc(AstNode::from(NodeValue::Text("image".into()))));
    }
}

/// The plain text of a node's descendants (an image's alt text).
fn alt_text<'a>(node: &'a AstNode<'a>) -> String {
    let mut out = String::new();
    for d in node.descendants().skip(1) {
        match &d.data().value {
            NodeValue::Text(t) => out.push_str(t),
            NodeValue::Code(c) => out.push_str(&c.literal),
            NodeValue::SoftBreak | NodeValue::LineBreak => out.push(' '),
            _ => {}
        }
    }
    out
}

/// The allow-list for document HTML: ammonia's defaults minus embedded media, plus ids (with
/// GitHub's prefix), only http/https/mailto links, relative URLs resolved for `path`.
fn sanitizer(path: &str, base: Option<&LinkBase>) -> Builder<'static> {
    let mut builder = Builder::default();
    builder
        .rm_tags(["area", "map"])
        .rm_tag_attributes(
            "img",
            ["src", "srcset", "sizes", "longdesc", "loading", "decoding"],
        )
        .add_tag_attributes("img", ["data-src", "alt", "title"])
        .attribute_filter(|element, attribute, value| match (element, attribute) {
            // Only what `images::tag` writes: a relative reference, never a URL elsewhere.
            ("img", "data-src") if !images::is_relative(value) => None,
            _ => Some(Cow::Borrowed(value)),
        })
        .add_generic_attributes(["id"])
        .id_prefix(Some(ID_PREFIX))
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .link_rel(Some("noopener noreferrer"))
        .url_relative(match base {
            Some(base) => UrlRelative::Custom(Box::new(Resolver::new(path, base))),
            None => UrlRelative::Custom(Box::new(Resolver::fragments_only())),
        });
    builder
}

/// Resolves a relative URL against the document's folder (or the repository root for `/x`) at
/// the synced commit; `#x` stays in the page.
struct Resolver {
    root: Option<url::Url>,
    folder: Option<url::Url>,
}

impl Resolver {
    fn new(path: &str, base: &LinkBase) -> Self {
        let root = url::Url::parse(&base.blob_base).ok();
        let folder_path = path.rsplit_once('/').map_or("", |(folder, _)| folder);
        let folder = root.as_ref().and_then(|root| {
            if folder_path.is_empty() {
                Some(root.clone())
            } else {
                root.join(&format!("{}/", encode_path(folder_path))).ok()
            }
        });
        Self { root, folder }
    }

    fn fragments_only() -> Self {
        Self {
            root: None,
            folder: None,
        }
    }

    fn resolve<'u>(&self, url: &'u str) -> Option<Cow<'u, str>> {
        if url.starts_with('#') {
            return Some(Cow::Borrowed(url));
        }
        if url.starts_with("//") {
            return None;
        }
        let joined = match url.strip_prefix('/') {
            Some(from_root) => self.root.as_ref()?.join(from_root).ok()?,
            None => self.folder.as_ref()?.join(url).ok()?,
        };
        // `..` past the repository root must not leave the commit's tree.
        let root = self.root.as_ref()?;
        if !joined.as_str().starts_with(root.as_str()) {
            return None;
        }
        Some(Cow::Owned(joined.to_string()))
    }
}

impl ammonia::UrlRelativeEvaluate<'static> for Resolver {
    fn evaluate<'u>(&self, url: &'u str) -> Option<Cow<'u, str>> {
        self.resolve(url)
    }
}

fn encode_path(path: &str) -> String {
    path.split('/')
        .map(|seg| {
            url::form_urlencoded::byte_serialize(seg.as_bytes())
                .collect::<String>()
                .replace('+', "%20")
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> LinkBase {
        LinkBase {
            blob_base: "https://github.com/acme/handbook/blob/abc123/".into(),
        }
    }

    /// The outline's anchors, as the sync reads them from the source.
    fn anchors(path: &str, source: &str) -> Vec<String> {
        markdown::read(&markdown_of(path, frontmatter::body(source)), 0)
            .headings
            .into_iter()
            .map(|h| h.anchor)
            .collect()
    }

    fn render(path: &str, source: &str) -> String {
        render_html(path, source, &anchors(path, source), Some(&base()))
    }

    #[test]
    fn headings_carry_the_outline_anchor_with_githubs_prefix() {
        let html = render(
            "docs/a.md",
            "# Getting Started!\n\n## Install\n\n## Install\n",
        );
        assert!(
            html.contains(r#"<h1><a id="user-content-getting-started""#),
            "{html}"
        );
        assert!(
            html.contains(r#"<h2><a id="user-content-install-1""#),
            "{html}"
        );
    }

    #[test]
    fn script_event_handlers_and_javascript_links_do_not_survive() {
        let html = render(
            "docs/a.md",
            "<script>window.ran = 1</script>\n\nText <img src=x onerror=\"window.ran=1\"> and [go](javascript:alert(1)) <a href=\"javascript:window.ran=1\">x</a>\n\n<div onclick=\"x()\" style=\"color:red\">d</div>\n<iframe src=\"https://evil.example\"></iframe>\n",
        );
        for banned in [
            "<script",
            "window.ran",
            "onerror",
            "javascript:",
            "onclick",
            "style=",
            "<iframe",
            " src=",
        ] {
            assert!(!html.contains(banned), "{banned} in {html}");
        }
        // The raw image is one the console may fetch through the sync API, nothing more.
        assert!(html.contains(r#"<img data-src="x" alt="">"#), "{html}");
    }

    #[test]
    fn mdx_imports_and_components_render_inertly() {
        let html = render(
            "docs/a.mdx",
            "import X from './x'\n\n# Title\n\n<Callout onClick={() => alert(1)}>hi</Callout>\n\n<script>{window.ran = 1}</script>\n",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("window.ran"), "{html}");
        assert!(!html.contains("onClick"), "{html}");
    }

    #[test]
    fn images_of_the_repository_wait_for_the_console_and_others_become_links() {
        let html = render(
            "docs/guide/a.md",
            "![the diagram](img/d.png \"Fig. 1\") ![](https://cdn.example/x.png)\n\n<img src=\"../logo.svg\" alt=\"logo\" width=\"40\">\n",
        );
        assert!(
            !html.contains(" src="),
            "the browser asks for nothing: {html}"
        );
        assert!(
            html.contains(r#"<img data-src="img/d.png" alt="the diagram" title="Fig. 1">"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<img data-src="../logo.svg" alt="logo">"#),
            "{html}"
        );
        assert!(
            html.contains(
                r#"<a href="https://cdn.example/x.png" rel="noopener noreferrer">image</a>"#
            ),
            "{html}"
        );
    }

    #[test]
    fn relative_links_resolve_to_the_repository_at_the_synced_commit() {
        let html = render(
            "docs/guide/a.md",
            "[b](b.md) [up](../c.md#x) [root](/README.md) [frag](#install) [out](../../../../etc)\n",
        );
        assert!(
            html.contains(r#"href="https://github.com/acme/handbook/blob/abc123/docs/guide/b.md""#),
            "{html}"
        );
        assert!(
            html.contains(r#"href="https://github.com/acme/handbook/blob/abc123/docs/c.md#x""#),
            "{html}"
        );
        assert!(
            html.contains(r#"href="https://github.com/acme/handbook/blob/abc123/README.md""#),
            "{html}"
        );
        assert!(html.contains(r##"href="#install""##), "{html}");
        assert!(!html.contains("etc"), "{html}");
    }

    #[test]
    fn without_a_synced_commit_relative_links_are_dropped() {
        let html = render_html("docs/a.md", "[b](b.md) [f](#x)\n", &[], None);
        assert!(!html.contains("b.md"), "{html}");
        assert!(html.contains(r##"href="#x""##), "{html}");
    }

    #[test]
    fn frontmatter_is_not_rendered_and_github_extensions_are() {
        let html = render(
            "docs/a.md",
            "---\ntitle: T\n---\n| a | b |\n|---|---|\n| 1 | 2 |\n\n~~old~~ https://example.com\n",
        );
        assert!(!html.contains("title: T"), "{html}");
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains("<del>old</del>"), "{html}");
        assert!(html.contains(r#"href="https://example.com""#), "{html}");
    }

    #[test]
    fn a_document_past_the_parser_limits_renders_as_escaped_text() {
        let doc = format!(
            "<b>x</b>\n{}",
            "|a|\n|-|\n".to_owned() + &"|<i>\n".repeat(200_000)
        );
        let html = render("docs/a.md", &doc);
        assert!(
            html.starts_with("<pre>"),
            "{}",
            &html[..100.min(html.len())]
        );
        assert!(!html.contains("<b>"));
    }
}
