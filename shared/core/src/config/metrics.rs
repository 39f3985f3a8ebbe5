//! Metric settings (issue 13 §5): `SYNC_METRICS` (`emf` or `off`; on inside Lambda, off
//! elsewhere: the CLI's stdout carries its result, a local run sets `SYNCPLANE_LOCAL`) and
//! `SYNC_METRICS_NAMESPACE` (default `syncplane`). Only the parsing and its rules live here;
//! emitting the metrics is the crate root's `metrics` module, installed by a function's start-up.

use super::error::ConfigError;

/// Namespace when `SYNC_METRICS_NAMESPACE` is unset.
pub(crate) const DEFAULT_NAMESPACE: &str = "syncplane";
/// Namespace length (CloudWatch: 1 to 255 characters).
const MAX_NAMESPACE_CHARS: usize = 255;

/// How metrics are emitted in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub enabled: bool,
    pub namespace: String,
}

impl Settings {
    /// Read `SYNC_METRICS` and `SYNC_METRICS_NAMESPACE` through `get` (blank values are unset).
    pub fn from_lookup(get: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        // As the scheduler: `cargo lambda watch` also names the function, the local run says so.
        let deployed = get("AWS_LAMBDA_FUNCTION_NAME").is_some() && !super::local_run(get);
        let enabled = match get("SYNC_METRICS").map(|v| v.trim().to_ascii_lowercase()) {
            None => deployed,
            Some(v) if v == "emf" || v == "on" || v == "1" => true,
            Some(v) if v == "off" || v == "0" => false,
            Some(v) => {
                return Err(ConfigError::new(
                    "SYNC_METRICS",
                    format!("must be 'emf' or 'off', got '{v}'"),
                ));
            }
        };
        let namespace = get("SYNC_METRICS_NAMESPACE")
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
        if !valid_namespace(&namespace) {
            return Err(ConfigError::new(
                "SYNC_METRICS_NAMESPACE",
                format!(
                    "must be 1 to {MAX_NAMESPACE_CHARS} of A-Z a-z 0-9 . - _ / # : and must not start with 'AWS/', got '{namespace}'"
                ),
            ));
        }
        Ok(Self { enabled, namespace })
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enabled: false,
            namespace: DEFAULT_NAMESPACE.to_owned(),
        }
    }
}

/// A CloudWatch namespace: 1 to 255 of `A-Z a-z 0-9 . - _ / # :`, not starting with `AWS/`.
pub(crate) fn valid_namespace(ns: &str) -> bool {
    !ns.is_empty()
        && ns.chars().count() <= MAX_NAMESPACE_CHARS
        && !ns.starts_with("AWS/")
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_/#:".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_default_on_in_lambda_and_check_the_namespace() {
        let get = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(!Settings::from_lookup(&get(&[])).unwrap().enabled);
        assert!(
            Settings::from_lookup(&get(&[("AWS_LAMBDA_FUNCTION_NAME", "f")]))
                .unwrap()
                .enabled
        );
        assert!(
            !Settings::from_lookup(&get(&[
                ("AWS_LAMBDA_FUNCTION_NAME", "f"),
                ("SYNC_METRICS", "off")
            ]))
            .unwrap()
            .enabled
        );
        let err = Settings::from_lookup(&get(&[("SYNC_METRICS_NAMESPACE", "AWS/Lambda")]));
        assert_eq!(err.unwrap_err().variable, "SYNC_METRICS_NAMESPACE");
        let err = Settings::from_lookup(&get(&[("SYNC_METRICS", "yes please")]));
        assert_eq!(err.unwrap_err().variable, "SYNC_METRICS");
    }
}
