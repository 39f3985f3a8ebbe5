//! Search over the archive (issue 34; docs/transcript-search.md): every recorded segment queued
//! for the index in the transaction that records it ([`crate::files::complete`]) and its lines
//! indexed in Postgres by [`index::drain`], then found per org ([`find`]) with
//! the document search's query language plus exact code tokens ([`query`], [`tokens`]), with
//! escaped, marked snippets ([`snippet`]).
//!
//! What is searchable is what the archive holds: the redacted bytes the client uploaded, of the
//! current generation (a new generation deletes the old one's lines), until retention deletes
//! the segment (its lines go with it: migration 0016's trigger).

pub mod extract;
pub mod find;
pub mod index;
pub mod lexer;
pub mod matcher;
pub mod query;
pub mod snippet;
pub mod tokens;

pub use extract::Role;
pub use find::{Filters, Hit, Page, Search, find};
pub use query::{Query, QueryError, parse};
