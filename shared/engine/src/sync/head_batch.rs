//! Batched head checks (issue 10, Build 2): full runs (inline and the SQS fan-out) take the heads
//! their GraphQL listing read (issue 23, `estate`); drains, and full runs listed over REST, read
//! the heads of up to 100 repositories per GraphQL request, and only repositories whose
//! head, planned scope or selection fingerprint changed go on to per-repository work (spec "One
//! repository": unchanged only when both the tree and the fingerprint match).
//!
//! Always synced, whatever GraphQL says: a repository with no row yet, one whose status is not
//! `ok` (error or pending), one whose markers were cleared by an incomplete plan, one whose
//! fingerprint differs, one without a node id, and, in a full run, one with a waiting rerun
//! marker. A repository GraphQL resolved as `NOT_FOUND` (a transient 404, never a removal) or
//! answered for unbelievably, and every repository of a batch that failed, are checked over REST
//! by per-repository work. Unchanged ones cost no request and write nothing, except their
//! repository metadata when the listing shows it changed (spec: "refresh repository metadata
//! and status only").

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::sync::fingerprint;
use crate::sync::lock::{HeldLock, repo_key};
use crate::sync::persist::{self, StoredInfo};
use crate::sync::repository::{HeadRead, KnownHead, SyncError};
use crate::sync::workspace::Workspace;
use syncplane_github::{BatchHead, HeadQuery, MAX_IDS_PER_QUERY, RepoInfo};

/// Where the head checks are made: a drain only sees repositories with a marker, so the
/// marker itself cannot be a reason to sync there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    FullRun,
    Drain,
}

/// Listed repositories sorted into those that need per-repository work and those that do not.
#[derive(Debug)]
pub struct Triage {
    pub to_sync: Vec<RepoInfo>,
    /// GitHub ids of repositories whose head, tree and fingerprint match what is stored.
    pub unchanged: Vec<i64>,
    /// What GraphQL said about each repository it was asked about (the docs folder's tree oid
    /// is here for the plan to compare).
    pub heads: HashMap<i64, BatchHead>,
    /// The database instant taken before the first head was read: a marker not newer than it
    /// is covered by what the batch read.
    pub checked_from: DateTime<Utc>,
}

impl Triage {
    /// The head GraphQL read for `repo`, when it is a commit on the listing's default branch:
    /// per-repository work starts from it instead of a REST head check.
    /// How `repo`'s first pass reads its head: from the one read here, else over REST.
    pub(crate) fn head_read(&self, repo: &RepoInfo) -> HeadRead {
        self.known_head(repo)
            .map_or(HeadRead::Rest, HeadRead::Known)
    }

    pub fn known_head(&self, repo: &RepoInfo) -> Option<KnownHead> {
        let read_from = self.checked_from;
        match self.heads.get(&repo.github_id)? {
            BatchHead::Head {
                branch,
                commit_sha,
                tree_sha,
                ..
            } if repo.default_branch.as_deref() == Some(branch.as_str()) => Some(KnownHead {
                branch: branch.clone(),
                commit_sha: commit_sha.clone(),
                tree_sha: tree_sha.clone(),
                read_from,
            }),
            _ => None,
        }
    }
}

/// What is stored for a repository, as the head check compares it.
#[derive(Debug, syncplane_core::FromRow)]
struct StoredHead {
    #[row(flatten)]
    info: StoredInfo,
    docs_path: Option<String>,
    head_commit_sha: Option<String>,
    tree_sha: Option<String>,
    selection_fingerprint: Option<String>,
    sync_status: String,
    marked: bool,
}

impl StoredHead {
    fn metadata_matches(&self, repo: &RepoInfo) -> bool {
        self.info.owner == repo.owner && self.info.name == repo.name && self.info.meta.matches(repo)
    }
}

/// Sort `repos` (already narrowed by configuration) by their heads: the ones the listing read
/// (`listed`), the rest with batched GraphQL head checks. Run-stopping GitHub errors (rate
/// limit, refused token) stop the caller's run; any other GraphQL failure sends that batch to
/// per-repository work.
pub async fn triage(
    ws: &Workspace,
    repos: Vec<RepoInfo>,
    scope: Scope,
    listed: &HashMap<i64, BatchHead>,
) -> Result<Triage, SyncError> {
    let stored = load(ws, &repos).await?;
    let mut triage = Triage {
        to_sync: Vec::new(),
        unchanged: Vec::new(),
        heads: HashMap::new(),
        checked_from: sqlx::query_scalar("SELECT clock_timestamp()")
            .fetch_one(&ws.pool)
            .await?,
    };
    let mut read: Vec<(RepoInfo, BatchHead)> = Vec::new();
    let mut ask: Vec<(RepoInfo, HeadQuery)> = Vec::new();
    for repo in repos {
        let question = question(ws, &repo, stored.get(&repo.github_id), scope);
        match (question, listed.get(&repo.github_id)) {
            (Some(_), Some(head)) => read.push((repo, head.clone())),
            (Some(query), None) => ask.push((repo, query)),
            (None, _) => triage.to_sync.push(repo),
        }
    }
    for batch in ask.chunks(MAX_IDS_PER_QUERY) {
        let queries: Vec<HeadQuery> = batch.iter().map(|(_, q)| q.clone()).collect();
        let heads = match ws.client.batch_heads(&queries).await {
            Ok(heads) => heads,
            Err(e) if e.is_run_stopping() => return Err(SyncError::RunStopped(e)),
            Err(e) => {
                tracing::warn!(error = %e, repositories = batch.len(), "GraphQL head check failed; checking this batch over REST");
                vec![BatchHead::Unusable; batch.len()]
            }
        };
        read.extend(batch.iter().map(|(repo, _)| repo.clone()).zip(heads));
    }
    for (repo, head) in read {
        let Some(row) = stored.get(&repo.github_id) else {
            triage.to_sync.push(repo);
            continue;
        };
        let github_id = repo.github_id;
        if unchanged(&repo, row, &head) {
            refresh_metadata(ws, &repo, row).await?;
            triage.unchanged.push(github_id);
        } else {
            triage.to_sync.push(repo);
        }
        triage.heads.insert(github_id, head);
    }
    Ok(triage)
}

async fn load(ws: &Workspace, repos: &[RepoInfo]) -> Result<HashMap<i64, StoredHead>, sqlx::Error> {
    let ids: Vec<i64> = repos.iter().map(|r| r.github_id).collect();
    let rows: Vec<StoredHead> = sqlx::query_as(
        "SELECT github_id, node_id, owner, name, default_branch, private, archived, html_url,
                description, docs_path, head_commit_sha, tree_sha, selection_fingerprint, sync_status,
                sync_requested_at IS NOT NULL AS marked
         FROM repos WHERE github_id = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(&ws.pool)
    .await?;
    Ok(rows.into_iter().map(|r| (r.info.github_id, r)).collect())
}

/// The head check to ask GraphQL, or `None` when the repository must be synced whatever its
/// head is.
fn question(
    ws: &Workspace,
    repo: &RepoInfo,
    stored: Option<&StoredHead>,
    scope: Scope,
) -> Option<HeadQuery> {
    let stored = stored?;
    let node_id = repo.node_id.clone()?;
    let fp = fingerprint::for_repository(&ws.config, &repo.full_name());
    let must_sync = stored.sync_status != "ok"
        || (scope == Scope::FullRun && stored.marked)
        || stored.selection_fingerprint.as_deref() != Some(fp.as_str())
        // One marker without the other: the last plan was incomplete.
        || stored.head_commit_sha.is_some() != stored.tree_sha.is_some();
    (!must_sync).then(|| HeadQuery {
        github_id: repo.github_id,
        node_id,
        branch: repo.default_branch.clone(),
        docs_path: stored.docs_path.clone(),
    })
}

/// Unchanged: the listing's default branch, its head commit and root tree are what the last
/// complete plan stored (an empty repository stays empty).
fn unchanged(repo: &RepoInfo, stored: &StoredHead, head: &BatchHead) -> bool {
    match head {
        BatchHead::Head {
            branch,
            commit_sha,
            tree_sha,
            ..
        } => {
            repo.default_branch.as_deref() == Some(branch.as_str())
                && stored.head_commit_sha.as_deref() == Some(commit_sha.as_str())
                && stored.tree_sha.as_deref() == Some(tree_sha.as_str())
        }
        BatchHead::NoBranch => stored.head_commit_sha.is_none() && stored.tree_sha.is_none(),
        BatchHead::NotFound | BatchHead::Unusable => false,
    }
}

/// An unchanged repository whose listing metadata moved (renamed, made public, described):
/// refresh the row under the repository lock, without a GitHub request. A busy lock means a
/// sync is writing the row from its own, as fresh, view.
async fn refresh_metadata(
    ws: &Workspace,
    repo: &RepoInfo,
    stored: &StoredHead,
) -> Result<(), SyncError> {
    if stored.metadata_matches(repo) {
        return Ok(());
    }
    let Some(lock) = HeldLock::try_acquire(&ws.pool, repo_key(repo.github_id)).await? else {
        return Ok(());
    };
    let written = persist::refresh_status(&ws.pool, repo, None, None).await;
    lock.release().await;
    written?;
    Ok(())
}

/// Clear the markers of unchanged repositories in a drain: only under the repository lock, and
/// only a marker not newer than `checked_from` (the instant taken before the heads were read),
/// exactly as a pass clears its marker (spec "Coalescing"). A busy lock is left to its holder.
pub(crate) async fn clear_markers(
    ws: &Workspace,
    github_ids: &[i64],
    checked_from: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    for &github_id in github_ids {
        let Some(lock) = HeldLock::try_acquire(&ws.pool, repo_key(github_id)).await? else {
            continue;
        };
        let cleared = sqlx::query(
            "UPDATE repos SET sync_requested_at = NULL
             WHERE github_id = $1 AND sync_requested_at <= $2",
        )
        .bind(github_id)
        .bind(checked_from)
        .execute(&ws.pool)
        .await;
        lock.release().await;
        cleared?;
    }
    Ok(())
}

/// Keep each listed repository's node id on its row (a drain has only the rows to go by).
/// Writes only rows whose node id differs, so a steady state writes nothing.
pub async fn remember_node_ids(ws: &Workspace, repos: &[RepoInfo]) -> Result<u64, sqlx::Error> {
    let (ids, node_ids): (Vec<i64>, Vec<&str>) = repos
        .iter()
        .filter_map(|r| r.node_id.as_deref().map(|n| (r.github_id, n)))
        .unzip();
    if ids.is_empty() {
        return Ok(0);
    }
    Ok(sqlx::query(
        "UPDATE repos SET node_id = t.node_id
         FROM unnest($1::bigint[], $2::text[]) AS t(github_id, node_id)
         WHERE repos.github_id = t.github_id AND repos.node_id IS DISTINCT FROM t.node_id",
    )
    .bind(&ids)
    .bind(&node_ids)
    .execute(&ws.pool)
    .await?
    .rows_affected())
}
