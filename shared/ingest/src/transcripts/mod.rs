//! The transcript lane's routes on the ingest function (docs/transcript-wire-contract.md): state,
//! upload intents, the direct transport's uploads, completes, and the read routes for the web app.
//!
//! Spec: "Two independent lanes, own tickers, own queues, own backoff: a transcript upload that
//! fails or is throttled never touches the metadata lane, and the reverse." The lane shares the
//! device token and the envelope with the metadata lane, nothing else: its own rate limit table,
//! its own gate, its own store; a store that is down answers `503 store_unavailable` here and
//! leaves `POST /sync` alone.
//!
//! [`serve`] answers every path under `/api/agent-sessions/transcripts` ([`state`], [`intent`],
//! [`upload`], [`complete`], [`read`]); the archive (`syncplane_archive`) does the storing and the
//! verifying, and [`metrics`] counts segments, bytes and refusals.

pub mod complete;
pub mod intent;
mod metrics;
pub mod read;
pub mod state;
pub mod upload;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};
use serde_json::Value;
use sqlx::PgPool;
use syncplane_contract::transcripts::{MAX_INTENT_BODY_BYTES, Refusal, path};

use super::error::IngestError;
use syncplane_accounts::gates;
use syncplane_accounts::tokens::Device;
use syncplane_archive::ArchiveError;
use syncplane_archive::store::fs::FsStore;
use syncplane_archive::store::s3::S3Store;
use syncplane_archive::store::{Store, StoreError};
use syncplane_core::config::transcripts::TranscriptSettings;
use syncplane_core::http::{error_response, result_response, route_path};

/// The lane's part of the ingest state, built once per execution environment.
#[derive(Clone, Debug)]
pub struct TranscriptsState {
    pub store: Store,
    /// How long an upload intent lives (`TRANSCRIPT_UPLOAD_TTL_SECONDS`).
    pub upload_ttl: Duration,
    /// Intents per minute per compute target (`TRANSCRIPT_RATE_LIMIT_PER_MINUTE`).
    pub rate_limit_per_minute: u32,
    /// Searches per minute per read token (`TRANSCRIPT_SEARCH_RATE_LIMIT_PER_MINUTE`).
    pub search_rate_limit_per_minute: u32,
    /// Exports per minute per read token (`TRANSCRIPT_EXPORT_RATE_LIMIT_PER_MINUTE`).
    pub export_rate_limit_per_minute: u32,
}

impl TranscriptsState {
    /// The direct transport into `root` (which must exist), with the default TTL and limit.
    pub fn direct(root: impl Into<PathBuf>) -> Self {
        let defaults = TranscriptSettings::default();
        Self {
            store: Store::Direct(FsStore { root: root.into() }),
            upload_ttl: defaults.upload_ttl,
            rate_limit_per_minute: defaults.rate_limit_per_minute,
            search_rate_limit_per_minute: defaults.search_rate_limit_per_minute,
            export_rate_limit_per_minute: defaults.export_rate_limit_per_minute,
        }
    }

    /// As the settings say: S3 when `TRANSCRIPT_BUCKET` is set, else the direct transport into
    /// `TRANSCRIPT_DATA_DIR`, created here if it can be (if not, the store answers
    /// `503 store_unavailable` and the metadata lane works on).
    pub async fn from_settings(settings: &TranscriptSettings) -> Self {
        let store = match &settings.bucket {
            Some(_) => Store::S3(S3Store::from_settings(settings).await),
            None => {
                if let Err(e) = tokio::fs::create_dir_all(&settings.data_dir).await {
                    tracing::warn!(
                        dir = %settings.data_dir.display(),
                        error = %e,
                        "TRANSCRIPT_DATA_DIR cannot be created: transcript uploads will answer 503"
                    );
                }
                Store::Direct(FsStore {
                    root: settings.data_dir.clone(),
                })
            }
        };
        Self {
            store,
            upload_ttl: settings.upload_ttl,
            rate_limit_per_minute: settings.rate_limit_per_minute,
            search_rate_limit_per_minute: settings.search_rate_limit_per_minute,
            export_rate_limit_per_minute: settings.export_rate_limit_per_minute,
        }
    }
}

/// What the lane's routes work with: the tenant's database and the lane's own state (store,
/// upload TTL, rate limit); nothing of the metadata lane's.
#[derive(Clone, Copy)]
pub struct Lane<'a> {
    pub pool: &'a PgPool,
    pub transcripts: &'a TranscriptsState,
}

/// One of the lane's routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    State,
    Intent,
    Upload,
    Complete,
    Files,
    Segment,
    Lines,
    Search,
    Retention,
    Unknown,
}

impl Route {
    /// The route of `path`, or `None` when it is not the lane's.
    fn of(path: &str) -> Option<(Self, Option<&str>)> {
        let route = match path {
            path::STATE => Self::State,
            path::INTENT => Self::Intent,
            path::COMPLETE => Self::Complete,
            path::FILES => Self::Files,
            path::SEGMENT => Self::Segment,
            path::LINES => Self::Lines,
            path::SEARCH => Self::Search,
            path::RETENTION => Self::Retention,
            _ => {
                let under = path.strip_prefix(path::FILES)?;
                if !under.starts_with('/') {
                    return None;
                }
                return match path
                    .strip_prefix(path::UPLOADS)
                    .and_then(|r| r.strip_prefix('/'))
                {
                    Some(id) if !id.is_empty() && !id.contains('/') => {
                        Some((Self::Upload, Some(id)))
                    }
                    _ => Some((Self::Unknown, None)),
                };
            }
        };
        Some((route, None))
    }

    /// The one method the route takes, and its `Allow`.
    fn method(self) -> Option<(Method, &'static str)> {
        match self {
            Self::State
            | Self::Files
            | Self::Segment
            | Self::Lines
            | Self::Search
            | Self::Retention => Some((Method::GET, "GET")),
            Self::Intent | Self::Complete => Some((Method::POST, "POST")),
            Self::Upload => Some((Method::PUT, "PUT")),
            Self::Unknown => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::State => "state",
            Self::Intent => "intent",
            Self::Upload => "upload",
            Self::Complete => "complete",
            Self::Files => "files",
            Self::Segment => "segment",
            Self::Lines => "lines",
            Self::Search => "search",
            Self::Retention => "retention",
            Self::Unknown => "unknown",
        }
    }
}

/// A route's answer: JSON in the envelope, or a whole response (a segment's bytes).
enum Answer {
    Json(StatusCode, Value),
    Raw(Response<Body>),
}

/// What a request was found to be, for its metrics.
#[derive(Debug, Default)]
struct Facts {
    /// Compressed and decoded bytes of a segment recorded by this request.
    recorded: Option<(u64, u64)>,
    /// Bytes a direct upload stored.
    stored: Option<u64>,
}

/// Whether `path` is one of the lane's (every path under `/api/agent-sessions/transcripts`).
pub fn owns(path: &str) -> bool {
    Route::of(path).is_some()
}

/// The answer to a request for one of the lane's paths ([`owns`]); any other path is 404.
pub async fn serve(lane: Lane<'_>, req: &Request) -> Response<Body> {
    let (route, id) = Route::of(route_path(req)).unwrap_or((Route::Unknown, None));
    let started = Instant::now();
    let mut facts = Facts::default();
    let result = dispatch(lane, req, route, id, &mut facts).await;
    let elapsed = started.elapsed();
    metrics::record(route.name(), &facts, result.as_ref().err(), elapsed).emit();
    match &result {
        Ok(_) => tracing::info!(
            route = route.name(),
            elapsed_ms = elapsed.as_millis() as u64,
            "transcripts ok"
        ),
        Err(e) => tracing::info!(
            route = route.name(),
            status = e.status().as_u16(),
            code = e.code(),
            elapsed_ms = elapsed.as_millis() as u64,
            "transcripts refused"
        ),
    }
    match result {
        Ok(Answer::Json(status, data)) => result_response::<_, IngestError>(&Ok((status, data))),
        Ok(Answer::Raw(resp)) => resp,
        Err(e) => error_response(&e),
    }
}

async fn dispatch(
    lane: Lane<'_>,
    req: &Request,
    route: Route,
    id: Option<&str>,
    facts: &mut Facts,
) -> Result<Answer, IngestError> {
    let Some((method, allow)) = route.method() else {
        return Err(IngestError::NotFound);
    };
    if req.method() != method {
        return Err(IngestError::MethodNotAllowed { allow });
    }
    let ok = |v: Value| Answer::Json(StatusCode::OK, v);
    match route {
        Route::State => state::get(lane, req).await.map(ok),
        Route::Intent => intent::post(lane, req).await.map(ok),
        Route::Upload => upload::put(lane, req, id.unwrap_or_default(), facts)
            .await
            .map(ok),
        Route::Complete => complete::post(lane, req, facts).await.map(ok),
        Route::Files => read::files(lane, req)
            .await
            .map(|(s, v)| Answer::Json(s, v)),
        Route::Segment => read::segment(lane, req).await.map(Answer::Raw),
        Route::Lines => read::lines(lane, req)
            .await
            .map(|(s, v)| Answer::Json(s, v)),
        Route::Search => read::search(lane, req)
            .await
            .map(|(s, v)| Answer::Json(s, v)),
        Route::Retention => read::retention(lane, req).await.map(ok),
        Route::Unknown => Err(IngestError::NotFound),
    }
}

/// Steps 4 and 5 of the intent (and again at complete): the org's sync policy, fail-closed, then
/// the transcript gate, global (`feature_flags.agent_transcript_sync`, a missing row is off) and
/// the org's (`orgs.transcript_gate`).
pub(crate) async fn check_policy_and_gate(
    lane: Lane<'_>,
    device: &Device,
) -> Result<(), IngestError> {
    if !device.sync_policy_allows() {
        return Err(IngestError::FeatureDisabled);
    }
    let open = gates::gate_open(lane.pool, device.org_id)
        .await
        .map_err(super::error::db_failure("transcript gate"))?;
    if !open {
        return Err(IngestError::TranscriptsDisabled);
    }
    Ok(())
}

pub use syncplane_accounts::gates::TRANSCRIPT_FLAG;

/// An archive failure as the lane answers it; internal detail goes to the logs here.
pub(crate) fn archive_failure(e: ArchiveError) -> IngestError {
    match e {
        ArchiveError::UnknownUpload => IngestError::NotFound,
        ArchiveError::OffsetMismatch(s) => IngestError::OffsetMismatch {
            generation: s.generation,
            acked_offset: s.acked_offset,
        },
        ArchiveError::UploadMissing => IngestError::UploadMissing,
        ArchiveError::UploadExpired => IngestError::UploadExpired,
        ArchiveError::BadSegment(m) => IngestError::refused(
            m.refusal(),
            format!("what is stored is not what the intent said: {m}"),
        ),
        ArchiveError::Store(e) => store_failure(e),
        ArchiveError::Db(e) => super::error::db_failure("transcript archive")(e),
    }
}

/// An intent's or a complete's body over its cap.
pub(crate) fn body_too_large() -> IngestError {
    IngestError::refused(
        Refusal::BodyTooLarge,
        format!("the body is over {MAX_INTENT_BODY_BYTES} bytes"),
    )
}

/// A store failure: logged with its detail, answered `503 store_unavailable` (an object over
/// the size asked for is the client's: `413 segment_too_large`).
pub(crate) fn store_failure(e: StoreError) -> IngestError {
    match e {
        StoreError::TooLarge { .. } => IngestError::refused(
            Refusal::SegmentTooLarge,
            "the segment is larger than its intent said",
        ),
        StoreError::Unavailable(detail) => {
            tracing::error!(error = %detail, "transcript store unavailable");
            IngestError::StoreUnavailable
        }
    }
}

/// A file's state as the lane answers it: `{"generation", "ackedOffset"}`.
pub(crate) fn state_json(s: &syncplane_archive::FileState) -> Value {
    serde_json::json!({"generation": s.generation, "ackedOffset": s.acked_offset})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_under_the_lane_is_the_lanes_and_no_other() {
        assert_eq!(Route::of(path::STATE), Some((Route::State, None)));
        assert_eq!(Route::of(path::FILES), Some((Route::Files, None)));
        assert_eq!(
            Route::of("/api/agent-sessions/transcripts/uploads/abc"),
            Some((Route::Upload, Some("abc")))
        );
        for unknown in [
            "/api/agent-sessions/transcripts/uploads",
            "/api/agent-sessions/transcripts/uploads/",
            "/api/agent-sessions/transcripts/uploads/a/b",
            "/api/agent-sessions/transcripts/nope",
        ] {
            assert_eq!(
                Route::of(unknown),
                Some((Route::Unknown, None)),
                "{unknown}"
            );
        }
        for other in [
            "/api/agent-sessions/sync",
            "/api/agent-sessions/hello",
            "/api/agent-sessions/transcriptsx",
        ] {
            assert_eq!(Route::of(other), None, "{other}");
        }
    }
}
