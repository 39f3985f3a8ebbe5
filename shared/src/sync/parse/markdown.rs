//! Markdown through comrak: headings with GitHub-style anchors, the first H1, and the plain text
//! kept for search. The walk is iterative, so nesting depth in a document cannot overflow the
//! stack here.

use comrak::arena_tree::NodeEdge;
use comrak::nodes::NodeValue;
use comrak::{Anchorizer, Arena, Options};

use super::Heading;
use super::text::{SearchText, html_block_text};

/// What the markdown part of a document yields.
#[derive(Debug)]
pub struct Markdown {
    pub first_h1: Option<String>,
    pub headings: Vec<Heading>,
    pub body: String,
    pub body_truncated: bool,
}

/// GitHub-flavoured options: tables, strikethrough, autolinks, task lists and footnotes, so their
/// text lands in the right place instead of as raw syntax.
fn options() -> Options<'static> {
    let mut options = Options::default();
    options.extension.table = true;
    options.extension.strikethrough = true;
    options.extension.autolink = true;
    options.extension.tasklist = true;
    options.extension.footnotes = true;
    options
}

pub fn read(markdown: &str, body_cap: usize) -> Markdown {
    let arena = Arena::new();
    let root = comrak::parse_document(&arena, markdown, &options());
    let mut body = SearchText::new(body_cap);
    let mut headings = Vec::new();
    let mut first_h1 = None;
    let mut anchorizer = Anchorizer::new();
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
        body_truncated: body.truncated(),
        body: body.finish(),
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
