//! `SYNC_CONFIG` (or a tenant's `syncConfig` in `TENANTS_FILE`): which repositories, where their
//! docs are, limits and the schedule (docs/configuration.md). The limits and the interval are
//! validated against the engine's own (`crate::limits`).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::error::ConfigError;
use super::names::{RepoName, RepoPattern};
use crate::limits::{
    DEFAULT_INTERVAL_MINUTES, DEFAULT_MAX_DOCS_PER_REPO, MAX_DOCS_PER_REPO, MAX_FILE_BYTES,
    MAX_INTERVAL_MINUTES, MIN_INTERVAL_MINUTES,
};

/// `SYNC_CONFIG`: which repositories, where their docs are, limits and the schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncConfig {
    /// `None`: every repository of the installation.
    pub repos: Option<Vec<RepoName>>,
    pub exclude: Vec<RepoPattern>,
    /// Per-repository docs folder overrides, keyed by lowercase `owner/name`.
    pub docs_paths: BTreeMap<String, String>,
    pub max_docs_per_repo: u32,
    pub max_file_bytes: u32,
    pub interval_minutes: u32,
    pub on_startup: bool,
}

impl Default for SyncConfig {
    fn default() -> Self {
        Self {
            repos: None,
            exclude: Vec::new(),
            docs_paths: BTreeMap::new(),
            max_docs_per_repo: DEFAULT_MAX_DOCS_PER_REPO,
            max_file_bytes: MAX_FILE_BYTES,
            interval_minutes: DEFAULT_INTERVAL_MINUTES,
            on_startup: false,
        }
    }
}

impl SyncConfig {
    /// Whether configuration selects this repository (before the archived check, which needs
    /// GitHub's answer).
    pub fn selects(&self, full_name: &str) -> bool {
        let listed = match &self.repos {
            None => true,
            Some(repos) => repos.iter().any(|r| r.eq_ignore_case(full_name)),
        };
        listed && !self.exclude.iter().any(|p| p.matches(full_name))
    }

    /// The authoritative docs folder override for a repository, if any.
    pub fn docs_path(&self, full_name: &str) -> Option<&str> {
        self.docs_paths
            .get(&full_name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

// ---------------------------------------------------------------------------------------------
// Raw shapes, as written by operators.

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSyncConfig {
    repos: Option<Vec<RawRepoEntry>>,
    #[serde(default)]
    exclude: Vec<String>,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    sync: RawSchedule,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawRepoEntry {
    Name(String),
    Detailed(RawRepoDetailed),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRepoDetailed {
    name: String,
    docs_path: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawLimits {
    max_docs_per_repo: Option<u32>,
    max_file_bytes: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSchedule {
    interval_minutes: Option<u32>,
    on_startup: Option<bool>,
}

/// Parse `SYNC_CONFIG` (or a tenant's `syncConfig`); `variable` names it in errors.
pub fn parse_sync_config(variable: &str, json: &str) -> Result<SyncConfig, ConfigError> {
    let raw: RawSyncConfig = serde_json::from_str(json)
        .map_err(|e| ConfigError::new(variable, format!("invalid JSON: {e}")))?;
    sync_config_from_raw(variable, raw)
}

/// A tenant's `syncConfig`, already parsed as JSON by `TENANTS_FILE`; `variable` names it.
pub(super) fn sync_config_from_value(
    variable: &str,
    value: serde_json::Value,
) -> Result<SyncConfig, ConfigError> {
    let raw: RawSyncConfig = serde_json::from_value(value)
        .map_err(|e| ConfigError::new(variable, format!("invalid: {e}")))?;
    sync_config_from_raw(variable, raw)
}

fn sync_config_from_raw(variable: &str, raw: RawSyncConfig) -> Result<SyncConfig, ConfigError> {
    let mut docs_paths = BTreeMap::new();
    let repos = match raw.repos {
        None => None,
        Some(entries) => Some(repos_from_raw(variable, entries, &mut docs_paths)?),
    };
    let exclude = raw
        .exclude
        .iter()
        .map(|p| {
            RepoPattern::parse(p).ok_or_else(|| {
                ConfigError::new(
                    format!("{variable}.exclude"),
                    format!("'{p}' is not owner/name, owner/* or */name"),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (max_docs_per_repo, max_file_bytes) = limits_from_raw(variable, &raw.limits)?;
    Ok(SyncConfig {
        repos,
        exclude,
        docs_paths,
        max_docs_per_repo,
        max_file_bytes,
        interval_minutes: interval_from_raw(variable, &raw.sync)?,
        on_startup: raw.sync.on_startup.unwrap_or(false),
    })
}

/// `repos`: each `owner/name`, or `{"name", "docsPath"}` whose folder goes into `docs_paths`.
fn repos_from_raw(
    variable: &str,
    entries: Vec<RawRepoEntry>,
    docs_paths: &mut BTreeMap<String, String>,
) -> Result<Vec<RepoName>, ConfigError> {
    let mut repos = Vec::with_capacity(entries.len());
    for entry in entries {
        let (name, docs_path) = match entry {
            RawRepoEntry::Name(n) => (n, None),
            RawRepoEntry::Detailed(d) => (d.name, d.docs_path),
        };
        let repo = RepoName::parse(&name).ok_or_else(|| {
            ConfigError::new(
                format!("{variable}.repos"),
                format!("'{name}' is not of the form owner/name"),
            )
        })?;
        if let Some(path) = docs_path {
            let clean = normalize_docs_path(&path).ok_or_else(|| {
                ConfigError::new(
                    format!("{variable}.repos[{name}].docsPath"),
                    format!("'{path}' must be a relative folder path without '..'"),
                )
            })?;
            docs_paths.insert(repo.full_name().to_ascii_lowercase(), clean);
        }
        repos.push(repo);
    }
    Ok(repos)
}

/// `limits.maxDocsPerRepo` and `limits.maxFileBytes`, within the engine's limits.
fn limits_from_raw(variable: &str, limits: &RawLimits) -> Result<(u32, u32), ConfigError> {
    let max_docs_per_repo = limits
        .max_docs_per_repo
        .unwrap_or(DEFAULT_MAX_DOCS_PER_REPO);
    if !(1..=MAX_DOCS_PER_REPO).contains(&max_docs_per_repo) {
        return Err(ConfigError::new(
            format!("{variable}.limits.maxDocsPerRepo"),
            format!("must be between 1 and {MAX_DOCS_PER_REPO}, got {max_docs_per_repo}"),
        ));
    }
    let max_file_bytes = limits.max_file_bytes.unwrap_or(MAX_FILE_BYTES);
    if !(1..=MAX_FILE_BYTES).contains(&max_file_bytes) {
        return Err(ConfigError::new(
            format!("{variable}.limits.maxFileBytes"),
            format!(
                "must be between 1 and {MAX_FILE_BYTES} (256 KB is also the maximum), got {max_file_bytes}"
            ),
        ));
    }
    Ok((max_docs_per_repo, max_file_bytes))
}

/// `sync.intervalMinutes`: 0 (off), or within the engine's bounds.
fn interval_from_raw(variable: &str, schedule: &RawSchedule) -> Result<u32, ConfigError> {
    let interval_minutes = schedule
        .interval_minutes
        .unwrap_or(DEFAULT_INTERVAL_MINUTES);
    if interval_minutes != 0
        && !(MIN_INTERVAL_MINUTES..=MAX_INTERVAL_MINUTES).contains(&interval_minutes)
    {
        return Err(ConfigError::new(
            format!("{variable}.sync.intervalMinutes"),
            format!(
                "must be 0 (off) or between {MIN_INTERVAL_MINUTES} and {MAX_INTERVAL_MINUTES}, got {interval_minutes}"
            ),
        ));
    }
    Ok(interval_minutes)
}

/// A docs folder override: from the repository root (a leading `/` is allowed), no `..`, no
/// empty segments; stored without slashes at the ends.
fn normalize_docs_path(path: &str) -> Option<String> {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() {
        return None;
    }
    let ok = trimmed
        .split('/')
        .all(|seg| !seg.is_empty() && seg != "." && seg != "..");
    ok.then(|| trimmed.to_owned())
}
