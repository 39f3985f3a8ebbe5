//! `syncplane demo load` and `syncplane demo remove`: something to look at in the console of a
//! local run with no GitHub App (issue 32 point 3), and a way to take it out again. Local runs
//! only (`SYNCPLANE_LOCAL=1`, as `scripts/local.sh` sets): the demo's tokens are public.
//!
//! `load` provisions the demo org (`demo-acme`: the ingest samples' device token, and a read
//! token for the console's organization sign-in), syncs every selected repository (the local
//! fake GitHub's two demo repositories), and sends the example sessions of `examples/sessions/`
//! and the transcript of `examples/transcripts/` through the ingest function's own routes, in
//! process: the metadata lane's batch, then the transcript lane's intent, upload and complete.
//! Every title says it is demo data. It is idempotent: a second `load` changes nothing.
//!
//! `remove` deletes the demo org with everything it holds (users, targets, tokens, sessions,
//! transcripts, the transcript objects first) and the demo repositories with their documents.

use shared::worker::TenantWorkspace;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use shared::accounts::provision::{self, DEMO_COMPUTE_TARGET, DEMO_DEVICE_TOKEN, DEMO_READ_TOKEN};
use shared::config::Config;
use shared::sync::full::sync_all;
use shared::sync::runs::Trigger;
use sqlx::PgPool;

use crate::serve::Functions;

#[derive(Subcommand)]
pub enum DemoCommand {
    /// Load the demo data: the demo org and its tokens, the demo repositories synced, example
    /// sessions and a transcript (a local run with no GitHub App; scripts/local.sh runs it).
    Load,
    /// Remove everything `load` made: the demo org with its sessions and transcripts, and the
    /// demo repositories with their documents.
    Remove,
}

/// The repositories of the local fake GitHub's demo installation.
pub const DEMO_REPOSITORIES: [&str; 2] = ["acme/handbook", "acme/widgets"];

/// The example sessions (the desktop store format of `examples/sessions/`).
const SESSIONS: [&str; 2] = [
    include_str!("../../examples/sessions/claude-refactor.json"),
    include_str!("../../examples/sessions/codex-docs.json"),
];
/// The transcript of the first example session, as Claude Code writes one.
const TRANSCRIPT: &str = include_str!("../../examples/transcripts/example-claude-refactor.jsonl");
const TRANSCRIPT_SESSION: &str = "example-claude-refactor";
const TRANSCRIPT_FILE: &str = "example-claude-refactor.jsonl";
/// What marks every demo title.
const MARK: &str = "Demo: ";

pub async fn run(
    config: &Config,
    cmd: DemoCommand,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    if !config.local_run {
        bail!(
            "SYNCPLANE_LOCAL: `demo` loads and removes public demo data, for local runs only; set \
             SYNCPLANE_LOCAL=1 (scripts/local.sh does) to use it"
        );
    }
    let tenant = config.tenants.first().context("no tenant configured")?;
    if matches!(cmd, DemoCommand::Load) && tenant.github.is_some() {
        sync_repositories(config).await?;
    }
    let pool = shared::db::connect_tenant(tenant, 2).await?;
    match cmd {
        DemoCommand::Load => load(config, &pool, out).await?,
        DemoCommand::Remove => remove(config, &pool, out).await?,
    }
    Ok(ExitCode::SUCCESS)
}

async fn load(config: &Config, pool: &PgPool, out: &mut dyn Write) -> anyhow::Result<()> {
    if config.tenants.first().is_none_or(|t| t.github.is_none()) {
        writeln!(out, "demo: no GitHub App configured, no repository synced")?;
    }
    provision::demo(pool).await?;
    let org = provision::demo_org(pool)
        .await?
        .context("the demo org was just provisioned")?;
    provision::demo_read_token(pool, org).await?;
    let functions = Functions::from_config(config).await?;
    send_sessions(&functions).await?;
    send_transcript(&functions).await?;
    writeln!(
        out,
        "demo: loaded (org demo-acme: {} sessions, 1 transcript; repositories {}); remove it with `syncplane demo remove`",
        SESSIONS.len(),
        DEMO_REPOSITORIES.join(", ")
    )?;
    writeln!(
        out,
        "demo: the console's organization token (Sessions, Insights): {DEMO_READ_TOKEN}"
    )?;
    Ok(())
}

/// Every selected repository of the first tenant, synced now as `syncplane sync` does (its pool
/// as large: a run holds its lock's connection and a repository's while it works).
async fn sync_repositories(config: &Config) -> anyhow::Result<()> {
    let tenants = shared::tenants::Tenants::from_config(
        config,
        shared::db::DEFAULT_POOL_SIZE,
        shared::sync::workspace::RunOptions::default(),
    )?;
    let tenant = config.tenants.first().context("no tenant configured")?;
    let ws = tenants.workspace(tenant.id.as_str())?;
    let report = sync_all(&ws, Trigger::Manual)
        .await
        .context("syncing the demo repositories")?;
    if let Some(error) = report.error {
        bail!(
            "demo: the sync of the demo repositories stopped ({error}): `syncplane status` says more"
        );
    }
    Ok(())
}

/// One request to the ingest function, in process, with the demo device token.
async fn ingest(
    functions: &Functions,
    method: &str,
    path: &str,
    body: Vec<u8>,
    content_type: &str,
) -> anyhow::Result<Value> {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {DEMO_DEVICE_TOKEN}"))
        .header("content-type", content_type)
        .header("host", "127.0.0.1")
        .body(bytes::Bytes::from(body))
        .context("a demo request")?;
    let resp = functions.answer(req).await;
    let status = resp.status();
    let answer: Value = serde_json::from_slice(resp.body()).unwrap_or(Value::Null);
    if !status.is_success() {
        bail!("demo: {method} {path} answered {status}: {answer}");
    }
    Ok(answer["data"].clone())
}

/// The example sessions as one metadata batch, their titles marked as demo data and the
/// device-local fields a desktop client strips left out.
async fn send_sessions(functions: &Functions) -> anyhow::Result<()> {
    let mut sessions = Vec::new();
    for text in SESSIONS {
        let mut s: Value = serde_json::from_str(text).context("an example session")?;
        if let Some(o) = s.as_object_mut() {
            o.remove("tokenSeries");
            let title = o
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or("session")
                .to_owned();
            o.insert("title".into(), json!(format!("{MARK}{title}")));
            if let Some(events) = o.get_mut("events").and_then(Value::as_array_mut) {
                for e in events.iter_mut().filter_map(Value::as_object_mut) {
                    e.remove("summary");
                    e.remove("data");
                }
            }
        }
        sessions.push(s);
    }
    let batch = json!({"schemaVersion": 2, "batchId": "demo-sessions-1", "mode": "backfill",
        "computeTargetId": DEMO_COMPUTE_TARGET, "sessionCount": sessions.len(),
        "sessions": sessions});
    ingest(
        functions,
        "POST",
        syncplane_contract::path::SYNC,
        serde_json::to_vec(&batch)?,
        "application/json",
    )
    .await?;
    Ok(())
}

/// The example transcript through the transcript lane (direct transport): intent, upload,
/// complete; nothing when it is archived already.
async fn send_transcript(functions: &Functions) -> anyhow::Result<()> {
    use syncplane_contract::transcripts::path;
    let state = ingest(
        functions,
        "GET",
        &format!(
            "{}?computeTargetId={DEMO_COMPUTE_TARGET}&sessionId={TRANSCRIPT_SESSION}&fileId={TRANSCRIPT_FILE}",
            path::STATE
        ),
        Vec::new(),
        "application/json",
    )
    .await?;
    if state["ackedOffset"].as_u64().unwrap_or(0) > 0 {
        return Ok(());
    }
    let compressed = zstd::bulk::compress(TRANSCRIPT.as_bytes(), 3)?;
    let intent = json!({"computeTargetId": DEMO_COMPUTE_TARGET, "sessionId": TRANSCRIPT_SESSION,
        "fileId": TRANSCRIPT_FILE, "generation": 1, "offset": 0,
        "sourceBytes": TRANSCRIPT.len(), "decodedBytes": TRANSCRIPT.len(),
        "compressedBytes": compressed.len(), "sha256": hex::encode(Sha256::digest(&compressed))});
    let intent = ingest(
        functions,
        "POST",
        path::INTENT,
        serde_json::to_vec(&intent)?,
        "application/json",
    )
    .await?;
    let upload = intent["uploadId"].as_str().context("an upload id")?;
    ingest(
        functions,
        "PUT",
        &format!("{}/{upload}", path::UPLOADS),
        compressed,
        "application/octet-stream",
    )
    .await?;
    ingest(
        functions,
        "POST",
        path::COMPLETE,
        serde_json::to_vec(&json!({"uploadId": upload}))?,
        "application/json",
    )
    .await?;
    Ok(())
}

async fn remove(config: &Config, pool: &PgPool, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut objects = 0;
    if let Some(org) = provision::demo_org(pool).await? {
        let keys: Vec<String> = sqlx::query_scalar(
            "SELECT s.object_key FROM transcript_segments s
               JOIN transcript_files f ON f.id = s.file_row WHERE f.org_id = $1
             UNION SELECT u.object_key FROM transcript_uploads u
               JOIN transcript_files f ON f.id = u.file_row WHERE f.org_id = $1",
        )
        .bind(org)
        .fetch_all(pool)
        .await?;
        let store =
            shared::ingest::transcripts::TranscriptsState::from_settings(&config.transcripts)
                .await
                .store;
        for key in &keys {
            store
                .delete(key)
                .await
                .map_err(|e| anyhow::anyhow!("demo: deleting a transcript object: {e}"))?;
        }
        objects = keys.len();
        sqlx::query("DELETE FROM orgs WHERE id = $1")
            .bind(org)
            .execute(pool)
            .await?;
    }
    let repos = sqlx::query("DELETE FROM repos WHERE lower(owner || '/' || name) = ANY($1)")
        .bind(DEMO_REPOSITORIES.map(str::to_owned).to_vec())
        .execute(pool)
        .await?
        .rows_affected();
    writeln!(
        out,
        "demo: removed (org demo-acme with its sessions and transcripts, {objects} transcript objects, {repos} repositories)"
    )?;
    Ok(())
}
