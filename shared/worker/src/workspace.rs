//! A tenant's engine workspace (spec "Jobs and tenants"): its pool and GitHub App client from
//! the tenant registry (`syncplane_jobs::tenants`, which stands below the engine), with its sync
//! settings and the process's run options.

use syncplane_engine::sync::workspace::Workspace;
use syncplane_jobs::tenants::{TenantError, Tenants};

/// What the engine needs of a tenant.
pub trait TenantWorkspace {
    /// The full workspace of a tenant with a GitHub App.
    fn workspace(&self, tenant: &str) -> Result<Workspace, TenantError>;
}

impl TenantWorkspace for Tenants {
    fn workspace(&self, tenant: &str) -> Result<Workspace, TenantError> {
        let (config, pool, client) = self.with_app(tenant)?;
        Ok(Workspace {
            tenant: config.id.clone(),
            pool: pool.clone(),
            client,
            config: config.sync.clone(),
            options: self.options().clone(),
        })
    }
}
