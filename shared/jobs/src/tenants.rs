//! The tenant registry (spec "Jobs and tenants"): the tenants of a process, built once (lazily
//! connected pools, one GitHub client per installation, its token shared through the tenant's
//! database) and reused across invocations. A leaf below the jobs, the worker and the HTTP
//! surfaces, which all look tenants up here; the worker makes a tenant's engine workspace of
//! what it finds here (`syncplane_worker::TenantWorkspace`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use sqlx::PgPool;

use syncplane_core::config::{Config, TenantConfig};
use syncplane_core::db;
use syncplane_github::{ClientOptions, GithubClient, GithubError};
use syncplane_runs::RunOptions;

/// A tenant that cannot give what was asked of it.
#[derive(Debug, thiserror::Error)]
pub enum TenantError {
    #[error("unknown tenant '{0}'")]
    Unknown(String),
    #[error("tenant '{0}' has no GitHub App configured")]
    GithubNotConfigured(String),
    /// The App's credentials are unusable: every sync of this tenant stops on it.
    #[error(transparent)]
    Github(GithubError),
}

struct Entry {
    config: TenantConfig,
    pool: PgPool,
    /// Built on first use: the App key's first RSA signature costs tens of milliseconds, which a
    /// function that only queues jobs (webhook, sync API on SQS) should never pay at cold start.
    /// `Err(None)`: no App configured; `Err(Some(e))`: the App's credentials are unusable.
    client: OnceLock<Result<GithubClient, Option<GithubError>>>,
}

impl Entry {
    fn client(&self) -> &Result<GithubClient, Option<GithubError>> {
        self.client.get_or_init(|| {
            let gh = self.config.github.as_ref().ok_or(None)?;
            // The tenant's database shares the installation token with its other processes.
            GithubClient::with_token_store(gh, ClientOptions::default(), self.pool.clone()).map_err(|e| {
                tracing::error!(tenant = %self.config.id, error = %e, "GitHub App client unusable");
                Some(e)
            })
        })
    }
}

/// Every configured tenant.
pub struct Tenants {
    entries: BTreeMap<String, Entry>,
    options: RunOptions,
}

/// A tenant's database only (jobs that never call GitHub).
pub struct DatabaseOnly {
    pub pool: PgPool,
    pub options: RunOptions,
}

impl Tenants {
    /// Build every tenant's pool (lazily: no connection until first use); GitHub clients are
    /// built on first use. A tenant whose App key is unusable is still listed; its sync jobs fail
    /// (the cause is logged).
    pub fn from_config(
        config: &Config,
        pool_size: u32,
        options: RunOptions,
    ) -> Result<Self, sqlx::Error> {
        let mut entries = BTreeMap::new();
        for tenant in &config.tenants {
            let pool = db::lazy_pool(&tenant.database_url, pool_size)?;
            entries.insert(
                tenant.id.as_str().to_owned(),
                Entry {
                    config: tenant.clone(),
                    pool,
                    client: OnceLock::new(),
                },
            );
        }
        Ok(Self { entries, options })
    }

    /// Build from ready parts (tests and the local demo).
    pub fn from_parts(
        parts: Vec<(TenantConfig, PgPool, Option<GithubClient>)>,
        options: RunOptions,
    ) -> Self {
        let entries = parts
            .into_iter()
            .map(|(config, pool, client)| {
                (
                    config.id.as_str().to_owned(),
                    Entry {
                        config,
                        pool,
                        client: OnceLock::from(client.ok_or(None)),
                    },
                )
            })
            .collect();
        Self { entries, options }
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    pub fn config(&self, tenant: &str) -> Option<&TenantConfig> {
        self.entries.get(tenant).map(|e| &e.config)
    }

    pub fn pool(&self, tenant: &str) -> Option<&PgPool> {
        self.entries.get(tenant).map(|e| &e.pool)
    }

    pub fn database(&self, tenant: &str) -> Result<DatabaseOnly, TenantError> {
        let e = self
            .entries
            .get(tenant)
            .ok_or_else(|| TenantError::Unknown(tenant.to_owned()))?;
        Ok(DatabaseOnly {
            pool: e.pool.clone(),
            options: self.options.clone(),
        })
    }

    /// The tenants' run options (the spec's numbers; shorter waits in tests).
    pub fn options(&self) -> &RunOptions {
        &self.options
    }

    /// A tenant with a GitHub App: its configuration, its pool and its App client (built on
    /// first use); what the worker makes its engine workspace of.
    pub fn with_app(
        &self,
        tenant: &str,
    ) -> Result<(&TenantConfig, &PgPool, GithubClient), TenantError> {
        let e = self
            .entries
            .get(tenant)
            .ok_or_else(|| TenantError::Unknown(tenant.to_owned()))?;
        match e.client() {
            Ok(client) => Ok((&e.config, &e.pool, client.clone())),
            Err(None) => Err(TenantError::GithubNotConfigured(tenant.to_owned())),
            // An unusable key stops every sync of this tenant, like any run-stopping error.
            Err(Some(err)) => Err(TenantError::Github(err.clone())),
        }
    }
}
