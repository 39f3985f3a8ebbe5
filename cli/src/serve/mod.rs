//! `syncplane serve` (issue 13 point 7): one local HTTP server for every HTTP function, so a
//! local run takes what real clients send, gzip desktop batches included (`cargo lambda watch`
//! refuses a body labelled `application/json` that is not UTF-8 before the function runs).
//!
//! Each request goes through the same conversion as in Lambda (an API Gateway v2 event read by
//! lambda_http, `gateway`) to the same handler and schema check as the function binaries
//! (`functions/*/src/main.rs`). Jobs run inline; with `SYNC_SCHEDULER=1` the tick function's
//! logic runs every minute in a background task, as the EventBridge schedule runs it. Either way
//! the transcript archive's retention (`transcripts.expire`, issue 20 §7) runs hourly on the
//! store the ingest function here uses.

pub mod gateway;
pub mod routes;

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use http::StatusCode;
use shared::app::AppState;
use shared::config::{Config, JobsBackend};
use shared::ingest::IngestState;
use shared::scheduler::rules::retention_due;
use shared::schema::SchemaGuard;
use shared::worker::expire::{self, TranscriptArchive};
use shared::worker::tick::TickFunction;

use routes::Function;

/// How often the scheduler ticks (the template's `rate(1 minute)`).
pub const TICK_INTERVAL: Duration = Duration::from_secs(60);

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, env = "SYNCPLANE_SERVE_ADDR", default_value = "127.0.0.1:9000")]
    pub addr: SocketAddr,
}

/// The three HTTP functions' state, as each binary builds it at start, with one schema check per
/// function.
pub struct Functions {
    app: AppState,
    ingest: IngestState,
    schema: [SchemaGuard; 3],
}

impl Functions {
    pub fn new(app: AppState, ingest: IngestState) -> Self {
        Self {
            app,
            ingest,
            schema: Default::default(),
        }
    }

    /// As `functions/{webhook,sync-api,ingest}/src/main.rs` build theirs (pools connect lazily).
    pub async fn from_config(config: &Config) -> anyhow::Result<Self> {
        let app = AppState::from_config(config, shared::db::DEFAULT_POOL_SIZE).await?;
        let tenant = config
            .tenants
            .first()
            .context("no tenant configured (DATABASE_URL or TENANTS_FILE)")?;
        let pool = shared::db::lazy_pool(&tenant.database_url, shared::db::DEFAULT_POOL_SIZE)
            .context("DATABASE_URL is not a usable Postgres URL")?;
        let ingest = IngestState {
            pool,
            rate_limit_per_minute: config.ingest_rate_limit_per_minute,
            admission: shared::ingest::Admission::limited(config.ingest_max_in_flight),
            transcripts: shared::ingest::transcripts::TranscriptsState::from_settings(
                &config.transcripts,
            )
            .await,
        };
        Ok(Self::new(app, ingest))
    }

    /// Answer one HTTP request as the deployment would.
    pub async fn answer(&self, req: http::Request<bytes::Bytes>) -> http::Response<Vec<u8>> {
        let started = Instant::now();
        let (parts, body) = req.into_parts();
        let path = parts.uri.path();
        let Some((function, raw_path)) = routes::resolve(path) else {
            return gateway::from_lambda(gateway::refusal(
                StatusCode::NOT_FOUND,
                "not_found",
                "no function serves this path (try /lambda-url/<webhook|sync-api|ingest>/...)",
            ));
        };
        // The `/lambda-url/<function>` the function does not see, for the URLs it answers with
        // (the transcript lane's direct upload URL keeps the request's own prefix).
        let mut headers = parts.headers.clone();
        if let Some(prefix) = path.strip_suffix(raw_path).filter(|p| !p.is_empty())
            && let Ok(value) = http::HeaderValue::from_str(prefix)
        {
            headers.insert(shared::http::FORWARDED_PREFIX, value);
        }
        let event = gateway::event(&parts.method, raw_path, parts.uri.query(), &headers, &body);
        let resp = match gateway::to_lambda(event) {
            Ok(req) => self.call(function, req).await,
            Err(e) => {
                tracing::warn!(error = %e, "request not convertible to an API Gateway event");
                gateway::refusal(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    "the request cannot be passed to a function",
                )
            }
        };
        tracing::info!(
            function = function.name(),
            method = %parts.method,
            path = raw_path,
            status = resp.status().as_u16(),
            ms = started.elapsed().as_millis() as u64,
            "served"
        );
        gateway::from_lambda(resp)
    }

    async fn call(
        &self,
        function: Function,
        req: lambda_http::Request,
    ) -> lambda_http::Response<lambda_http::Body> {
        let guard = &self.schema[function as usize];
        match function {
            Function::Ingest => shared::ingest::serve(&self.ingest, guard, req).await,
            // As the sync-api function: `GET /api/health` answers before the schema check.
            Function::SyncApi => shared::api::serve(&self.app, guard, req).await,
            Function::Webhook => {
                if self.app.default_pool().is_none() {
                    return gateway::refusal(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "no_tenant",
                        "no tenant configured",
                    );
                }
                shared::webhook::serve(&self.app, guard, req).await
            }
        }
    }
}

/// The server: every path through [`Functions::answer`]; a body over API Gateway's limit is 413.
pub fn router(functions: Arc<Functions>) -> axum::Router {
    axum::Router::new().fallback(move |req: axum::extract::Request| {
        let functions = functions.clone();
        async move {
            let (parts, body) = req.into_parts();
            let resp = match axum::body::to_bytes(body, gateway::MAX_BODY_BYTES).await {
                Ok(bytes) => {
                    functions
                        .answer(http::Request::from_parts(parts, bytes))
                        .await
                }
                Err(_) => gateway::from_lambda(gateway::refusal(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    "request body over 10 MiB",
                )),
            };
            resp.map(axum::body::Body::from)
        }
    })
}

/// With the scheduler off (the local default), the upkeep the tick would do still runs on its
/// cadence: dead runs reaped and waiting rerun markers drained, every [`TICK_INTERVAL`], so a
/// request coalesced into a holder at its pass cap is not left waiting (issue 12 §4); and the
/// transcript archive's retention on `archive` when [`retention_due`] (the first tick, then
/// hourly), as the tick would submit it.
pub fn spawn_upkeep(
    tenants: Arc<shared::tenants::Tenants>,
    archive: Option<TranscriptArchive>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(TICK_INTERVAL);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_expire = None;
        loop {
            every.tick().await;
            let ids: Vec<String> = tenants.ids().map(str::to_owned).collect();
            for id in ids {
                let done = match tenants.workspace(&id) {
                    Ok(ws) => crate::upkeep::reap_and_drain(&ws, true).await,
                    Err(e) => Err(e.into()),
                };
                if let Err(e) = done {
                    tracing::warn!(tenant = %id, error = %e, "reap and drain failed");
                }
            }
            let now = chrono::Utc::now();
            if let Some(archive) = &archive
                && retention_due(now, last_expire)
            {
                last_expire = Some(now);
                let tenant = archive.tenant.as_str();
                if let Err(e) = expire::expire(&tenants, Some(archive), tenant, now).await {
                    tracing::warn!(tenant, error = %e, "transcripts expire failed");
                }
            }
        }
    })
}

/// The tick function's logic every [`TICK_INTERVAL`] (the first at start), inline jobs, with
/// the transcript `archive` (`transcripts.expire`); `None` when `SYNC_SCHEDULER` is off (the
/// local default).
pub fn spawn_scheduler(
    config: Config,
    archive: Option<TranscriptArchive>,
) -> Option<tokio::task::JoinHandle<()>> {
    if !config.scheduler_enabled {
        return None;
    }
    Some(tokio::spawn(async move {
        let mut tick = TickFunction::with_queue(None);
        if let Some(archive) = archive {
            tick = tick.with_archive(archive);
        }
        let mut every = tokio::time::interval(TICK_INTERVAL);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            if let Err(e) = tick.invoke(&config, chrono::Utc::now()).await {
                tracing::warn!(error = %e, "scheduler tick failed");
            }
        }
    }))
}

/// `syncplane serve`: validate, bind, print the address, serve until the process is stopped.
pub async fn run(
    config: &Config,
    args: &ServeArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    if let JobsBackend::Sqs { .. } = config.jobs {
        anyhow::bail!(
            "JOBS_BACKEND=sqs: syncplane serve runs jobs inline and no worker reads the queue \
             here; unset JOBS_BACKEND (or set it to inline)"
        );
    }
    let functions = Arc::new(Functions::from_config(config).await?);
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (--addr or SYNCPLANE_SERVE_ADDR)",
                args.addr
            )
        })?;
    let addr = listener.local_addr()?;
    writeln!(out, "syncplane serve: listening on http://{addr}")?;
    out.flush()?;
    // The archive's retention runs on the store this server's ingest writes to.
    let store = functions.ingest.transcripts.store.clone();
    let archive = TranscriptArchive::first_tenant(config, store);
    let scheduler = spawn_scheduler(config.clone(), archive.clone());
    let upkeep = scheduler
        .is_none()
        .then(|| spawn_upkeep(functions.app.tenants.clone(), archive));
    tracing::info!(
        %addr,
        scheduler = scheduler.is_some(),
        "serving webhook, sync-api and ingest (jobs inline)"
    );
    // Until the process is stopped (Ctrl-C): nothing to flush, every job has answered.
    axum::serve(listener, router(functions))
        .await
        .context("the server stopped")?;
    drop((scheduler, upkeep));
    Ok(ExitCode::SUCCESS)
}
