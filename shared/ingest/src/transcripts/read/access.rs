//! What every read route shares: the archive it reads ([`Reading`]), its query parameters, each
//! bounded and typed before any query runs, and the org-scoped lookup of one file. A session or a
//! file of another org is never found: every query is filtered by the read token's org.

use std::time::Duration;

use lambda_http::Request;
use sqlx::PgPool;
use syncplane_contract::chars;
use syncplane_contract::transcripts::{Refusal, valid_file_id};
use syncplane_core::params;

use crate::error::{IngestError, db_failure};
use syncplane_archive::store::{Store, StoreError};

/// What the read routes read: the tenant's database, the archive's store and how long a
/// segment's URL stays valid (`TRANSCRIPT_UPLOAD_TTL_SECONDS`, contract "Reading").
#[derive(Clone, Copy)]
pub struct Reading<'a> {
    pub pool: &'a PgPool,
    pub store: &'a Store,
    pub url_ttl: Duration,
}

/// A request's query parameters (`syncplane_core::params`), checked against the names a route
/// takes: an unknown name or one given twice is 400 `invalid_parameter`; with the lane's typed
/// reads of them.
pub struct Params(params::Params);

impl Params {
    pub fn parse(req: &Request, known: &'static [&'static str]) -> Result<Self, IngestError> {
        let parsed = params::Params::parse(req.uri().query(), known, &[]).map_err(|_| {
            IngestError::refused(
                Refusal::InvalidParameter,
                format!("unknown query parameter (known: {})", known.join(", ")),
            )
        })?;
        if let Some(name) = parsed.repeated() {
            return Err(IngestError::refused(
                Refusal::InvalidParameter,
                format!("{name}: given twice"),
            ));
        }
        Ok(Self(parsed))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.all(name).next()
    }

    pub fn required(&self, name: &str) -> Result<&str, IngestError> {
        self.get(name).ok_or_else(|| {
            IngestError::refused(Refusal::InvalidParameter, format!("{name}: required"))
        })
    }

    /// A whole number in `min..=max`, `None` when absent.
    pub fn number(&self, name: &str, min: u64, max: u64) -> Result<Option<u64>, IngestError> {
        self.get(name)
            .map(|v| {
                v.parse::<u64>()
                    .ok()
                    .filter(|n| (min..=max).contains(n))
                    .ok_or_else(|| {
                        IngestError::refused(
                            Refusal::InvalidParameter,
                            format!("{name}: a whole number {min} to {max}"),
                        )
                    })
            })
            .transpose()
    }

    /// An RFC 3339 time (`2026-11-02T10:00:00Z`), `None` when absent; anything else is 400
    /// `invalid_parameter`.
    pub fn time(&self, name: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>, IngestError> {
        self.get(name)
            .map(|v| {
                chrono::DateTime::parse_from_rfc3339(v)
                    .map(|t| t.with_timezone(&chrono::Utc))
                    .map_err(|_| {
                        IngestError::refused(
                            Refusal::InvalidParameter,
                            format!("{name}: an RFC 3339 time (2026-11-02T10:00:00Z)"),
                        )
                    })
            })
            .transpose()
    }

    /// `computeTargetId` and `sessionId`, as the metadata lane bounds them (1 to 128 and 1 to 200
    /// characters; no NUL, which no stored id holds).
    pub fn session(&self) -> Result<SessionKey, IngestError> {
        let target = bounded(
            self.required("computeTargetId")?,
            Refusal::InvalidComputeTargetId,
            "computeTargetId",
            chars::COMPUTE_TARGET_ID,
        )?;
        let session = bounded(
            self.required("sessionId")?,
            Refusal::InvalidSessionId,
            "sessionId",
            chars::SESSION_ID,
        )?;
        Ok(SessionKey {
            compute_target_id: target.to_owned(),
            session_id: session.to_owned(),
        })
    }

    /// An optional identifier of 1 to `max_chars` characters (no NUL), refused with `refusal`.
    pub fn bounded(
        &self,
        name: &str,
        max_chars: usize,
        refusal: Refusal,
    ) -> Result<Option<&str>, IngestError> {
        self.get(name)
            .map(|v| bounded(v, refusal, name, max_chars))
            .transpose()
    }

    /// `fileId` (contract "Identity and offsets": a name, never a path).
    pub fn file_id(&self) -> Result<String, IngestError> {
        let id = self.required("fileId")?;
        if !valid_file_id(id) {
            return Err(IngestError::refused(
                Refusal::InvalidFileId,
                "fileId: 1 to 256 bytes of A-Z a-z 0-9 . _ -, not starting with .",
            ));
        }
        Ok(id.to_owned())
    }
}

fn bounded<'v>(
    value: &'v str,
    refusal: Refusal,
    name: &str,
    max_chars: usize,
) -> Result<&'v str, IngestError> {
    let n = value.chars().count();
    if n == 0 || n > max_chars || value.contains('\0') {
        return Err(IngestError::refused(
            refusal,
            format!("{name}: 1 to {max_chars} characters"),
        ));
    }
    Ok(value)
}

/// One session of one compute target.
#[derive(Debug, Clone)]
pub struct SessionKey {
    pub compute_target_id: String,
    pub session_id: String,
}

/// A transcript file of the reader's org, at its current generation.
#[derive(Debug, Clone, syncplane_core::FromRow)]
pub(crate) struct FileRow {
    pub id: i64,
    pub file_id: String,
    pub generation: i32,
    pub acked_offset: i64,
    pub decoded_bytes: i64,
}

/// The file of `org_id`'s session named `file_id`; `None` (a 404 to the caller) for another
/// org's, or none.
pub async fn file_row(
    pool: &PgPool,
    org_id: i64,
    session: &SessionKey,
    file_id: &str,
) -> Result<Option<FileRow>, IngestError> {
    sqlx::query_as(
        "SELECT id, file_id, generation, acked_offset, decoded_bytes FROM transcript_files
          WHERE org_id = $1 AND compute_target_id = $2 AND session_id = $3 AND file_id = $4",
    )
    .bind(org_id)
    .bind(&session.compute_target_id)
    .bind(&session.session_id)
    .bind(file_id)
    .fetch_optional(pool)
    .await
    .map_err(db_failure("read transcript file"))
}

/// A store failure on a read route: the detail to the logs, the client a 5xx.
pub(crate) fn store_failure(context: &'static str) -> impl FnOnce(StoreError) -> IngestError {
    move |e| {
        tracing::error!(error = %e, context, "transcript store failure");
        IngestError::StoreUnavailable
    }
}
