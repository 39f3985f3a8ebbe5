//! `syncplane`: the operator command line. Every command calls the same library as the Lambda
//! functions.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod provision;

#[derive(Parser)]
#[command(name = "syncplane", version, about = "syncplane operator tool")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Apply every pending database migration (for every configured tenant).
    Migrate,
    /// Show each tenant's repositories and recent sync runs.
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Provision agent session ingest: orgs, users, compute targets, device tokens.
    #[command(subcommand)]
    Ingest(provision::IngestCommand),
}

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
    let result = match cli.command {
        Command::Migrate => migrate(&config).await,
        Command::Status { json } => status(&config, json).await,
        Command::Ingest(cmd) => provision::run(&config, cmd).await,
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn migrate(config: &shared::config::Config) -> anyhow::Result<ExitCode> {
    for tenant in &config.tenants {
        let pool = shared::db::connect(&tenant.database_url, 1).await?;
        shared::db::migrate(&pool).await?;
        println!("tenant {}: migrations applied", tenant.id);
    }
    Ok(ExitCode::SUCCESS)
}

async fn status(config: &shared::config::Config, json: bool) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    for tenant in &config.tenants {
        let pool = shared::db::connect(&tenant.database_url, 1).await?;
        let report = shared::status::tenant_status(&pool).await?;
        if !json {
            println!("tenant {}", tenant.id);
            print!("{}", report.render_text());
        }
        out.push(serde_json::json!({ "tenant": tenant.id, "status": report }));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(ExitCode::SUCCESS)
}
