//! The transcript archive (docs/transcript-wire-contract.md; spec: "the transcript lane stages
//! secret-redacted transcript bytes for an archive upload ... that archive is what the web renders
//! turn and tool detail from"): where segments are stored ([`store`]: S3 through presigned URLs,
//! or a filesystem directory for the direct transport), how a stored segment is verified
//! ([`segment`]), its object key ([`key`]), a file's position ([`position`]), and what Postgres keeps of it ([`files`]: files,
//! acknowledged offsets, segments, upload intents), with one error type ([`error`]); the search
//! over every recorded segment's lines ([`search`]: the index queue, the indexer, the query
//! language, snippets) and what each org's archive keeps ([`usage`]).
//!
//! A layer below the HTTP surfaces and the worker: the ingest routes (`syncplane_ingest::transcripts`)
//! and the worker's S3 notifications both complete uploads through here, with one verification.
//!
//! Uses the floor (`syncplane_core`) and the contract (`syncplane_contract`: the segment caps and
//! refusal codes); whether an org may archive is
//! `syncplane_accounts::gates`, beside it.

pub mod error;
pub mod files;
pub mod key;
pub mod position;
pub mod retention;
pub mod search;
pub mod segment;
pub mod store;
pub mod usage;

pub use error::ArchiveError;
pub use files::{FileState, complete_upload, upload_by_key};
