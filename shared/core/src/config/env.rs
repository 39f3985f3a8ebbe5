//! The one tenant of a deployment configured by environment variables alone (no
//! `TENANTS_FILE`): `DATABASE_URL` (and `DATABASE_PASSWORD`), the `GITHUB_*` App settings, all or
//! nothing, `GITHUB_WEBHOOK_SECRET`, `SYNC_API_TOKEN`, `SYNC_READ_TOKEN` and `SYNC_CONFIG`.

use super::error::ConfigError;
use super::names::{Secret, TenantId};
use super::pem::check_pem;
use super::sync::{SyncConfig, parse_sync_config};
use super::tenant::{
    DEFAULT_GITHUB_API_URL, DEFAULT_TENANT, GithubAppConfig, TenantConfig, read_config,
};
use super::values::{
    parse_api_url, parse_database_url, parse_id, rate_limit_budget, read_key_file, split_secrets,
    with_password,
};

/// The tenant `default`, read through `get` (blank values already unset).
pub(super) fn tenant_from_env(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<TenantConfig, ConfigError> {
    let database_url = get("DATABASE_URL").ok_or_else(|| {
        ConfigError::new("DATABASE_URL", "required (postgres://user@host:port/db)")
    })?;
    let database_url = parse_database_url("DATABASE_URL", &database_url)?;
    let database_url = match get("DATABASE_PASSWORD") {
        None => database_url,
        Some(password) => with_password(&database_url, &password)?,
    };
    let github = github_from_env(get)?;
    let webhook_secrets = get("GITHUB_WEBHOOK_SECRET")
        .map(|v| split_secrets(&v))
        .unwrap_or_default();
    let sync = match get("SYNC_CONFIG") {
        Some(json) => parse_sync_config("SYNC_CONFIG", &json)?,
        None => SyncConfig::default(),
    };
    Ok(TenantConfig {
        id: TenantId(DEFAULT_TENANT.to_owned()),
        database_url,
        github,
        webhook_secrets,
        sync_api_token: get("SYNC_API_TOKEN").map(|t| Secret::new(t.trim())),
        sync,
        read: read_config(get, get("SYNC_READ_TOKEN"))?,
    })
}

/// The GitHub App: none when no `GITHUB_*` App setting is set, else all of them, checked.
fn github_from_env(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Option<GithubAppConfig>, ConfigError> {
    let app_id = get("GITHUB_APP_ID");
    let installation = get("GITHUB_INSTALLATION_ID");
    let key = get("GITHUB_APP_PRIVATE_KEY");
    let key_file = get("GITHUB_APP_PRIVATE_KEY_FILE");
    if app_id.is_none() && installation.is_none() && key.is_none() && key_file.is_none() {
        return Ok(None);
    }
    let app_id = app_id.ok_or_else(|| {
        ConfigError::new("GITHUB_APP_ID", "required when a GitHub App is configured")
    })?;
    let installation = installation.ok_or_else(|| {
        ConfigError::new(
            "GITHUB_INSTALLATION_ID",
            "required when a GitHub App is configured",
        )
    })?;
    let (variable, pem) = app_key_from_env(key, key_file)?;
    check_pem(variable, &pem)?;
    Ok(Some(GithubAppConfig {
        api_url: parse_api_url(
            "GITHUB_API_URL",
            &get("GITHUB_API_URL").unwrap_or_else(|| DEFAULT_GITHUB_API_URL.to_owned()),
        )?,
        graphql_url: get("GITHUB_GRAPHQL_URL")
            .map(|v| parse_api_url("GITHUB_GRAPHQL_URL", &v))
            .transpose()?,
        app_id: parse_id("GITHUB_APP_ID", &app_id)?,
        private_key_pem: pem,
        installation_id: parse_id("GITHUB_INSTALLATION_ID", &installation)?,
        rate_limit_wait_budget_secs: rate_limit_budget(get)?,
    }))
}

/// The App key from `GITHUB_APP_PRIVATE_KEY` or `GITHUB_APP_PRIVATE_KEY_FILE` (exactly one),
/// with the variable it came from.
fn app_key_from_env(
    key: Option<String>,
    key_file: Option<String>,
) -> Result<(&'static str, Secret), ConfigError> {
    match (key, key_file) {
        (Some(_), Some(_)) => Err(ConfigError::new(
            "GITHUB_APP_PRIVATE_KEY",
            "set either GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_FILE, not both",
        )),
        // Environment variables often carry the PEM with literal "\n".
        (Some(k), None) => Ok((
            "GITHUB_APP_PRIVATE_KEY",
            Secret::new(k.replace("\\n", "\n")),
        )),
        (None, Some(f)) => Ok((
            "GITHUB_APP_PRIVATE_KEY_FILE",
            read_key_file("GITHUB_APP_PRIVATE_KEY_FILE", &f)?,
        )),
        (None, None) => Err(ConfigError::new(
            "GITHUB_APP_PRIVATE_KEY",
            "required (or GITHUB_APP_PRIVATE_KEY_FILE) when a GitHub App is configured",
        )),
    }
}
