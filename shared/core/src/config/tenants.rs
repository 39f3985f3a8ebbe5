//! `TENANTS_FILE`: several tenants, each with its database, App, secrets and `syncConfig`, in one
//! JSON file (docs/configuration.md "`TENANTS_FILE`"). Every error names the field as
//! `TENANTS_FILE: tenants[<id>].<field>`.

use std::path::Path;

use serde::Deserialize;

use super::error::ConfigError;
use super::names::{Secret, TenantId};
use super::pem::check_pem;
use super::sync::{SyncConfig, sync_config_from_value};
use super::tenant::{DEFAULT_GITHUB_API_URL, GithubAppConfig, TenantConfig, read_config};
use super::values::{parse_api_url, parse_database_url, rate_limit_budget, read_key_file};

const VAR: &str = "TENANTS_FILE";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTenantsFile {
    tenants: Vec<RawTenant>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawTenant {
    id: TenantId,
    database_url: String,
    github: Option<RawGithub>,
    #[serde(default)]
    webhook_secrets: Vec<String>,
    sync_api_token: Option<String>,
    read_token: Option<String>,
    #[serde(default)]
    sync_config: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawGithub {
    api_url: Option<String>,
    graphql_url: Option<String>,
    app_id: u64,
    private_key: Option<String>,
    private_key_file: Option<String>,
    installation_id: u64,
}

/// Every tenant of the file at `path`; `get` reads the settings shared by all of them.
pub(super) fn tenants_from_file(
    path: &Path,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Vec<TenantConfig>, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(VAR, format!("cannot read '{}': {e}", path.display())))?;
    let raw: RawTenantsFile = serde_json::from_str(&text)
        .map_err(|e| ConfigError::new(VAR, format!("invalid tenants file: {e}")))?;
    if raw.tenants.is_empty() {
        return Err(ConfigError::new(VAR, "lists no tenants"));
    }
    let budget = rate_limit_budget(get)?;
    let mut tenants: Vec<TenantConfig> = Vec::with_capacity(raw.tenants.len());
    for t in raw.tenants {
        if tenants.iter().any(|seen| seen.id == t.id) {
            return Err(ConfigError::new(field(&t.id, "id"), "appears twice"));
        }
        tenants.push(tenant_from_raw(t, budget, get)?);
    }
    Ok(tenants)
}

/// How an error names a tenant's field.
fn field(id: &TenantId, name: &str) -> String {
    format!("{VAR}: tenants[{id}].{name}")
}

fn tenant_from_raw(
    t: RawTenant,
    budget: u64,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<TenantConfig, ConfigError> {
    let at = |name: &str| field(&t.id, name);
    let github = match t.github {
        None => None,
        Some(g) => Some(github_from_raw(g, budget, &at)?),
    };
    let sync = match t.sync_config {
        None => SyncConfig::default(),
        Some(value) => sync_config_from_value(&at("syncConfig"), value)?,
    };
    Ok(TenantConfig {
        database_url: parse_database_url(&at("databaseUrl"), &t.database_url)?,
        github,
        webhook_secrets: t
            .webhook_secrets
            .iter()
            .filter(|s| !s.is_empty())
            .map(Secret::new)
            .collect(),
        sync_api_token: t.sync_api_token.map(Secret::new),
        sync,
        read: read_config(get, t.read_token)?,
        id: t.id,
    })
}

fn github_from_raw(
    g: RawGithub,
    budget: u64,
    at: &impl Fn(&str) -> String,
) -> Result<GithubAppConfig, ConfigError> {
    let pem = match (g.private_key, g.private_key_file) {
        (Some(k), None) => Secret::new(k),
        (None, Some(f)) => read_key_file(&at("github.privateKeyFile"), &f)?,
        _ => {
            return Err(ConfigError::new(
                at("github.privateKey"),
                "set exactly one of privateKey and privateKeyFile",
            ));
        }
    };
    check_pem(&at("github.privateKey"), &pem)?;
    if g.app_id == 0 || g.installation_id == 0 {
        return Err(ConfigError::new(
            at("github"),
            "appId and installationId must be positive",
        ));
    }
    Ok(GithubAppConfig {
        api_url: parse_api_url(
            &at("github.apiUrl"),
            g.api_url.as_deref().unwrap_or(DEFAULT_GITHUB_API_URL),
        )?,
        graphql_url: g
            .graphql_url
            .as_deref()
            .map(|v| parse_api_url(&at("github.graphqlUrl"), v))
            .transpose()?,
        app_id: g.app_id,
        private_key_pem: pem,
        installation_id: g.installation_id,
        rate_limit_wait_budget_secs: budget,
    })
}
