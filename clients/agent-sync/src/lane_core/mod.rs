//! The core the two lanes share: the rules both the metadata lane ([`crate::lane`]) and the
//! transcript lane ([`crate::transcripts`]) follow, written once so that a rule changes in one
//! place (issue 33, point 3).
//!
//! Spec, "Two independent lanes": the lanes share nothing at run time but the device token. Each
//! still has its own ticker, queue, backoff, HTTP client and state tables: this module holds the
//! code, never the state, and where the lanes differ on purpose (their limits, their waits, their
//! tables and key columns) it takes the difference as a parameter.
//!
//! - [`verdict`]: what a lane route's HTTP status says (401, 403 by its code, 429, 400 and 413),
//!   what a failure does to the lane itself ([`verdict::LaneEffect`]), and the spec's failure budgets;
//! - [`waits`]: time on the lane's clock, the doubling windows, a `Retry-After` heeded, and how
//!   long each lane-wide stop keeps a lane quiet;
//! - [`db`]: the SQLite plumbing of both lanes' state (opening the shared file, pragmas, the lock
//!   wait, columns added since a release, the identity scope, per-item failure budgets, the
//!   dead-letter set);
//! - [`http`]: the device token, each lane's own HTTP client, and what both read of an answer;
//! - [`dead_letter`]: when a set-aside item comes back (the ladder of windows, per item), and
//!   the two classes; public, as `syncplane_agent::dead_letter`.
//!
//! Shared by both lanes as well, and public: [`crate::clock`] (the lane's clock) and
//! [`crate::answer`]'s [`crate::answer::RetryAfter`].

pub(crate) mod db;
pub mod dead_letter;
pub(crate) mod http;
pub(crate) mod verdict;
pub(crate) mod waits;
