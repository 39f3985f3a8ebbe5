//! A tenant's workspace: what a job needs to sync (its database, its GitHub installation client,
//! its sync settings), built once per process and reused across invocations.

use sqlx::PgPool;

use syncplane_core::config::{SyncConfig, TenantId};
use syncplane_github::GithubClient;

pub use syncplane_runs::{MAX_PASSES, REAPER_GRACE, RunOptions};

/// Everything a sync of one tenant needs.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub tenant: TenantId,
    pub pool: PgPool,
    pub client: GithubClient,
    pub config: SyncConfig,
    pub options: RunOptions,
}

impl Workspace {
    /// Repositories at once: the configured number, clamped so that the run lock plus, per
    /// repository, its lock connection and one working connection fit the pool.
    pub fn repo_concurrency(&self) -> usize {
        let pool_size = self.pool.options().get_max_connections();
        let servable = (pool_size.saturating_sub(1) / 2).max(1) as usize;
        self.options.repo_concurrency.clamp(1, servable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(pool_size: u32, wanted: usize) -> Workspace {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(pool_size)
            .connect_lazy("postgres://localhost/unused")
            .unwrap();
        let gh = syncplane_core::config::GithubAppConfig {
            api_url: "http://127.0.0.1:9".parse().unwrap(),
            graphql_url: None,
            app_id: 1,
            private_key_pem: syncplane_core::config::Secret::new(include_str!(
                "../../../../tests/fixtures/keys/app.pem"
            )),
            installation_id: 1,
            rate_limit_wait_budget_secs: 0,
        };
        Workspace {
            tenant: TenantId::parse("t").unwrap(),
            pool,
            client: GithubClient::new(&gh).unwrap(),
            config: SyncConfig::default(),
            options: RunOptions {
                repo_concurrency: wanted,
                ..RunOptions::default()
            },
        }
    }

    #[tokio::test]
    async fn repository_concurrency_defaults_to_one_and_is_clamped_to_the_pool() {
        assert_eq!(RunOptions::default().repo_concurrency, 1);
        assert_eq!(ws(5, 1).repo_concurrency(), 1);
        // Run lock + (lock + working connection) per repository: a pool of 5 serves 2.
        assert_eq!(ws(5, 8).repo_concurrency(), 2);
        assert_eq!(ws(21, 8).repo_concurrency(), 8);
        assert_eq!(ws(1, 8).repo_concurrency(), 1, "never zero");
    }
}
