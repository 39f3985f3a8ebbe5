//! `syncplane transcripts expire`: the transcript archive's retention
//! (`shared::archive::retention`), per organization (`syncplane ingest set-org
//! --transcript-retention-days N|off`), for every configured tenant: segments past their org's
//! retention (objects, then rows), files with no segment left, and intents never completed (their
//! objects too). One JSON line per tenant with what was deleted.
//!
//! `syncplane transcripts usage`: what the archive keeps per organization and when its oldest
//! segment expires (`shared::archive::usage`), one JSON line per org.
//!
//! `syncplane transcripts reindex`: the search index made whole (`shared::archive::search::index`):
//! files with a segment neither indexed nor queued (recorded before the search existed) queued
//! again, then everything queued indexed; one JSON line per tenant.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use serde_json::json;
use shared::archive::retention;
use shared::archive::search::index;
use shared::archive::store::Store;
use shared::config::{Config, TenantConfig};
use shared::ingest::transcripts::TranscriptsState;

#[derive(Subcommand)]
pub enum TranscriptsCommand {
    /// Delete what the orgs' retention says is due, in bounded batches; prints one JSON line per
    /// tenant: `{"tenant", "segments", "files", "uploads", "objects"}`.
    Expire {
        /// Only this tenant (default: every configured tenant).
        #[arg(long)]
        tenant: Option<String>,
        /// Rows per batch.
        #[arg(long, default_value_t = retention::DEFAULT_BATCH)]
        batch: i64,
    },
    /// Make the search index whole: queue every file with a segment neither indexed nor queued
    /// (recorded before the search existed), then index all that is queued; prints one JSON line
    /// per tenant: `{"tenant", "files", "segments", "indexedSegments", "indexedLines"}`.
    Reindex {
        /// Only this tenant (default: every configured tenant).
        #[arg(long)]
        tenant: Option<String>,
    },
    /// What the archive keeps per organization: one JSON line each, `{"tenant", "orgId", "org",
    /// "sessions", "files", "segments", "compressedBytes", "decodedBytes", "indexedLines",
    /// "oldestSegmentAt", "retentionDays", "oldestExpiresAt"}` (`retentionDays` null: kept until a
    /// retention is set with `syncplane ingest set-org ORG --transcript-retention-days N`).
    Usage {
        /// Only this tenant (default: every configured tenant).
        #[arg(long)]
        tenant: Option<String>,
        /// Only this organization (its name).
        #[arg(long)]
        org: Option<String>,
    },
}

pub async fn run(
    config: &Config,
    cmd: TranscriptsCommand,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match cmd {
        TranscriptsCommand::Expire { tenant, batch } => {
            let store = archive_store(config).await?;
            expire(config, &store, tenant.as_deref(), batch, out).await
        }
        TranscriptsCommand::Usage { tenant, org } => {
            usage(config, tenant.as_deref(), org.as_deref(), out).await
        }
        TranscriptsCommand::Reindex { tenant } => {
            let store = archive_store(config).await?;
            reindex(config, &store, tenant.as_deref(), out).await
        }
    }
}

/// `reindex` on `store` for the tenants asked for.
async fn reindex(
    config: &Config,
    store: &Store,
    only: Option<&str>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    for tenant in tenants(config, only)? {
        let pool = shared::db::connect_tenant(tenant, 2).await?;
        let done = async {
            let queued = index::backfill(&pool, store).await?;
            let drained = index::drain(&pool, store, u64::MAX).await?;
            Ok::<_, index::DrainError>((queued, drained))
        }
        .await;
        pool.close().await;
        let (queued, drained) =
            done.with_context(|| format!("tenant {}: transcripts reindex", tenant.id))?;
        let line = json!({"tenant": tenant.id.as_str(), "files": queued.files,
            "segments": queued.segments, "indexedSegments": drained.segments,
            "indexedLines": drained.lines});
        writeln!(out, "{line}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `usage` for the tenants asked for; an org named that no tenant has is an error.
async fn usage(
    config: &Config,
    only: Option<&str>,
    org: Option<&str>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let mut found = false;
    for tenant in tenants(config, only)? {
        let pool = shared::db::connect_tenant(tenant, 1).await?;
        let kept = shared::archive::usage::kept(&pool, None).await;
        pool.close().await;
        let kept = kept.with_context(|| format!("tenant {}: transcripts usage", tenant.id))?;
        for k in kept.iter().filter(|k| org.is_none_or(|o| k.org == o)) {
            found = true;
            writeln!(out, "{}", tenant_line(tenant, k)?)?;
        }
    }
    if let Some(o) = org
        && !found
    {
        anyhow::bail!("no organization named '{o}' (syncplane ingest orgs lists them)");
    }
    Ok(ExitCode::SUCCESS)
}

/// `expire` on `store` for the tenants asked for.
pub async fn expire(
    config: &Config,
    store: &Store,
    only: Option<&str>,
    batch: i64,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    for tenant in tenants(config, only)? {
        let pool = shared::db::connect_tenant(tenant, 1).await?;
        let done = retention::expire(&pool, store, chrono::Utc::now(), batch).await;
        pool.close().await;
        let done = done.with_context(|| format!("tenant {}: transcripts expire", tenant.id))?;
        writeln!(out, "{}", tenant_line(tenant, &done)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The configured tenants, or the one `only` names (an unknown one is an error).
fn tenants<'a>(
    config: &'a Config,
    only: Option<&'a str>,
) -> anyhow::Result<impl Iterator<Item = &'a TenantConfig>> {
    if let Some(t) = only
        && config.tenant(t).is_none()
    {
        anyhow::bail!("unknown tenant '{t}'");
    }
    Ok(config
        .tenants
        .iter()
        .filter(move |t| only.is_none_or(|o| t.id.as_str() == o)))
}

/// One output line: `{"tenant": ...}` and the fields of `what`.
fn tenant_line(
    tenant: &TenantConfig,
    what: &impl serde::Serialize,
) -> anyhow::Result<serde_json::Value> {
    let mut line = json!({ "tenant": tenant.id.as_str() });
    if let (Some(line), serde_json::Value::Object(fields)) =
        (line.as_object_mut(), serde_json::to_value(what)?)
    {
        line.extend(fields);
    }
    Ok(line)
}

/// The archive's store as the ingest function builds it from the configuration
/// (`TRANSCRIPT_BUCKET`, else `TRANSCRIPT_DATA_DIR`).
async fn archive_store(config: &Config) -> anyhow::Result<Store> {
    Ok(TranscriptsState::from_settings(&config.transcripts)
        .await
        .store)
}
