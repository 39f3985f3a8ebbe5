//! The installation's listing for a full run (spec `syncAll`, step 1; issue 23, Build 1): the
//! repositories and, where it can be had, each one's head, from one GraphQL query per 100
//! repositories (`viewer.repositories`), so a no-op run needs nothing else from GitHub.
//!
//! GitHub does not document `viewer.repositories` for installation tokens, so its answer is used
//! only when it is complete: its pages add up to its `totalCount` (checked by the client), and
//! that count is the REST listing's `total_count`. The REST count costs one request; it is asked
//! when the count differs from the last one confirmed, or that confirmation is older than
//! [`RECONFIRM_AFTER`] (`listing_checks`). Otherwise, or when the GraphQL listing fails, the run
//! takes today's REST listing (its heads are then read with `nodes(ids:)`), says so in one log
//! line and counts it in the `ListingFallbacks` metric. Removal never rests on the GraphQL
//! listing alone: a stored repository it lacks is removed only when a second, REST, listing
//! lacks it too (`removal`).

use std::collections::HashMap;

use chrono::{DateTime, TimeDelta, Utc};

use crate::sync::removal;
use crate::sync::repository::SyncError;
use crate::sync::workspace::Workspace;
use syncplane_core::metrics::{Record, Unit};
use syncplane_github::{BatchHead, GithubError, RepoInfo, ViewerListing};

/// A confirmed count is trusted this long; then REST is asked again (one request a day).
pub(crate) const RECONFIRM_AFTER: TimeDelta = TimeDelta::hours(24);

/// Where the listing came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `viewer.repositories`, heads included.
    Graphql,
    /// The REST listing (the GraphQL one failed or was incomplete).
    Rest,
}

/// The installation's repositories, the database instant taken just before they were listed,
/// and the heads the listing carried (none from REST).
#[derive(Debug)]
pub struct Estate {
    pub repos: Vec<RepoInfo>,
    pub heads: HashMap<i64, BatchHead>,
    pub listed_at: DateTime<Utc>,
    pub source: Source,
}

/// Why the GraphQL listing was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fallback {
    /// The query failed or its answer could not be believed.
    Unusable,
    /// Its count is not the REST listing's.
    Incomplete { graphql: u64, rest: u64 },
}

/// List the installation. A deleted or suspended installation marks every repository error
/// (content kept); a run-stopping error stops the run, removes nothing and leaves every marker.
pub async fn take(ws: &Workspace) -> Result<Estate, SyncError> {
    let listed_at: DateTime<Utc> = sqlx::query_scalar("SELECT clock_timestamp()")
        .fetch_one(&ws.pool)
        .await?;
    let fallback = match ws.client.viewer_listing().await {
        Ok(listing) => match confirm(ws, &listing).await? {
            None => return Ok(from_graphql(listing, listed_at)),
            Some(why) => why,
        },
        Err(e) if e.is_run_stopping() => return Err(stopped(ws, e).await),
        Err(_) => Fallback::Unusable,
    };
    report(ws, fallback);
    let repos = match ws.client.list_installation_repos().await {
        Ok(repos) => repos,
        Err(e) => return Err(stopped(ws, e).await),
    };
    Ok(Estate {
        repos,
        heads: HashMap::new(),
        listed_at,
        source: Source::Rest,
    })
}

async fn stopped(ws: &Workspace, e: GithubError) -> SyncError {
    if let GithubError::InstallationUnavailable { .. } = e
        && let Err(db) = removal::mark_installation_unavailable(&ws.pool).await
    {
        return SyncError::Database(db);
    }
    SyncError::RunStopped(e)
}

fn from_graphql(listing: ViewerListing, listed_at: DateTime<Utc>) -> Estate {
    let mut heads = HashMap::with_capacity(listing.repos.len());
    let repos = listing
        .repos
        .into_iter()
        .map(|listed| {
            heads.insert(listed.info.github_id, listed.head);
            listed.info
        })
        .collect();
    Estate {
        repos,
        heads,
        listed_at,
        source: Source::Graphql,
    }
}

/// `None` when the GraphQL listing's count is confirmed, from `listing_checks` or by asking
/// REST (a match is recorded). Run-stopping errors of the REST count stop the run.
async fn confirm(ws: &Workspace, listing: &ViewerListing) -> Result<Option<Fallback>, SyncError> {
    let installation = ws.client.installation_id() as i64;
    let graphql = listing.total_count as u64;
    let known: Option<(i64, DateTime<Utc>)> = sqlx::query_as(
        "SELECT total_count, confirmed_at FROM listing_checks WHERE installation_id = $1",
    )
    .bind(installation)
    .fetch_optional(&ws.pool)
    .await?;
    let now = Utc::now();
    if known.is_some_and(|(n, at)| n as u64 == graphql && now - at < RECONFIRM_AFTER) {
        return Ok(None);
    }
    let rest = match ws.client.installation_repo_count().await {
        Ok(n) => n,
        Err(e) if e.is_run_stopping() => return Err(stopped(ws, e).await),
        Err(_) => return Ok(Some(Fallback::Unusable)),
    };
    if rest != graphql {
        return Ok(Some(Fallback::Incomplete { graphql, rest }));
    }
    sqlx::query(
        "INSERT INTO listing_checks (installation_id, total_count, confirmed_at)
         VALUES ($1, $2, $3)
         ON CONFLICT (installation_id) DO UPDATE
         SET total_count = EXCLUDED.total_count, confirmed_at = EXCLUDED.confirmed_at",
    )
    .bind(installation)
    .bind(rest as i64)
    .bind(now)
    .execute(&ws.pool)
    .await?;
    Ok(None)
}

/// One log line and one metric per fallback.
fn report(ws: &Workspace, why: Fallback) {
    match why {
        Fallback::Unusable => tracing::warn!(
            tenant = %ws.tenant,
            "viewer.repositories listing unusable; listing over REST (heads by nodes(ids:))"
        ),
        Fallback::Incomplete { graphql, rest } => tracing::warn!(
            tenant = %ws.tenant,
            graphql,
            rest,
            "viewer.repositories listed {graphql} repositories, REST counts {rest}; listing over REST"
        ),
    }
    let reason = match why {
        Fallback::Unusable => "unusable",
        Fallback::Incomplete { .. } => "incomplete",
    };
    Record::new(ws.tenant.as_str())
        .metric_by(&[("Reason", reason)], "ListingFallbacks", Unit::Count, 1)
        .emit();
}
