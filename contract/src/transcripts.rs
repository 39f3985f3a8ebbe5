//! The transcript lane's wire contract (docs/transcript-wire-contract.md): its routes, caps,
//! codes and capability names, written once for the server (`shared::transcripts`) and the
//! desktop client (`syncplane_agent::transcripts`).

/// The hello-ack capability naming the transcript transport (contract "The hello-ack"):
/// [`TRANSPORT_PRESIGNED`] or [`TRANSPORT_DIRECT`]; absent on a server without the lane.
pub const UPLOAD_CAPABILITY: &str = "agentTranscriptUpload";
/// Bytes go straight to S3 through a presigned PUT.
pub const TRANSPORT_PRESIGNED: &str = "presigned";
/// Bytes go to the ingest function itself (local runs, deployments without a bucket).
pub const TRANSPORT_DIRECT: &str = "direct";

/// The hello-ack limit key of [`MAX_SEGMENT_BYTES`].
pub const MAX_SEGMENT_BYTES_KEY: &str = "maxSegmentBytes";
/// The hello-ack limit key of [`MAX_SEGMENT_DECODED_BYTES`].
pub const MAX_SEGMENT_DECODED_BYTES_KEY: &str = "maxSegmentDecodedBytes";

/// A segment's compressed bytes at most (contract "Segments"): API Gateway's base64 and Lambda's
/// 6 MB payload bound the direct transport.
pub const MAX_SEGMENT_BYTES: u64 = 4_194_304;
/// A segment's redacted (decoded) bytes at most (contract "Segments"); a zstd frame is inflated
/// only this far.
pub const MAX_SEGMENT_DECODED_BYTES: u64 = 16_777_216;
/// A segment's bytes of the local file at most (contract "Segments").
pub const MAX_SEGMENT_SOURCE_BYTES: u64 = 16_777_216;
/// `fileId`: 1 to this many bytes of `A-Z a-z 0-9 . _ -`, not starting with `.` (contract
/// "Identity and offsets").
pub const MAX_FILE_ID_BYTES: usize = 256;
/// An intent's JSON body at most (contract "`POST .../intent`").
pub const MAX_INTENT_BODY_BYTES: usize = 4_096;
/// The first generation of a file (contract "Identity and offsets").
pub const FIRST_GENERATION: u32 = 1;
/// The `lines` route: lines per page at most, and by default (contract "Reading").
pub const MAX_LINES_PER_PAGE: usize = 500;
pub const DEFAULT_LINES_PER_PAGE: usize = 100;
/// The `lines` route: text per page at most (contract "Reading").
pub const MAX_LINES_PAGE_BYTES: usize = 1_048_576;
/// The `lines` route: a file larger than this decoded is `413`; read its segments (contract
/// "Reading").
pub const MAX_LINES_FILE_BYTES: u64 = 67_108_864;
/// The placeholder a redacted secret becomes: `[REDACTED:<rule>]` (contract "Client rules").
pub const REDACTED_PREFIX: &str = "[REDACTED:";

/// The lane's routes on the ingest function (contract "Routes" and "Reading").
pub mod path {
    /// `GET`: a file's generation and acknowledged offset.
    pub const STATE: &str = "/api/agent-sessions/transcripts/state";
    /// `POST`: an upload intent.
    pub const INTENT: &str = "/api/agent-sessions/transcripts/intent";
    /// `PUT {UPLOADS}/{uploadId}`: the direct transport's upload.
    pub const UPLOADS: &str = "/api/agent-sessions/transcripts/uploads";
    /// `POST`: verify what was stored and move the acknowledged offset.
    pub const COMPLETE: &str = "/api/agent-sessions/transcripts/complete";
    /// `GET` (read token): a session's files and segments.
    pub const FILES: &str = "/api/agent-sessions/transcripts";
    /// `GET` (read token): one segment's stored bytes, direct mode.
    pub const SEGMENT: &str = "/api/agent-sessions/transcripts/segment";
    /// `GET` (read token): a file's decompressed lines, paged.
    pub const LINES: &str = "/api/agent-sessions/transcripts/lines";
    /// `GET` (read token): search an org's transcripts.
    pub const SEARCH: &str = "/api/agent-sessions/transcripts/search";
    /// `GET` (read token): what the org's archive keeps, and when its oldest segment expires.
    pub const RETENTION: &str = "/api/agent-sessions/transcripts/retention";
    /// `GET` (read token): a session's transcript as its redacted JSON Lines.
    pub const EXPORT: &str = "/api/agent-sessions/transcripts/export";
}

/// The lane's own `error.code` strings (the metadata lane's `unauthenticated`,
/// `target_not_owned`, `feature_disabled`, `rate_limited`, `not_found`, `method_not_allowed`
/// keep their meaning here).
pub mod code {
    /// 403: transcripts are switched off, globally or for the org.
    pub const TRANSCRIPTS_DISABLED: &str = "transcripts_disabled";
    /// 409: the segment does not start at the file's acknowledged offset (or its generation is
    /// behind); `data` carries the file's state.
    pub const OFFSET_MISMATCH: &str = "offset_mismatch";
    /// 409: `complete` for an upload whose bytes are not stored yet.
    pub const UPLOAD_MISSING: &str = "upload_missing";
    /// 410: the intent's time ran out before it was completed.
    pub const UPLOAD_EXPIRED: &str = "upload_expired";
    /// 503: the object store does not answer (nothing recorded; the metadata lane unaffected).
    pub const STORE_UNAVAILABLE: &str = "store_unavailable";
}

/// Why the lane refused what a request carries (`400` or `413`): every refusal of the lane has its
/// stable code (contract "Refusals"; the metadata lane's `400` and `413` keep none, as its spec
/// says). Three kinds, for what a client does next ([`Refusal::remedy`]): bytes damaged on the way
/// (send the segment again), a segment over the caps (cut it again under the caps the hello-ack
/// gives), and anything else the same request would meet again (set the file aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The body is not one JSON object without duplicate keys.
    InvalidJson,
    /// A required field is missing or of the wrong type (the message names it).
    InvalidRequest,
    InvalidComputeTargetId,
    InvalidSessionId,
    InvalidFileId,
    InvalidGeneration,
    InvalidOffset,
    /// `sourceBytes`, `decodedBytes` or `compressedBytes` out of range.
    InvalidLength,
    InvalidSha256,
    InvalidUploadId,
    /// A read route's query parameter: unknown, given twice, missing or out of range.
    InvalidParameter,
    /// A read route's cursor: not one the route gave, or of an older generation.
    InvalidCursor,
    /// The search route's `q`: empty, over 512 bytes, over 32 terms, a control character, or
    /// only exclusions (the message says which).
    InvalidQuery,
    /// `413`: an intent's or a complete's body over [`MAX_INTENT_BODY_BYTES`].
    BodyTooLarge,
    /// `413`: a segment's claim over the caps, or an upload's body over [`MAX_SEGMENT_BYTES`].
    SegmentTooLarge,
    /// `413`: the `lines` route on a file over [`MAX_LINES_FILE_BYTES`] decoded (read its
    /// segments).
    FileTooLarge,
    /// `413`: one line over the `lines` page's cap.
    LineTooLarge,
    /// `413`: a session with more files or segments than one listing answers.
    ListingTooLarge,
    /// `413`: an export over what the ingest function answers whole without a bucket.
    ExportTooLarge,
    /// The bytes are not `compressedBytes` long.
    LengthMismatch,
    /// The bytes' SHA-256 is not the intent's.
    ChecksumMismatch,
    /// The bytes are not one zstd frame.
    SegmentNotZstd,
    /// The frame does not decompress to exactly `decodedBytes`.
    DecodedLengthMismatch,
}

/// What a client does about a [`Refusal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// The bytes were damaged on the way: the same segment, sent again, can succeed.
    SendAgain,
    /// The segment is over the server's caps: cut it again under the caps of a fresh hello-ack.
    Recut,
    /// The same request would be refused again: set the file aside.
    SetAside,
}

impl Refusal {
    pub const ALL: [Refusal; 23] = [
        Refusal::InvalidJson,
        Refusal::InvalidRequest,
        Refusal::InvalidComputeTargetId,
        Refusal::InvalidSessionId,
        Refusal::InvalidFileId,
        Refusal::InvalidGeneration,
        Refusal::InvalidOffset,
        Refusal::InvalidLength,
        Refusal::InvalidSha256,
        Refusal::InvalidUploadId,
        Refusal::InvalidParameter,
        Refusal::InvalidCursor,
        Refusal::InvalidQuery,
        Refusal::BodyTooLarge,
        Refusal::SegmentTooLarge,
        Refusal::FileTooLarge,
        Refusal::LineTooLarge,
        Refusal::ListingTooLarge,
        Refusal::ExportTooLarge,
        Refusal::LengthMismatch,
        Refusal::ChecksumMismatch,
        Refusal::SegmentNotZstd,
        Refusal::DecodedLengthMismatch,
    ];

    /// The stable `error.code`.
    pub fn code(self) -> &'static str {
        match self {
            Self::InvalidJson => "invalid_json",
            Self::InvalidRequest => "invalid_request",
            Self::InvalidComputeTargetId => "invalid_compute_target_id",
            Self::InvalidSessionId => "invalid_session_id",
            Self::InvalidFileId => "invalid_file_id",
            Self::InvalidGeneration => "invalid_generation",
            Self::InvalidOffset => "invalid_offset",
            Self::InvalidLength => "invalid_length",
            Self::InvalidSha256 => "invalid_sha256",
            Self::InvalidUploadId => "invalid_upload_id",
            Self::InvalidParameter => "invalid_parameter",
            Self::InvalidCursor => "invalid_cursor",
            Self::InvalidQuery => "invalid_query",
            Self::BodyTooLarge => "body_too_large",
            Self::SegmentTooLarge => "segment_too_large",
            Self::FileTooLarge => "file_too_large",
            Self::LineTooLarge => "line_too_large",
            Self::ListingTooLarge => "listing_too_large",
            Self::ExportTooLarge => "export_too_large",
            Self::LengthMismatch => "length_mismatch",
            Self::ChecksumMismatch => "checksum_mismatch",
            Self::SegmentNotZstd => "segment_not_zstd",
            Self::DecodedLengthMismatch => "decoded_length_mismatch",
        }
    }

    /// `413` for what is too large, `400` for the rest.
    pub fn status(self) -> u16 {
        match self {
            Self::BodyTooLarge
            | Self::SegmentTooLarge
            | Self::FileTooLarge
            | Self::LineTooLarge
            | Self::ListingTooLarge
            | Self::ExportTooLarge => 413,
            _ => 400,
        }
    }

    /// The refusal a code names (`None`: a code this client does not know).
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.code() == code)
    }

    pub fn remedy(self) -> Remedy {
        match self {
            Self::LengthMismatch | Self::ChecksumMismatch => Remedy::SendAgain,
            Self::SegmentTooLarge => Remedy::Recut,
            _ => Remedy::SetAside,
        }
    }
}

/// Whether `id` is a valid `fileId` (contract "Identity and offsets").
pub fn valid_file_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_FILE_ID_BYTES
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_has_its_own_code_and_reads_back_from_it() {
        let mut codes: Vec<&str> = Refusal::ALL.iter().map(|r| r.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), Refusal::ALL.len(), "codes are unique");
        for r in Refusal::ALL {
            assert_eq!(Refusal::from_code(r.code()), Some(r));
            assert!(matches!(r.status(), 400 | 413));
        }
        assert_eq!(Refusal::from_code("nope"), None);
        assert_eq!(Refusal::ChecksumMismatch.remedy(), Remedy::SendAgain);
        assert_eq!(Refusal::SegmentTooLarge.remedy(), Remedy::Recut);
        assert_eq!(Refusal::InvalidFileId.remedy(), Remedy::SetAside);
    }

    #[test]
    fn file_ids_are_names_never_paths() {
        assert!(valid_file_id("s-1.jsonl"));
        assert!(valid_file_id(&"a".repeat(256)));
        for bad in [
            "", ".", "..", "../x", "a/b", "a\\b", "a\0b", ".hidden", "a b",
        ] {
            assert!(!valid_file_id(bad), "{bad:?}");
        }
        assert!(!valid_file_id(&"a".repeat(257)));
    }
}
