//! The `syncplane` command through its library entry point (`syncplane_cli::run` with parsed
//! arguments), configured from variables exactly as the binary reads its environment.

use std::process::ExitCode;

use clap::Parser;
use syncplane_cli::{Cli, run};

/// `syncplane <args>` with the environment `vars`: exit status and standard output.
pub async fn syncplane(vars: &[(String, String)], args: &[&str]) -> (ExitCode, String) {
    let config =
        shared::config::from_lookup(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
            .expect("valid configuration");
    let cli = Cli::try_parse_from(std::iter::once("syncplane").chain(args.iter().copied()))
        .expect("valid arguments");
    let mut out = Vec::new();
    let code = run(cli, &config, &mut out)
        .await
        .unwrap_or(ExitCode::FAILURE);
    (code, String::from_utf8(out).expect("UTF-8 output"))
}
