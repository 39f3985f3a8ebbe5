//! One tenant's configuration: its database, its GitHub App installation, its secrets, its sync
//! settings and its read API settings, whether it comes from the environment (`config::env`) or
//! from `TENANTS_FILE` (`config::tenants`).

use url::Url;

use super::error::ConfigError;
use super::names::{SearchLanguage, Secret, TenantId};
use super::sync::SyncConfig;

/// The tenant name used when configuration comes from the environment alone.
pub const DEFAULT_TENANT: &str = "default";
pub const DEFAULT_GITHUB_API_URL: &str = "https://api.github.com";

/// One tenant: its database, its GitHub App installation, its secrets and its sync settings.
#[derive(Debug, Clone)]
pub struct TenantConfig {
    pub id: TenantId,
    pub database_url: Secret,
    /// Absent when no App is configured (ingest-only deployments, the offline demo).
    pub github: Option<GithubAppConfig>,
    /// Several secrets are accepted at once so a secret can be rotated without dropping deliveries.
    pub webhook_secrets: Vec<Secret>,
    pub sync_api_token: Option<Secret>,
    pub sync: SyncConfig,
    /// The read API's settings (read-only token, search language).
    pub read: ReadConfig,
}

/// The read API (issue 11): `SYNC_READ_TOKEN` and `SYNC_SEARCH_CONFIG`.
#[derive(Debug, Clone, Default)]
pub struct ReadConfig {
    /// A bearer token for the read routes only: it never reaches `POST /api/sync`.
    pub token: Option<Secret>,
    pub search: SearchLanguage,
}

#[derive(Debug, Clone)]
pub struct GithubAppConfig {
    pub api_url: Url,
    /// `GITHUB_GRAPHQL_URL`; `None` derives it from `api_url` (see `github::graphql_url_for`).
    pub graphql_url: Option<Url>,
    pub app_id: u64,
    pub private_key_pem: Secret,
    pub installation_id: u64,
    pub rate_limit_wait_budget_secs: u64,
}

/// The read API's settings: `token` (the tenant's read token) and `SYNC_SEARCH_CONFIG`.
pub(super) fn read_config(
    get: &impl Fn(&str) -> Option<String>,
    token: Option<String>,
) -> Result<ReadConfig, ConfigError> {
    const VAR: &str = "SYNC_SEARCH_CONFIG";
    let search = match get(VAR) {
        None => SearchLanguage::default(),
        Some(v) => SearchLanguage::parse(&v).ok_or_else(|| {
            ConfigError::new(VAR, format!("must be 'english' or 'simple', got '{v}'"))
        })?,
    };
    Ok(ReadConfig {
        token: token
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .map(Secret::new),
        search,
    })
}
