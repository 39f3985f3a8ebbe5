//! Issue 13 §11, the CLI's rough edges, through the real binary: ids scriptable from stdout,
//! help for every positional argument, no colours off a terminal, the run id on each run's start
//! and finish lines; and the functions' JSON logs with one span field per line.

use clap::CommandFactory;
use serde_json::Value;
use syncplane_cli::Cli;
use syncplane_tests::processes;

use super::Env;

const ESC: &str = "\u{1b}[";

#[tokio::test]
async fn create_org_and_create_user_print_the_bare_id_on_stdout() {
    let e = Env::new().await;
    let out = processes::run("syncplane", &["ingest", "create-org", "acme"], &e.vars()).await;
    assert_eq!(out.status.and_then(|s| s.code()), Some(0), "{}", out.stderr);
    let org: i64 = out
        .stdout
        .strip_suffix('\n')
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("stdout is exactly the id: {:?}", out.stdout));
    assert!(
        out.stderr.contains(&format!("org {org} created")),
        "{}",
        out.stderr
    );
    let org = org.to_string();
    let out = processes::run(
        "syncplane",
        &["ingest", "create-user", &org, "ada"],
        &e.vars(),
    )
    .await;
    assert_eq!(out.status.and_then(|s| s.code()), Some(0), "{}", out.stderr);
    let user: i64 = out
        .stdout
        .trim_end_matches('\n')
        .parse()
        .expect("the bare id");
    assert_eq!(out.stdout, format!("{user}\n"));
    let stored: i64 = sqlx::query_scalar("SELECT org_id FROM users WHERE id = $1")
        .bind(user)
        .fetch_one(&e.db.pool)
        .await
        .unwrap();
    assert_eq!(stored.to_string(), org);
}

/// Every (sub)command with its path, depth first.
fn commands(cmd: &clap::Command, path: String, all: &mut Vec<(String, clap::Command)>) {
    for sub in cmd.get_subcommands() {
        let p = format!("{path} {}", sub.get_name());
        all.push((p.clone(), sub.clone()));
        commands(sub, p, all);
    }
}

#[tokio::test]
async fn every_positional_argument_has_help_text_and_help_shows_it() {
    let mut all = Vec::new();
    commands(&Cli::command(), "syncplane".to_owned(), &mut all);
    let mut positionals = 0;
    for (path, cmd) in &all {
        for arg in cmd.get_positionals() {
            positionals += 1;
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            assert!(
                !help.trim().is_empty(),
                "{path} <{}> has no help",
                arg.get_id()
            );
        }
    }
    assert!(
        positionals >= 8,
        "the ingest commands' ids and names: {positionals}"
    );
    // As printed: `--help` shows each positional with its help, without colours.
    let out = processes::run("syncplane", &["ingest", "create-user", "--help"], &[]).await;
    assert_eq!(out.status.and_then(|s| s.code()), Some(0));
    assert!(
        out.stdout.contains("<ORG_ID>  The org's id"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("<NAME>    The user's display name"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains(ESC) && !out.stderr.contains(ESC));
}

#[tokio::test]
async fn no_colours_when_the_output_is_not_a_terminal() {
    let e = Env::new().await;
    let mut env = e.vars();
    env.push(("RUST_LOG".to_owned(), "debug".to_owned()));
    env.push(("TERM".to_owned(), "xterm-256color".to_owned()));
    for args in [
        &["sync"][..],
        &["status"],
        &["nonsense"],
        &["ingest", "create-user"],
    ] {
        let out = processes::run("syncplane", args, &env).await;
        assert!(!out.stdout.contains(ESC), "{args:?}: {}", out.stdout);
        assert!(!out.stderr.contains(ESC), "{args:?}: {}", out.stderr);
    }
}

#[tokio::test]
async fn a_runs_start_and_finish_lines_carry_its_run_id() {
    let e = Env::new().await;
    let out = processes::run("syncplane", &["sync"], &e.vars()).await;
    assert_eq!(out.status.and_then(|s| s.code()), Some(0), "{}", out.stderr);
    let run_id: i64 = sqlx::query_scalar("SELECT max(id) FROM sync_runs")
        .fetch_one(&e.db.pool)
        .await
        .unwrap();
    let field = format!("run_id={run_id} ");
    for what in ["run started", "run finished"] {
        let line = out
            .stderr
            .lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no '{what}' line at the default level: {}", out.stderr));
        assert!(line.contains(&field), "{line}");
        // Names, not Debug: `trigger="manual"`, never `Manual` or `Some(..)`.
        assert!(line.contains("trigger=\"manual\""), "{line}");
        assert!(!line.contains("Some("), "{line}");
    }
    assert!(out.stderr.contains("status=\"success\""), "{}", out.stderr);
}

#[tokio::test]
async fn function_log_lines_carry_one_span_field_and_enum_names() {
    let e = Env::new().await;
    let mut env = e.vars();
    env.push(("SYNC_SCHEDULER".to_owned(), "1".to_owned()));
    env.push(("RUST_LOG".to_owned(), "info".to_owned()));
    env.push((
        "SYNC_CONFIG".to_owned(),
        r#"{"sync":{"onStartup":true}}"#.to_owned(),
    ));
    let event = serde_json::json!({
        "version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event", "source": "aws.events", "account": "000000000000",
        "time": "2026-11-30T12:00:00Z", "region": "us-east-1", "resources": [], "detail": {}
    });
    let inv = processes::invoke("tick", &env, &event).await;
    assert!(inv.response.is_some(), "{}", inv.output.stderr);
    let lines: Vec<Value> = inv
        .output
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("a JSON line: {l}")))
        .collect();
    assert!(!lines.is_empty());
    for line in &lines {
        assert!(line.get("spans").is_none(), "one span field: {line}");
    }
    let tick = lines
        .iter()
        .find(|l| l["fields"]["message"] == "tick")
        .expect("the tick line");
    // The trigger's name (`Trigger::as_str`), not `Some(Startup)`.
    let full_sync = tick["fields"]["full_sync"].as_str().unwrap();
    assert!(["startup", "schedule"].contains(&full_sync), "{tick}");
    let runs: Vec<&Value> = lines
        .iter()
        .filter(|l| {
            l["fields"]["message"] == "run started" || l["fields"]["message"] == "run finished"
        })
        .collect();
    assert_eq!(runs.len(), 2, "{}", inv.output.stderr);
    assert!(runs.iter().all(|l| l["fields"]["run_id"].is_i64()));
    assert_eq!(runs[0]["fields"]["run_id"], runs[1]["fields"]["run_id"]);
}
