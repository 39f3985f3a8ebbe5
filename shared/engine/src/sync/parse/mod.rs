//! Parse: fetched bytes into what the sync engine stores. A document always parses (bad
//! frontmatter or MDX that is not plain markdown become warnings); only bytes Postgres would refuse
//! (a NUL, invalid UTF-8) and files past the file cap are refused, and the engine turns that into
//! a warning for that document. Pure code: no database, no network, and no panic on any input.
//!
//! Every parser here is fed by anyone who can change a synced repository, so each has named
//! bounds on time and memory (docs/configuration.md "Limits"): the input is at most
//! [`MAX_INPUT_BYTES`]; frontmatter within [`MAX_FRONTMATTER_VALUES`] and [`MAX_FRONTMATTER_JSON_BYTES`] (see
//! `frontmatter`); markdown within [`MAX_MARKDOWN_NODES`] and [`MAX_MARKDOWN_STEPS`] (see
//! `markdown`); the MDX rewrite and CODEOWNERS are single linear passes over the input.

mod codeowners;
mod escape;
mod frontmatter;
pub mod images;
mod markdown;
mod mdx;
mod model;
mod owners;
mod render;
mod text;
mod yaml;

pub use codeowners::{CodeOwnersRule, CodeOwnersWarning, parse_codeowners};
pub use escape::push_escaped_char;
pub use frontmatter::{MAX_FRONTMATTER_JSON_BYTES, MAX_FRONTMATTER_VALUES};
pub use markdown::{MAX_HEADINGS, MAX_MARKDOWN_NODES, MAX_MARKDOWN_STEPS};
pub use model::{Heading, ParseRefusal, ParsedDocument};
pub use owners::{deciding_rule, owners_of};
pub use render::{ID_PREFIX, LinkBase, render_html};
pub use text::{BODY_TEXT_CAP_BYTES, MAX_INPUT_BYTES};

/// Parses a markdown (`.md`, README) or MDX (`.mdx`) document. `path` picks the dialect and the
/// fallback title.
pub fn parse_document(path: &str, bytes: &[u8]) -> Result<ParsedDocument, ParseRefusal> {
    let text = text::decode(bytes)?;
    let split = frontmatter::split(text);
    let mut warnings = split.warnings;

    let markdown = markdown_of(path, split.markdown);
    let read = markdown::read(&markdown, BODY_TEXT_CAP_BYTES);
    warnings.extend(read.unread);
    if read.headings_dropped > 0 {
        warnings.push(format!(
            "outline keeps the first {MAX_HEADINGS} headings; {} more are searchable text only",
            read.headings_dropped
        ));
    }
    if read.body_truncated {
        warnings.push(format!(
            "search text truncated to {} KiB",
            BODY_TEXT_CAP_BYTES / 1024
        ));
    }

    let frontmatter_title = split
        .frontmatter
        .get("title")
        .and_then(serde_json::Value::as_str)
        .map(|title| title.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|title| !title.is_empty());
    let title = frontmatter_title
        .or(read.first_h1)
        .unwrap_or_else(|| file_stem(path).to_owned());

    Ok(ParsedDocument {
        title,
        frontmatter: serde_json::Value::Object(split.frontmatter),
        headings: read.headings,
        body: read.body,
        warnings,
        source: text.to_owned(),
    })
}

/// The markdown a document's body (after its frontmatter) is read as: MDX rewritten to plain
/// markdown, anything else as it is.
fn markdown_of<'a>(path: &str, body: &'a str) -> std::borrow::Cow<'a, str> {
    if is_mdx(path) {
        std::borrow::Cow::Owned(mdx::to_markdown(body))
    } else {
        std::borrow::Cow::Borrowed(body)
    }
}

fn is_mdx(path: &str) -> bool {
    path.rsplit_once('.')
        .is_some_and(|(_, ext)| ext.eq_ignore_ascii_case("mdx"))
}

/// `docs/getting-started.md` -> `getting-started`; `README` stays `README`.
fn file_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => name,
    }
}

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
