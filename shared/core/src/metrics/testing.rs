//! Test-only metric helpers, compiled for this crate's unit tests and, with the `testing`
//! feature, for the integration tests: [`capture`] collects the EMF lines a task emits instead of
//! writing them, and [`validate`] checks one line against the EMF specification's rules: at most
//! 100 metrics per directive, at most 30 dimensions per dimension set, every referenced member
//! present (dimensions as non-empty ASCII strings, metrics as numbers), a unit from CloudWatch's
//! list, one line under the 1 MB event cap.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::emf::{MAX_DIMENSION_VALUE_CHARS, MAX_METRICS_PER_DIRECTIVE};
use crate::config::metrics::valid_namespace;

/// Dimension keys one dimension set may hold (EMF specification).
pub const MAX_DIMENSIONS_PER_SET: usize = 30;
/// Dimension names and metric names are at most 255 characters.
const MAX_NAME_CHARS: usize = 255;
/// A CloudWatch Logs event, and so one EMF document, is at most 1 MB.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

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

type Lines = Arc<Mutex<Vec<String>>>;

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

/// The capture of the current task, if it runs inside [`capture`].
pub(super) fn captured() -> Option<Lines> {
    CAPTURE.try_with(Lines::clone).ok()
}

/// Keep one line in a capture.
pub(super) fn keep(lines: &Lines, line: String) {
    if let Ok(mut lines) = lines.lock() {
        lines.push(line);
    }
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
        validate_directive(root, d)?;
    }
    Ok(doc)
}

/// One `CloudWatchMetrics` directive: its namespace, dimension sets and metric definitions.
fn validate_directive(root: &Map<String, Value>, d: &Value) -> Result<(), String> {
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
        validate_dimension_set(root, set)?;
    }
    let metrics = d
        .get("Metrics")
        .and_then(Value::as_array)
        .ok_or("Metrics is not an array")?;
    if metrics.is_empty() || metrics.len() > MAX_METRICS_PER_DIRECTIVE {
        return Err(format!("{} metric definitions", metrics.len()));
    }
    for m in metrics {
        validate_metric(root, m)?;
    }
    Ok(())
}

/// One dimension set: at most 30 valid names, each with a non-empty ASCII string member.
fn validate_dimension_set(root: &Map<String, Value>, set: &Value) -> Result<(), String> {
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
    Ok(())
}

/// One metric definition: a valid name, a CloudWatch unit if any, a numeric member.
fn validate_metric(root: &Map<String, Value>, m: &Value) -> Result<(), String> {
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
        Some(Value::Number(_)) => Ok(()),
        Some(Value::Array(values))
            if !values.is_empty() && values.len() <= 100 && values.iter().all(Value::is_number) =>
        {
            Ok(())
        }
        _ => Err(format!("metric {name} has no numeric member")),
    }
}
