//! The one error type of configuration: which variable (or `TENANTS_FILE` field), and what is
//! wrong with it, so an operator can fix a deployment from the first log line.

/// A configuration error: which variable, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {problem}")]
pub struct ConfigError {
    pub variable: String,
    pub problem: String,
}

impl ConfigError {
    pub(super) fn new(variable: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            variable: variable.into(),
            problem: problem.into(),
        }
    }
}
