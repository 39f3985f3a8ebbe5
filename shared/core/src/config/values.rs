//! One setting's value, parsed: whole numbers, switches, URLs, the database URL (with its
//! password spliced in), key files, the rate-limit wait budget and webhook secret lists. Each
//! error names the variable (or the `TENANTS_FILE` field) it was given.

use url::Url;

use super::error::ConfigError;
use super::names::Secret;
use super::secrets::database_password;

/// How long the GitHub client may sleep for a rate limit before it fails with the retry time.
pub const DEFAULT_RATE_LIMIT_WAIT_BUDGET_SECS: u64 = 60;

/// A whole number from 1 to `max` for the setting `name`.
pub(super) fn parse_count(name: &'static str, v: &str, max: u32) -> Result<u32, ConfigError> {
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

pub(super) fn parse_bool(variable: &str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        other => Err(ConfigError::new(
            variable,
            format!("must be 1 or 0 (true/false), got '{other}'"),
        )),
    }
}

pub(super) fn parse_database_url(variable: &str, value: &str) -> Result<Secret, ConfigError> {
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
pub(super) fn with_password(url: &Secret, password: &str) -> Result<Secret, ConfigError> {
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
    let password = database_password(password);
    parsed
        .set_password(Some(&password))
        .map_err(|_| ConfigError::new(VAR, "DATABASE_URL has no user to attach a password to"))?;
    Ok(Secret::new(String::from(parsed)))
}

pub(super) fn parse_api_url(variable: &str, value: &str) -> Result<Url, ConfigError> {
    let url =
        Url::parse(value).map_err(|e| ConfigError::new(variable, format!("not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ConfigError::new(variable, "must be an http(s) URL"));
    }
    Ok(url)
}

pub(super) fn parse_id(variable: &str, value: &str) -> Result<u64, ConfigError> {
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

pub(super) fn read_key_file(variable: &str, path: &str) -> Result<Secret, ConfigError> {
    std::fs::read_to_string(path)
        .map(Secret::new)
        .map_err(|e| ConfigError::new(variable, format!("cannot read '{path}': {e}")))
}

pub(super) fn rate_limit_budget(get: &impl Fn(&str) -> Option<String>) -> Result<u64, ConfigError> {
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

/// `GITHUB_WEBHOOK_SECRET` holds one secret, or several separated by commas during a rotation.
pub(super) fn split_secrets(value: &str) -> Vec<Secret> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(Secret::new)
        .collect()
}
