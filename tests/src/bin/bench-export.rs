//! `bench-export`: issue 34's export target. Prints figures; exits non-zero when a correctness
//! check fails. Not a test: CI never runs it.
//!
//! `--sessions` (100,000) sessions of one org, with the metadata the console shows (titles,
//! repositories, branches, models, tokens, cost), written straight into `agent_sessions`. Then
//! `syncplane serve`'s router (the real one, on loopback) streams the org's export, JSON Lines
//! and CSV, to an HTTP client that counts what it reads and keeps none of it: MB/s, and the
//! process's resident memory (VmRSS, sampled every 10 ms) before, at its peak, and its growth. The
//! same export of a tenth of the sessions runs first: memory is flat when the peak's growth does
//! not grow with the export's size.
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-export --
//! [--sessions 100000]`

use std::process::ExitCode;

use clap::Parser;
use shared::accounts::tokens;
use syncplane_tests::bench::{Row, print_table};
use syncplane_tests::db::TestDb;

const TARGET_MB_S: f64 = 50.0;
const TARGET: &str = "laptop-1";

#[derive(Parser, Debug)]
#[command(about = "Exporting an organization's sessions: rate and memory")]
struct Args {
    #[arg(long, default_value_t = 100_000)]
    sessions: i64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tokio::runtime::Runtime::new()
        .expect("tokio runtime")
        .block_on(bench(args))
}

async fn bench(args: Args) -> ExitCode {
    println!("bench-export: {} sessions of one org", args.sessions);
    let db = TestDb::new().await;
    let org = syncplane_tests::provisioned::device_on_target(&db.pool, TARGET)
        .await
        .org;
    let read = tokens::issue_read_token(&db.pool, org, None)
        .await
        .expect("read token")
        .token;
    let small = (args.sessions / 10).max(1);
    seed(&db, org, 1, small).await;
    let dir = syncplane_tests::transcripts::temp_dir();
    let base = syncplane_tests::transcripts::serve_locally(db.url().expose(), &dir).await;

    let mut rows = Vec::new();
    let mut all_rows_read = true;
    for (n, format) in [(small, "jsonl"), (small, "csv")] {
        let run = syncplane_tests::bench::download(
            &format!("{base}/api/agent-sessions/sessions/export?format={format}"),
            &read,
        )
        .await;
        all_rows_read &= run.lines == n as u64 + u64::from(format == "csv");
        rows.extend(run.rows(&format!("{n} sessions, {format}")));
    }
    seed(&db, org, small + 1, args.sessions).await;
    let mut rates = Vec::new();
    for format in ["jsonl", "csv"] {
        let run = syncplane_tests::bench::download(
            &format!("{base}/api/agent-sessions/sessions/export?format={format}"),
            &read,
        )
        .await;
        all_rows_read &= run.lines == args.sessions as u64 + u64::from(format == "csv");
        rates.push(run.mb_s());
        rows.extend(run.rows(&format!("{} sessions, {format}", args.sessions)));
    }
    let slowest = rates.iter().copied().fold(f64::INFINITY, f64::min);
    rows.push(Row::target(
        "export rate, the slower format",
        format!("{slowest:.0} MB/s"),
        &format!(">= {TARGET_MB_S:.0} MB/s"),
        slowest >= TARGET_MB_S,
    ));
    rows.push(Row::check(
        "every session exported, once",
        all_rows_read,
        "true",
        all_rows_read,
    ));
    if print_table("export", &rows) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Sessions `from..=to` of `org`, a minute apart, with realistic metadata.
async fn seed(db: &TestDb, org: i64, from: i64, to: i64) {
    sqlx::query(
        "INSERT INTO agent_sessions (org_id, compute_target_id, session_id, updated_at, agent,
            model, title, status, started_at, ended_at, repository_remote_url, repository_branch,
            event_count, input_tokens, output_tokens, cost_usd, payload)
         SELECT $1, $2, 'session-' || lpad(i::text, 8, '0') || '-' || md5(i::text),
                timestamptz '2026-01-01T00:00:00Z' + i * interval '1 minute', 'claude-code',
                (ARRAY['claude-opus-4', 'claude-sonnet-4', 'gpt-5-codex'])[1 + i % 3],
                (ARRAY['Fix the flaky TLS handshake test in the staging pipeline',
                       'Refactor the ingest handler, \"numbered steps\", keep behaviour',
                       'Why does cargo test fail with ECONNREFUSED 127.0.0.1:5432?',
                       'Add CSV export, with commas, quotes and line breaks handled'])[1 + i % 4]
                    || ' #' || i,
                'completed', timestamptz '2026-01-01T00:00:00Z' + i * interval '1 minute' - interval '25 minutes',
                timestamptz '2026-01-01T00:00:00Z' + i * interval '1 minute',
                'git@github.com:acme/' || (ARRAY['handbook', 'syncplane', 'infra'])[1 + i % 3] || '.git',
                'feature/issue-' || (i % 500), 20 + i % 400, 10000 + i % 90000, 2000 + i % 9000,
                round((0.05 + (i % 400) / 100.0)::numeric, 4), '{}'::jsonb
           FROM generate_series($3::int8, $4::int8) i",
    )
    .bind(org)
    .bind(TARGET)
    .bind(from)
    .bind(to)
    .execute(&db.pool)
    .await
    .expect("sessions");
}
