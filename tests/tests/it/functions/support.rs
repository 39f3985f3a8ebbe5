//! A world (database + fake GitHub) as the state an HTTP function builds at start, and requests
//! as API Gateway (HTTP API, payload v2) hands them to the function.

use std::sync::Arc;
use std::time::Duration;

use shared::app::AppState;
use shared::config::{GithubAppConfig, Secret, SyncConfig, TenantConfig, TenantId};
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;

use crate::engine::World;

/// The secret and token the events/ files are made with (documented test values).
pub const SECRET: &str = "events-secret";
pub const TOKEN: &str = "events-token";
/// The read-only token of the read API (`SYNC_READ_TOKEN`).
pub const READ_TOKEN: &str = "events-read-token";

/// One tenant's configuration over the world's database and fake GitHub.
pub fn tenant(
    w: &World,
    id: &str,
    secrets: &[&str],
    installation: u64,
    sync: SyncConfig,
) -> TenantConfig {
    TenantConfig {
        id: TenantId::parse(id).unwrap(),
        database_url: w.db.url(),
        github: Some(GithubAppConfig {
            api_url: w.gh.url().parse().unwrap(),
            graphql_url: None,
            app_id: w.gh.app_id(),
            private_key_pem: Secret::new(w.gh.private_key_pem()),
            installation_id: installation,
            rate_limit_wait_budget_secs: 0,
        }),
        webhook_secrets: secrets.iter().map(|s| Secret::new(*s)).collect(),
        sync_api_token: Some(Secret::new(TOKEN)),
        read: shared::config::ReadConfig {
            token: Some(Secret::new(READ_TOKEN)),
            search: Default::default(),
        },
        sync,
    }
}

/// The state of a function with these tenants (the first is the default), inline jobs, and
/// short waits for tests. Every tenant uses the world's client.
pub fn state_of(w: &World, tenants: Vec<TenantConfig>) -> AppState {
    let default_tenant = tenants[0].id.clone();
    let parts = tenants
        .into_iter()
        .map(|t| (t, w.db.pool.clone(), Some(w.client.clone())))
        .collect();
    let tenants = Arc::new(Tenants::from_parts(
        parts,
        RunOptions {
            no_row_retry_first: Duration::from_millis(20),
            reaper_grace: Duration::from_millis(0),
            ..RunOptions::default()
        },
    ));
    AppState {
        jobs: shared::worker::inline(tenants.clone()),
        tenants,
        default_tenant,
    }
}

/// The usual state: tenant "default" with [`SECRET`], [`TOKEN`] and the world's installation.
pub fn state(w: &World) -> AppState {
    state_of(
        w,
        vec![tenant(
            w,
            "default",
            &[SECRET],
            w.installation,
            w.config.clone(),
        )],
    )
}

pub use syncplane_tests::apigw::{Reply, checked_reply, from_event, reply, request as apigw};

pub async fn count(w: &World, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(&w.db.pool).await.unwrap()
}
