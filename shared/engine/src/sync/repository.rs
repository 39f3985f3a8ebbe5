//! One repository (spec "One repository"): head check, fingerprint, tree, selection, diff and
//! fetch, parse, persist. The only writer of repository content.
//!
//! The tree step reads the docs scope (`scope`), not the whole recursive tree: the root level,
//! then only the trees whose SHA changed since the stored listings (issue 10). A root change that
//! leaves the docs folder, README and CODEOWNERS candidates as they were moves the head markers
//! only.
//!
//! Locks and rerun markers are the caller's business (the runs layer); this function assumes it
//! holds the repository's lock.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use sqlx::PgPool;

use crate::sync::failure::RepoFailure;
use crate::sync::fetch::{self, Fetched};
use crate::sync::fingerprint::{SelectionSettings, fingerprint};
use crate::sync::listings::{self, Listings};
use crate::sync::parse;
use crate::sync::persist::{
    self, CodeOwnersWrite, DocumentWrite, Markers, ReadmeWrite, Status, Write,
};
use crate::sync::probe;
use crate::sync::scope::{self, ScopeError};
use crate::sync::selection::{self, PlannedFile, SelectionRules, SkipReason, Warning};
use syncplane_core::config::SyncConfig;
use syncplane_github::{GithubClient, GithubError, HeadCheck, Probe, RepoInfo};

pub use syncplane_runs::SyncError;

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

/// The repository being synced and what every step of its sync uses.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    pool: &'a PgPool,
    client: &'a GithubClient,
    repo: &'a RepoInfo,
}

/// A head read before the pass, by a full run's or drain's GraphQL batch (`head_batch`): the
/// default branch, its commit and root tree, and the database instant taken before it was read.
/// A pass that starts from it skips the REST head check (issue 23: a moved head costs what the
/// plan reads, not a second look at the head); markers newer than `read_from` stay, so a push that
/// landed after the batch read gets a pass of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownHead {
    pub branch: String,
    pub commit_sha: String,
    pub tree_sha: String,
    pub read_from: chrono::DateTime<chrono::Utc>,
}

/// How a pass reads the head (issue 23).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadRead {
    /// The REST conditional head check: a 304 costs no rate limit, so it suits a sync asked for
    /// by hand or by a schedule, where the head has most likely not moved.
    Rest,
    /// One GraphQL probe of the head and of the plan's paths at it (`probe`): a webhook push,
    /// where the head has moved and usually nothing the plan reads did. Falls back to `Rest`
    /// when the probe cannot decide.
    Probe,
    /// A head a batch or listing already read.
    Known(KnownHead),
}

/// Sync one repository known from the installation listing (or a webhook, or a repo lookup).
pub async fn sync_repository(
    pool: &PgPool,
    client: &GithubClient,
    config: &SyncConfig,
    repo: &RepoInfo,
) -> Result<RepoOutcome, SyncError> {
    sync_repository_from(pool, client, config, repo, &HeadRead::Rest).await
}

/// [`sync_repository`], reading the head as `read` says (a known head only when it is of the
/// listing's default branch; otherwise the REST head check reads it).
pub(crate) async fn sync_repository_from(
    pool: &PgPool,
    client: &GithubClient,
    config: &SyncConfig,
    repo: &RepoInfo,
    read: &HeadRead,
) -> Result<RepoOutcome, SyncError> {
    let full_name = format!("{}/{}", repo.owner, repo.name);
    let rules = SelectionRules {
        docs_path: config.docs_path(&full_name),
        max_file_bytes: config.max_file_bytes,
        max_docs: config.max_docs_per_repo,
    };
    let fp = fingerprint(&SelectionSettings {
        docs_path: rules.docs_path,
        max_file_bytes: rules.max_file_bytes,
        max_docs: rules.max_docs,
    });
    let cx = Ctx { pool, client, repo };
    let load_started = std::time::Instant::now();
    let stored = persist::load(pool, repo.github_id).await?;
    let load_time = load_started.elapsed();

    let Some(branch) = repo.default_branch.as_deref() else {
        return empty_repository(cx, &fp).await;
    };
    let same_fingerprint = stored.fingerprint.as_deref() == Some(fp.as_str());
    // A head read over REST was most likely asked for by hand: the root is read as before.
    let lookout = match read {
        HeadRead::Rest => None,
        _ => probe::lookout(pool, &stored, same_fingerprint, rules.docs_path).await?,
    };
    let probed = match read {
        HeadRead::Probe => probe::at_branch(client, repo, branch, lookout.as_ref()).await?,
        _ => None,
    };
    let head = match (read, probed) {
        (HeadRead::Known(k), _) if k.branch == branch => {
            Head::read(&k.commit_sha, &k.tree_sha, &stored)
        }
        (_, Some(probed)) => Head::probed(probed, &stored),
        _ => match head_check(cx, branch, &stored, &fp).await? {
            Ok(head) => head,
            Err(outcome) => return Ok(outcome),
        },
    };

    // Unchanged only when both the tree and the selection fingerprint match.
    if stored.tree_sha.as_deref() == Some(head.tree_sha.as_str()) && same_fingerprint {
        persist::refresh_status(pool, repo, None, head.etag.as_deref()).await?;
        return Ok(unchanged(repo, stored.written_by_failed_run));
    }
    if let Some(lookout) = &lookout
        && moved_only(client, repo, &head, lookout).await?
    {
        // Issue 23: the plan's paths are as stored; only the head markers move.
        let markers = Markers {
            head_commit_sha: Some(head.commit_sha.clone()),
            tree_sha: Some(head.tree_sha.clone()),
            head_etag: head.etag.clone(),
            fingerprint: Some(fp),
            docs_tree_sha: stored.docs_tree_sha.clone(),
        };
        persist::move_markers(pool, repo, &markers, None).await?;
        return Ok(unchanged(repo, stored.written_by_failed_run));
    }
    let planned = Planned {
        stored,
        head,
        fingerprint: fp,
        load_time,
    };
    plan_and_write(cx, &rules, planned).await
}

/// An unchanged repository; `AlreadyCurrent` when the stored content was written by a run recorded
/// failed (its COMMIT went through though its reply was lost, or its process died after it).
fn unchanged(repo: &RepoInfo, written_by_failed_run: Option<i64>) -> RepoOutcome {
    let Some(run) = written_by_failed_run else {
        return RepoOutcome::Unchanged;
    };
    tracing::info!(
        repo = %format_args!("{}/{}", repo.owner, repo.name),
        written_by_run = run,
        "content already current: run #{run} committed it though it is recorded failed"
    );
    RepoOutcome::AlreadyCurrent {
        written_by_run: run,
    }
}

/// What the head check found: the commit, its root tree and the ETag to store, and the probe
/// that read them, when one did.
struct Head {
    commit_sha: String,
    tree_sha: String,
    etag: Option<String>,
    probe: Option<Probe>,
}

impl Head {
    /// A head read by GraphQL: the stored ETag still names it only when the commit is the stored
    /// one (else none is kept, and the next REST head check is unconditional).
    fn read(commit_sha: &str, tree_sha: &str, stored: &persist::Stored) -> Self {
        let same = stored.head_commit_sha.as_deref() == Some(commit_sha);
        Self {
            commit_sha: commit_sha.to_owned(),
            tree_sha: tree_sha.to_owned(),
            etag: if same { stored.head_etag.clone() } else { None },
            probe: None,
        }
    }

    fn probed(probe: Probe, stored: &persist::Stored) -> Self {
        Self {
            probe: Some(probe.clone()),
            ..Self::read(&probe.commit_sha, &probe.tree_sha, stored)
        }
    }
}

/// Whether the head moved without touching what the plan reads: decided by the probe that read
/// the head, or by one at the head's commit (0 REST requests either way).
async fn moved_only(
    client: &GithubClient,
    repo: &RepoInfo,
    head: &Head,
    lookout: &probe::Lookout,
) -> Result<bool, SyncError> {
    let at_commit;
    let probe = match &head.probe {
        Some(p) => Some(p),
        None => {
            at_commit = probe::at_commit(client, repo, &head.commit_sha, lookout)
                .await
                .map_err(SyncError::RunStopped)?;
            at_commit.as_ref()
        }
    };
    Ok(probe.is_some_and(|p| p.tree_sha == head.tree_sha && lookout.unchanged_at(p)))
}

/// Step 1, the head check: conditional on the stored ETag (a 304 costs one request and no rate
/// limit). `Err(outcome)` when the repository is done with already (empty, or failed).
async fn head_check(
    cx: Ctx<'_>,
    branch: &str,
    stored: &persist::Stored,
    fp: &str,
) -> Result<Result<Head, RepoOutcome>, SyncError> {
    let done = |r: Result<RepoOutcome, SyncError>| r.map(Err);
    let Ctx { client, repo, .. } = cx;
    let answer = client
        .branch_head(&repo.owner, &repo.name, branch, stored.head_etag.as_deref())
        .await;
    let head = match answer {
        Ok(h) => h,
        Err(GithubError::NotFound) => {
            // A branch that does not exist: an empty repository (no commits) is synced as having
            // no documents; anything else is a per-repository failure (never a removal).
            return done(
                match client.is_empty_repository(&repo.owner, &repo.name).await {
                    Ok(true) => empty_repository(cx, fp).await,
                    Ok(false) => fail(cx, RepoFailure::NotFound).await,
                    Err(e) => github_failure(cx, e).await,
                },
            );
        }
        Err(e) => return done(github_failure(cx, e).await),
    };
    match head {
        HeadCheck::NotModified => match (&stored.head_commit_sha, &stored.tree_sha) {
            (Some(c), Some(t)) => Ok(Ok(Head {
                commit_sha: c.clone(),
                tree_sha: t.clone(),
                etag: stored.head_etag.clone(),
                probe: None,
            })),
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
                }) => Ok(Ok(Head {
                    commit_sha,
                    tree_sha,
                    etag,
                    probe: None,
                })),
                Ok(HeadCheck::NotModified) => done(fail(cx, RepoFailure::UnexpectedAnswer).await),
                Err(e) => done(github_failure(cx, e).await),
            },
        },
        HeadCheck::Head {
            commit_sha,
            tree_sha,
            etag,
        } => Ok(Ok(Head {
            commit_sha,
            tree_sha,
            etag,
            probe: None,
        })),
    }
}

/// Everything a re-plan starts from.
struct Planned {
    stored: persist::Stored,
    head: Head,
    fingerprint: String,
    load_time: std::time::Duration,
}

/// Steps 3 to 5 for a repository whose tree or fingerprint changed: read the docs scope (only the
/// trees that changed), plan, diff, fetch, parse and write.
async fn plan_and_write(
    cx: Ctx<'_>,
    rules: &SelectionRules<'_>,
    mut p: Planned,
) -> Result<RepoOutcome, SyncError> {
    let Ctx { pool, client, repo } = cx;
    let started = std::time::Instant::now();
    let stored_trees = listings::load(pool, p.stored.id).await?;
    p.load_time += started.elapsed();
    let (owner, name) = (repo.owner.as_str(), repo.name.as_str());
    let root = match scope::read_root(client, owner, name, &p.head.tree_sha, &stored_trees).await {
        Ok(root) => root,
        Err(e) => return scope_failure(cx, e).await,
    };
    let same_fingerprint = p.stored.fingerprint.as_deref() == Some(p.fingerprint.as_str());
    if p.stored.tree_sha.is_some()
        && same_fingerprint
        && scope::unchanged_in_substance(&root, &stored_trees, rules.docs_path)
    {
        // Only the head markers move; no document row is touched.
        let markers = p.markers(p.stored.docs_tree_sha.clone());
        persist::move_markers(pool, repo, &markers, Some((root, &stored_trees))).await?;
        return Ok(unchanged(repo, p.stored.written_by_failed_run));
    }
    let scope = match scope::read(client, owner, name, root, &stored_trees, rules.docs_path).await {
        Ok(scope) => scope,
        Err(e) => return scope_failure(cx, e).await,
    };
    let started = std::time::Instant::now();
    persist::load_contents(pool, &mut p.stored).await?;
    p.load_time += started.elapsed();
    let plan = selection::plan(&scope.entries(), rules);
    let wanted = Wanted::of(&plan, &p.stored);
    let fetched = fetch::fetch_blobs(client, owner, name, &wanted.files).await;
    if let Some(e) = fetched.run_stop {
        // Nothing is written: the stored content and markers stay as they were.
        return Err(SyncError::RunStopped(e));
    }
    let ready = Ready {
        plan: &plan,
        wanted: &wanted,
        fetched,
        markers: p.markers(scope.docs_tree_sha.clone()),
        load_time: p.load_time,
        trees: (&scope.used, &stored_trees),
    };
    write_plan(cx, ready).await
}

impl Planned {
    fn markers(&self, docs_tree_sha: Option<String>) -> Markers {
        Markers {
            head_commit_sha: Some(self.head.commit_sha.clone()),
            tree_sha: Some(self.head.tree_sha.clone()),
            head_etag: self.head.etag.clone(),
            fingerprint: Some(self.fingerprint.clone()),
            docs_tree_sha,
        }
    }
}

/// A scope that could not be read fails the repository; stored content and markers stay.
async fn scope_failure(cx: Ctx<'_>, error: ScopeError) -> Result<RepoOutcome, SyncError> {
    match error {
        ScopeError::Truncated => fail(cx, RepoFailure::TreeTruncated).await,
        ScopeError::Github(e) => github_failure(cx, e).await,
    }
}

/// Step 4, the diff: planned files whose path and blob SHA are not stored as they are.
struct Wanted<'a> {
    files: Vec<&'a PlannedFile>,
    readme_changed: bool,
    codeowners_changed: bool,
}

impl<'a> Wanted<'a> {
    fn of(plan: &'a selection::Plan, stored: &persist::Stored) -> Self {
        let mut files: Vec<&PlannedFile> = plan
            .documents
            .iter()
            .filter(|f| stored.documents.get(&f.path) != Some(&f.blob_sha))
            .collect();
        let differs = |planned: &Option<PlannedFile>, stored: &Option<(String, String)>| {
            planned.as_ref().is_some_and(|f| {
                stored.as_ref().map(|(p, s)| (p, s)) != Some((&f.path, &f.blob_sha))
            })
        };
        let readme_changed = differs(&plan.readme, &stored.readme);
        if readme_changed {
            files.extend(plan.readme.as_ref());
        }
        let codeowners_changed = differs(&plan.codeowners, &stored.codeowners);
        if codeowners_changed {
            files.extend(plan.codeowners.as_ref());
        }
        Self {
            files,
            readme_changed,
            codeowners_changed,
        }
    }
}

/// A plan whose files have been fetched, ready to parse and write.
struct Ready<'p> {
    plan: &'p selection::Plan,
    wanted: &'p Wanted<'p>,
    fetched: Fetched,
    /// The markers a complete write stores.
    markers: Markers,
    /// Time spent reading the stored state (reported with the write's database time).
    load_time: std::time::Duration,
    /// The tree listings the plan used, and the ones stored before it.
    trees: (&'p Listings, &'p Listings),
}

/// Step 5: parse what arrived and write it all in one transaction, with the markers of a
/// complete plan and the tree listings it used (the plan's, and the ones stored before).
async fn write_plan(cx: Ctx<'_>, ready: Ready<'_>) -> Result<RepoOutcome, SyncError> {
    let Ctx { pool, repo, .. } = cx;
    let Ready {
        plan,
        wanted,
        fetched,
        markers: complete_markers,
        load_time,
        trees,
    } = ready;
    let Fetched {
        blobs,
        failed,
        deferred,
        run_stop: _,
    } = fetched;
    let mut arrived = Arrived {
        plan,
        blobs,
        warnings: plan.warnings.clone(),
    };
    let (documents, keep_paths) = arrived.documents();
    let readme = arrived.readme(wanted.readme_changed);
    let codeowners = arrived.codeowners(wanted.codeowners_changed);
    let mut warnings = arrived.warnings;

    // Complete: store the markers. Incomplete (fetch failures or budget deferral): write what
    // arrived but clear the markers so the next sync re-plans and fetches only what is missing.
    let complete = failed.is_empty() && deferred.is_empty();
    let markers = if complete {
        complete_markers
    } else {
        Markers::default()
    };
    if !deferred.is_empty() {
        warnings.push(deferred_warning(deferred.len()));
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
            trees: Some(trees),
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

/// The warning that says how many files wait for the next pass.
fn deferred_warning(files: usize) -> Warning {
    Warning {
        path: String::new(),
        reason: SkipReason::MoreWarnings,
        detail: Some(format!(
            "{files} files deferred to the next pass (fetch budget of {} MiB per pass)",
            fetch::FETCH_BUDGET_BYTES / (1024 * 1024)
        )),
    }
}

/// What arrived for a plan, parsed into what the write stores; files that cannot be stored become
/// warnings.
struct Arrived<'p> {
    plan: &'p selection::Plan,
    blobs: HashMap<String, Bytes>,
    warnings: Vec<Warning>,
}

impl Arrived<'_> {
    /// Parse the fetched documents. Returns them with the paths the plan keeps: everything planned,
    /// minus files that could not be stored (their stale rows would misrepresent the file). Files
    /// that failed to fetch stay: their old rows remain.
    fn documents(&mut self) -> (Vec<DocumentWrite>, HashSet<String>) {
        let Self {
            plan,
            blobs,
            warnings,
        } = self;
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
                Err(refusal) => warnings.push(unstorable(file, &refusal)),
            }
        }
        let unstorable: HashSet<&str> = warnings
            .iter()
            .filter(|w| w.reason == SkipReason::Unstorable)
            .map(|w| w.path.as_str())
            .collect();
        let keep_paths = plan
            .documents
            .iter()
            .filter(|f| !unstorable.contains(f.path.as_str()))
            .map(|f| f.path.clone())
            .collect();
        (documents, keep_paths)
    }

    /// The README as planned: parsed when it changed and arrived.
    fn readme(&mut self, changed: bool) -> ReadmeWrite {
        match &self.plan.readme {
            None => ReadmeWrite::Absent,
            Some(_) if !changed => ReadmeWrite::Keep,
            Some(file) => match self
                .blobs
                .remove(&file.path)
                .map(|b| parse::parse_document(&file.path, &b))
            {
                Some(Ok(parsed)) => ReadmeWrite::Replace(Box::new(DocumentWrite {
                    path: file.path.clone(),
                    blob_sha: file.blob_sha.clone(),
                    size: file.size,
                    parsed,
                })),
                Some(Err(refusal)) => {
                    self.warnings.push(unstorable(file, &refusal));
                    ReadmeWrite::Absent
                }
                None => ReadmeWrite::Keep,
            },
        }
    }

    /// CODEOWNERS as planned: parsed (invalid lines become warnings) when it changed and arrived.
    fn codeowners(&mut self, changed: bool) -> CodeOwnersWrite {
        match &self.plan.codeowners {
            None => CodeOwnersWrite::Absent,
            Some(_) if !changed => CodeOwnersWrite::Keep,
            Some(file) => match self
                .blobs
                .remove(&file.path)
                .map(|b| parse::parse_codeowners(&b))
            {
                Some(Ok((rules, invalid))) => {
                    self.warnings.extend(invalid.into_iter().map(|w| Warning {
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
                    self.warnings.push(unstorable(file, &refusal));
                    CodeOwnersWrite::Absent
                }
                None => CodeOwnersWrite::Keep,
            },
        }
    }
}

fn unstorable(file: &PlannedFile, refusal: &impl std::fmt::Display) -> Warning {
    Warning {
        path: file.path.clone(),
        reason: SkipReason::Unstorable,
        detail: Some(refusal.to_string()),
    }
}

/// An empty repository (no commits, or no default branch): synced as having no documents.
async fn empty_repository(cx: Ctx<'_>, fp: &str) -> Result<RepoOutcome, SyncError> {
    let (counts, _) = persist::write(
        cx.pool,
        Write {
            repo: cx.repo,
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
            trees: None,
        },
    )
    .await?;
    Ok(RepoOutcome::Synced(counts))
}

/// A GitHub error during one repository: run-stopping errors go up, the rest fail the repository.
async fn github_failure(cx: Ctx<'_>, error: GithubError) -> Result<RepoOutcome, SyncError> {
    if error.is_run_stopping() {
        return Err(SyncError::RunStopped(error));
    }
    let repo = cx.repo;
    tracing::warn!(repo = %format!("{}/{}", repo.owner, repo.name), error = %error, "repository sync failed");
    fail(cx, RepoFailure::from_github(&error)).await
}

/// Mark the repository failed with its fixed message; stored content and markers stay.
async fn fail(cx: Ctx<'_>, failure: RepoFailure) -> Result<RepoOutcome, SyncError> {
    let error = Some((failure.code(), failure.message()));
    persist::refresh_status(cx.pool, cx.repo, error, None).await?;
    Ok(RepoOutcome::Failed {
        failure,
        counts: persist::Counts::default(),
    })
}
