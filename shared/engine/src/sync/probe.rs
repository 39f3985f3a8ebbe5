//! Triage by what the plan reads (issue 23, Builds 2 and 3): for a repository with a complete
//! stored plan, one GraphQL request reads a commit's root names and the mode and oid of each root
//! entry the plan depends on (`scope::probe_paths`: README and CODEOWNERS candidates, the docs
//! folder and the CODEOWNERS folders). When they are what the stored root listing holds
//! (`scope::unchanged_at`), every tree the plan read is the same: the new head is recorded and
//! nothing else is read or written.
//!
//! A webhook push probes at the default branch, so the head and the decision cost that one
//! request; a full run or drain that already read the head probes at that commit instead of
//! reading the root over REST. Anything the probe cannot decide (no stored root, a different
//! fingerprint, an answer it cannot believe) goes the REST way, as before.

use sqlx::PgPool;

use crate::sync::listings::{self, Listing};
use crate::sync::persist::Stored;
use crate::sync::scope;
use syncplane_github::{GithubClient, GithubError, MAX_PROBED_PATHS, Probe, ProbeAt, RepoInfo};

/// What a probe of this repository asks, and what it is compared with.
#[derive(Debug)]
pub(crate) struct Lookout {
    root: Listing,
    paths: Vec<String>,
    docs_path: Option<String>,
}

/// A lookout when a probe can decide: a complete stored plan (head and tree recorded) made with
/// the same fingerprint, and its root listing stored.
pub(crate) async fn lookout(
    pool: &PgPool,
    stored: &Stored,
    same_fingerprint: bool,
    docs_path: Option<&str>,
) -> Result<Option<Lookout>, sqlx::Error> {
    let (Some(id), Some(_), Some(_)) = (stored.id, &stored.tree_sha, &stored.head_commit_sha)
    else {
        return Ok(None);
    };
    if !same_fingerprint {
        return Ok(None);
    }
    let Some(root) = listings::load_root(pool, id).await? else {
        return Ok(None);
    };
    let paths = scope::probe_paths(&root, docs_path);
    Ok((paths.len() <= MAX_PROBED_PATHS).then(|| Lookout {
        root,
        paths,
        docs_path: docs_path.map(str::to_owned),
    }))
}

impl Lookout {
    /// Whether the probed commit leaves the plan's root scope as stored.
    pub(crate) fn unchanged_at(&self, probe: &Probe) -> bool {
        scope::unchanged_at(probe, &self.root, self.docs_path.as_deref())
    }
}

/// The push's one request: the default branch's head and the plan's paths at it. `None` when
/// there is no lookout, or the probe could not tell (the REST head check decides then). `Err`
/// only for a run-stopping error.
pub(crate) async fn at_branch(
    client: &GithubClient,
    repo: &RepoInfo,
    branch: &str,
    lookout: Option<&Lookout>,
) -> Result<Option<Probe>, GithubError> {
    let Some(lookout) = lookout else {
        return Ok(None);
    };
    let probe = ask(client, repo, ProbeAt::DefaultBranch, lookout).await?;
    Ok(probe.filter(|p| p.branch.as_deref() == Some(branch)))
}

/// The plan's paths at a commit whose head is already known (a batch or listing read it).
pub(crate) async fn at_commit(
    client: &GithubClient,
    repo: &RepoInfo,
    commit_sha: &str,
    lookout: &Lookout,
) -> Result<Option<Probe>, GithubError> {
    let probe = ask(client, repo, ProbeAt::Commit(commit_sha), lookout).await?;
    Ok(probe.filter(|p| p.commit_sha == commit_sha))
}

async fn ask(
    client: &GithubClient,
    repo: &RepoInfo,
    at: ProbeAt<'_>,
    lookout: &Lookout,
) -> Result<Option<Probe>, GithubError> {
    match client
        .probe(&repo.owner, &repo.name, at, &lookout.paths)
        .await
    {
        Ok(probe) => Ok(probe),
        Err(e) if e.is_run_stopping() => Err(e),
        Err(e) => {
            log_fallback(repo, &e);
            Ok(None)
        }
    }
}

fn log_fallback(repo: &RepoInfo, e: &GithubError) {
    tracing::info!(
        repo = %repo.full_name(),
        error = %e,
        "GraphQL probe could not decide; reading over REST"
    );
}
