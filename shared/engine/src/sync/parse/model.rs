//! What parsing produces (a document, its headings) and what it refuses: the types every parser
//! of this folder shares, below them all.

use serde::Serialize;

use syncplane_core::limits::MAX_PARSER_INPUT_BYTES;

/// A parsed markdown or MDX document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParsedDocument {
    /// Frontmatter `title` (a non-empty string), else the first H1, else the file name without
    /// its extension.
    pub title: String,
    /// Always a JSON object; `{}` when there is no frontmatter or it is invalid.
    pub frontmatter: serde_json::Value,
    /// Every heading, in document order.
    pub headings: Vec<Heading>,
    /// Plain text for full-text search, at most [`BODY_TEXT_CAP_BYTES`].
    pub body: String,
    /// Non-fatal notes about this document.
    pub warnings: Vec<String>,
    /// The file's text as synced (frontmatter included, at most the file cap): what the read
    /// API returns as `?format=markdown` and renders for `?format=html`. Not serialized.
    #[serde(skip)]
    pub source: String,
}

/// A heading with its GitHub-style anchor (unique within the document).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Heading {
    pub level: u8,
    pub text: String,
    pub anchor: String,
}

/// Why a file cannot be stored at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseRefusal {
    #[error("file contains a NUL byte, which Postgres text cannot store")]
    NulByte,
    #[error("file is not valid UTF-8")]
    InvalidUtf8,
    #[error("file is larger than {} KiB", MAX_PARSER_INPUT_BYTES / 1024)]
    TooLarge,
}
