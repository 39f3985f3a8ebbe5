//! `syncplane serve` (issue 13 point 7): one local HTTP server for every HTTP function, so a
//! local run takes what real clients send, gzip desktop batches included (`cargo lambda watch`
//! refuses a body labelled `application/json` that is not UTF-8 before the function runs).
//!
//! Each request goes through the same conversion as in Lambda (an API Gateway v2 event read by
//! lambda_http, `gateway`) to the same handler and schema check as the function binaries
//! (`functions/*/src/main.rs`). Jobs run inline; with `SYNC_SCHEDULER=1` the tick function's
//! logic runs every minute in a background task, as the EventBridge schedule runs it; without it,
//! the upkeep the tick would do (`upkeep`). Either way the transcript archive's retention
//! (`transcripts.expire`, issue 20 §7) runs hourly on the store the ingest function here uses, and
//! the segments it records are indexed for search as they come (`indexer`, issue 34).
//!
//! Issue 21: a database that does not answer is said at start, on one line naming its setting,
//! host and port and the cause, and the server serves anyway (every route that needs the
//! database answers 503 `database_unreachable` within `shared::db::ACQUIRE_TIMEOUT`); SIGINT and
//! SIGTERM stop it gracefully, even when started with SIGINT ignored (`stop`).

mod export;
pub mod gateway;
pub mod indexer;
pub mod routes;
pub mod stop;
pub mod upkeep;

pub use indexer::spawn_indexer;
pub use upkeep::spawn_upkeep;

use std::future::IntoFuture;
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
use shared::jobs::tick::TickFunction;
use shared::schema::SchemaGuard;
use shared::worker::expire::TranscriptArchive;

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
        let app = shared::worker::app_state(config, shared::db::DEFAULT_POOL_SIZE).await?;
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
            if let Some(streamed) = functions.export(&parts).await {
                return streamed;
            }
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
        let tick = TickFunction::with_queue(None);
        let tick = match archive {
            Some(archive) => tick.with_archive(
                archive.tenant.clone(),
                shared::worker::runner_with_archive(Some(archive)),
            ),
            None => tick.with_inline(shared::worker::runner()),
        };
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

/// `syncplane serve`: validate, bind, print the address, serve until SIGINT or SIGTERM.
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
    // Before the address is printed: a signal sent as soon as it is must be caught.
    let signals = stop::StopSignals::install().context("cannot listen for SIGINT and SIGTERM")?;
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
    let databases = tokio::spawn(say_unreachable(config.tenants.clone()));
    // The archive's retention runs on the store this server's ingest writes to.
    let store = functions.ingest.transcripts.store.clone();
    let indexer = spawn_indexer(functions.ingest.pool.clone(), store.clone());
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
    let served = serve_until_stopped(listener, router(functions), signals).await;
    for task in [Some(databases), Some(indexer), scheduler, upkeep]
        .into_iter()
        .flatten()
    {
        task.abort();
    }
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Each tenant's database tried once (at most `shared::db::REACH_TIMEOUT`); one that does not
/// answer is one line on stderr: its setting, host, port and database (never the user or
/// password), the cause, what to do, and that the server serves anyway.
async fn say_unreachable(tenants: Vec<shared::config::TenantConfig>) {
    for tenant in &tenants {
        if let Err(e) = shared::db::reach(tenant).await {
            eprintln!(
                "syncplane serve: {e}; serving anyway: routes that need the database answer 503 \
                 {} until it answers",
                shared::db::UNREACHABLE_CODE
            );
        }
    }
}

/// Serve until the first stop signal, then let the requests in flight finish (at most
/// [`stop::GRACE`], or until a second signal).
async fn serve_until_stopped(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    mut signals: stop::StopSignals,
) -> anyhow::Result<()> {
    let (stopping, stopped) = tokio::sync::oneshot::channel();
    let server = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let name = signals.next().await;
            let _ = stopping.send((name, signals));
        })
        .into_future();
    tokio::pin!(server);
    // Biased to the signal: once it came, the server may end at the same moment (nothing in
    // flight), and the stop must still be said. A server that ended on its own drops the sender.
    let (name, mut signals) = tokio::select! {
        biased;
        got = stopped => match got {
            Ok(got) => got,
            Err(_) => return (&mut server).await.context("the server stopped"),
        },
        ended = &mut server => return ended.context("the server stopped"),
    };
    eprintln!(
        "syncplane serve: {name}: stopping (the requests in flight get {} s; a second signal \
         stops at once)",
        stop::GRACE.as_secs()
    );
    tokio::select! {
        ended = &mut server => ended.context("the server stopped")?,
        () = tokio::time::sleep(stop::GRACE) => {
            eprintln!("syncplane serve: requests still in flight after the grace; stopped");
        }
        again = signals.next() => eprintln!("syncplane serve: {again} again: stopped"),
    }
    Ok(())
}
