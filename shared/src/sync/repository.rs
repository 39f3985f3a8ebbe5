//! One repository (spec "One repository"): head check, fingerprint, tree, selection, diff and
//! fetch, parse, persist. The only writer of repository content.
//!
//! Locks and rerun markers are the caller's business (the runs layer); this function assumes it
//! holds the repository's lock.

use std::collections::HashSet;

use sqlx::PgPool;

use crate::config::SyncConfig;
use crate::github::{GithubClient, GithubError, HeadCheck, RepoInfo};
use crate::sync::failure::RepoFailure;
use crate::sync::fetch::{self, Fetched};
use crate::sync::fingerprint::{SelectionSettings, fingerprint};
use crate::sync::parse;
use crate::sync::persist::{
    self, CodeOwnersWrite, DocumentWrite, Markers, ReadmeWrite, Status, Write,
};
use crate::sync::selection::{self, SelectionRules, SkipReason, Warning};

/// What one repository sync did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoOutcome {
    /// Same tree SHA and fingerprint: only metadata and status refreshed.
    Unchanged,
    /// Unchanged, and the stored content was written by run `written_by_run`, which is recorded
    /// failed: its commit went through though its reply was lost (or its process died after
    /// committing). The content was already current.
    AlreadyCurrent { written_by_run: i64 },
    /// Planned and written (possibly with nothing to change).
    Synced(persist::Counts),
    /// The repository failed; stored content is kept (or, for an incomplete fetch, what arrived
    /// was written). `counts` says what was written anyway.
    Failed {
        failure: RepoFailure,
        counts: persist::Counts,
    },
}

/// Errors that stop the caller's whole run (spec "Failure handling").
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("run stopped by GitHub: {0}")]
    RunStopped(#[source] GithubError),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

impl From<GithubError> for SyncError {
    fn from(e: GithubError) -> Self {
        Self::RunStopped(e)
    }
}

/// Sync one repository known from the installation listing (or a webhook, or a repo lookup).
pub async fn sync_repository(
    pool: &PgPool,
    client: &GithubClient,
    config: &SyncConfig,
    repo: &RepoInfo,
) -> Result<RepoOutcome, SyncError> {
    let full_name = format!("{}/{}", repo.owner, repo.name);
    let docs_path = config.docs_path(&full_name);
    let settings = SelectionSettings {
        docs_path,
        max_file_bytes: config.max_file_bytes,
        max_docs: config.max_docs_per_repo,
    };
    let fp = fingerprint(&settings);
    let load_started = std::time::Instant::now();
    let mut stored = persist::load(pool, repo.github_id).await?;
    let mut load_time = load_started.elapsed();

    // Head check: conditional on the stored ETag; a 304 costs one request and no rate limit.
    let Some(branch) = repo.default_branch.as_deref() else {
        return empty_repository(pool, repo, &fp).await;
    };
    let head = match client
        .branch_head(&repo.owner, &repo.name, branch, stored.head_etag.as_deref())
        .await
    {
        Ok(h) => h,
        Err(GithubError::NotFound) => {
            // A branch that does not exist: an empty repository (no commits) is synced as having
            // no documents; anything else is a per-repository failure (never a removal).
            return match client.is_empty_repository(&repo.owner, &repo.name).await {
                Ok(true) => empty_repository(pool, repo, &fp).await,
                Ok(false) => fail(pool, repo, RepoFailure::NotFound).await,
                Err(e) => github_failure(pool, repo, e).await,
            };
        }
        Err(e) => return github_failure(pool, repo, e).await,
    };
    let (commit_sha, tree_sha, etag) = match head {
        HeadCheck::NotModified => match (&stored.head_commit_sha, &stored.tree_sha) {
            (Some(c), Some(t)) => (c.clone(), t.clone(), stored.head_etag.clone()),
            // A 304 without stored markers cannot happen unless the row was edited by hand:
            // fetch the head again unconditionally.
            _ => match client
                .branch_head(&repo.owner, &repo.name, branch, None)
                .await
            {
                Ok(HeadCheck::Head {
                    commit_sha,
                    tree_sha,
                    etag,
                }) => (commit_sha, tree_sha, etag),
                Ok(HeadCheck::NotModified) => {
                    return fail(pool, repo, RepoFailure::UnexpectedAnswer).await;
                }
                Err(e) => return github_failure(pool, repo, e).await,
            },
        },
        HeadCheck::Head {
            commit_sha,
            tree_sha,
            etag,
        } => (commit_sha, tree_sha, etag),
    };

    // Unchanged only when both the tree and the selection fingerprint match.
    if stored.tree_sha.as_deref() == Some(tree_sha.as_str())
        && stored.fingerprint.as_deref() == Some(fp.as_str())
    {
        persist::refresh_status(pool, repo, None, etag.as_deref()).await?;
        if let Some(run) = stored.written_by_failed_run {
            tracing::info!(
                repo = %full_name,
                written_by_run = run,
                "content already current: run #{run} committed it though it is recorded failed"
            );
            return Ok(RepoOutcome::AlreadyCurrent {
                written_by_run: run,
            });
        }
        return Ok(RepoOutcome::Unchanged);
    }

    // The recursive tree, once. A truncated tree is never planned from.
    let tree = match client.tree(&repo.owner, &repo.name, &tree_sha).await {
        Ok(t) => t,
        Err(e) => return github_failure(pool, repo, e).await,
    };
    if tree.truncated {
        return fail(pool, repo, RepoFailure::TreeTruncated).await;
    }
    let contents_started = std::time::Instant::now();
    persist::load_contents(pool, &mut stored).await?;
    load_time += contents_started.elapsed();

    let plan = selection::plan(
        &tree.entries,
        &SelectionRules {
            docs_path,
            max_file_bytes: config.max_file_bytes,
            max_docs: config.max_docs_per_repo,
        },
    );

    // Diff by exact path and blob SHA; fetch only what is new or changed.
    let mut wanted: Vec<&selection::PlannedFile> = plan
        .documents
        .iter()
        .filter(|f| stored.documents.get(&f.path) != Some(&f.blob_sha))
        .collect();
    let readme_changed = plan.readme.as_ref().is_some_and(|r| {
        stored.readme.as_ref().map(|(p, s)| (p, s)) != Some((&r.path, &r.blob_sha))
    });
    if readme_changed {
        wanted.extend(plan.readme.as_ref());
    }
    let codeowners_changed = plan.codeowners.as_ref().is_some_and(|c| {
        stored.codeowners.as_ref().map(|(p, s)| (p, s)) != Some((&c.path, &c.blob_sha))
    });
    if codeowners_changed {
        wanted.extend(plan.codeowners.as_ref());
    }

    let Fetched {
        mut blobs,
        failed,
        deferred,
        run_stop,
    } = fetch::fetch_blobs(client, &repo.owner, &repo.name, &wanted).await;
    if let Some(e) = run_stop {
        // Nothing is written: the stored content and markers stay as they were.
        return Err(SyncError::RunStopped(e));
    }

    let mut warnings = plan.warnings.clone();
    let mut documents = Vec::new();
    for file in &plan.documents {
        let Some(bytes) = blobs.remove(&file.path) else {
            continue;
        };
        match parse::parse_document(&file.path, &bytes) {
            Ok(parsed) => documents.push(DocumentWrite {
                path: file.path.clone(),
                blob_sha: file.blob_sha.clone(),
                size: file.size,
                parsed,
            }),
            Err(refusal) => warnings.push(Warning {
                path: file.path.clone(),
                reason: SkipReason::Unstorable,
                detail: Some(refusal.to_string()),
            }),
        }
    }
    // Paths the plan keeps: everything planned, minus files that could not be stored (their stale
    // rows would misrepresent the file). Files that failed to fetch stay: their old rows remain.
    let unstorable: HashSet<&str> = warnings
        .iter()
        .filter(|w| w.reason == SkipReason::Unstorable)
        .map(|w| w.path.as_str())
        .collect();
    let keep_paths: HashSet<String> = plan
        .documents
        .iter()
        .filter(|f| !unstorable.contains(f.path.as_str()))
        .map(|f| f.path.clone())
        .collect();

    let readme = match &plan.readme {
        None => ReadmeWrite::Absent,
        Some(_) if !readme_changed => ReadmeWrite::Keep,
        Some(file) => match blobs
            .remove(&file.path)
            .map(|b| parse::parse_document(&file.path, &b))
        {
            Some(Ok(parsed)) => ReadmeWrite::Replace(DocumentWrite {
                path: file.path.clone(),
                blob_sha: file.blob_sha.clone(),
                size: file.size,
                parsed,
            }),
            Some(Err(refusal)) => {
                warnings.push(Warning {
                    path: file.path.clone(),
                    reason: SkipReason::Unstorable,
                    detail: Some(refusal.to_string()),
                });
                ReadmeWrite::Absent
            }
            None => ReadmeWrite::Keep,
        },
    };
    let codeowners = match &plan.codeowners {
        None => CodeOwnersWrite::Absent,
        Some(_) if !codeowners_changed => CodeOwnersWrite::Keep,
        Some(file) => match blobs
            .remove(&file.path)
            .map(|b| parse::parse_codeowners(&b))
        {
            Some(Ok((rules, invalid))) => {
                warnings.extend(invalid.into_iter().map(|w| Warning {
                    path: format!("{}:{}", file.path, w.line),
                    reason: SkipReason::InvalidCodeownersLine,
                    detail: Some(w.reason),
                }));
                CodeOwnersWrite::Replace {
                    path: file.path.clone(),
                    blob_sha: file.blob_sha.clone(),
                    rules,
                }
            }
            Some(Err(refusal)) => {
                warnings.push(Warning {
                    path: file.path.clone(),
                    reason: SkipReason::Unstorable,
                    detail: Some(refusal.to_string()),
                });
                CodeOwnersWrite::Absent
            }
            None => CodeOwnersWrite::Keep,
        },
    };

    // Complete: store the markers. Incomplete (fetch failures or budget deferral): write what
    // arrived but clear the markers so the next sync re-plans and fetches only what is missing.
    let complete = failed.is_empty() && deferred.is_empty();
    let markers = if complete {
        Markers {
            head_commit_sha: Some(commit_sha),
            tree_sha: Some(tree_sha),
            head_etag: etag,
            fingerprint: Some(fp),
        }
    } else {
        Markers::default()
    };
    if !deferred.is_empty() {
        warnings.push(Warning {
            path: String::new(),
            reason: SkipReason::MoreWarnings,
            detail: Some(format!(
                "{} files deferred to the next pass (fetch budget of {} MiB per pass)",
                deferred.len(),
                fetch::FETCH_BUDGET_BYTES / (1024 * 1024)
            )),
        });
    }
    let error = (!failed.is_empty()).then(|| {
        let f = RepoFailure::FetchIncomplete;
        (f.code(), f.message())
    });
    let (mut counts, _) = persist::write(
        pool,
        Write {
            repo,
            docs_folder: plan.docs_folder.clone(),
            documents,
            keep_paths: Some(keep_paths),
            readme,
            codeowners,
            markers,
            status: Status { error, warnings },
        },
    )
    .await?;
    counts.db_time += load_time;
    if !deferred.is_empty() {
        // The rest of the files are fetched by another pass: leave a rerun marker.
        sqlx::query("UPDATE repos SET sync_requested_at = COALESCE(sync_requested_at, now()) WHERE github_id = $1")
            .bind(repo.github_id)
            .execute(pool)
            .await?;
    }
    if failed.is_empty() {
        Ok(RepoOutcome::Synced(counts))
    } else {
        Ok(RepoOutcome::Failed {
            failure: RepoFailure::FetchIncomplete,
            counts,
        })
    }
}

/// An empty repository (no commits, or no default branch): synced as having no documents.
async fn empty_repository(
    pool: &PgPool,
    repo: &RepoInfo,
    fp: &str,
) -> Result<RepoOutcome, SyncError> {
    let (counts, _) = persist::write(
        pool,
        Write {
            repo,
            docs_folder: None,
            documents: Vec::new(),
            keep_paths: Some(HashSet::new()),
            readme: ReadmeWrite::Absent,
            codeowners: CodeOwnersWrite::Absent,
            markers: Markers {
                fingerprint: Some(fp.to_owned()),
                ..Markers::default()
            },
            status: Status {
                error: None,
                warnings: Vec::new(),
            },
        },
    )
    .await?;
    Ok(RepoOutcome::Synced(counts))
}

/// A GitHub error during one repository: run-stopping errors go up, the rest fail the repository.
async fn github_failure(
    pool: &PgPool,
    repo: &RepoInfo,
    error: GithubError,
) -> Result<RepoOutcome, SyncError> {
    if error.is_run_stopping() {
        return Err(SyncError::RunStopped(error));
    }
    tracing::warn!(repo = %format!("{}/{}", repo.owner, repo.name), error = %error, "repository sync failed");
    fail(pool, repo, RepoFailure::from_github(&error)).await
}

/// Mark the repository failed with its fixed message; stored content and markers stay.
async fn fail(
    pool: &PgPool,
    repo: &RepoInfo,
    failure: RepoFailure,
) -> Result<RepoOutcome, SyncError> {
    persist::refresh_status(pool, repo, Some((failure.code(), failure.message())), None).await?;
    Ok(RepoOutcome::Failed {
        failure,
        counts: persist::Counts::default(),
    })
}
