//! `syncplane serve`'s upkeep with the scheduler off (the local default; issue 12 §4): dead runs
//! reaped and waiting rerun markers drained every [`super::TICK_INTERVAL`], the first pass at
//! start, so a request coalesced into a holder at its pass cap is not left waiting; and the
//! transcript archive's retention when [`retention_due`] (the first tick, then hourly), as the
//! tick would submit it (issue 20 §7).
//!
//! A tenant without a GitHub App has nothing to drain with: its runs are still reaped. What keeps
//! a pass from doing all its work is said when it first happens, then not again while the cause
//! stays the same ([`Said`]; issue 21 point 6): a local run without an App says so once, at
//! start, not every minute, and a database that stays down is one warning, not one a minute.

use shared::worker::TenantWorkspace;
use std::collections::BTreeMap;
use std::sync::Arc;

use shared::scheduler::rules::retention_due;
use shared::tenants::{TenantError, Tenants};
use shared::worker::expire::{self, TranscriptArchive};

/// Run the upkeep in the background until the process stops, the retention on `archive`.
pub fn spawn_upkeep(
    tenants: Arc<Tenants>,
    archive: Option<TranscriptArchive>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut said = Said::default();
        let mut every = tokio::time::interval(super::TICK_INTERVAL);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_expire = None;
        loop {
            every.tick().await;
            let ids: Vec<String> = tenants.ids().map(str::to_owned).collect();
            for id in ids {
                let condition = pass(&tenants, &id).await;
                say(&id, said.note(&id, condition));
            }
            let now = chrono::Utc::now();
            if let Some(archive) = &archive
                && retention_due(now, last_expire)
            {
                last_expire = Some(now);
                let tenant = archive.tenant.as_str();
                if let Err(e) = expire::expire(&tenants, Some(archive), tenant, now).await {
                    tracing::warn!(tenant, error = %e, "transcripts expire failed");
                }
            }
        }
    })
}

/// Log what [`Said::note`] found new about `tenant`.
fn say(tenant: &str, what: Option<Say>) {
    match what {
        Some(Say::Failing(cause)) => tracing::warn!(
            tenant,
            "reap and drain failed: {cause} (said once while it lasts)"
        ),
        Some(Say::Limited(what)) => tracing::info!(tenant, "{what}"),
        Some(Say::Recovered) => tracing::info!(tenant, "reap and drain work again"),
        None => {}
    }
}

/// What a pass found: `Ok(None)` all done, `Ok(Some(what))` part of it could not be done and
/// this says why (no GitHub App), `Err(cause)` it failed.
pub type Condition = Result<Option<String>, String>;

/// One tenant's pass: reap and drain, or, with no GitHub App, reap only.
async fn pass(tenants: &Tenants, id: &str) -> Condition {
    match tenants.workspace(id) {
        Ok(ws) => crate::upkeep::reap_and_drain(&ws, true)
            .await
            .map(|_| None)
            .map_err(|e| format!("{e:#}")),
        Err(TenantError::GithubNotConfigured(_)) => {
            let db = tenants.database(id).map_err(|e| e.to_string())?;
            crate::upkeep::reap(id, &db.pool, db.options.reaper_grace)
                .await
                .map_err(|e| format!("{e:#}"))?;
            Ok(Some(NO_APP.to_owned()))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// What a tenant without a GitHub App gets, said once.
pub const NO_APP: &str = "no GitHub App configured (GITHUB_APP_ID): dead runs are reaped every \
                          minute, rerun markers are not drained (nothing to sync them with)";

/// A line to log about one tenant's upkeep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Say {
    /// The pass failed, for a cause not said since the last change.
    Failing(String),
    /// The pass did part of its work; why.
    Limited(String),
    /// A pass did all its work after one that did not.
    Recovered,
}

/// The last condition said per tenant: a condition is said when it differs from the last one.
#[derive(Debug, Default)]
pub struct Said {
    last: BTreeMap<String, Condition>,
}

impl Said {
    /// What to say about `tenant`'s pass that ended in `now` (`None`: nothing new).
    pub fn note(&mut self, tenant: &str, now: Condition) -> Option<Say> {
        let before = self.last.insert(tenant.to_owned(), now.clone());
        if before.as_ref() == Some(&now) {
            return None;
        }
        match now {
            Err(cause) => Some(Say::Failing(cause)),
            Ok(Some(what)) => Some(Say::Limited(what)),
            // The first pass, all done, is the normal case: nothing to say.
            Ok(None) => before.is_some().then_some(Say::Recovered),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_said_once_while_it_lasts_and_again_when_it_changes() {
        let mut said = Said::default();
        let no_app: Condition = Ok(Some(NO_APP.to_owned()));
        assert_eq!(
            said.note("default", no_app.clone()),
            Some(Say::Limited(NO_APP.to_owned())),
            "said at start"
        );
        for _ in 0..5 {
            assert_eq!(said.note("default", no_app.clone()), None, "then quiet");
        }
        let down: Condition = Err("reap: pool timed out".to_owned());
        assert_eq!(
            said.note("default", down.clone()),
            Some(Say::Failing("reap: pool timed out".to_owned()))
        );
        assert_eq!(said.note("default", down), None);
        assert_eq!(
            said.note("default", no_app.clone()),
            Some(Say::Limited(NO_APP.to_owned())),
            "back to what it was before the failure: said again"
        );
        // Another tenant has its own memory; all done from the start says nothing.
        assert_eq!(said.note("other", Ok(None)), None);
        assert_eq!(said.note("other", Ok(None)), None);
        assert_eq!(said.note("default", Ok(None)), Some(Say::Recovered));
    }
}
