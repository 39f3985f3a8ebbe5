//! Sync runs: locks, coalescing, rerun markers, full runs, the removal rule, the reaper, the
//! schedule state, jobs and tenants (spec "Serialization and locks", "Coalescing", "Removal
//! rule", "Scheduler", "Jobs and tenants"; decision "advisory locks, no queue").

mod coalescing;
mod floor;
mod full;
mod head_checks;
mod jobs;
mod reaper;

use std::time::Duration;

use shared::config::{SyncConfig, TenantId};
use shared::sync::workspace::{RunOptions, Workspace};

use crate::engine::World;

impl World {
    /// The world as a tenant workspace, with short waits for tests.
    pub fn ws(&self) -> Workspace {
        self.ws_with(self.config.clone())
    }

    pub fn ws_with(&self, config: SyncConfig) -> Workspace {
        Workspace {
            tenant: TenantId::parse("default").unwrap(),
            pool: self.db.pool.clone(),
            client: self.client.clone(),
            config,
            options: RunOptions {
                no_row_retry_first: Duration::from_millis(20),
                reaper_grace: Duration::from_millis(0),
                ..RunOptions::default()
            },
        }
    }

    pub async fn repo_ids(&self) -> Vec<i64> {
        sqlx::query_scalar("SELECT github_id FROM repos ORDER BY github_id")
            .fetch_all(&self.db.pool)
            .await
            .unwrap()
    }

    pub async fn marker(&self, github_id: u64) -> bool {
        sqlx::query_scalar::<_, bool>(
            "SELECT sync_requested_at IS NOT NULL FROM repos WHERE github_id = $1",
        )
        .bind(github_id as i64)
        .fetch_one(&self.db.pool)
        .await
        .unwrap()
    }

    /// (trigger, scope, status, error) of every run, oldest first.
    pub async fn runs(&self) -> Vec<(String, Option<String>, String, Option<String>)> {
        sqlx::query_as("SELECT trigger, scope, status, error FROM sync_runs ORDER BY id")
            .fetch_all(&self.db.pool)
            .await
            .unwrap()
    }
}
