//! Typed configuration, read and validated once at start.
//!
//! Every error names the variable (or the `TENANTS_FILE` field) and the rule it broke, so an
//! operator can fix a deployment from the first log line. Values are read through a lookup
//! function rather than `std::env` directly, so tests can build a configuration from a map
//! without touching the process environment.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use url::Url;

/// Largest file the engine will index, and the default (spec "Limits": 256 KB, because a
/// document's search vector must stay far below Postgres's 1 MB tsvector limit).
pub const MAX_FILE_BYTES_CAP: u32 = 256 * 1024;
pub const DEFAULT_MAX_DOCS_PER_REPO: u32 = 2000;
/// Upper bound on `limits.maxDocsPerRepo`: one repository's plan is held in memory.
pub const MAX_DOCS_PER_REPO_CAP: u32 = 100_000;
pub const DEFAULT_INTERVAL_MINUTES: u32 = 60;
/// Smallest non-zero `sync.intervalMinutes`.
pub const MIN_INTERVAL_MINUTES: u32 = 5;
/// Largest `sync.intervalMinutes`: one week.
pub const MAX_INTERVAL_MINUTES: u32 = 7 * 24 * 60;
pub const DEFAULT_GITHUB_API_URL: &str = "https://api.github.com";
pub const DEFAULT_INGEST_RATE_LIMIT_PER_MINUTE: u32 = 120;
/// A whole number from 1 to `max` for the setting `name`.
fn parse_count(name: &'static str, v: &str, max: u32) -> Result<u32, ConfigError> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            ConfigError::new(
                name,
                format!("must be a whole number from 1 to {max}, got '{v}'"),
            )
        })
}

/// Ingest batches one process works on at once, unless `INGEST_MAX_IN_FLIGHT` says otherwise:
/// one per CPU. A batch keeps a core busy (parse here, upsert in Postgres), and measured on two
/// cores (`bench-ingest-load`) a third or fourth at once only lengthened every batch.
pub fn default_ingest_max_in_flight() -> u32 {
    std::thread::available_parallelism()
        .map_or(2, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .clamp(1, 1_000)
}
/// How long the GitHub client may sleep for a rate limit before it fails with the retry time.
pub const DEFAULT_RATE_LIMIT_WAIT_BUDGET_SECS: u64 = 60;
/// The tenant name used when configuration comes from the environment alone.
pub const DEFAULT_TENANT: &str = "default";

/// A configuration error: which variable, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {problem}")]
pub struct ConfigError {
    pub variable: String,
    pub problem: String,
}

impl ConfigError {
    fn new(variable: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            variable: variable.into(),
            problem: problem.into(),
        }
    }
}

/// A value that must never reach a log line. `Debug` prints a placeholder.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// A tenant's name: lowercase letters, digits and dashes, 1 to 64 characters. It appears in
/// webhook paths and job payloads.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct TenantId(String);

impl TenantId {
    pub fn parse(value: &str) -> Option<Self> {
        let ok = !value.is_empty()
            && value.len() <= 64
            && value
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        ok.then(|| Self(value.to_owned()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TenantId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        TenantId::parse(&raw)
            .ok_or_else(|| serde::de::Error::custom("a tenant id is 1 to 64 of a-z, 0-9 and '-'"))
    }
}

/// How background jobs run (docs/design.md "Jobs").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobsBackend {
    /// Run the job in the calling process before returning.
    Inline,
    /// Send the job to this SQS queue; the worker function runs it.
    Sqs { queue_url: String },
}

/// The whole process configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub tenants: Vec<TenantConfig>,
    pub jobs: JobsBackend,
    /// `AWS_ENDPOINT_URL_SQS`: an emulator's address; the SDK reads it too.
    pub sqs_endpoint: Option<String>,
    /// `SYNC_SCHEDULER`: on when deployed (running inside Lambda), off locally, unless set.
    pub scheduler_enabled: bool,
    pub ingest_rate_limit_per_minute: u32,
    /// `INGEST_MAX_IN_FLIGHT`: batches one process works on at once (`ingest::admission`).
    pub ingest_max_in_flight: u32,
    /// `SYNC_METRICS`, `SYNC_METRICS_NAMESPACE` (`crate::metrics`).
    pub metrics: crate::metrics::Settings,
}

impl Config {
    pub fn tenant(&self, id: &str) -> Option<&TenantConfig> {
        self.tenants.iter().find(|t| t.id.as_str() == id)
    }
}

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

/// The text search configuration queries are parsed with; each has its own stored vector
/// (migrations/0009_read_api.sql), so a query always meets lexemes made the same way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SearchLanguage {
    /// The default: docs are English prose, so stemming finds "configure" for "configuring" and
    /// stop words drop out of queries ("how to install" searches "install").
    #[default]
    English,
    /// Every word as written: code identifiers, non-English docs.
    Simple,
}

impl SearchLanguage {
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "english" => Some(Self::English),
            "simple" => Some(Self::Simple),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::English => "english",
            Self::Simple => "simple",
        }
    }
}

fn read_config(
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
            max_file_bytes: MAX_FILE_BYTES_CAP,
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

/// `owner/name`, as GitHub spells it; compared case-insensitively like GitHub does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoName {
    pub owner: String,
    pub name: String,
}

impl RepoName {
    pub fn parse(value: &str) -> Option<Self> {
        let (owner, name) = value.split_once('/')?;
        (is_repo_name_part(owner) && is_repo_name_part(name)).then(|| Self {
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
    pub fn eq_ignore_case(&self, full_name: &str) -> bool {
        self.full_name().eq_ignore_ascii_case(full_name)
    }
}

/// An owner or repository name as GitHub allows them: 1 to 100 of letters, digits, `-`, `_`, `.`.
pub fn is_repo_name_part(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl fmt::Display for RepoName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// An `exclude` entry: `owner/name`, `owner/*` or `*/name`, case-insensitive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoPattern {
    owner: String,
    name: String,
}

impl RepoPattern {
    pub fn parse(value: &str) -> Option<Self> {
        let (owner, name) = value.split_once('/')?;
        let part_ok = |s: &str| s == "*" || RepoName::parse(&format!("{s}/x")).is_some();
        (part_ok(owner) && part_ok(name)).then(|| Self {
            owner: owner.to_ascii_lowercase(),
            name: name.to_ascii_lowercase(),
        })
    }
    pub fn matches(&self, full_name: &str) -> bool {
        let Some((owner, name)) = full_name.split_once('/') else {
            return false;
        };
        (self.owner == "*" || self.owner.eq_ignore_ascii_case(owner))
            && (self.name == "*" || self.name.eq_ignore_ascii_case(name))
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

/// Parse `SYNC_CONFIG` (or a tenant's `syncConfig`); `variable` names it in errors.
pub fn parse_sync_config(variable: &str, json: &str) -> Result<SyncConfig, ConfigError> {
    let raw: RawSyncConfig = serde_json::from_str(json)
        .map_err(|e| ConfigError::new(variable, format!("invalid JSON: {e}")))?;
    sync_config_from_raw(variable, raw)
}

fn sync_config_from_raw(variable: &str, raw: RawSyncConfig) -> Result<SyncConfig, ConfigError> {
    let mut docs_paths = BTreeMap::new();
    let repos = match raw.repos {
        None => None,
        Some(entries) => {
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
            Some(repos)
        }
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

    let max_docs_per_repo = raw
        .limits
        .max_docs_per_repo
        .unwrap_or(DEFAULT_MAX_DOCS_PER_REPO);
    if !(1..=MAX_DOCS_PER_REPO_CAP).contains(&max_docs_per_repo) {
        return Err(ConfigError::new(
            format!("{variable}.limits.maxDocsPerRepo"),
            format!("must be between 1 and {MAX_DOCS_PER_REPO_CAP}, got {max_docs_per_repo}"),
        ));
    }
    let max_file_bytes = raw.limits.max_file_bytes.unwrap_or(MAX_FILE_BYTES_CAP);
    if !(1..=MAX_FILE_BYTES_CAP).contains(&max_file_bytes) {
        return Err(ConfigError::new(
            format!("{variable}.limits.maxFileBytes"),
            format!(
                "must be between 1 and {MAX_FILE_BYTES_CAP} (256 KB is also the maximum), got {max_file_bytes}"
            ),
        ));
    }
    let interval_minutes = raw
        .sync
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
    Ok(SyncConfig {
        repos,
        exclude,
        docs_paths,
        max_docs_per_repo,
        max_file_bytes,
        interval_minutes,
        on_startup: raw.sync.on_startup.unwrap_or(false),
    })
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

/// Read the configuration from the process environment.
pub fn from_env() -> Result<Config, ConfigError> {
    let config = from_lookup(|name| std::env::var(name).ok())?;
    crate::metrics::install(&config);
    Ok(config)
}

/// Read the configuration from the process environment, with secrets given by reference
/// (`<NAME>_SECRET_ARN`, `<NAME>_PARAMETER`: `crate::secrets`) fetched at the first call (cold
/// start) and kept for the life of the execution environment.
pub async fn from_env_resolved() -> Result<Config, ConfigError> {
    static RESOLVED: tokio::sync::OnceCell<crate::secrets::Resolved> =
        tokio::sync::OnceCell::const_new();
    let env = |name: &str| std::env::var(name).ok();
    let resolved = RESOLVED
        .get_or_try_init(|| crate::secrets::resolve(&env, crate::secrets::SecretStores::from_env))
        .await?;
    let config = from_lookup(resolved.overlay(env))?;
    crate::metrics::install(&config);
    Ok(config)
}

/// Read the configuration through `lookup` (the environment, or a map in tests).
pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
    let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());

    let tenants = match get("TENANTS_FILE") {
        Some(path) => tenants_from_file(Path::new(&path), &get)?,
        None => vec![tenant_from_env(&get)?],
    };

    let jobs = match get("JOBS_BACKEND").as_deref().map(str::trim) {
        None | Some("inline") => JobsBackend::Inline,
        Some("sqs") => {
            let queue_url = get("SQS_QUEUE_URL").ok_or_else(|| {
                ConfigError::new("SQS_QUEUE_URL", "required when JOBS_BACKEND=sqs")
            })?;
            Url::parse(&queue_url)
                .map_err(|e| ConfigError::new("SQS_QUEUE_URL", format!("not a URL: {e}")))?;
            JobsBackend::Sqs { queue_url }
        }
        Some(other) => {
            return Err(ConfigError::new(
                "JOBS_BACKEND",
                format!("must be 'inline' or 'sqs', got '{other}'"),
            ));
        }
    };

    let deployed = get("AWS_LAMBDA_FUNCTION_NAME").is_some() && get("SYNCPLANE_LOCAL").is_none();
    let scheduler_enabled = match get("SYNC_SCHEDULER") {
        None => deployed,
        Some(v) => parse_bool("SYNC_SCHEDULER", &v)?,
    };

    let ingest_rate_limit_per_minute = match get("INGEST_RATE_LIMIT_PER_MINUTE") {
        None => DEFAULT_INGEST_RATE_LIMIT_PER_MINUTE,
        Some(v) => parse_count("INGEST_RATE_LIMIT_PER_MINUTE", &v, 1_000_000)?,
    };
    let ingest_max_in_flight = match get("INGEST_MAX_IN_FLIGHT") {
        None => default_ingest_max_in_flight(),
        Some(v) => parse_count("INGEST_MAX_IN_FLIGHT", &v, 1_000)?,
    };

    Ok(Config {
        tenants,
        jobs,
        sqs_endpoint: get("AWS_ENDPOINT_URL_SQS"),
        scheduler_enabled,
        ingest_rate_limit_per_minute,
        ingest_max_in_flight,
        metrics: crate::metrics::Settings::from_lookup(&get)?,
    })
}

fn parse_bool(variable: &str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        other => Err(ConfigError::new(
            variable,
            format!("must be 1 or 0 (true/false), got '{other}'"),
        )),
    }
}

fn parse_database_url(variable: &str, value: &str) -> Result<Secret, ConfigError> {
    let url = Url::parse(value)
        .map_err(|_| ConfigError::new(variable, "not a URL (postgres://user@host:port/db)"))?;
    if !matches!(url.scheme(), "postgres" | "postgresql") {
        return Err(ConfigError::new(
            variable,
            "must use the postgres:// or postgresql:// scheme",
        ));
    }
    Ok(Secret::new(value))
}

/// `DATABASE_URL` with `DATABASE_PASSWORD` as its password (deployed: the URL is not secret, the
/// password comes from a secret by reference, possibly an RDS-managed JSON secret).
fn with_password(url: &Secret, password: &str) -> Result<Secret, ConfigError> {
    const VAR: &str = "DATABASE_PASSWORD";
    let mut parsed = Url::parse(url.expose()).map_err(|_| {
        ConfigError::new("DATABASE_URL", "not a URL (postgres://user@host:port/db)")
    })?;
    if parsed.password().is_some() {
        return Err(ConfigError::new(
            VAR,
            "DATABASE_URL already carries a password: remove it from the URL or unset DATABASE_PASSWORD",
        ));
    }
    let password = crate::secrets::database_password(password);
    parsed
        .set_password(Some(&password))
        .map_err(|_| ConfigError::new(VAR, "DATABASE_URL has no user to attach a password to"))?;
    Ok(Secret::new(String::from(parsed)))
}

fn parse_api_url(variable: &str, value: &str) -> Result<Url, ConfigError> {
    let url =
        Url::parse(value).map_err(|e| ConfigError::new(variable, format!("not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ConfigError::new(variable, "must be an http(s) URL"));
    }
    Ok(url)
}

fn parse_id(variable: &str, value: &str) -> Result<u64, ConfigError> {
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            ConfigError::new(
                variable,
                format!("must be a positive whole number, got '{value}'"),
            )
        })
}

fn read_key_file(variable: &str, path: &str) -> Result<Secret, ConfigError> {
    std::fs::read_to_string(path)
        .map(Secret::new)
        .map_err(|e| ConfigError::new(variable, format!("cannot read '{path}': {e}")))
}

/// Parse the App key now, so that a key that cannot work is refused at start naming its setting
/// (issue 13 §10), not at the first sync: PEM armour, a base64 body, and inside it an RSA private
/// key's DER structure (PKCS#1 `RSA PRIVATE KEY` or PKCS#8 `PRIVATE KEY` with the rsaEncryption
/// algorithm). The structure is walked, not the key loaded: no RSA work at a cold start. Whether
/// GitHub trusts the key is learnt when it is used.
fn check_pem(variable: &str, pem: &Secret) -> Result<(), ConfigError> {
    pem_rsa_key(pem.expose()).map_err(|problem| ConfigError::new(variable, problem))
}

fn pem_rsa_key(text: &str) -> Result<(), String> {
    use base64::Engine as _;
    const SHAPE: &str = "is not a PEM private key (expected '-----BEGIN RSA PRIVATE KEY-----' or \
                         '-----BEGIN PRIVATE KEY-----'): use the .pem file GitHub generated for the App";
    let begin = text.find("-----BEGIN ").ok_or(SHAPE)?;
    let after = &text[begin + "-----BEGIN ".len()..];
    let label_end = after.find("-----").ok_or(SHAPE)?;
    let label = &after[..label_end];
    let body_and_end = &after[label_end + 5..];
    let end_marker = format!("-----END {label}-----");
    let body = &body_and_end[..body_and_end.find(&end_marker).ok_or(SHAPE)?];
    let pkcs8 = match label {
        "RSA PRIVATE KEY" => false,
        "PRIVATE KEY" => true,
        other => {
            return Err(format!(
                "holds a '{other}', not an RSA private key: GitHub App keys are RSA (the .pem file GitHub generated)"
            ));
        }
    };
    let compact: String = body.split_whitespace().collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .map_err(|_| {
            "has a PEM body that is not base64: the key is damaged or truncated".to_owned()
        })?;
    let ok = if pkcs8 {
        pkcs8_rsa(&der)
    } else {
        pkcs1_rsa(&der)
    };
    if ok {
        Ok(())
    } else {
        Err(
            "has a PEM body that is not an RSA private key: the key is damaged or truncated \
             (use the .pem file GitHub generated for the App)"
                .to_owned(),
        )
    }
}

/// One DER element: its tag, its contents and what follows it.
fn der_element(bytes: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = bytes.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

const DER_SEQUENCE: u8 = 0x30;
const DER_INTEGER: u8 = 0x02;
const DER_OCTET_STRING: u8 = 0x04;
const DER_OID: u8 = 0x06;
/// 1.2.840.113549.1.1.1, rsaEncryption.
const RSA_ENCRYPTION_OID: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

/// PKCS#1 `RSAPrivateKey`: one SEQUENCE of (at least) nine INTEGERs, nothing after it.
fn pkcs1_rsa(der: &[u8]) -> bool {
    let Some((DER_SEQUENCE, mut fields, [])) = der_element(der) else {
        return false;
    };
    for _ in 0..9 {
        match der_element(fields) {
            Some((DER_INTEGER, value, rest)) if !value.is_empty() => fields = rest,
            _ => return false,
        }
    }
    true
}

/// PKCS#8 `PrivateKeyInfo`: version, the rsaEncryption algorithm, then a PKCS#1 key.
fn pkcs8_rsa(der: &[u8]) -> bool {
    let Some((DER_SEQUENCE, fields, [])) = der_element(der) else {
        return false;
    };
    let Some((DER_INTEGER, _, fields)) = der_element(fields) else {
        return false;
    };
    let Some((DER_SEQUENCE, algorithm, fields)) = der_element(fields) else {
        return false;
    };
    let Some((DER_OID, oid, _)) = der_element(algorithm) else {
        return false;
    };
    let Some((DER_OCTET_STRING, key, _)) = der_element(fields) else {
        return false;
    };
    oid == RSA_ENCRYPTION_OID && pkcs1_rsa(key)
}

fn rate_limit_budget(get: &impl Fn(&str) -> Option<String>) -> Result<u64, ConfigError> {
    const VAR: &str = "GITHUB_RATE_LIMIT_WAIT_BUDGET_SECONDS";
    match get(VAR) {
        None => Ok(DEFAULT_RATE_LIMIT_WAIT_BUDGET_SECS),
        Some(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| *n <= 900)
            .ok_or_else(|| ConfigError::new(VAR, format!("must be 0 to 900 seconds, got '{v}'"))),
    }
}

fn tenant_from_env(get: &impl Fn(&str) -> Option<String>) -> Result<TenantConfig, ConfigError> {
    let database_url = get("DATABASE_URL").ok_or_else(|| {
        ConfigError::new("DATABASE_URL", "required (postgres://user@host:port/db)")
    })?;
    let database_url = parse_database_url("DATABASE_URL", &database_url)?;
    let database_url = match get("DATABASE_PASSWORD") {
        None => database_url,
        Some(password) => with_password(&database_url, &password)?,
    };

    let app_id = get("GITHUB_APP_ID");
    let installation = get("GITHUB_INSTALLATION_ID");
    let key = get("GITHUB_APP_PRIVATE_KEY");
    let key_file = get("GITHUB_APP_PRIVATE_KEY_FILE");
    let any_github =
        app_id.is_some() || installation.is_some() || key.is_some() || key_file.is_some();
    let github = if any_github {
        let app_id = app_id.ok_or_else(|| {
            ConfigError::new("GITHUB_APP_ID", "required when a GitHub App is configured")
        })?;
        let installation = installation.ok_or_else(|| {
            ConfigError::new(
                "GITHUB_INSTALLATION_ID",
                "required when a GitHub App is configured",
            )
        })?;
        let (variable, pem) = match (key, key_file) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(
                    "GITHUB_APP_PRIVATE_KEY",
                    "set either GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_FILE, not both",
                ));
            }
            // Environment variables often carry the PEM with literal "\n".
            (Some(k), None) => (
                "GITHUB_APP_PRIVATE_KEY",
                Secret::new(k.replace("\\n", "\n")),
            ),
            (None, Some(f)) => (
                "GITHUB_APP_PRIVATE_KEY_FILE",
                read_key_file("GITHUB_APP_PRIVATE_KEY_FILE", &f)?,
            ),
            (None, None) => {
                return Err(ConfigError::new(
                    "GITHUB_APP_PRIVATE_KEY",
                    "required (or GITHUB_APP_PRIVATE_KEY_FILE) when a GitHub App is configured",
                ));
            }
        };
        check_pem(variable, &pem)?;
        Some(GithubAppConfig {
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
        })
    } else {
        None
    };

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

/// `GITHUB_WEBHOOK_SECRET` holds one secret, or several separated by commas during a rotation.
fn split_secrets(value: &str) -> Vec<Secret> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(Secret::new)
        .collect()
}

fn tenants_from_file(
    path: &Path,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Vec<TenantConfig>, ConfigError> {
    const VAR: &str = "TENANTS_FILE";
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
        let at = |field: &str| format!("{VAR}: tenants[{}].{field}", t.id);
        if tenants.iter().any(|seen| seen.id == t.id) {
            return Err(ConfigError::new(at("id"), "appears twice"));
        }
        let github = match t.github {
            None => None,
            Some(g) => {
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
                Some(GithubAppConfig {
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
        };
        let sync = match t.sync_config {
            None => SyncConfig::default(),
            Some(value) => {
                let variable = at("syncConfig");
                let raw: RawSyncConfig = serde_json::from_value(value)
                    .map_err(|e| ConfigError::new(&variable, format!("invalid: {e}")))?;
                sync_config_from_raw(&variable, raw)?
            }
        };
        tenants.push(TenantConfig {
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
        });
    }
    Ok(tenants)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        from_lookup(|k| map.get(k).cloned())
    }

    const DB: (&str, &str) = ("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/x");
    /// A real RSA key (PKCS#1), the one the fake GitHub trusts.
    const KEY: &str = include_str!("../../tests/fixtures/keys/app.pem");

    #[test]
    fn missing_database_url_names_the_variable() {
        let err = cfg(&[]).unwrap_err();
        assert_eq!(err.variable, "DATABASE_URL");
    }

    #[test]
    fn defaults_follow_the_spec() {
        let c = cfg(&[DB]).unwrap();
        let s = &c.tenants[0].sync;
        assert_eq!(s.max_docs_per_repo, 2000);
        assert_eq!(s.max_file_bytes, 262_144);
        assert_eq!(s.interval_minutes, 60);
        assert!(!s.on_startup);
        assert_eq!(c.jobs, JobsBackend::Inline);
        assert!(!c.scheduler_enabled, "scheduler is off locally by default");
        assert_eq!(c.ingest_rate_limit_per_minute, 120);
        assert_eq!(c.ingest_max_in_flight, default_ingest_max_in_flight());
        assert!(c.tenants[0].github.is_none());
    }

    #[test]
    fn scheduler_defaults_on_inside_lambda_and_can_be_overridden() {
        let on = cfg(&[DB, ("AWS_LAMBDA_FUNCTION_NAME", "tick")]).unwrap();
        assert!(on.scheduler_enabled);
        let off = cfg(&[
            DB,
            ("AWS_LAMBDA_FUNCTION_NAME", "tick"),
            ("SYNC_SCHEDULER", "0"),
        ])
        .unwrap();
        assert!(!off.scheduler_enabled);
        let err = cfg(&[DB, ("SYNC_SCHEDULER", "maybe")]).unwrap_err();
        assert_eq!(err.variable, "SYNC_SCHEDULER");
    }

    #[test]
    fn interval_rules_zero_off_else_at_least_five() {
        let ok0 = cfg(&[DB, ("SYNC_CONFIG", r#"{"sync":{"intervalMinutes":0}}"#)]).unwrap();
        assert_eq!(ok0.tenants[0].sync.interval_minutes, 0);
        let ok5 = cfg(&[DB, ("SYNC_CONFIG", r#"{"sync":{"intervalMinutes":5}}"#)]).unwrap();
        assert_eq!(ok5.tenants[0].sync.interval_minutes, 5);
        let err = cfg(&[DB, ("SYNC_CONFIG", r#"{"sync":{"intervalMinutes":4}}"#)]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG.sync.intervalMinutes");
        assert!(err.problem.contains("at least") || err.problem.contains("between 5"));
    }

    #[test]
    fn max_file_bytes_default_is_also_the_maximum() {
        let err = cfg(&[DB, ("SYNC_CONFIG", r#"{"limits":{"maxFileBytes":262145}}"#)]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG.limits.maxFileBytes");
        let ok = cfg(&[
            DB,
            (
                "SYNC_CONFIG",
                r#"{"limits":{"maxFileBytes":1000,"maxDocsPerRepo":3}}"#,
            ),
        ])
        .unwrap();
        assert_eq!(ok.tenants[0].sync.max_file_bytes, 1000);
        assert_eq!(ok.tenants[0].sync.max_docs_per_repo, 3);
        let err = cfg(&[DB, ("SYNC_CONFIG", r#"{"limits":{"maxDocsPerRepo":0}}"#)]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG.limits.maxDocsPerRepo");
    }

    #[test]
    fn unknown_sync_config_keys_and_bad_json_are_refused() {
        let err = cfg(&[DB, ("SYNC_CONFIG", r#"{"repo":[]}"#)]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG");
        let err = cfg(&[DB, ("SYNC_CONFIG", "{")]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG");
    }

    #[test]
    fn repos_exclude_and_docs_path_overrides() {
        let c = cfg(&[
            DB,
            (
                "SYNC_CONFIG",
                r#"{"repos":["acme/a",{"name":"Acme/B","docsPath":"/handbook/"}],"exclude":["acme/a"]}"#,
            ),
        ])
        .unwrap();
        let s = &c.tenants[0].sync;
        assert!(!s.selects("acme/a"), "exclude wins over repos");
        assert!(s.selects("ACME/b"), "names compare case-insensitively");
        assert!(!s.selects("acme/c"), "not listed");
        assert_eq!(s.docs_path("acme/b"), Some("handbook"));
        let err = cfg(&[DB, ("SYNC_CONFIG", r#"{"repos":["nope"]}"#)]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG.repos");
        let err = cfg(&[
            DB,
            (
                "SYNC_CONFIG",
                r#"{"repos":[{"name":"a/b","docsPath":"../x"}]}"#,
            ),
        ])
        .unwrap_err();
        assert!(err.variable.ends_with("docsPath"));
    }

    #[test]
    fn exclude_wildcards() {
        let p = RepoPattern::parse("acme/*").unwrap();
        assert!(p.matches("ACME/anything"));
        assert!(!p.matches("other/anything"));
        assert!(RepoPattern::parse("nonsense").is_none());
    }

    #[test]
    fn github_app_settings_are_all_or_nothing() {
        let err = cfg(&[DB, ("GITHUB_APP_ID", "12")]).unwrap_err();
        assert_eq!(err.variable, "GITHUB_INSTALLATION_ID");
        let err = cfg(&[DB, ("GITHUB_APP_ID", "12"), ("GITHUB_INSTALLATION_ID", "3")]).unwrap_err();
        assert_eq!(err.variable, "GITHUB_APP_PRIVATE_KEY");
        let err = cfg(&[
            DB,
            ("GITHUB_APP_ID", "abc"),
            ("GITHUB_INSTALLATION_ID", "3"),
            ("GITHUB_APP_PRIVATE_KEY", KEY),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "GITHUB_APP_ID");
        let err = cfg(&[
            DB,
            ("GITHUB_APP_ID", "1"),
            ("GITHUB_INSTALLATION_ID", "3"),
            ("GITHUB_APP_PRIVATE_KEY", "not a key"),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "GITHUB_APP_PRIVATE_KEY");
        let err = cfg(&[
            DB,
            ("GITHUB_APP_ID", "1"),
            ("GITHUB_INSTALLATION_ID", "3"),
            ("GITHUB_APP_PRIVATE_KEY_FILE", "/nonexistent/key.pem"),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "GITHUB_APP_PRIVATE_KEY_FILE");
        let ok = cfg(&[
            DB,
            ("GITHUB_APP_ID", "1"),
            ("GITHUB_INSTALLATION_ID", "3"),
            ("GITHUB_API_URL", "http://127.0.0.1:9/"),
            ("GITHUB_APP_PRIVATE_KEY", KEY),
        ])
        .unwrap();
        let gh = ok.tenants[0].github.as_ref().unwrap();
        assert_eq!(gh.installation_id, 3);
        assert_eq!(gh.private_key_pem.expose(), KEY);
        assert!(
            !format!("{gh:?}").contains("BEGIN"),
            "the key never reaches Debug output"
        );
    }

    #[test]
    fn the_app_key_is_parsed_at_start_and_a_junk_body_is_refused_naming_its_setting() {
        let app = |key: &str| {
            cfg(&[
                DB,
                ("GITHUB_APP_ID", "1"),
                ("GITHUB_INSTALLATION_ID", "3"),
                ("GITHUB_APP_PRIVATE_KEY", key),
            ])
        };
        app(KEY).unwrap();
        app(include_str!("../../tests/fixtures/keys/app.pkcs8.pem")).unwrap();
        // As an environment variable often carries it: one line, "\n" escaped.
        let escaped = app(&KEY.replace('\n', "\\n")).unwrap();
        assert_eq!(
            escaped.tenants[0]
                .github
                .as_ref()
                .unwrap()
                .private_key_pem
                .expose(),
            KEY,
            "\\n is unescaped"
        );
        let junk_body = [
            "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----\nnot base64 at all!\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n",
            "not a key",
        ];
        for junk in junk_body {
            let err = app(junk).unwrap_err();
            assert_eq!(err.variable, "GITHUB_APP_PRIVATE_KEY", "{junk}");
            assert!(
                !err.to_string().contains("bm90"),
                "the key never reaches the message"
            );
        }
        // A truncated copy of a real key: armour and base64 intact, the structure cut short.
        let lines: Vec<&str> = KEY.lines().collect();
        let truncated = [&lines[..5], &lines[lines.len() - 1..]].concat().join("\n");
        assert_eq!(
            app(&truncated).unwrap_err().variable,
            "GITHUB_APP_PRIVATE_KEY"
        );
    }

    #[test]
    fn the_graphql_url_is_optional_and_checked_at_start() {
        let app = [
            DB,
            ("GITHUB_APP_ID", "1"),
            ("GITHUB_INSTALLATION_ID", "3"),
            ("GITHUB_APP_PRIVATE_KEY", KEY),
        ];
        let derived = cfg(&app).unwrap();
        assert_eq!(
            derived.tenants[0].github.as_ref().unwrap().graphql_url,
            None
        );
        let mut set = app.to_vec();
        set.push(("GITHUB_GRAPHQL_URL", "https://ghe.example.com/api/graphql"));
        let c = cfg(&set).unwrap();
        assert_eq!(
            c.tenants[0]
                .github
                .as_ref()
                .unwrap()
                .graphql_url
                .as_ref()
                .map(Url::as_str),
            Some("https://ghe.example.com/api/graphql")
        );
        let mut bad = app.to_vec();
        bad.push(("GITHUB_GRAPHQL_URL", "ftp://x/graphql"));
        assert_eq!(cfg(&bad).unwrap_err().variable, "GITHUB_GRAPHQL_URL");
    }

    #[test]
    fn jobs_backend_sqs_needs_a_queue_url() {
        let err = cfg(&[DB, ("JOBS_BACKEND", "sqs")]).unwrap_err();
        assert_eq!(err.variable, "SQS_QUEUE_URL");
        let err = cfg(&[DB, ("JOBS_BACKEND", "kafka")]).unwrap_err();
        assert_eq!(err.variable, "JOBS_BACKEND");
        let ok = cfg(&[
            DB,
            ("JOBS_BACKEND", "sqs"),
            ("SQS_QUEUE_URL", "http://127.0.0.1:4566/000000000000/jobs"),
        ])
        .unwrap();
        assert!(matches!(ok.jobs, JobsBackend::Sqs { .. }));
    }

    #[test]
    fn webhook_secrets_rotate_and_ingest_limit_is_checked() {
        let c = cfg(&[DB, ("GITHUB_WEBHOOK_SECRET", "new, old")]).unwrap();
        assert_eq!(c.tenants[0].webhook_secrets.len(), 2);
        let err = cfg(&[DB, ("INGEST_RATE_LIMIT_PER_MINUTE", "-1")]).unwrap_err();
        assert_eq!(err.variable, "INGEST_RATE_LIMIT_PER_MINUTE");
        for bad in ["0", "many", "1001"] {
            let err = cfg(&[DB, ("INGEST_MAX_IN_FLIGHT", bad)]).unwrap_err();
            assert_eq!(err.variable, "INGEST_MAX_IN_FLIGHT");
        }
        let c = cfg(&[DB, ("INGEST_MAX_IN_FLIGHT", "8")]).unwrap();
        assert_eq!(c.ingest_max_in_flight, 8);
        let err = cfg(&[("DATABASE_URL", "mysql://x")]).unwrap_err();
        assert_eq!(err.variable, "DATABASE_URL");
    }

    #[test]
    fn database_password_is_spliced_into_the_url() {
        let c = cfg(&[
            ("DATABASE_URL", "postgres://app@db.internal:5432/syncplane"),
            (
                "DATABASE_PASSWORD",
                r#"{"username":"app","password":"p@ss/word"}"#,
            ),
        ])
        .unwrap();
        let url = c.tenants[0].database_url.expose().to_owned();
        assert_eq!(
            url,
            "postgres://app:p%40ss%2Fword@db.internal:5432/syncplane"
        );
        let opts: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
        assert_eq!(opts.get_username(), "app");
        let err = cfg(&[
            ("DATABASE_URL", "postgres://app:old@db/x"),
            ("DATABASE_PASSWORD", "new"),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "DATABASE_PASSWORD");
        assert!(!err.to_string().contains("new") && !err.to_string().contains("old"));
    }

    #[test]
    fn tenants_file_names_the_field() {
        let dir = std::env::temp_dir().join(format!("syncplane-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tenants.json");
        std::fs::write(
            &path,
            r#"{"tenants":[
                {"id":"acme","databaseUrl":"postgres://a@127.0.0.1/a","webhookSecrets":["s1","s2"],
                 "syncConfig":{"sync":{"intervalMinutes":15}}},
                {"id":"beta","databaseUrl":"postgres://b@127.0.0.1/b"}]}"#,
        )
        .unwrap();
        let c = cfg(&[("TENANTS_FILE", path.to_str().unwrap())]).unwrap();
        assert_eq!(c.tenants.len(), 2);
        assert_eq!(c.tenant("acme").unwrap().sync.interval_minutes, 15);
        assert_eq!(c.tenant("acme").unwrap().webhook_secrets.len(), 2);

        std::fs::write(
            &path,
            r#"{"tenants":[{"id":"acme","databaseUrl":"postgres://a@127.0.0.1/a",
                "syncConfig":{"sync":{"intervalMinutes":2}}}]}"#,
        )
        .unwrap();
        let err = cfg(&[("TENANTS_FILE", path.to_str().unwrap())]).unwrap_err();
        assert_eq!(
            err.variable,
            "TENANTS_FILE: tenants[acme].syncConfig.sync.intervalMinutes"
        );

        std::fs::write(
            &path,
            r#"{"tenants":[{"id":"Bad Id","databaseUrl":"postgres://a@h/a"}]}"#,
        )
        .unwrap();
        let err = cfg(&[("TENANTS_FILE", path.to_str().unwrap())]).unwrap_err();
        assert_eq!(err.variable, "TENANTS_FILE");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
