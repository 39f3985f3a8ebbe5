//! A function's start (issue 13 §10): what stops it is one human line naming the setting, never
//! the Debug form Rust prints for an error returned from `main`; a database that does not answer
//! is said once, at start, with its setting, host and cause. Loading configuration has no side
//! effect: installing what it says (metrics) is the start-up's, here.

use std::fmt::Display;

use crate::config::Config;

/// Read the configuration (secrets given by reference resolved), or exit with one line; then
/// install what it says for the process (the metric settings, `crate::metrics::install`).
pub async fn config() -> Config {
    let config = crate::config::from_env_resolved()
        .await
        .or_exit("configuration error");
    crate::metrics::install(&config);
    config
}

/// A function's start, as every `main` of the functions but `migrate` begins: JSON logs, the
/// configuration ([`config`]: one line and exit when it is unusable), then every tenant's
/// database tried once ([`check_databases`]).
pub async fn function() -> Config {
    crate::telemetry::init(true);
    let config = config().await;
    check_databases(&config).await;
    config
}

/// Write `line` to standard error and exit with status 1 (Lambda then reports the init failure;
/// the line is in the function's log).
pub fn exit(line: &str) -> ! {
    eprintln!("{line}");
    std::process::exit(1)
}

/// A start step's result, or exit with `what: error` on one line.
pub trait OrExit<T> {
    fn or_exit(self, what: &str) -> T;
}

impl<T, E: Display> OrExit<T> for Result<T, E> {
    fn or_exit(self, what: &str) -> T {
        self.unwrap_or_else(|e| {
            let text = e.to_string();
            exit(&format!(
                "{what}: {}",
                text.split_whitespace().collect::<Vec<_>>().join(" ")
            ))
        })
    }
}

impl<T> OrExit<T> for Option<T> {
    fn or_exit(self, what: &str) -> T {
        self.unwrap_or_else(|| exit(what))
    }
}

/// Try every tenant's database once (at most `db::REACH_TIMEOUT`, in parallel) and log one error
/// line for each that does not answer. The function still starts: pools connect lazily and
/// recover when the database is back, and `GET /api/health` reports it meanwhile.
pub async fn check_databases(config: &Config) {
    let checks = config.tenants.iter().map(crate::db::reach);
    for result in futures::future::join_all(checks).await {
        if let Err(e) = result {
            tracing::error!(setting = %e.setting, target = %e.target, "{e}");
        }
    }
}

/// `value` kept for the life of the process: a function builds its state once at start and hands
/// the handler to `run_concurrent` (issue 21 point 6), which needs `'static` borrows. Never
/// dropped; the process ends with it.
pub fn for_process<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}
