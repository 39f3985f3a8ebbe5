//! The schema check of the functions that run jobs, the worker and the tick (issue 13: "functions
//! that find the schema behind their build say so in one clear log line"). Without it, on a
//! database the migrations have not reached, every job fails on "relation ... does not exist",
//! goes round the queue and ends in the dead-letter queue.
//!
//! Per tenant (each has its own database), with one [`SchemaGuard`] each kept for the execution
//! environment, so a current schema costs nothing after its first check:
//! - the worker ([`JobsSchema::worker_batch`], through `Worker::serve`) runs none of a behind tenant's messages: it sends
//!   each job back to the queue with a [`HELD_DELAY`] delay (a new message, so holding back
//!   never counts towards the queue's `maxReceiveCount` and drifts to the dead-letter queue, and
//!   the jobs resume minutes after the migration, not after the 90-minute visibility timeout);
//!   a job it cannot requeue (no queue, a send that fails) is named in `batchItemFailures`
//!   instead, for redelivery. The other tenants' messages run as usual;
//! - the tick ([`JobsSchema::hold_back`]) skips a behind tenant (no job is submitted for it) and
//!   then fails the invocation ([`TenantsBehind`]), so the function's error count shows it.
//!
//! Each refusal is one log line naming the tenant, the schema version found, the version the
//! build needs, and the remedy. A database that cannot be asked counts as current: the jobs then
//! meet its failure and report it as they always do.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, PgPool};

use crate::Job;
use crate::redelivery::name_for_redelivery;
use crate::sqs::SqsAdapter;
use crate::tenants::Tenants;
use syncplane_core::config::{Config, TenantConfig};
use syncplane_core::schema::check::{
    DEFAULT_RECHECK, REMEDY, SchemaBehind, SchemaGuard, behind, behind_on,
};

/// How long a held-back job waits on the queue before the worker looks at it again.
pub const HELD_DELAY: Duration = Duration::from_secs(120);

/// The function doing the check, for its log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobsFunction {
    Worker,
    Tick,
}

/// One guard per tenant, for the life of an execution environment.
pub struct JobsSchema {
    function: JobsFunction,
    recheck: Duration,
    guards: Mutex<HashMap<String, Arc<SchemaGuard>>>,
}

/// The tick's failure: these tenants' schemas are behind the build (tenant id, what was found).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantsBehind(pub Vec<(String, SchemaBehind)>);

impl std::fmt::Display for TenantsBehind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tenants: Vec<String> = self
            .0
            .iter()
            .map(|(tenant, b)| {
                format!(
                    "tenant {tenant} (at migration {}, this build needs {})",
                    b.database, b.build
                )
            })
            .collect();
        write!(
            f,
            "database schema behind this build for {}: {REMEDY}",
            tenants.join(", ")
        )
    }
}

impl std::error::Error for TenantsBehind {}

impl JobsSchema {
    pub fn new(function: JobsFunction) -> Self {
        Self::with_recheck(function, DEFAULT_RECHECK)
    }

    /// `recheck`: how long a schema found behind is taken as still behind without asking again.
    pub fn with_recheck(function: JobsFunction, recheck: Duration) -> Self {
        Self {
            function,
            recheck,
            guards: Mutex::new(HashMap::new()),
        }
    }

    fn guard(&self, tenant: &str) -> Arc<SchemaGuard> {
        let mut guards = self.guards.lock().unwrap_or_else(|e| e.into_inner());
        guards
            .entry(tenant.to_owned())
            .or_insert_with(|| Arc::new(SchemaGuard::with_recheck(self.recheck)))
            .clone()
    }

    /// One tenant's schema, asked on `pool` when its guard needs to.
    pub(crate) async fn check_pool(&self, tenant: &str, pool: &PgPool) -> Result<(), SchemaBehind> {
        self.guard(tenant).look(|| behind(pool)).await
    }

    /// One tenant's schema, asked on a connection of its own opened only when its guard needs to.
    pub(crate) async fn check_tenant(&self, tenant: &TenantConfig) -> Result<(), SchemaBehind> {
        self.guard(tenant.id.as_str())
            .look(|| look_connected(tenant))
            .await
    }

    /// The worker's batch: the messages of tenants whose schema is behind are named in
    /// `batchItemFailures` without running (one log line per such tenant); the others, and
    /// messages that are not jobs or name an unknown tenant (the worker's to judge), go to `run`.
    pub async fn worker_batch<F, Fut>(
        &self,
        tenants: &Tenants,
        mut event: SqsEvent,
        requeue: Option<&SqsAdapter>,
        run: F,
    ) -> SqsBatchResponse
    where
        F: FnOnce(SqsEvent) -> Fut,
        Fut: Future<Output = SqsBatchResponse>,
    {
        let records = std::mem::take(&mut event.records);
        let tenant_of: Vec<Option<String>> = records.iter().map(message_tenant).collect();
        let mut behind: BTreeMap<String, SchemaBehind> = BTreeMap::new();
        let mut checked: Vec<&str> = Vec::new();
        for tenant in tenant_of.iter().flatten() {
            if checked.contains(&tenant.as_str()) {
                continue;
            }
            checked.push(tenant);
            let Some(pool) = tenants.pool(tenant) else {
                continue;
            };
            if let Err(b) = self.check_pool(tenant, pool).await {
                behind.insert(tenant.clone(), b);
            }
        }
        if behind.is_empty() {
            event.records = records;
            return run(event).await;
        }

        let mut held: BTreeMap<&str, Vec<SqsMessage>> = BTreeMap::new();
        let mut rest = Vec::with_capacity(records.len());
        for (message, tenant) in records.into_iter().zip(&tenant_of) {
            match tenant.as_deref().filter(|t| behind.contains_key(*t)) {
                Some(t) => held.entry(t).or_default().push(message),
                None => rest.push(message),
            }
        }
        let mut response = if rest.is_empty() {
            SqsBatchResponse::default()
        } else {
            event.records = rest;
            run(event).await
        };
        for (tenant, messages) in held {
            self.log_behind(tenant, &behind[tenant], messages.len());
            for message in messages {
                if requeued(requeue, &message, tenant).await {
                    continue;
                }
                if !name_for_redelivery(&mut response, message.message_id) {
                    tracing::error!(
                        tenant,
                        "a message held back has no id and cannot be named for redelivery"
                    );
                }
            }
        }
        response
    }

    /// The tick's check: every tenant of `config` whose schema is behind is removed from it (so
    /// no job is submitted for it) and logged in one line; `Err` names them, for the tick to
    /// return once it has ticked the others.
    pub async fn hold_back(&self, config: &mut Config) -> Result<(), TenantsBehind> {
        let checks = config.tenants.iter().map(|t| self.check_tenant(t));
        let outcomes = futures::future::join_all(checks).await;
        let mut behind = Vec::new();
        let mut kept = Vec::with_capacity(config.tenants.len());
        for (tenant, outcome) in std::mem::take(&mut config.tenants)
            .into_iter()
            .zip(outcomes)
        {
            match outcome {
                Ok(()) => kept.push(tenant),
                Err(b) => {
                    self.log_behind(tenant.id.as_str(), &b, 0);
                    behind.push((tenant.id.to_string(), b));
                }
            }
        }
        config.tenants = kept;
        if behind.is_empty() {
            Ok(())
        } else {
            Err(TenantsBehind(behind))
        }
    }

    /// The one line a refusal logs.
    fn log_behind(&self, tenant: &str, b: &SchemaBehind, messages: usize) {
        let what = match self.function {
            JobsFunction::Worker => format!(
                "the worker runs none of this batch's {messages} message(s) of the tenant and \
                 puts them back on the queue for {}s",
                HELD_DELAY.as_secs()
            ),
            JobsFunction::Tick => {
                "the tick submits no job for the tenant and fails until then".to_owned()
            }
        };
        tracing::error!(
            tenant,
            database_version = b.database,
            build_version = b.build,
            "database schema is behind this build: tenant {tenant} is at migration {}, this \
             build needs {}; {REMEDY}; {what}",
            b.database,
            b.build,
        );
    }
}

/// Whether a held-back message's job went back on the queue with [`HELD_DELAY`] (then the
/// message itself is done with and deleted).
async fn requeued(queue: Option<&SqsAdapter>, message: &SqsMessage, tenant: &str) -> bool {
    let Some(queue) = queue else { return false };
    let Some(job) = message
        .body
        .as_deref()
        .and_then(|b| serde_json::from_str::<Job>(b).ok())
    else {
        return false;
    };
    match queue.send(&job, Some(HELD_DELAY)).await {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(tenant, error = %e, "could not requeue a held-back job; it is left for redelivery");
            false
        }
    }
}

/// The tenant a message's job names; `None` when the body is not a job.
fn message_tenant(message: &SqsMessage) -> Option<String> {
    let job: Job = serde_json::from_str(message.body.as_deref()?).ok()?;
    Some(job.tenant().to_string())
}

/// [`behind`] on one short-lived connection of `tenant`'s, opened within
/// [`syncplane_core::db::REACH_TIMEOUT`].
async fn look_connected(tenant: &TenantConfig) -> Result<Option<SchemaBehind>, sqlx::Error> {
    let options: PgConnectOptions = tenant.database_url.expose().parse()?;
    let options = options.application_name("syncplane");
    let mut conn = tokio::time::timeout(syncplane_core::db::REACH_TIMEOUT, options.connect())
        .await
        .map_err(|_| sqlx::Error::PoolTimedOut)??;
    let found = behind_on(&mut conn).await;
    let _ = sqlx::Connection::close(conn).await;
    found
}
