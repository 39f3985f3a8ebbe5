//! The sync engine's limits, each said once (docs/configuration.md "Limits"; docs/configuration.md
//! `SYNC_CONFIG`): configuration validates `limits.*` and `sync.intervalMinutes` against them,
//! selection and the parsers enforce them. A leaf: it imports nothing.
//!
//! The ingest wire contract's numbers are not here: they belong to the contract.

/// Largest file the engine will index, and the default of `limits.maxFileBytes` (spec "Limits":
/// 256 KB, because a document's search vector must stay far below Postgres's 1 MB tsvector limit).
pub(crate) const MAX_FILE_BYTES: u32 = 256 * 1024;
/// Bytes one parser reads (document, README, CODEOWNERS): the file cap, checked by the parsers too
/// so their bounds hold whoever calls them.
pub const MAX_PARSER_INPUT_BYTES: usize = MAX_FILE_BYTES as usize;
/// The body text kept for search, in bytes. The file cap is the same 256 KiB, so this only bites
/// on unusual inputs; it keeps one document's tsvector far below Postgres's 1 MB limit.
pub const BODY_TEXT_CAP_BYTES: usize = MAX_FILE_BYTES as usize;

/// `limits.maxDocsPerRepo` when unset.
pub(crate) const DEFAULT_MAX_DOCS_PER_REPO: u32 = 2000;
/// Upper bound on `limits.maxDocsPerRepo`: one repository's plan is held in memory.
pub(crate) const MAX_DOCS_PER_REPO: u32 = 100_000;

/// `sync.intervalMinutes` when unset.
pub(crate) const DEFAULT_INTERVAL_MINUTES: u32 = 60;
/// Smallest non-zero `sync.intervalMinutes`.
pub(crate) const MIN_INTERVAL_MINUTES: u32 = 5;
/// Largest `sync.intervalMinutes`: one week.
pub(crate) const MAX_INTERVAL_MINUTES: u32 = 7 * 24 * 60;
