//! `syncplane`: the operator command line (the commands live in the library, so tests run them).

use std::process::ExitCode;

use clap::Parser;
use syncplane_cli::{Cli, run};

#[tokio::main]
async fn main() -> ExitCode {
    shared::telemetry::init(false);
    let cli = Cli::parse();
    let config = match shared::config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    shared::metrics::install(&config);
    // Not `stdout().lock()`: a lock held across the run's awaits deadlocked with threads that
    // write (issue 12 §2). Each write takes the lock briefly; logs go to stderr anyway.
    let mut stdout = std::io::stdout();
    match run(cli, &config, &mut stdout).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
