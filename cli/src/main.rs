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
    let mut stdout = std::io::stdout().lock();
    match run(cli, &config, &mut stdout).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
