//! Metrics in CloudWatch Embedded Metric Format (issue 13 §5): plain JSON lines on standard
//! output that CloudWatch Logs turns into metrics, with no agent and no API call.
//!
//! One [`Record`] is one log line: a JSON object whose `_aws` member holds the `Timestamp`
//! (milliseconds since the epoch) and the `CloudWatchMetrics` directives (namespace, dimension
//! sets, metric names and units); the dimension values and metric values are the object's own
//! top-level members. The format's rules (`emf`) are kept by construction: at most 100 metrics
//! per directive (a record with more is split over several lines), dimensions as non-empty ASCII
//! strings, metrics as numbers, a unit from CloudWatch's list.
//!
//! Lines go to standard output (logs go to standard error: `telemetry`), each written whole with
//! one call so no log line can interleave. Settings (`config::metrics`): `SYNC_METRICS` (`emf`
//! or `off`; on inside Lambda, off elsewhere: the CLI's stdout carries its result, a local run
//! sets `SYNCPLANE_LOCAL`) and `SYNC_METRICS_NAMESPACE` (default `syncplane`); a function's
//! start-up [`install`]s them (`crate::start`), loading configuration does not. Every record
//! carries the tenant as a dimension.
//!
//! Tests (this crate's, and with the `testing` feature the integration tests) read the lines of
//! the code they run with `capture` and check each against the specification with `validate`
//! (`testing`).

mod emf;
#[cfg(any(test, feature = "testing"))]
mod testing;

use std::io::Write;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::config::metrics::Settings;
use crate::config::{Config, DEFAULT_TENANT as CONFIGURED_DEFAULT_TENANT};
use emf::MAX_DIMENSION_VALUE_CHARS;
pub use emf::{MAX_METRICS_PER_DIRECTIVE, TENANT};
#[cfg(any(test, feature = "testing"))]
pub use testing::{CLOUDWATCH_UNITS, MAX_DIMENSIONS_PER_SET, MAX_LINE_BYTES, capture, validate};

static SETTINGS: OnceLock<Settings> = OnceLock::new();
static DEFAULT_TENANT: OnceLock<String> = OnceLock::new();

/// Set this process's settings from its configuration (at start; a second call keeps the first).
pub fn install(config: &Config) {
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
    DEFAULT_TENANT.get_or_init(|| CONFIGURED_DEFAULT_TENANT.to_owned())
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
        #[cfg(any(test, feature = "testing"))]
        if let Some(lines) = testing::captured() {
            for doc in self.documents(&settings.namespace, chrono::Utc::now().timestamp_millis()) {
                testing::keep(&lines, doc.to_string());
            }
            return;
        }
        if !settings.enabled {
            return;
        }
        let docs = self.documents(&settings.namespace, chrono::Utc::now().timestamp_millis());
        for doc in docs {
            write_line(&doc.to_string());
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
