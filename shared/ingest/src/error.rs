//! The one error type of the ingest surface: each variant has its HTTP status and its stable code,
//! or none where the contract says the status carries none (400 and 413 never do; 403 and 409
//! always do). Internal detail goes to the logs, never into a response.

use http::StatusCode;
use syncplane_contract::code;
use syncplane_contract::transcripts::Refusal;
use syncplane_contract::transcripts::code as transcripts;

use syncplane_core::http::HttpError;

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed { allow: &'static str },
    /// Token missing, unknown or revoked.
    #[error("missing or invalid device token")]
    Unauthenticated,
    /// A read route's token missing, unknown or revoked (an org read token, `spr_...`; a device
    /// token is none). The same status and code; the message names the token the route takes.
    #[error("missing or invalid read token (an organization read token, spr_...)")]
    ReadUnauthenticated,
    /// The wire or the decoded size cap.
    #[error("request body too large")]
    PayloadTooLarge,
    #[error("unsupported content encoding")]
    UnsupportedEncoding,
    /// The message says what was wrong with the payload (never an internal detail).
    #[error("{0}")]
    BadRequest(String),
    #[error("compute target is not owned by this device's user")]
    TargetNotOwned,
    #[error("rate limit exceeded")]
    RateLimited { retry_after_secs: u64 },
    /// Every admission slot of this server stayed taken ([`super::admission`]).
    #[error("server busy, retry later")]
    ServerBusy { retry_after_secs: u64 },
    #[error("agent session sync is disabled for this organization")]
    FeatureDisabled,
    #[error("chunk out of sequence")]
    ChunkOutOfSequence,
    /// The database failed; the detail was logged where it happened.
    #[error("ingestion failed")]
    IngestionFailed,
    /// No connection within `db::ACQUIRE_TIMEOUT`, or the server refused one
    /// (`db::is_unreachable`): nothing was read or stored.
    #[error("the database does not answer")]
    DatabaseUnreachable,
    /// Transcript lane: switched off globally (`feature_flags.agent_transcript_sync`) or for the
    /// org (`orgs.transcript_gate`).
    #[error("transcript sync is disabled for this organization")]
    TranscriptsDisabled,
    /// Transcript lane: the segment does not continue the file; `data` is the file's state.
    #[error("the segment does not start at the acknowledged offset")]
    OffsetMismatch { generation: u32, acked_offset: u64 },
    /// Transcript lane: `complete` before the bytes are stored.
    #[error("nothing is stored for this upload yet")]
    UploadMissing,
    /// Transcript lane: the intent ran out before it was completed.
    #[error("the upload intent expired")]
    UploadExpired,
    /// Transcript lane: the object store failed; the detail was logged where it happened.
    #[error("the transcript store is unavailable, retry later")]
    StoreUnavailable,
    /// Transcript lane: what the request carries is refused, `400` or `413` with the lane's own
    /// code ([`Refusal`]); the message says what was wrong (never an internal detail).
    #[error("{message}")]
    Refused { refusal: Refusal, message: String },
}

impl IngestError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::BadRequest(message.into())
    }

    /// A transcript lane refusal with its code.
    pub fn refused(refusal: Refusal, message: impl Into<String>) -> Self {
        Self::Refused {
            refusal,
            message: message.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::Unauthenticated | Self::ReadUnauthenticated => StatusCode::UNAUTHORIZED,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedEncoding => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::TargetNotOwned | Self::FeatureDisabled => StatusCode::FORBIDDEN,
            Self::RateLimited { .. } | Self::ServerBusy { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::ChunkOutOfSequence => StatusCode::CONFLICT,
            Self::IngestionFailed => StatusCode::INTERNAL_SERVER_ERROR,
            Self::DatabaseUnreachable => StatusCode::SERVICE_UNAVAILABLE,
            Self::TranscriptsDisabled => StatusCode::FORBIDDEN,
            Self::OffsetMismatch { .. } | Self::UploadMissing => StatusCode::CONFLICT,
            Self::UploadExpired => StatusCode::GONE,
            Self::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Refused { refusal, .. } => {
                StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::BAD_REQUEST)
            }
        }
    }

    /// The stable machine-readable code, where the contract gives one
    /// ([`syncplane_contract::code`]).
    pub fn code(&self) -> Option<&'static str> {
        match self {
            Self::NotFound => Some(code::NOT_FOUND),
            Self::MethodNotAllowed { .. } => Some(code::METHOD_NOT_ALLOWED),
            Self::Unauthenticated | Self::ReadUnauthenticated => Some(code::UNAUTHENTICATED),
            Self::PayloadTooLarge | Self::BadRequest(_) => None,
            Self::UnsupportedEncoding => Some(code::UNSUPPORTED_ENCODING),
            Self::TargetNotOwned => Some(code::TARGET_NOT_OWNED),
            Self::RateLimited { .. } => Some(code::RATE_LIMITED),
            Self::ServerBusy { .. } => Some(code::SERVER_BUSY),
            Self::FeatureDisabled => Some(code::FEATURE_DISABLED),
            Self::ChunkOutOfSequence => Some(code::CHUNK_OUT_OF_SEQUENCE),
            Self::IngestionFailed => Some(code::INGESTION_FAILED),
            Self::DatabaseUnreachable => Some(code::DATABASE_UNREACHABLE),
            Self::TranscriptsDisabled => Some(transcripts::TRANSCRIPTS_DISABLED),
            Self::OffsetMismatch { .. } => Some(transcripts::OFFSET_MISMATCH),
            Self::UploadMissing => Some(transcripts::UPLOAD_MISSING),
            Self::UploadExpired => Some(transcripts::UPLOAD_EXPIRED),
            Self::StoreUnavailable => Some(transcripts::STORE_UNAVAILABLE),
            Self::Refused { refusal, .. } => Some(refusal.code()),
        }
    }
}

impl HttpError for IngestError {
    fn status(&self) -> StatusCode {
        IngestError::status(self)
    }
    fn code(&self) -> Option<&'static str> {
        IngestError::code(self)
    }
    fn headers(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::RateLimited { retry_after_secs } | Self::ServerBusy { retry_after_secs } => {
                vec![("retry-after", retry_after_secs.to_string())]
            }
            Self::MethodNotAllowed { allow } => vec![("allow", (*allow).to_owned())],
            Self::DatabaseUnreachable => vec![(
                "retry-after",
                syncplane_core::db::UNREACHABLE_RETRY_AFTER_SECS.to_string(),
            )],
            _ => Vec::new(),
        }
    }
    fn data(&self) -> Option<serde_json::Value> {
        match self {
            Self::OffsetMismatch {
                generation,
                acked_offset,
            } => Some(serde_json::json!({"generation": generation, "ackedOffset": acked_offset})),
            _ => None,
        }
    }
}

/// A token check's refusal, as this function answers it: `401 unauthenticated` (the device or
/// the read kind), `503 database_unreachable`, or `500` for any other failure.
impl From<syncplane_accounts::AccountsError> for IngestError {
    fn from(e: syncplane_accounts::AccountsError) -> Self {
        use syncplane_accounts::AccountsError as A;
        use syncplane_accounts::tokens::TokenKind;
        match e {
            A::Unauthenticated(TokenKind::Device) => Self::Unauthenticated,
            A::Unauthenticated(TokenKind::Read) => Self::ReadUnauthenticated,
            A::DatabaseUnreachable => Self::DatabaseUnreachable,
            A::Failed => Self::IngestionFailed,
        }
    }
}

/// A database failure: logged here with its detail, answered as 500 `ingestion_failed`, or 503
/// `database_unreachable` when the database does not answer at all (`db::is_unreachable`).
pub(crate) fn db_failure(context: &'static str) -> impl FnOnce(sqlx::Error) -> IngestError {
    move |e| {
        if syncplane_core::db::is_unreachable(&e) {
            tracing::warn!(error = %e, context, "ingest: the database does not answer");
            return IngestError::DatabaseUnreachable;
        }
        tracing::error!(error = %e, context, "ingest database failure");
        IngestError::IngestionFailed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_only_where_the_contract_puts_them() {
        assert_eq!(IngestError::PayloadTooLarge.code(), None);
        assert_eq!(IngestError::bad_request("x").code(), None);
        assert_eq!(IngestError::TargetNotOwned.code(), Some("target_not_owned"));
        assert_eq!(
            IngestError::FeatureDisabled.code(),
            Some("feature_disabled")
        );
        assert_eq!(
            IngestError::ChunkOutOfSequence.code(),
            Some("chunk_out_of_sequence")
        );
        assert_eq!(IngestError::IngestionFailed.status(), 500);
    }

    #[test]
    fn every_transcript_refusal_carries_its_status_and_code() {
        for r in Refusal::ALL {
            let e = IngestError::refused(r, "why");
            assert_eq!(e.status().as_u16(), r.status());
            assert_eq!(e.code(), Some(r.code()));
            assert_eq!(e.to_string(), "why");
        }
    }

    #[test]
    fn a_database_that_does_not_answer_is_503_database_unreachable_with_retry_after() {
        let e = db_failure("test")(sqlx::Error::PoolTimedOut);
        assert_eq!(
            (e.status().as_u16(), e.code()),
            (503, Some(syncplane_core::db::UNREACHABLE_CODE))
        );
        assert_eq!(
            HttpError::headers(&e),
            vec![("retry-after", "5".to_owned())]
        );
        let e = db_failure("test")(sqlx::Error::RowNotFound);
        assert_eq!(
            e.code(),
            Some("ingestion_failed"),
            "a failed query stays a 500"
        );
    }
}
