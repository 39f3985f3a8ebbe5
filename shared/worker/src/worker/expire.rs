//! The `transcripts.expire` job: the transcript archive's retention run in the background (issue
//! 20 §7: "retention per organization (a setting, with a deletion path that removes objects and
//! rows)"). The deletion path is `syncplane_archive::retention::expire`; this runs it on the tenant's
//! database with the archive's store, so a deployment deletes what its orgs' retention says is due
//! and the objects of uploads never completed without an operator running `syncplane transcripts
//! expire` by hand. The tick submits it hourly (`crate::scheduler::rules::retention_due`).
//!
//! The archive lives in ONE tenant's database, the first (the one the ingest function serves, as
//! `super::s3_events::archive` completes uploads in); a process that runs jobs knows it as a
//! [`TranscriptArchive`]: the worker function with `TRANSCRIPT_BUCKET` (the S3 store), the inline
//! runner of `syncplane serve` (the store its ingest uses). Any other tenant, or a process with no
//! archive, has nothing to expire: the job is `Ignored` with the reason.

use chrono::{DateTime, Utc};

use crate::jobs::{JobError, JobOutcome};
use crate::tenants::Tenants;
use syncplane_archive::retention::{self, Expired, RetentionError};
use syncplane_archive::store::Store;
use syncplane_core::config::{Config, TenantId};

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

impl From<Expired> for JobOutcome {
    fn from(e: Expired) -> Self {
        Self::Expired {
            segments: e.segments,
            files: e.files,
            uploads: e.uploads,
            objects: e.objects,
        }
    }
}

impl From<RetentionError> for JobError {
    fn from(e: RetentionError) -> Self {
        match e {
            RetentionError::Database(db) => Self::Database(db),
            RetentionError::Store(store) => Self::TranscriptStore(store.to_string()),
        }
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
    let done = retention::expire(&db.pool, &archive.store, now, retention::DEFAULT_BATCH).await?;
    tracing::info!(
        tenant,
        segments = done.segments,
        files = done.files,
        uploads = done.uploads,
        objects = done.objects,
        "transcripts expired"
    );
    Ok(done.into())
}
