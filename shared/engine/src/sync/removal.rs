//! Removal rule (spec "Removal rule"): a stored repository is deleted (cascading to its
//! documents, README and code owners) only on an authoritative signal:
//!
//! - absent from a complete installation listing, confirmed by a second listing;
//! - dropped from `repos`, matched by `exclude`, or archived upstream;
//! - a verified webhook reporting it deleted, archived, or removed from the installation.
//!
//! Nothing is deleted on a failed or partial listing, a transient 404, or a failed repository
//! fetch. The delete re-checks inside its transaction that the repository was not rediscovered
//! (no newer rerun marker) and not written after the listing was taken.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::sync::failure::RepoFailure;
use syncplane_core::config::SyncConfig;
use syncplane_github::{GithubClient, RepoInfo};

pub use syncplane_runs::RemovalError;

/// Why a repository is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Absent from two complete listings.
    AbsentTwice,
    /// Listed, but the configuration no longer selects it.
    NotSelected,
    /// Listed as archived.
    Archived,
    /// A verified webhook said so.
    Webhook,
}

impl Signal {
    /// The signal's name in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AbsentTwice => "absent_twice",
            Self::NotSelected => "not_selected",
            Self::Archived => "archived",
            Self::Webhook => "webhook",
        }
    }
}

/// Whether the configuration selects a listed repository (archived ones never are).
pub fn selected(config: &SyncConfig, repo: &RepoInfo) -> bool {
    !repo.archived && config.selects(&format!("{}/{}", repo.owner, repo.name))
}

/// Apply the removal rule after a complete listing taken at `listed_at`. The second listing
/// is requested only when some stored repository is missing from the first. Returns how many
/// repositories were removed; a failing second listing removes none of the absent ones.
pub async fn apply_after_listing(
    pool: &PgPool,
    client: &GithubClient,
    config: &SyncConfig,
    listing: &[RepoInfo],
    listed_at: DateTime<Utc>,
) -> Result<u32, RemovalError> {
    let stored: Vec<(i64, String, String)> =
        sqlx::query_as("SELECT github_id, owner, name FROM repos")
            .fetch_all(pool)
            .await?;
    let listed: std::collections::HashMap<i64, &RepoInfo> =
        listing.iter().map(|r| (r.github_id, r)).collect();

    let mut remove: Vec<(i64, Signal)> = Vec::new();
    let mut absent: Vec<i64> = Vec::new();
    for (github_id, _, _) in &stored {
        match listed.get(github_id) {
            Some(repo) if repo.archived => remove.push((*github_id, Signal::Archived)),
            Some(repo) if !selected(config, repo) => remove.push((*github_id, Signal::NotSelected)),
            Some(_) => {}
            None => absent.push(*github_id),
        }
    }
    if !absent.is_empty() {
        // Offset pagination can miss a repository when the set shifts between pages: only a
        // second complete listing that also lacks it is evidence.
        match client.list_installation_repos().await {
            Ok(second) => {
                let again: HashSet<i64> = second.iter().map(|r| r.github_id).collect();
                remove.extend(
                    absent
                        .into_iter()
                        .filter(|id| !again.contains(id))
                        .map(|id| (id, Signal::AbsentTwice)),
                );
            }
            Err(e) if e.is_run_stopping() => return Err(RemovalError::RunStopped(e)),
            Err(e) => tracing::warn!(error = %e, "second listing failed; absent repositories kept"),
        }
    }
    let mut removed = 0;
    for (github_id, signal) in remove {
        if delete(pool, github_id, Some(listed_at)).await? {
            tracing::info!(github_id, signal = signal.as_str(), "repository removed");
            removed += 1;
        }
    }
    Ok(removed)
}

/// Delete one repository. With `listed_at`, the delete re-checks in its transaction that the
/// repository was neither written nor requested again after the listing was taken.
pub async fn delete(
    pool: &PgPool,
    github_id: i64,
    listed_at: Option<DateTime<Utc>>,
) -> Result<bool, sqlx::Error> {
    let mut tx = pool.begin().await?;
    // Lock the row so a concurrent writer either commits before (and is seen) or waits.
    let row: Option<(DateTime<Utc>, Option<DateTime<Utc>>)> = sqlx::query_as(
        "SELECT updated_at, sync_requested_at FROM repos WHERE github_id = $1 FOR UPDATE",
    )
    .bind(github_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((updated_at, requested_at)) = row else {
        return Ok(false);
    };
    if let Some(listed_at) = listed_at {
        let rediscovered = requested_at.is_some_and(|t| t > listed_at);
        if updated_at > listed_at || rediscovered {
            tracing::info!(
                github_id,
                "repository written or requested after the listing; not removed"
            );
            return Ok(false);
        }
    }
    let deleted = sqlx::query("DELETE FROM repos WHERE github_id = $1")
        .bind(github_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(deleted > 0)
}

/// Installation deleted or suspended: every repository is marked error, all content kept.
pub async fn mark_installation_unavailable(pool: &PgPool) -> Result<u64, sqlx::Error> {
    let f = RepoFailure::InstallationUnavailable;
    Ok(sqlx::query(
        "UPDATE repos SET sync_status = 'error', sync_error_code = $1, sync_error = $2, updated_at = now()
         WHERE (sync_status, sync_error_code, sync_error) IS DISTINCT FROM ('error', $1, $2)",
    )
    .bind(f.code())
    .bind(f.message())
    .execute(pool)
    .await?
    .rows_affected())
}
