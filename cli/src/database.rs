//! `syncplane db check [--create]` (issue 21 point 1): why each configured database cannot be
//! used, told apart (`shared::db::diagnose`), one line each; with `--create`, a database that does
//! not exist is created. `scripts/services.sh --database` runs it and acts on its exit status.

use std::io::Write;
use std::process::ExitCode;

use clap::Subcommand;
use shared::config::Config;
use shared::db::diagnose::{self, Cause};

#[derive(Subcommand)]
pub enum DbCommand {
    /// Connect to every configured database and say, one line each, whether it answers or why
    /// not. Exit status: 0 every database answers, 3 nothing listens at the host and port, 4 the
    /// server refuses the credentials (authentication), 5 the role does not exist, 6 the database
    /// does not exist (created instead with --create), 7 no answer or another cause. With several
    /// databases, the first failure's status.
    Check {
        /// Create a database that does not exist (as the URL's role, on the same server).
        #[arg(long)]
        create: bool,
    },
}

pub async fn run(config: &Config, cmd: DbCommand, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let DbCommand::Check { create } = cmd;
    let mut first_failure: Option<Cause> = None;
    for tenant in &config.tenants {
        let setting = shared::db::database_setting(tenant);
        let url = &tenant.database_url;
        let mut checked = diagnose::diagnose(&setting, url).await;
        if create && matches!(&checked, Err(d) if d.cause == Cause::DatabaseMissing) {
            match diagnose::create_database(url).await {
                Ok(name) => {
                    writeln!(out, "{setting}: database \"{name}\" did not exist: created")?;
                    checked = diagnose::diagnose(&setting, url).await;
                }
                Err(e) => {
                    writeln!(out, "{setting}: could not create the database: {e}")?;
                }
            }
        }
        match checked {
            Ok(()) => writeln!(out, "{setting}: the database answers")?,
            Err(d) => {
                writeln!(out, "{d}")?;
                if first_failure.is_none() {
                    first_failure = Some(d.cause);
                }
            }
        }
    }
    Ok(match first_failure {
        None => ExitCode::SUCCESS,
        Some(cause) => ExitCode::from(cause.exit_code()),
    })
}
