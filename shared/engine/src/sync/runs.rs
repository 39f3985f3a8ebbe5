//! Sync runs: every run is a `sync_runs` row with a trigger, a scope and a status, held alive by
//! a run-level advisory lock for its whole duration (the reaper tells a live `running` row from
//! one left by a dead process by that lock, never by the row's status).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use crate::sync::lock::{HeldLock, run_key};
use crate::sync::persist::Counts;
use crate::sync::workspace::Workspace;
use syncplane_core::metrics::{Record, Unit};
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
    pub(crate) fn add_content(&mut self, c: &Counts) {
        self.docs_added += c.added;
        self.docs_changed += c.changed;
        self.docs_removed += c.removed;
    }
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

/// A running run: its row and the lock that proves it is alive.
#[derive(Debug)]
pub struct Run {
    pub id: i64,
    lock: HeldLock,
    trigger: Trigger,
    started: std::time::Instant,
}

impl Run {
    /// Take the run lock, then insert the `running` row that names it: the row never exists
    /// without its lock being held (until the process dies, which is what the reaper looks for).
    /// Logs the run's start line (issue 13 §11: the run id on every run's start and finish).
    pub async fn start(
        ws: &Workspace,
        trigger: Trigger,
        scope: Option<&str>,
    ) -> Result<Self, sqlx::Error> {
        let run = Self::insert(&ws.pool, trigger, scope).await?;
        tracing::info!(
            run_id = run.id,
            tenant = %ws.tenant,
            trigger = trigger.as_str(),
            scope = scope.unwrap_or("all"),
            "run started"
        );
        Ok(run)
    }

    async fn insert(
        pool: &PgPool,
        trigger: Trigger,
        scope: Option<&str>,
    ) -> Result<Self, sqlx::Error> {
        let id: i64 =
            sqlx::query_scalar("SELECT nextval(pg_get_serial_sequence('sync_runs', 'id'))")
                .fetch_one(pool)
                .await?;
        let key = run_key(id);
        let Some(lock) = HeldLock::try_acquire(pool, key).await? else {
            // Ids are unique, so only a key collision could get here.
            return Err(sqlx::Error::Protocol("run lock already held".into()));
        };
        let inserted = sqlx::query(
            "INSERT INTO sync_runs (id, trigger, scope, lock_key) OVERRIDING SYSTEM VALUE
             VALUES ($1, $2, $3, $4)",
        )
        .bind(id)
        .bind(trigger.as_str())
        .bind(scope)
        .bind(key)
        .execute(pool)
        .await;
        if let Err(e) = inserted {
            lock.release().await;
            return Err(e);
        }
        Ok(Self {
            id,
            lock,
            trigger,
            started: std::time::Instant::now(),
        })
    }

    /// Whether the run still holds its lock (its connection may have been terminated).
    pub(crate) async fn lock_held(&mut self) -> bool {
        self.lock.is_held().await
    }

    /// Record the end of the run, release its lock, log its finish line and emit its metrics
    /// (issue 13 §5: runs by status, repositories, GitHub requests and rate limit remaining).
    pub async fn finish(
        self,
        ws: &Workspace,
        status: RunStatus,
        counts: &RunCounts,
        stopped: Option<Stopped>,
    ) -> Result<(), sqlx::Error> {
        let (id, trigger, elapsed) = (self.id, self.trigger, self.started.elapsed());
        let recorded = self.record(&ws.pool, status, counts, stopped).await;
        tracing::info!(
            run_id = id,
            tenant = %ws.tenant,
            trigger = trigger.as_str(),
            status = status.as_str(),
            error = stopped.map(|s| s.code),
            repos_synced = counts.repos_synced,
            repos_unchanged = counts.repos_unchanged,
            repos_failed = counts.repos_failed,
            github_requests = counts.github_requests,
            elapsed_ms = elapsed.as_millis() as u64,
            "run finished"
        );
        run_metrics(ws, trigger, status, counts, elapsed).emit();
        recorded
    }

    async fn record(
        self,
        pool: &PgPool,
        status: RunStatus,
        counts: &RunCounts,
        stopped: Option<Stopped>,
    ) -> Result<(), sqlx::Error> {
        let result = sqlx::query(
            "UPDATE sync_runs SET status = $2, finished_at = now(), error = $3,
                 repos_synced = $4, repos_unchanged = $5, repos_failed = $6, repos_removed = $7,
                 docs_added = $8, docs_changed = $9, docs_removed = $10, github_requests = $11,
                 retry_after = $12, repos_already_current = $13,
                 github_rest_requests = $14, github_graphql_requests = $15,
                 github_rest_units = $16, github_graphql_points = $17
             WHERE id = $1 AND status = 'running'",
        )
        .bind(self.id)
        .bind(status.as_str())
        .bind(stopped.map(|s| s.code))
        .bind(counts.repos_synced as i32)
        .bind(counts.repos_unchanged as i32)
        .bind(counts.repos_failed as i32)
        .bind(counts.repos_removed as i32)
        .bind(counts.docs_added as i32)
        .bind(counts.docs_changed as i32)
        .bind(counts.docs_removed as i32)
        .bind(clamp_i32(counts.github_requests))
        .bind(stopped.and_then(|s| s.retry_after))
        .bind(counts.repos_already_current as i32)
        .bind(clamp_i32(counts.github_rest_requests))
        .bind(clamp_i32(counts.github_graphql_requests))
        .bind(clamp_i32(counts.github_rest_units))
        .bind(clamp_i32(counts.github_graphql_points))
        .execute(pool)
        .await;
        self.lock.release().await;
        result.map(|_| ())
    }
}

/// The metrics of one finished run: one `Runs` by status and trigger, its counts, and the rate
/// limit GitHub reported last (by resource: `core`, `graphql`).
fn run_metrics(
    ws: &Workspace,
    trigger: Trigger,
    status: RunStatus,
    c: &RunCounts,
    elapsed: std::time::Duration,
) -> Record {
    let n = |v: u64| v as f64;
    let mut r = Record::new(ws.tenant.as_str())
        .metric_by(
            &[("Status", status.as_str()), ("Trigger", trigger.as_str())],
            "Runs",
            Unit::Count,
            1,
        )
        .metric("ReposSynced", Unit::Count, c.repos_synced)
        .metric("ReposUnchanged", Unit::Count, c.repos_unchanged)
        .metric("ReposFailed", Unit::Count, c.repos_failed)
        .metric("ReposRemoved", Unit::Count, c.repos_removed)
        .metric("DocsAdded", Unit::Count, c.docs_added)
        .metric("DocsChanged", Unit::Count, c.docs_changed)
        .metric("DocsRemoved", Unit::Count, c.docs_removed)
        .metric("GithubRequests", Unit::Count, n(c.github_requests))
        .metric("GithubRestRequests", Unit::Count, n(c.github_rest_requests))
        .metric(
            "GithubGraphqlRequests",
            Unit::Count,
            n(c.github_graphql_requests),
        )
        .metric("GithubRestUnits", Unit::Count, n(c.github_rest_units))
        .metric(
            "GithubGraphqlPoints",
            Unit::Count,
            n(c.github_graphql_points),
        )
        .metric(
            "RunDuration",
            Unit::Milliseconds,
            elapsed.as_millis() as f64,
        );
    if let Some(limit) = ws.client.rate_limit() {
        let resource = limit.resource.as_deref().unwrap_or("core");
        r = r.metric_by(
            &[("Resource", resource)],
            "GithubRateLimitRemaining",
            Unit::Count,
            limit.remaining,
        );
    }
    r
}

/// A count as the `integer` column stores it (saturating; a run never gets near it).
fn clamp_i32(n: u64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}
