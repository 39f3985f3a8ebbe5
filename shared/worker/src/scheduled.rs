//! A scheduled (or startup) full sync (spec "Scheduler"): one at a time per tenant, under the
//! tenant's cluster-wide scheduler lock, its end fed back into the schedule
//! (`syncplane_jobs::scheduler::record_run`).

use syncplane_engine::sync::full::{RunReport, sync_all};
use syncplane_engine::sync::lock::{HeldLock, scheduler_key};
use syncplane_engine::sync::runs::Trigger;
use syncplane_engine::sync::workspace::Workspace;
use syncplane_jobs::scheduler;

/// Run a scheduled (or startup) full sync under the tenant's scheduler lock and record its end
/// in the schedule. `None`: another scheduled full sync of this tenant is running.
pub async fn run_scheduled_full(
    ws: &Workspace,
    trigger: Trigger,
) -> Result<Option<RunReport>, sqlx::Error> {
    let Some(lock) = HeldLock::try_acquire(&ws.pool, scheduler_key(ws.tenant.as_str())).await?
    else {
        tracing::info!(tenant = %ws.tenant, "a scheduled full sync is already running; skipped");
        return Ok(None);
    };
    let report = sync_all(ws, trigger).await;
    let recorded = match &report {
        Ok(r) => scheduler::record_run(&ws.pool, ws.tenant.as_str(), &ws.config, r).await,
        Err(_) => Ok(()),
    };
    lock.release().await;
    recorded?;
    report.map(Some)
}
