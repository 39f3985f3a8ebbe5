//! The agent session ingest wire contract, schema version 2 (`docs/ingest-wire-contract.md`):
//! the one home of its numbers, codes and names, shared by the server (`shared::ingest`) and the
//! desktop client (`syncplane-agent`), so the two sides cannot drift apart.
//!
//! The contract text is the specification; every item here cites the section that states it. A
//! change of any value is a new schema version, never an edit of this one. This crate has no
//! dependencies and no behaviour: each side applies the rules in its own code.

pub mod transcripts;

/// The routes of the `ingest` function (contract "Endpoints").
pub mod path {
    /// `GET`: the hello-ack (contract "Endpoints", `GET /api/agent-sessions/hello`).
    pub const HELLO: &str = "/api/agent-sessions/hello";
    /// `POST`: one batch (contract "Endpoints", `POST /api/agent-sessions/sync`).
    pub const SYNC: &str = "/api/agent-sessions/sync";
}

/// The pinned schema version: the hello-ack's `schemaVersion` and the envelope's required
/// `schemaVersion` (contract "Endpoints" and "Envelope").
pub const SCHEMA_VERSION: u64 = 2;

/// The hello-ack capability that lets a client gzip its bodies (contract "Endpoints",
/// `GET /api/agent-sessions/hello`): a client gzips only after it has seen it `true`.
pub const COMPRESSION_CAPABILITY: &str = "agentSessionSyncCompression";

/// At most this many sessions in one batch: the hello-ack's `maxSessionsPerBatch` and the
/// envelope's `sessions` bound (contract "Envelope": 1 to 200 sessions).
pub const MAX_SESSIONS_PER_BATCH: usize = 200;

/// Bytes a body may have on the wire, as sent, compressed or not: the hello-ack's `maxWireBytes`
/// (contract "What the server does with a POST", step 2: more than 262,144 bytes is 413).
pub const MAX_WIRE_BYTES: usize = 262_144;

/// Bytes a body may have once decoded (a gzip body is inflated only this far): the hello-ack's
/// `maxDecodedBytes` (contract step 2: one byte more than 4,194,304 is 413).
pub const MAX_DECODED_BYTES: usize = 4_194_304;

/// The caps a hello-ack advertises in `limits` (contract "Endpoints"); a server may advertise
/// tighter ones, never looser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `maxSessionsPerBatch`.
    pub max_sessions_per_batch: usize,
    /// `maxWireBytes`.
    pub max_wire_bytes: usize,
    /// `maxDecodedBytes`.
    pub max_decoded_bytes: usize,
}

impl Limits {
    /// The contract's own caps.
    pub const CONTRACT: Limits = Limits {
        max_sessions_per_batch: MAX_SESSIONS_PER_BATCH,
        max_wire_bytes: MAX_WIRE_BYTES,
        max_decoded_bytes: MAX_DECODED_BYTES,
    };
}

impl Default for Limits {
    /// [`Limits::CONTRACT`].
    fn default() -> Self {
        Self::CONTRACT
    }
}

/// The largest integer a batch may carry: 2^53 - 1, the largest a JSON number holds exactly
/// (contract "The batch": integers are whole JSON numbers from 0 to 2^53 - 1).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// At most this many chunks in one session's sequence (contract "Session", `chunk`:
/// 0 ≤ index < total ≤ 1000).
pub const MAX_CHUNKS: u32 = 1000;

/// At most this many strings in a session's `frustration.signals` (contract "Session": the one
/// array of a session that is stored as sent, in its own column, so it is bounded like the
/// envelope's `sessions`; issue 21 point 19). One more is `400`.
pub const MAX_FRUSTRATION_SIGNALS: usize = 100;

/// The envelope's and the session's string bounds, in Unicode characters (contract "Envelope",
/// "Session" and "Event": lengths count characters, not bytes).
pub mod chars {
    /// `batchId`: 1 to 128 characters (contract "Envelope").
    pub const BATCH_ID: usize = 128;
    /// `computeTargetId`: 1 to 128 characters (contract "Envelope").
    pub const COMPUTE_TARGET_ID: usize = 128;
    /// `sessionId`: 1 to 200 characters (contract "Session").
    pub const SESSION_ID: usize = 200;
    /// `dataRevision`: 1 to 128 characters (contract "Session").
    pub const DATA_REVISION: usize = 128;
    /// `agent`: 1 to 64 characters (contract "Session").
    pub const AGENT: usize = 64;
    /// An event's `kind`: 1 to 64 characters (contract "Event").
    pub const EVENT_KIND: usize = 64;
}

/// The stable `error.code` strings of failure envelopes (contract "Answers"). 400 and 413
/// carry none.
pub mod code {
    /// 401: token missing, unknown or revoked (contract "Authentication").
    pub const UNAUTHENTICATED: &str = "unauthenticated";
    /// 403: the compute target is not the token's user's in the token's org.
    pub const TARGET_NOT_OWNED: &str = "target_not_owned";
    /// 403: session sync is off for the org, or the capability is switched off.
    pub const FEATURE_DISABLED: &str = "feature_disabled";
    /// 404: a path the function does not serve.
    pub const NOT_FOUND: &str = "not_found";
    /// 405: a wrong method on a known path.
    pub const METHOD_NOT_ALLOWED: &str = "method_not_allowed";
    /// 409: a chunk after 0 of a revision that is neither pending nor committed (contract
    /// "Chunking").
    pub const CHUNK_OUT_OF_SEQUENCE: &str = "chunk_out_of_sequence";
    /// 415: a `Content-Encoding` other than none, `identity`, `gzip`, `x-gzip`.
    pub const UNSUPPORTED_ENCODING: &str = "unsupported_encoding";
    /// 429: over the compute target's batches per minute.
    pub const RATE_LIMITED: &str = "rate_limited";
    /// 429: the server is working on as many batches as it takes at once.
    pub const SERVER_BUSY: &str = "server_busy";
    /// 500: the database failed; nothing of the batch was stored.
    pub const INGESTION_FAILED: &str = "ingestion_failed";
    /// 503: the database does not answer (`Retry-After`); nothing was read or stored.
    pub const DATABASE_UNREACHABLE: &str = "database_unreachable";
}

/// The header values the contract gives a meaning (contract "Headers").
pub mod header {
    /// `Content-Encoding` of a plain JSON body (or no header at all).
    pub const IDENTITY: &str = "identity";
    /// `Content-Encoding` of a gzip body; the server also takes [`X_GZIP`], in any case.
    pub const GZIP: &str = "gzip";
    /// `Content-Encoding`: the other name of gzip.
    pub const X_GZIP: &str = "x-gzip";
    /// `Content-Type` of a gzip body: binary, so a deployed API Gateway hands it over intact.
    pub const BINARY_CONTENT_TYPE: &str = "application/octet-stream";
    /// `Content-Type` of a plain JSON body.
    pub const JSON_CONTENT_TYPE: &str = "application/json";
}

/// How long a server already working on its limit of batches waits for one to finish before it
/// answers `429 server_busy` (contract "What the server does with a POST": up to 100 ms).
pub const SERVER_BUSY_WAIT_MS: u64 = 100;

/// `Retry-After` of `429 server_busy`, in seconds (contract "What the server does with a POST").
pub const SERVER_BUSY_RETRY_AFTER_SECS: u64 = 1;

/// `Retry-After` of `429 rate_limited`: whole seconds, the rest of the current minute, from this
/// (contract step 4: 1 to 60).
pub const RATE_LIMITED_RETRY_AFTER_MIN_SECS: u64 = 1;

/// `Retry-After` of `429 rate_limited`: at most this (contract step 4: 1 to 60).
pub const RATE_LIMITED_RETRY_AFTER_MAX_SECS: u64 = 60;

/// The longest the `ingest` function runs in the provided template, in seconds (contract "Retry
/// guidance": up to 10 seconds); a client's deadline sits below it.
pub const FUNCTION_TIMEOUT_SECS: u64 = 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_limits_are_its_numbers() {
        assert_eq!(
            Limits::default(),
            Limits {
                max_sessions_per_batch: 200,
                max_wire_bytes: 262_144,
                max_decoded_bytes: 4_194_304,
            }
        );
        assert_eq!(MAX_SAFE_INTEGER, 9_007_199_254_740_991);
        // A plain body always fits the decoded cap: the wire cap binds first.
        const _: () = assert!(MAX_WIRE_BYTES < MAX_DECODED_BYTES);
    }
}
