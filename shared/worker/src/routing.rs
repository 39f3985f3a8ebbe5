//! webhook.dispatch routing: one verified delivery becomes repository syncs, removals, or a
//! full sync. The GitHub id is the identity, so a rename or transfer updates owner/name in place.
//! Deliveries are not deduplicated (a redelivery must sync; syncing is idempotent).

use serde_json::Value;

use syncplane_engine::sync::coalescing::{NoRowBusy, RequestOutcome, request_sync};
use syncplane_engine::sync::full::sync_all;
use syncplane_engine::sync::removal;
use syncplane_engine::sync::runs::Trigger;
use syncplane_engine::sync::workspace::Workspace;
use syncplane_github::RepoInfo;
use syncplane_jobs::{JobError, JobOutcome};

/// Route one delivery. Unknown events and actions are acknowledged and ignored.
pub async fn dispatch(
    ws: &Workspace,
    event: &str,
    delivery: &str,
    payload: &Value,
) -> Result<JobOutcome, JobError> {
    let action = payload["action"].as_str().unwrap_or("");
    tracing::info!(delivery, event, action, tenant = %ws.tenant, "routing webhook delivery");
    match (event, action) {
        ("push", _) => push(ws, payload).await,
        ("repository", "archived" | "deleted") => {
            let repo = repo_from_payload(&payload["repository"])?;
            remove(ws, repo.github_id).await
        }
        (
            "repository",
            "unarchived" | "renamed" | "transferred" | "created" | "publicized" | "privatized",
        ) => {
            let repo = repo_from_payload(&payload["repository"])?;
            sync_one(ws, &repo).await
        }
        ("repository", "edited") if payload["changes"].get("default_branch").is_some() => {
            let repo = repo_from_payload(&payload["repository"])?;
            sync_one(ws, &repo).await
        }
        ("installation_repositories", "removed") => repositories_removed(ws, payload).await,
        ("installation_repositories", "added") => repositories_added(ws, payload).await,
        ("installation", "deleted" | "suspend") => {
            removal::mark_installation_unavailable(&ws.pool).await?;
            Ok(JobOutcome::Ignored {
                reason: "installation unavailable: every repository marked error, content kept"
                    .into(),
            })
        }
        ("installation", "created" | "unsuspend" | "new_permissions_accepted") => {
            let report = sync_all(ws, Trigger::Webhook).await?;
            Ok(JobOutcome::Run {
                report: Some(report),
            })
        }
        ("ping", _) => Ok(ignored("ping")),
        _ => Ok(ignored("event not routed")),
    }
}

/// A push syncs its repository when it is to the default branch.
async fn push(ws: &Workspace, payload: &Value) -> Result<JobOutcome, JobError> {
    let repo = repo_from_payload(&payload["repository"])?;
    let on_default = match (payload["ref"].as_str(), repo.default_branch.as_deref()) {
        (Some(r), Some(branch)) => r == format!("refs/heads/{branch}"),
        _ => false,
    };
    if !on_default {
        return Ok(ignored("push to a branch other than the default"));
    }
    sync_one(ws, &repo).await
}

/// Repositories taken out of the installation are removed.
async fn repositories_removed(ws: &Workspace, payload: &Value) -> Result<JobOutcome, JobError> {
    let mut outcomes = Vec::new();
    for r in payload["repositories_removed"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let id = r["id"]
            .as_i64()
            .ok_or_else(|| invalid("repositories_removed[].id"))?;
        outcomes.push(remove(ws, id).await?);
    }
    Ok(JobOutcome::Many { outcomes })
}

/// Repositories added to the installation are synced.
async fn repositories_added(ws: &Workspace, payload: &Value) -> Result<JobOutcome, JobError> {
    let mut outcomes = Vec::new();
    for r in payload["repositories_added"]
        .as_array()
        .into_iter()
        .flatten()
    {
        // The event carries no default branch: read the repository itself.
        let full = r["full_name"]
            .as_str()
            .ok_or_else(|| invalid("repositories_added[].full_name"))?;
        let (owner, name) = full
            .split_once('/')
            .ok_or_else(|| invalid("repositories_added[].full_name"))?;
        let repo = ws.client.repo(owner, name).await?;
        outcomes.push(sync_one(ws, &repo).await?);
    }
    Ok(JobOutcome::Many { outcomes })
}

fn ignored(reason: &str) -> JobOutcome {
    JobOutcome::Ignored {
        reason: reason.to_owned(),
    }
}

fn invalid(field: &str) -> JobError {
    JobError::InvalidPayload(format!("missing or invalid {field}"))
}

/// Sync a repository the configuration selects; others are ignored (an archived one removed).
async fn sync_one(ws: &Workspace, repo: &RepoInfo) -> Result<JobOutcome, JobError> {
    if repo.archived {
        return remove(ws, repo.github_id).await;
    }
    if !removal::selected(&ws.config, repo) {
        // Dropped from `repos` or excluded: the removal rule applies to a stored one.
        return remove(ws, repo.github_id).await;
    }
    match request_sync(ws, repo, Trigger::Webhook, NoRowBusy::RetryWithBackoff).await? {
        RequestOutcome::Busy => Err(JobError::Busy),
        outcome => Ok(JobOutcome::Request { outcome }),
    }
}

async fn remove(ws: &Workspace, github_id: i64) -> Result<JobOutcome, JobError> {
    let removed = removal::delete(&ws.pool, github_id, None).await?;
    Ok(JobOutcome::Removed {
        repositories: u32::from(removed),
    })
}

/// A repository object of a webhook payload, as the engine needs it.
pub(crate) fn repo_from_payload(v: &Value) -> Result<RepoInfo, JobError> {
    let github_id = v["id"]
        .as_i64()
        .filter(|id| *id > 0)
        .ok_or_else(|| invalid("repository.id"))?;
    let name = v["name"]
        .as_str()
        .ok_or_else(|| invalid("repository.name"))?;
    let owner = v["owner"]["login"]
        .as_str()
        .or_else(|| {
            v["full_name"]
                .as_str()
                .and_then(|f| f.split_once('/').map(|(o, _)| o))
        })
        .ok_or_else(|| invalid("repository.owner.login"))?;
    Ok(RepoInfo {
        github_id,
        owner: owner.to_owned(),
        name: name.to_owned(),
        private: v["private"].as_bool().unwrap_or(false),
        archived: v["archived"].as_bool().unwrap_or(false),
        default_branch: v["default_branch"].as_str().map(str::to_owned),
        html_url: v["html_url"].as_str().map(str::to_owned),
        description: v["description"].as_str().map(str::to_owned),
        node_id: v["node_id"].as_str().map(str::to_owned),
    })
}
