//! The `transcripts.expire` job: the transcript archive's retention run in the background (issue
//! 20 §7: "retention per organization (a setting, with a deletion path that removes objects and
//! rows)"). The deletion path is `syncplane_archive::retention::expire`; this runs it on the tenant's
//! database with the archive's store, so a deployment deletes what its orgs' retention says is due
//! and the objects of uploads never completed without an operator running `syncplane transcripts
//! expire` by hand. The tick submits it hourly (`syncplane_jobs::scheduler::rules::retention_due`).
//!
//! The archive lives in ONE tenant's database, the first (the one the ingest function serves, as
//! `crate::s3_events::archive` completes uploads in); a process that runs jobs knows it as a
//! [`TranscriptArchive`]: the worker function with `TRANSCRIPT_BUCKET` (the S3 store), the inline
//! runner of `syncplane serve` (the store its ingest uses). Any other tenant, or a process with no
//! archive, has nothing to expire: the job is `Ignored` with the reason.
//!
//! Each run reports what each org's archive keeps (issue 34 point 5: `TranscriptBytesStored`,
//! `TranscriptBytesDecoded`, `TranscriptSegmentsKept` by `Org`; [`usage::kept`]).
//!
//! It also indexes what the search index has not taken yet (issue 34; up to
//! [`LEFTOVER_SEGMENTS`]): a segment whose S3 notification was lost is searchable within the hour.

use chrono::{DateTime, Utc};

use syncplane_archive::retention::{self, Expired, RetentionError};
use syncplane_archive::search::index;
use syncplane_archive::store::Store;
use syncplane_archive::usage;
use syncplane_core::config::{Config, TenantId};
use syncplane_core::metrics::{Record, Unit};
use syncplane_jobs::tenants::Tenants;
use syncplane_jobs::{JobError, JobOutcome};

/// Queued segments one run indexes at most.
pub const LEFTOVER_SEGMENTS: u64 = 2_000;

/// The transcript archive as a job runner knows it: the tenant whose database records it, and
/// the store holding its objects.
#[derive(Clone, Debug)]
pub struct TranscriptArchive {
    pub tenant: TenantId,
    pub store: Store,
}

impl TranscriptArchive {
    /// `store` as the archive of the FIRST configured tenant; `None` without a tenant.
    pub fn first_tenant(config: &Config, store: Store) -> Option<Self> {
        Some(Self {
            tenant: config.tenants.first()?.id.clone(),
            store,
        })
    }
}

/// What `transcripts.expire` deleted, as the job's outcome.
fn outcome(e: Expired) -> JobOutcome {
    JobOutcome::Expired {
        segments: e.segments,
        files: e.files,
        uploads: e.uploads,
        objects: e.objects,
    }
}

/// Why the archive's retention failed, as the job's error.
fn job_error(e: RetentionError) -> JobError {
    match e {
        RetentionError::Database(db) => JobError::Database(db),
        RetentionError::Store(store) => JobError::TranscriptStore(store.to_string()),
    }
}

/// `transcripts.expire` for `tenant` as of `now`: the archive's retention in batches of
/// [`retention::DEFAULT_BATCH`], or `Ignored` when `archive` is not this tenant's.
pub async fn expire(
    tenants: &Tenants,
    archive: Option<&TranscriptArchive>,
    tenant: &str,
    now: DateTime<Utc>,
) -> Result<JobOutcome, JobError> {
    let db = tenants.database(tenant)?;
    let Some(archive) = archive.filter(|a| a.tenant.as_str() == tenant) else {
        return Ok(JobOutcome::Ignored {
            reason: format!(
                "no transcript archive in tenant '{tenant}' here (the first tenant's, with \
                 TRANSCRIPT_BUCKET on the worker or the store of syncplane serve)"
            ),
        });
    };
    let done = retention::expire(&db.pool, &archive.store, now, retention::DEFAULT_BATCH)
        .await
        .map_err(job_error)?;
    // What the search index has not taken yet (a lost S3 notification): indexed here.
    match index::drain(&db.pool, &archive.store, LEFTOVER_SEGMENTS).await {
        Ok(d) if d.segments > 0 => {
            tracing::info!(
                tenant,
                segments = d.segments,
                "leftover transcript segments indexed"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(tenant, error = %e, "transcript indexing failed"),
    }
    report_kept(&db.pool, tenant).await;
    tracing::info!(
        tenant,
        segments = done.segments,
        files = done.files,
        uploads = done.uploads,
        objects = done.objects,
        "transcripts expired"
    );
    Ok(outcome(done))
}

/// The metrics of what each org's archive keeps (orgs with no transcript file are left out).
async fn report_kept(pool: &sqlx::PgPool, tenant: &str) {
    let kept = match usage::kept(pool, None).await {
        Ok(k) => k,
        Err(e) => {
            tracing::warn!(tenant, error = %e, "transcript usage not read");
            return;
        }
    };
    for k in kept.iter().filter(|k| k.files > 0) {
        let org = [("Org", k.org.as_str())];
        Record::new(tenant)
            .metric_by(
                &org,
                "TranscriptBytesStored",
                Unit::Bytes,
                k.compressed_bytes as f64,
            )
            .metric_by(
                &org,
                "TranscriptBytesDecoded",
                Unit::Bytes,
                k.decoded_bytes as f64,
            )
            .metric_by(
                &org,
                "TranscriptSegmentsKept",
                Unit::Count,
                k.segments as f64,
            )
            .emit();
    }
}
