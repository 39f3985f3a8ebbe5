//! Sync runs: every run is a `sync_runs` row with a trigger, a scope and a status, held alive by
//! a run-level advisory lock for its whole duration (the reaper tells a live `running` row from
//! one left by a dead process by that lock, never by the row's status).

use sqlx::PgPool;

use crate::sync::lock::{HeldLock, run_key};
use crate::sync::persist::Counts;
use crate::sync::workspace::Workspace;
use syncplane_core::metrics::{Record, Unit};
pub use syncplane_runs::{RunCounts, RunStatus, Stopped, Trigger};

/// The documents a pass wrote, added to a run's tallies.
pub(crate) fn add_documents(counts: &mut RunCounts, c: &Counts) {
    counts.docs_added += c.added;
    counts.docs_changed += c.changed;
    counts.docs_removed += c.removed;
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
