//! Markdown through comrak: headings with GitHub-style anchors, the first H1, and the plain text
//! kept for search. The walk is iterative, so nesting depth in a document cannot overflow the
//! stack here.
//!
//! Limits: comrak is linear on most input, but some shapes make many nodes from few bytes (a
//! table header of many columns followed by many one-cell lines is padded to a full row per line;
//! comrak's own cap on such cells is 500,000, about 100 MiB of nodes). A parse that passes
//! [`MAX_MARKDOWN_NODES`] nodes or [`MAX_MARKDOWN_STEPS`] parser steps is cancelled and the
//! document keeps its raw text as search text, without headings, and a warning.

use std::cell::Cell;

use comrak::arena_tree::NodeEdge;
use comrak::nodes::{AstNode, NodeValue};
use comrak::{Anchorizer, Arena, Options};

use super::model::Heading;
use super::text::{SearchText, html_block_text};

/// What the markdown part of a document yields.
#[derive(Debug)]
pub struct Markdown {
    pub first_h1: Option<String>,
    pub headings: Vec<Heading>,
    pub body: String,
    pub body_truncated: bool,
    /// Headings past [`MAX_HEADINGS`]: their text is in the body, not in the outline.
    pub headings_dropped: usize,
    /// Set when the parse passed its limits and the raw text stands in.
    pub unread: Option<String>,
}

/// Nodes comrak may build for one document (a node is about 200 bytes: this bounds the tree to
/// about 40 MiB). A 256 KiB file of ordinary markdown makes tens of thousands.
pub const MAX_MARKDOWN_NODES: usize = 200_000;
/// Parser steps for one document (comrak counts a line, an inline or a node as a step): bounds
/// the parse's time.
pub const MAX_MARKDOWN_STEPS: usize = 2_000_000;
/// Headings kept in a document's outline. A real document has tens; 64,000 one-line headings
/// cost more CPU in anchors (each duplicate is numbered against the ones before) and in the
/// stored outline than the 50 ms a document may take, and no reader navigates them.
pub const MAX_HEADINGS: usize = 1_000;
/// comrak asks whether to stop once every this many steps.
const STEPS_PER_QUESTION: usize = 256;

/// GitHub-flavoured options: tables, strikethrough, autolinks, task lists and footnotes, so their
/// text lands in the right place instead of as raw syntax.
pub(super) fn options() -> Options<'static> {
    let mut options = Options::default();
    options.extension.table = true;
    options.extension.strikethrough = true;
    options.extension.autolink = true;
    options.extension.tasklist = true;
    options.extension.footnotes = true;
    options
}

/// comrak's parse of `markdown` into `arena`, cancelled past [`MAX_MARKDOWN_NODES`] nodes or
/// [`MAX_MARKDOWN_STEPS`] steps (`None`): every parse of a document goes through here.
pub(super) fn parse_bounded<'a>(
    arena: &'a Arena<'a>,
    markdown: &str,
    options: &Options,
) -> Option<&'a AstNode<'a>> {
    let questions = Cell::new(0usize);
    let over_limits = || {
        questions.set(questions.get() + 1);
        arena.len() > MAX_MARKDOWN_NODES
            || questions.get().saturating_mul(STEPS_PER_QUESTION) > MAX_MARKDOWN_STEPS
    };
    comrak::try_parse_document(arena, markdown, options, &over_limits).ok()
}

pub fn read(markdown: &str, body_cap: usize) -> Markdown {
    let arena = Arena::new();
    match parse_bounded(&arena, markdown, &options()) {
        Some(root) => walk(root, body_cap),
        None => raw_text(markdown, body_cap),
    }
}

/// A document past the parser's limits: its raw text, collapsed, is the search text.
fn raw_text(markdown: &str, body_cap: usize) -> Markdown {
    let mut body = SearchText::new(body_cap);
    body.push(markdown);
    Markdown {
        first_h1: None,
        headings: Vec::new(),
        headings_dropped: 0,
        body_truncated: body.truncated(),
        body: body.finish(),
        unread: Some(format!(
            "markdown not read: more than {MAX_MARKDOWN_NODES} nodes or {MAX_MARKDOWN_STEPS} parser steps; raw text kept for search"
        )),
    }
}

fn walk<'a>(root: &'a AstNode<'a>, body_cap: usize) -> Markdown {
    let mut body = SearchText::new(body_cap);
    let mut headings = Vec::new();
    let mut first_h1 = None;
    let mut anchorizer = Anchorizer::new();
    let mut headings_dropped = 0;
    // Text of the heading being walked, with its level.
    let mut heading: Option<(u8, SearchText)> = None;

    for edge in root.traverse() {
        match edge {
            NodeEdge::Start(node) => {
                let data = node.data();
                let value = &data.value;
                if value.block() {
                    body.space();
                }
                match value {
                    NodeValue::Heading(h) => {
                        heading = Some((h.level, SearchText::new(usize::MAX)));
                    }
                    NodeValue::Text(text) => push_inline(&mut body, &mut heading, text),
                    NodeValue::Code(code) => push_inline(&mut body, &mut heading, &code.literal),
                    NodeValue::SoftBreak | NodeValue::LineBreak => {
                        body.space();
                        if let Some((_, text)) = heading.as_mut() {
                            text.space();
                        }
                    }
                    NodeValue::CodeBlock(block) => body.push(&block.literal),
                    NodeValue::HtmlBlock(block) => body.push(&html_block_text(&block.literal)),
                    // Inline HTML is tags only; the text between tags is in sibling Text nodes.
                    _ => {}
                }
            }
            NodeEdge::End(node) => {
                let data = node.data();
                if data.value.block() {
                    body.space();
                }
                if let NodeValue::Heading(_) = data.value
                    && let Some((level, text)) = heading.take()
                {
                    let text = text.finish();
                    if level == 1 && first_h1.is_none() && !text.is_empty() {
                        first_h1 = Some(text.clone());
                    }
                    if headings.len() == MAX_HEADINGS {
                        headings_dropped += 1;
                        continue;
                    }
                    let anchor = anchorizer.anchorize(&text);
                    headings.push(Heading {
                        level,
                        text,
                        anchor,
                    });
                }
            }
        }
    }

    Markdown {
        first_h1,
        headings,
        headings_dropped,
        body_truncated: body.truncated(),
        body: body.finish(),
        unread: None,
    }
}

fn push_inline(body: &mut SearchText, heading: &mut Option<(u8, SearchText)>, text: &str) {
    body.push(text);
    if let Some((_, heading_text)) = heading.as_mut() {
        heading_text.push(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heading(level: u8, text: &str, anchor: &str) -> Heading {
        Heading {
            level,
            text: text.to_owned(),
            anchor: anchor.to_owned(),
        }
    }

    #[test]
    fn the_outline_keeps_the_first_max_headings_and_counts_the_rest() {
        let doc = "## same\n".repeat(MAX_HEADINGS + 5);
        let md = read(&doc, usize::MAX);
        assert_eq!(md.headings.len(), MAX_HEADINGS);
        assert_eq!(md.headings_dropped, 5);
        assert_eq!(md.headings[1].anchor, "same-1");
        assert_eq!(md.body.matches("same").count(), MAX_HEADINGS + 5);
    }

    #[test]
    fn headings_have_github_anchors_with_duplicates_punctuation_code_and_links() {
        let md = "# Getting Started!\n\n## Install\n\n## Install\n\n### The `sync()` call & [its](https://x.y) *options*\n\nSetext\n------\n\n## Install\n\n#### Ünïcode_and-dash 2.0?\n";
        let read = read(md, 1 << 20);
        assert_eq!(
            read.headings,
            vec![
                heading(1, "Getting Started!", "getting-started"),
                heading(2, "Install", "install"),
                heading(2, "Install", "install-1"),
                heading(
                    3,
                    "The sync() call & its options",
                    "the-sync-call--its-options"
                ),
                heading(2, "Setext", "setext"),
                heading(2, "Install", "install-2"),
                heading(4, "Ünïcode_and-dash 2.0?", "ünïcode_and-dash-20"),
            ]
        );
        assert_eq!(read.first_h1.as_deref(), Some("Getting Started!"));
    }

    #[test]
    fn body_text_has_no_markup() {
        let md = "# Title\n\nSome **bold** and _em_ text with `code` and a [link text](https://example.com \"t\").\n\n- item one\n- [x] task two\n\n| Col A | Col B |\n|---|---|\n| cell 1 | cell 2 |\n\n```rust\nfn main() {}\n```\n\n> quoted\n\n<div align=\"center\">Centered <b>words</b></div>\n\nInline <span>html</span> here.\n\n![alt words](img.png)\n";
        let read = read(md, 1 << 20);
        assert_eq!(
            read.body,
            "Title Some bold and em text with code and a link text. item one task two Col A Col B cell 1 cell 2 fn main() {} quoted Centered words Inline html here. alt words"
        );
    }
}
