//! The GitHub App client: App JWT, installation token (cached, single-flight, renewed before
//! expiry), rate limits waited out within a budget, and the few REST endpoints the sync engine
//! reads. Errors are typed so the engine can tell a run-stopping failure from a per-repository one
//! (spec "Failure handling").
//!
//! With a database, the installation token is shared by every process of the tenant (encrypted in
//! Postgres, see `token_store`), so ETags stay valid across processes.
//!
//! Secrets (the key, JWTs, installation tokens) never reach a log line or `Debug` output; requests
//! are logged at debug with method, path, status and the remaining rate limit.
//!
//! Files import one way, bottom up: `message`, `rate_limit` and `error` (reading GitHub's
//! answers); `urls`, `usage`, `model`, `jwt`, `pagination` and the `token*` files; `transport`
//! (one HTTP round trip, the request and answer types); `client` (credentials, rate-limit waits,
//! the REST endpoints); then `graphql`, and on it `graphql_heads`, `graphql_listing` (the listing with heads) and
//! `graphql_probe` (one commit's root names and planned paths).
//!
//! Uses the floor (`syncplane_core`: configuration, the database that shares tokens) and nothing
//! else of the workspace.

mod client;
mod error;
mod graphql;
mod graphql_heads;
mod graphql_listing;
mod graphql_probe;
mod jwt;
mod message;
mod model;
mod pagination;
mod rate_limit;
mod token;
mod token_cipher;
mod token_store;
mod transport;
mod urls;
mod usage;

pub use client::{ClientOptions, GithubClient};
pub use error::GithubError;
pub use graphql_heads::{BatchHead, HeadQuery, MAX_IDS_PER_QUERY};
pub use graphql_listing::{LISTING_PAGE_SIZE, ListedRepo, ViewerListing};
pub use graphql_probe::{MAX_PROBED_PATHS, Probe, ProbeAt, ProbedFile};
pub use model::{EntryKind, HeadCheck, Installation, RepoInfo, Tree, TreeEntry, git_blob_sha};
pub use rate_limit::RateLimit;
pub use token::DEFAULT_REFRESH_MARGIN;
pub use urls::graphql_url_for;
pub use usage::{RequestKind, Usage};
