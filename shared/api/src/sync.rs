//! `POST /api/sync`: `{"repository": "owner/name"}` syncs one repository, `{}` everything
//! (trigger manual).
//!
//! Inline backend: the sync runs before the answer (`started` with the run id, or `coalesced`
//! when another sync holds the repository and will run again for this request). SQS backend:
//! the job is queued (`queued` with the message id). Either way a repository with no row whose
//! lock is busy answers 409 at once: no rerun marker can be left for it (spec "Coalescing").

use serde::Deserialize;
use serde_json::{Value, json};

use super::error::{ApiError, db_failure};
use syncplane_core::config::{TenantConfig, is_repo_name_part};
use syncplane_engine::sync::coalescing::{
    NoRowBusy, RequestOutcome, coalesced_message, request_sync,
};
use syncplane_engine::sync::full::sync_all;
use syncplane_engine::sync::lock::{HeldLock, repo_key};
use syncplane_engine::sync::removal;
use syncplane_engine::sync::runs::Trigger;
use syncplane_engine::sync::workspace::Workspace;
use syncplane_github::{GithubError, RepoInfo};
use syncplane_jobs::adapter::{JobsAdapter, Submitted};
use syncplane_jobs::app::AppState;
use syncplane_jobs::tenants::TenantError;
use syncplane_jobs::{Job, RepoRef};
use syncplane_worker::TenantWorkspace;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SyncRequest {
    repository: Option<String>,
}

/// Parse the body; an empty body means `{}`.
fn parse(body: &[u8]) -> Result<SyncRequest, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(SyncRequest { repository: None });
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| ApiError::InvalidJson)?;
    serde_json::from_value(value)
        .map_err(|_| ApiError::BadRequest(r#"expected {"repository": "owner/name"} or {}"#))
}

fn split_full_name(full: &str) -> Option<(&str, &str)> {
    let (owner, name) = full.split_once('/')?;
    (is_repo_name_part(owner) && is_repo_name_part(name)).then_some((owner, name))
}

pub async fn post(state: &AppState, tenant: &TenantConfig, body: &[u8]) -> Result<Value, ApiError> {
    let request = parse(body)?;
    match request.repository {
        Some(full) => {
            let (owner, name) = split_full_name(&full)
                .ok_or(ApiError::BadRequest(r#"repository must be "owner/name""#))?;
            // Configuration first: no GitHub call for a repository it does not select.
            if !tenant.sync.selects(&format!("{owner}/{name}")) {
                return Err(ApiError::RepositoryNotSelected);
            }
            let ws = workspace(state, tenant)?;
            sync_repository(state, &ws, tenant, owner, name).await
        }
        None => {
            let ws = workspace(state, tenant)?;
            sync_everything(state, &ws, tenant).await
        }
    }
}

fn workspace(state: &AppState, tenant: &TenantConfig) -> Result<Workspace, ApiError> {
    state
        .tenants
        .workspace(tenant.id.as_str())
        .map_err(|e| match e {
            TenantError::GithubNotConfigured(_) => ApiError::GithubNotConfigured,
            other => {
                tracing::error!(error = %other, "tenant workspace unavailable");
                ApiError::Internal
            }
        })
}

fn github_failure(e: GithubError) -> ApiError {
    if e == GithubError::NotFound {
        return ApiError::RepositoryNotFound;
    }
    tracing::warn!(error = %e, "GitHub lookup for POST /api/sync failed");
    ApiError::Github(e)
}

async fn sync_repository(
    state: &AppState,
    ws: &Workspace,
    tenant: &TenantConfig,
    owner: &str,
    name: &str,
) -> Result<Value, ApiError> {
    // GitHub's answer gives the canonical name (renames, case) and the archived flag.
    let info: RepoInfo = ws.client.repo(owner, name).await.map_err(github_failure)?;
    if !removal::selected(&ws.config, &info) {
        return Err(ApiError::RepositoryNotSelected);
    }
    match &state.jobs {
        JobsAdapter::Inline(_) => {
            let outcome = request_sync(ws, &info, Trigger::Manual, NoRowBusy::Refuse)
                .await
                .map_err(|e| {
                    tracing::error!(error = %e, repository = %format!("{}/{}", info.owner, info.name), "manual sync failed");
                    ApiError::Internal
                })?;
            match outcome {
                RequestOutcome::Synced { run_id, status, .. } => {
                    Ok(json!({ "status": "started", "runId": run_id, "runStatus": status }))
                }
                RequestOutcome::Coalesced => Ok(json!({
                    "status": "coalesced",
                    "message": coalesced_message(ws.options.max_passes),
                })),
                RequestOutcome::Busy => Err(ApiError::RepositoryBusy),
            }
        }
        JobsAdapter::Sqs(_) => {
            refuse_if_busy_without_row(ws, info.github_id).await?;
            let job = Job::SyncRepo {
                tenant: tenant.id.clone(),
                repository: RepoRef {
                    github_id: Some(info.github_id),
                    owner: info.owner.clone(),
                    name: info.name.clone(),
                },
                trigger: Trigger::Manual,
            };
            queued(state.jobs.submit(&job).await)
        }
    }
}

/// The queued path's synchronous 409: a repository with no row whose lock is held now.
async fn refuse_if_busy_without_row(ws: &Workspace, github_id: i64) -> Result<(), ApiError> {
    let has_row: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM repos WHERE github_id = $1)")
            .bind(github_id)
            .fetch_one(&ws.pool)
            .await
            .map_err(db_failure("repository row lookup"))?;
    if has_row {
        return Ok(());
    }
    match HeldLock::try_acquire(&ws.pool, repo_key(github_id))
        .await
        .map_err(db_failure("repository lock probe"))?
    {
        Some(lock) => {
            lock.release().await;
            Ok(())
        }
        None => Err(ApiError::RepositoryBusy),
    }
}

async fn sync_everything(
    state: &AppState,
    ws: &Workspace,
    tenant: &TenantConfig,
) -> Result<Value, ApiError> {
    match &state.jobs {
        JobsAdapter::Inline(_) => {
            let report = sync_all(ws, Trigger::Manual)
                .await
                .map_err(db_failure("manual full sync"))?;
            Ok(json!({ "status": "started", "runId": report.run_id, "runStatus": report.status }))
        }
        JobsAdapter::Sqs(_) => {
            let job = Job::SyncFull {
                tenant: tenant.id.clone(),
                trigger: Trigger::Manual,
            };
            queued(state.jobs.submit(&job).await)
        }
    }
}

fn queued(
    submitted: Result<Submitted, syncplane_jobs::sqs::SubmitError>,
) -> Result<Value, ApiError> {
    match submitted {
        Ok(Submitted::Queued { message_id }) => {
            Ok(json!({ "status": "queued", "jobId": message_id }))
        }
        Ok(Submitted::Ran(_)) => {
            // Only the SQS adapter takes this path; an inline run would have been answered above.
            tracing::error!("queued path ran a job inline");
            Err(ApiError::Internal)
        }
        Err(e) => {
            tracing::error!(error = %e, "sync job not queued");
            Err(ApiError::QueueUnavailable)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_names_are_owner_slash_name() {
        assert_eq!(split_full_name("acme/docs"), Some(("acme", "docs")));
        assert_eq!(split_full_name("a.b/c_d-e"), Some(("a.b", "c_d-e")));
        assert_eq!(split_full_name("acme"), None);
        assert_eq!(split_full_name("acme/"), None);
        assert_eq!(split_full_name("a/b/c"), None);
        assert_eq!(split_full_name("a/b c"), None);
    }

    #[test]
    fn an_empty_body_means_everything() {
        assert!(parse(b"").unwrap().repository.is_none());
        assert!(parse(b"{}").unwrap().repository.is_none());
        assert!(matches!(parse(b"{"), Err(ApiError::InvalidJson)));
        assert!(matches!(
            parse(br#"{"repo":"a/b"}"#),
            Err(ApiError::BadRequest(_))
        ));
        assert!(matches!(
            parse(br#"{"repository":7}"#),
            Err(ApiError::BadRequest(_))
        ));
    }
}
