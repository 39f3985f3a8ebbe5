//! Metrics in CloudWatch Embedded Metric Format (issue 13 §5): plain JSON lines on standard
//! output that CloudWatch Logs turns into metrics, with no agent and no API call.
//!
//! One [`Record`] is one log line: a JSON object whose `_aws` member holds the `Timestamp`
//! (milliseconds since the epoch) and the `CloudWatchMetrics` directives (namespace, dimension
//! sets, metric names and units); the dimension values and metric values are the object's own
//! top-level members. The format's rules are kept by construction and checked by [`validate`]:
//! at most 100 metrics per directive (a record with more is split over several lines), at most 30
//! dimensions per dimension set, every referenced member present (dimensions as non-empty ASCII
//! strings, metrics as numbers), a unit from CloudWatch's list, one line under the 1 MB event cap.
//!
//! Lines go to standard output (logs go to standard error: `telemetry`), each written whole with
//! one call so no log line can interleave. Settings (`config`): `SYNC_METRICS` (`emf` or `off`;
//! on inside Lambda, off elsewhere: the CLI's stdout carries its result, a local run sets
//! `SYNCPLANE_LOCAL`) and
//! `SYNC_METRICS_NAMESPACE` (default `syncplane`). Every record carries the tenant as a dimension.
//! Tests read the lines of the code they run with [`capture`], whatever the settings.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

use serde_json::{Map, Value, json};

use crate::config::ConfigError;

/// Namespace when `SYNC_METRICS_NAMESPACE` is unset.
pub const DEFAULT_NAMESPACE: &str = "syncplane";
/// Metric definitions one directive may hold (EMF specification).
pub const MAX_METRICS_PER_DIRECTIVE: usize = 100;
/// Dimension keys one dimension set may hold (EMF specification).
pub const MAX_DIMENSIONS_PER_SET: usize = 30;
/// A CloudWatch Logs event, and so one EMF document, is at most 1 MB.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;
/// Namespace length (CloudWatch: 1 to 255 characters).
const MAX_NAMESPACE_CHARS: usize = 255;
/// Dimension names and metric names are at most 255 characters, dimension values 1024.
const MAX_NAME_CHARS: usize = 255;
const MAX_DIMENSION_VALUE_CHARS: usize = 1024;

/// The dimension every record carries.
pub const TENANT: &str = "Tenant";

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
        let deployed =
            get("AWS_LAMBDA_FUNCTION_NAME").is_some() && get("SYNCPLANE_LOCAL").is_none();
        let enabled = match get("SYNC_METRICS").map(|v| v.trim().to_ascii_lowercase()) {
            None => deployed,
            Some(v) if v == "emf" || v == "on" || v == "1" => true,
            Some(v) if v == "off" || v == "0" => false,
            Some(v) => {
                return Err(ConfigError {
                    variable: "SYNC_METRICS".to_owned(),
                    problem: format!("must be 'emf' or 'off', got '{v}'"),
                });
            }
        };
        let namespace = get("SYNC_METRICS_NAMESPACE")
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
        if !valid_namespace(&namespace) {
            return Err(ConfigError {
                variable: "SYNC_METRICS_NAMESPACE".to_owned(),
                problem: format!(
                    "must be 1 to {MAX_NAMESPACE_CHARS} of A-Z a-z 0-9 . - _ / # : and must not start with 'AWS/', got '{namespace}'"
                ),
            });
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

fn valid_namespace(ns: &str) -> bool {
    !ns.is_empty()
        && ns.chars().count() <= MAX_NAMESPACE_CHARS
        && !ns.starts_with("AWS/")
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_/#:".contains(c))
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();
static DEFAULT_TENANT: OnceLock<String> = OnceLock::new();

/// Set this process's settings from its configuration (at start; a second call keeps the first).
pub fn install(config: &crate::config::Config) {
    let _ = SETTINGS.set(config.metrics.clone());
    if let Some(first) = config.tenants.first() {
        let _ = DEFAULT_TENANT.set(first.id.to_string());
    }
}

fn settings() -> &'static Settings {
    SETTINGS.get_or_init(Settings::default)
}

/// The tenant of surfaces that serve the first configured tenant only (ingest).
pub fn default_tenant() -> &'static str {
    DEFAULT_TENANT.get_or_init(|| crate::config::DEFAULT_TENANT.to_owned())
}

/// CloudWatch units used here (the names CloudWatch spells).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Bytes,
    Milliseconds,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Count => "Count",
            Self::Bytes => "Bytes",
            Self::Milliseconds => "Milliseconds",
        }
    }
}

/// Every unit CloudWatch accepts, for [`validate`].
pub const CLOUDWATCH_UNITS: &[&str] = &[
    "Seconds",
    "Microseconds",
    "Milliseconds",
    "Bytes",
    "Kilobytes",
    "Megabytes",
    "Gigabytes",
    "Terabytes",
    "Bits",
    "Kilobits",
    "Megabits",
    "Gigabits",
    "Terabits",
    "Percent",
    "Count",
    "Bytes/Second",
    "Kilobytes/Second",
    "Megabytes/Second",
    "Gigabytes/Second",
    "Terabytes/Second",
    "Bits/Second",
    "Kilobits/Second",
    "Megabits/Second",
    "Gigabits/Second",
    "Terabits/Second",
    "Count/Second",
    "None",
];

/// One group of metrics reported under one dimension set.
#[derive(Debug, Clone)]
struct Group {
    dimensions: Vec<(&'static str, String)>,
    metrics: Vec<(&'static str, Unit, f64)>,
}

/// What one event reports: groups of metrics, each under its dimensions (the tenant always among
/// them); each group is its own document.
#[derive(Debug, Clone)]
pub struct Record {
    tenant: String,
    groups: Vec<Group>,
}

impl Record {
    pub fn new(tenant: &str) -> Self {
        Self {
            tenant: tenant.to_owned(),
            groups: vec![Group {
                dimensions: Vec::new(),
                metrics: Vec::new(),
            }],
        }
    }

    /// Add a metric under the tenant alone.
    pub fn metric(mut self, name: &'static str, unit: Unit, value: impl Into<f64>) -> Self {
        self.groups[0].metrics.push((name, unit, value.into()));
        self
    }

    /// Add a metric under the tenant and `dimensions`.
    pub fn metric_by(
        mut self,
        dimensions: &[(&'static str, &str)],
        name: &'static str,
        unit: Unit,
        value: impl Into<f64>,
    ) -> Self {
        let dims: Vec<(&'static str, String)> = dimensions
            .iter()
            .map(|(k, v)| (*k, (*v).to_owned()))
            .collect();
        match self.groups.iter_mut().find(|g| g.dimensions == dims) {
            Some(g) => g.metrics.push((name, unit, value.into())),
            None => self.groups.push(Group {
                dimensions: dims,
                metrics: vec![(name, unit, value.into())],
            }),
        }
        self
    }

    /// The EMF documents of this record at `timestamp_ms`: one, or more when a group holds more
    /// than [`MAX_METRICS_PER_DIRECTIVE`] metrics.
    pub fn documents(&self, namespace: &str, timestamp_ms: i64) -> Vec<Value> {
        let mut docs = Vec::new();
        for group in self.groups.iter().filter(|g| !g.metrics.is_empty()) {
            for chunk in group.metrics.chunks(MAX_METRICS_PER_DIRECTIVE) {
                let mut root = Map::new();
                let mut keys = vec![TENANT.to_owned()];
                root.insert(TENANT.to_owned(), Value::String(ascii(&self.tenant)));
                for (k, v) in &group.dimensions {
                    keys.push((*k).to_owned());
                    root.insert((*k).to_owned(), Value::String(ascii(v)));
                }
                let definitions: Vec<Value> = chunk
                    .iter()
                    .map(|(name, unit, value)| {
                        root.insert((*name).to_owned(), json!(finite(*value)));
                        json!({ "Name": name, "Unit": unit.as_str() })
                    })
                    .collect();
                root.insert(
                    "_aws".to_owned(),
                    json!({
                        "Timestamp": timestamp_ms,
                        "CloudWatchMetrics": [{
                            "Namespace": namespace,
                            "Dimensions": [keys],
                            "Metrics": definitions,
                        }],
                    }),
                );
                docs.push(Value::Object(root));
            }
        }
        docs
    }

    /// Emit the record: to the capture of the current task (tests), else, when metrics are on,
    /// to standard output.
    pub fn emit(self) {
        let settings = settings();
        let captured = CAPTURE.try_with(|c| c.clone()).ok();
        if captured.is_none() && !settings.enabled {
            return;
        }
        let docs = self.documents(&settings.namespace, chrono::Utc::now().timestamp_millis());
        for doc in docs {
            match &captured {
                Some(lines) => {
                    if let Ok(mut lines) = lines.lock() {
                        lines.push(doc.to_string());
                    }
                }
                None => write_line(&doc.to_string()),
            }
        }
    }
}

/// One whole line per write: standard output is shared with nothing else in a function, and a
/// single write keeps the line in one CloudWatch Logs event.
fn write_line(line: &str) {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&bytes).and_then(|()| out.flush());
}

/// Dimension values must be ASCII without control characters: anything else becomes `?`.
fn ascii(value: &str) -> String {
    let cleaned: String = value
        .chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '?'
            }
        })
        .take(MAX_DIMENSION_VALUE_CHARS)
        .collect();
    if cleaned.trim().is_empty() {
        "unknown".to_owned()
    } else {
        cleaned
    }
}

/// EMF values are JSON numbers: a NaN or infinity (never produced here) is reported as 0.
fn finite(v: f64) -> f64 {
    if v.is_finite() { v } else { 0.0 }
}

type Lines = std::sync::Arc<Mutex<Vec<String>>>;

tokio::task_local! {
    static CAPTURE: Lines;
}

/// Run `work` and return the EMF lines it emitted (in this task), instead of writing them.
pub async fn capture<F: Future>(work: F) -> (F::Output, Vec<String>) {
    let lines: Lines = Lines::default();
    let out = CAPTURE.scope(lines.clone(), work).await;
    let lines = lines.lock().map(|l| l.clone()).unwrap_or_default();
    (out, lines)
}

/// Check one line against the EMF specification's rules; `Err` says which rule it breaks.
pub fn validate(line: &str) -> Result<Value, String> {
    if line.len() > MAX_LINE_BYTES {
        return Err(format!("{} bytes: over the 1 MB event cap", line.len()));
    }
    let doc: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let root = doc.as_object().ok_or("the root is not an object")?;
    let aws = root
        .get("_aws")
        .and_then(Value::as_object)
        .ok_or("no _aws object")?;
    let ts = aws
        .get("Timestamp")
        .and_then(Value::as_i64)
        .ok_or("_aws.Timestamp is not an integer")?;
    // Milliseconds, not seconds: later than 2001 in milliseconds.
    if ts < 1_000_000_000_000 {
        return Err(format!("_aws.Timestamp {ts} is not in milliseconds"));
    }
    let directives = aws
        .get("CloudWatchMetrics")
        .and_then(Value::as_array)
        .ok_or("_aws.CloudWatchMetrics is not an array")?;
    if directives.is_empty() {
        return Err("no metric directive".to_owned());
    }
    for d in directives {
        let ns = d
            .get("Namespace")
            .and_then(Value::as_str)
            .ok_or("a directive has no Namespace string")?;
        if !valid_namespace(ns) {
            return Err(format!("invalid namespace '{ns}'"));
        }
        let sets = d
            .get("Dimensions")
            .and_then(Value::as_array)
            .ok_or("Dimensions is not an array")?;
        for set in sets {
            let keys = set.as_array().ok_or("a dimension set is not an array")?;
            if keys.len() > MAX_DIMENSIONS_PER_SET {
                return Err(format!("a dimension set of {} keys", keys.len()));
            }
            for key in keys {
                let key = key.as_str().ok_or("a dimension key is not a string")?;
                if key.is_empty() || key.len() > MAX_NAME_CHARS || key.starts_with(':') {
                    return Err(format!("invalid dimension name '{key}'"));
                }
                let value = root
                    .get(key)
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("dimension {key} has no string member"))?;
                let ok = !value.trim().is_empty()
                    && value.chars().count() <= MAX_DIMENSION_VALUE_CHARS
                    && value.chars().all(|c| c.is_ascii() && !c.is_ascii_control());
                if !ok {
                    return Err(format!("dimension {key} has an invalid value '{value}'"));
                }
            }
        }
        let metrics = d
            .get("Metrics")
            .and_then(Value::as_array)
            .ok_or("Metrics is not an array")?;
        if metrics.is_empty() || metrics.len() > MAX_METRICS_PER_DIRECTIVE {
            return Err(format!("{} metric definitions", metrics.len()));
        }
        for m in metrics {
            let name = m
                .get("Name")
                .and_then(Value::as_str)
                .ok_or("a metric has no Name")?;
            if name.is_empty() || name.len() > MAX_NAME_CHARS {
                return Err(format!("invalid metric name '{name}'"));
            }
            if let Some(unit) = m.get("Unit") {
                let unit = unit.as_str().ok_or("Unit is not a string")?;
                if !CLOUDWATCH_UNITS.contains(&unit) {
                    return Err(format!("unit '{unit}' is not a CloudWatch unit"));
                }
            }
            match root.get(name) {
                Some(Value::Number(_)) => {}
                Some(Value::Array(values))
                    if !values.is_empty()
                        && values.len() <= 100
                        && values.iter().all(Value::is_number) => {}
                _ => return Err(format!("metric {name} has no numeric member")),
            }
        }
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_one_emf_document_with_its_tenant_and_dimensions() {
        let docs = Record::new("acme")
            .metric("ReposSynced", Unit::Count, 3)
            .metric_by(&[("Status", "success")], "Runs", Unit::Count, 1)
            .documents("syncplane", 1_764_000_000_000);
        assert_eq!(docs.len(), 2, "one document per dimension set");
        for d in &docs {
            validate(&d.to_string()).unwrap();
            assert_eq!(d["Tenant"], "acme");
            assert_eq!(d["_aws"]["CloudWatchMetrics"][0]["Namespace"], "syncplane");
        }
        assert_eq!(docs[0]["ReposSynced"], 3.0);
        assert_eq!(
            docs[1]["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Tenant", "Status"]])
        );
    }

    #[test]
    fn more_than_a_hundred_metrics_are_split_over_documents() {
        const NAMES: [&str; 3] = ["A", "B", "C"];
        let mut r = Record::new("t");
        for i in 0..150 {
            // Names repeat: what is checked is the split, 100 definitions at most per directive.
            r = r.metric(NAMES[i % 3], Unit::Count, 1);
        }
        let docs = r.documents("ns", 1_764_000_000_000);
        assert_eq!(docs.len(), 2);
        assert_eq!(
            docs[0]["_aws"]["CloudWatchMetrics"][0]["Metrics"]
                .as_array()
                .unwrap()
                .len(),
            100
        );
    }

    #[test]
    fn the_validator_refuses_what_the_specification_refuses() {
        let ok = r#"{"_aws":{"Timestamp":1764000000000,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["Tenant"]],"Metrics":[{"Name":"M","Unit":"Count"}]}]},"Tenant":"t","M":1}"#;
        validate(ok).unwrap();
        for (bad, why) in [
            (ok.replace("1764000000000", "1764000000"), "seconds"),
            (ok.replace(r#""M":1"#, r#""M":"1""#), "string value"),
            (ok.replace(r#","Tenant":"t""#, ""), "missing dimension"),
            (ok.replace("Count", "Things"), "unit"),
            (
                ok.replace(r#""Namespace":"n""#, r#""Namespace":"AWS/x""#),
                "namespace",
            ),
        ] {
            assert!(validate(&bad).is_err(), "{why}: {bad}");
        }
    }

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

    #[tokio::test]
    async fn capture_collects_the_lines_of_its_task() {
        let ((), lines) = capture(async {
            Record::new("t").metric("M", Unit::Count, 1).emit();
        })
        .await;
        assert_eq!(lines.len(), 1);
        validate(&lines[0]).unwrap();
    }
}
