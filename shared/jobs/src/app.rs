//! The state an HTTP function builds once per execution environment and keeps across invocations:
//! every tenant (lazy pools, GitHub clients), the jobs adapter, and which tenant is the default
//! (the first configured one: `POST /github/webhook` and the sync API serve it). This is where the
//! application is assembled: the inline jobs adapter is handed the worker's runner here (an
//! [`InlineRunner`] from the process's `main`), so the mailbox never calls up into the worker.

use std::sync::Arc;

use crate::adapter::{InlineRunner, JobsAdapter};
use crate::sqs::SqsAdapter;
use crate::tenants::Tenants;
use syncplane_core::config::{Config, JobsBackend, TenantId};
use syncplane_runs::RunOptions;

#[derive(Clone)]
pub struct AppState {
    pub tenants: Arc<Tenants>,
    pub jobs: JobsAdapter,
    pub default_tenant: TenantId,
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("no tenant configured (DATABASE_URL or TENANTS_FILE)")]
    NoTenant,
    #[error("database settings unusable: {0}")]
    Pool(#[from] sqlx::Error),
    /// `JOBS_BACKEND=inline` in a build that cannot run a job (the webhook and tick functions
    /// without their `inline-jobs` feature: they do not link the engine).
    #[error(
        "JOBS_BACKEND=inline, but this build runs no job in process (built without its \
         `inline-jobs` feature): set JOBS_BACKEND=sqs and SQS_QUEUE_URL, or build it with \
         `--features webhook/inline-jobs,tick/inline-jobs` (as scripts/local.sh does)"
    )]
    NoInlineRunner,
}

/// The jobs adapter the configuration asks for (`JOBS_BACKEND`), built once per process: the
/// queue, or `inline`'s runner over `tenants` (none: [`AppError::NoInlineRunner`]).
pub async fn jobs_adapter(
    config: &Config,
    tenants: Arc<Tenants>,
    inline: Option<&InlineRunner>,
) -> Result<JobsAdapter, AppError> {
    match &config.jobs {
        JobsBackend::Inline => {
            let make = inline.ok_or(AppError::NoInlineRunner)?;
            Ok(JobsAdapter::Inline(make(tenants)))
        }
        JobsBackend::Sqs { queue_url } => Ok(JobsAdapter::Sqs(
            SqsAdapter::from_env(queue_url, config.sqs_endpoint.as_deref()).await,
        )),
    }
}

impl AppState {
    /// Build from configuration: pools connect lazily, so this does no database I/O (the SQS
    /// client reads the AWS environment once). `inline` makes the runner of inline jobs.
    pub async fn from_config(
        config: &Config,
        pool_size: u32,
        inline: Option<&InlineRunner>,
    ) -> Result<Self, AppError> {
        let default_tenant = config
            .tenants
            .first()
            .map(|t| t.id.clone())
            .ok_or(AppError::NoTenant)?;
        let tenants = Arc::new(Tenants::from_config(
            config,
            pool_size,
            RunOptions::default(),
        )?);
        let jobs = jobs_adapter(config, tenants.clone(), inline).await?;
        Ok(Self {
            tenants,
            jobs,
            default_tenant,
        })
    }
}

impl AppState {
    /// The state of an HTTP function's process (the sync API, the webhook), built once at its
    /// start: the jobs backend checked against where it runs ([`check_deployed_backend`]), then
    /// the state from the environment's `config`; a configuration it cannot use ends the process
    /// with one line.
    pub async fn for_lambda(config: &Config, inline: Option<&InlineRunner>) -> &'static Self {
        use syncplane_core::start::{OrExit, for_process};
        check_deployed_backend(config, |k| std::env::var(k).ok());
        let state = Self::from_config(config, syncplane_core::db::DEFAULT_POOL_SIZE, inline)
            .await
            .or_exit("configuration error");
        for_process(state)
    }

    /// The default tenant's pool (the database the schema check looks at).
    pub fn default_pool(&self) -> Option<&sqlx::PgPool> {
        self.tenants.pool(self.default_tenant.as_str())
    }
}

/// What [`check_deployed_backend`] finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BackendCheck {
    /// Queued jobs, or inline outside any Lambda environment, or a declared local run.
    Fine,
    /// Inline under a Lambda emulator that is not a declared local run: worth a warning.
    InlineUnderEmulator,
    /// Inline in a function the Lambda service runs: an error.
    InlineDeployed,
}

/// A deployed function cannot work after it has answered, so it must queue jobs (docs/design.md
/// "Jobs"). `cargo lambda watch` also sets `AWS_LAMBDA_FUNCTION_NAME`; `AWS_EXECUTION_ENV` is set
/// by the Lambda service only, and `SYNCPLANE_LOCAL` by `scripts/local.sh`, whose inline jobs are
/// intended (no warning at every start of every function).
pub(crate) fn deployed_backend(
    config: &Config,
    get: impl Fn(&str) -> Option<String>,
) -> BackendCheck {
    if config.jobs != JobsBackend::Inline || get("AWS_LAMBDA_FUNCTION_NAME").is_none() {
        BackendCheck::Fine
    } else if get("AWS_EXECUTION_ENV").is_some() {
        BackendCheck::InlineDeployed
    } else if syncplane_core::config::local_run(&get) {
        BackendCheck::Fine
    } else {
        BackendCheck::InlineUnderEmulator
    }
}

/// Logs what [`deployed_backend`] finds: an error when deployed, a warning under an emulator.
pub fn check_deployed_backend(config: &Config, get: impl Fn(&str) -> Option<String>) {
    match deployed_backend(config, get) {
        BackendCheck::Fine => {}
        BackendCheck::InlineDeployed => tracing::error!(
            "JOBS_BACKEND is not sqs in a deployed function: jobs run before the answer \
             (set JOBS_BACKEND=sqs and SQS_QUEUE_URL)"
        ),
        BackendCheck::InlineUnderEmulator => tracing::warn!(
            "JOBS_BACKEND=inline: jobs run before the answer (fine for local runs; \
             SYNCPLANE_LOCAL=1 says so and silences this)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn check(pairs: &[(&str, &str)]) -> BackendCheck {
        let mut map: BTreeMap<&str, &str> = pairs.iter().copied().collect();
        map.insert("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/x");
        let get = |k: &str| map.get(k).map(|v| (*v).to_owned());
        let config = syncplane_core::config::from_lookup(get).expect("a valid configuration");
        deployed_backend(&config, get)
    }

    #[test]
    fn inline_jobs_are_an_error_deployed_a_warning_under_an_emulator_and_quiet_in_a_local_run() {
        let lambda = ("AWS_LAMBDA_FUNCTION_NAME", "webhook");
        assert_eq!(check(&[]), BackendCheck::Fine);
        assert_eq!(check(&[lambda]), BackendCheck::InlineUnderEmulator);
        assert_eq!(
            check(&[lambda, ("SYNCPLANE_LOCAL", "1")]),
            BackendCheck::Fine
        );
        assert_eq!(
            check(&[lambda, ("SYNCPLANE_LOCAL", "0")]),
            BackendCheck::InlineUnderEmulator
        );
        // SYNCPLANE_LOCAL never hides inline jobs from a function the Lambda service runs.
        let service = ("AWS_EXECUTION_ENV", "AWS_Lambda_rust");
        assert_eq!(check(&[lambda, service]), BackendCheck::InlineDeployed);
        assert_eq!(
            check(&[lambda, service, ("SYNCPLANE_LOCAL", "1")]),
            BackendCheck::InlineDeployed
        );
        let queued = [
            lambda,
            service,
            ("JOBS_BACKEND", "sqs"),
            ("SQS_QUEUE_URL", "https://sqs.eu-west-1.amazonaws.com/1/q"),
        ];
        assert_eq!(check(&queued), BackendCheck::Fine);
    }

    /// A runner that runs nothing: it answers every job with `Ignored`, naming the job's kind.
    struct Answering;

    impl crate::adapter::JobRunner for Answering {
        fn run<'a>(
            &'a self,
            job: &'a crate::Job,
        ) -> futures::future::BoxFuture<'a, Result<crate::JobOutcome, crate::JobError>> {
            let reason = job.kind().to_owned();
            Box::pin(async move { Ok(crate::JobOutcome::Ignored { reason }) })
        }
    }

    fn local() -> Config {
        syncplane_core::config::from_lookup(|k| {
            (k == "DATABASE_URL").then(|| "postgres://postgres@127.0.0.1:5432/x".to_owned())
        })
        .expect("a valid configuration")
    }

    #[tokio::test]
    async fn inline_jobs_without_a_runner_are_refused_at_start_in_one_line_naming_the_setting_and_the_remedy()
     {
        let config = local();
        assert_eq!(config.jobs, JobsBackend::Inline, "inline is the default");
        let Err(e) = AppState::from_config(&config, 1, None).await else {
            panic!("a process without a runner accepted JOBS_BACKEND=inline");
        };
        assert!(matches!(e, AppError::NoInlineRunner), "{e}");
        let line = e.to_string();
        assert!(!line.contains('\n'), "{line}");
        for named in [
            "JOBS_BACKEND=inline",
            "JOBS_BACKEND=sqs",
            "--features webhook/inline-jobs,tick/inline-jobs",
        ] {
            assert!(line.contains(named), "{line} does not name {named}");
        }
        let Err(e) = crate::tick::TickFunction::new(&config, None).await else {
            panic!("a tick without a runner accepted JOBS_BACKEND=inline");
        };
        assert!(matches!(e, AppError::NoInlineRunner), "{e}");
    }

    #[tokio::test]
    async fn inline_jobs_run_through_the_runner_handed_over_at_assembly() {
        let runner: InlineRunner = Arc::new(|_tenants| Arc::new(Answering));
        let state = AppState::from_config(&local(), 1, Some(&runner))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let job = crate::Job::SyncReap {
            tenant: state.default_tenant.clone(),
        };
        let submitted = state.jobs.submit(&job).await.expect("submitted");
        assert!(
            matches!(
                submitted,
                crate::adapter::Submitted::Ran(Ok(crate::JobOutcome::Ignored { ref reason }))
                    if reason == "sync.reap"
            ),
            "{submitted:?}"
        );
    }
}
