//! A run's start, end and tallies (spec "Runs"), and what a request for one repository came to
//! (spec "Coalescing").

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use syncplane_github::{GithubError, Usage};

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    Webhook,
    Manual,
    Startup,
    Schedule,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Webhook => "webhook",
            Self::Manual => "manual",
            Self::Startup => "startup",
            Self::Schedule => "schedule",
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Success,
    Partial,
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Partial => "partial",
            Self::Failed => "failed",
        }
    }
}

/// The tallies a run records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunCounts {
    pub repos_synced: u32,
    pub repos_unchanged: u32,
    pub repos_failed: u32,
    pub repos_removed: u32,
    /// Unchanged repositories whose stored content was written by an earlier run recorded as
    /// failed (its commit's reply was lost, or its process died after committing): the content
    /// was already current, so that failure was not the last word (issue 12 §5).
    pub repos_already_current: u32,
    pub docs_added: u32,
    pub docs_changed: u32,
    pub docs_removed: u32,
    /// Every GitHub request of the run (token exchanges included).
    pub github_requests: u64,
    pub github_rest_requests: u64,
    pub github_graphql_requests: u64,
    /// Units of the REST core budget spent (a 304 costs none).
    pub github_rest_units: u64,
    /// Points of the GraphQL budget spent.
    pub github_graphql_points: u64,
}

impl RunCounts {
    pub fn merge(&mut self, o: &RunCounts) {
        self.repos_synced += o.repos_synced;
        self.repos_unchanged += o.repos_unchanged;
        self.repos_failed += o.repos_failed;
        self.repos_removed += o.repos_removed;
        self.repos_already_current += o.repos_already_current;
        self.docs_added += o.docs_added;
        self.docs_changed += o.docs_changed;
        self.docs_removed += o.docs_removed;
        self.github_requests += o.github_requests;
        self.github_rest_requests += o.github_rest_requests;
        self.github_graphql_requests += o.github_graphql_requests;
        self.github_rest_units += o.github_rest_units;
        self.github_graphql_points += o.github_graphql_points;
    }

    /// What the run spent on GitHub (the difference of two `GithubClient::usage` readings).
    pub fn record_usage(&mut self, spent: &Usage) {
        self.github_requests = spent.requests();
        self.github_rest_requests = spent.rest_requests;
        self.github_graphql_requests = spent.graphql_requests;
        self.github_rest_units = spent.rest_units;
        self.github_graphql_points = spent.graphql_points;
    }
}

/// What stopped a run: its stable code and, when GitHub's rate limit stopped it, the instant
/// from which a retry can succeed (GitHub's reset time, never upstream text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    pub code: &'static str,
    pub retry_after: Option<DateTime<Utc>>,
}

impl Stopped {
    /// A stop with no retry time.
    pub fn code(code: &'static str) -> Self {
        Self {
            code,
            retry_after: None,
        }
    }

    /// A stop caused by GitHub: a rate limit carries its retry time.
    pub fn github(e: &GithubError) -> Self {
        let retry_after = match e {
            GithubError::RateLimited { retry_at, .. } => Some(*retry_at),
            _ => None,
        };
        Self {
            code: e.code(),
            retry_after,
        }
    }
}

/// The end of a run, as callers report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    pub run_id: i64,
    pub status: RunStatus,
    pub counts: RunCounts,
    /// The stable code of what stopped the run, if anything did.
    pub error: Option<String>,
    /// When GitHub's rate limit stopped the run: the instant from which a retry can succeed.
    pub retry_after: Option<DateTime<Utc>>,
}

impl RunReport {
    /// The report of a run that ended with `status` (and `stop`, if something stopped it).
    pub fn new(run_id: i64, status: RunStatus, counts: RunCounts, stop: Option<Stopped>) -> Self {
        Self {
            run_id,
            status,
            counts,
            error: stop.map(|s| s.code.to_owned()),
            retry_after: stop.and_then(|s| s.retry_after),
        }
    }
}

/// What a request for one repository came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum RequestOutcome {
    /// This call held the lock and ran `passes` passes in run `run_id`.
    #[serde(rename_all = "camelCase")]
    Synced {
        run_id: i64,
        passes: u32,
        status: RunStatus,
    },
    /// Another sync holds the lock; the marker makes it run again for this request.
    Coalesced,
    /// The repository has no row (so no marker can be left) and its lock is busy: the caller
    /// must retry (the manual API answers 409).
    Busy,
}
