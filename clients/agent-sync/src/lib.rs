//! The desktop side of the agent session metadata lane (schema version 2): what a desktop app
//! embeds to push a sanitized projection of its local AI coding sessions to syncplane's ingest
//! endpoint, one way, without losing or duplicating a session.
//!
//! Spec, "Two independent lanes": the metadata lane ([`lane`]) and the transcript lane
//! ([`transcripts`]) share nothing but the device token (each has its own ticker, queue, backoff,
//! HTTP client and state tables), so a failure or a throttle on either never touches the other;
//! an app runs the transcript lane beside the metadata lane, not through it. The rules the two
//! follow alike are written once, in a core both use (`lane_core`: answers read, lane-wide
//! effects, budgets, waits, the state file's plumbing, the HTTP client's).
//!
//! - [`session`]: the local record and the projection that crosses the boundary;
//! - [`chunker`]: envelopes within the batch size and both byte caps, chunk sequences;
//! - [`answer`]: what came back from one request, as the transport read it;
//! - [`transport`]: hello first, gzip only when advertised, a deadline below the server's;
//! - [`outcome`]: the error taxonomy and what each outcome does;
//! - [`state`] and [`dead_letter`]: the cursor, the outbox and the dead-letter set in SQLite;
//! - [`store`]: the app's session store (a trait), with an in-memory and a JSON-directory store;
//! - [`settings`]: the schedule's numbers; [`lane`]: [`Lane::tick`] and [`Lane::run`];
//! - [`observe`]: the observability hooks, and what the lane is waiting for;
//! - [`push`]: a one-shot push (the CLI's), ended by what the lane came to.
//!
//! Embedding: build a [`Transport`] with the ingest base URL and the device token, open the
//! [`State`] for the signed-in identity and compute target, and run a [`Lane`] over your store.

pub mod answer;
pub mod chunker;
pub mod clock;
pub mod lane;
mod lane_core;
mod network;
pub mod observe;
pub mod outcome;
pub mod push;
pub mod redact;
pub mod session;
pub mod settings;
pub mod state;
pub mod store;
pub mod transcripts;
pub mod transport;

/// The dead-letter ladder and its classes, part of the core both lanes share.
pub use lane_core::dead_letter;

pub use clock::{Clock, FakeClock, SystemClock};
pub use lane::{Lane, LaneError, LaneStatus, Network, Observer, Settings, TickReport};
pub use observe::{Request, Waiting};
pub use outcome::Outcome;
pub use session::LocalSession;
pub use state::State;
pub use store::{JsonDirStore, MemoryStore, SessionStore};
pub use transcripts::{
    JsonlDirSource, MemorySource, TranscriptFile, TranscriptLane, TranscriptSource,
    TranscriptState, TranscriptTransport, Trigger,
};
pub use transport::{TokenHandle, Transport};
