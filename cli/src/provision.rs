//! `syncplane ingest ...`: provisioning for agent session ingest, and the listing of what it
//! stored (`sessions`), on the first configured tenant's database (the one the ingest function
//! serves).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use shared::accounts::provision::{self, GlobalFeature, NewOrg, OrgSettings};
use shared::accounts::tokens::{self, TokenKind};
use shared::archive::retention;
use shared::ingest::listing;
use sqlx::PgPool;

use crate::sessions::NO_ORG_YET;

#[derive(Clone, Copy, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

impl Switch {
    fn on(self) -> bool {
        matches!(self, Switch::On)
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Lane {
    Sessions,
    Transcripts,
}

impl Lane {
    fn feature(self) -> GlobalFeature {
        match self {
            Lane::Sessions => GlobalFeature::Sessions,
            Lane::Transcripts => GlobalFeature::Transcripts,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Policy {
    On,
    Off,
    /// No policy row at all (ingest treats it as disabled).
    None,
}

impl Policy {
    fn value(self) -> Option<bool> {
        match self {
            Policy::On => Some(true),
            Policy::Off => Some(false),
            Policy::None => None,
        }
    }
}

#[derive(Subcommand)]
pub enum IngestCommand {
    /// Create an org; prints its id alone on stdout (`ORG=$(syncplane ingest create-org acme)`).
    CreateOrg {
        /// The org's display name.
        name: String,
        /// The org's session sync policy.
        #[arg(long, value_enum, default_value = "on")]
        sync_policy: Policy,
        /// The org-level feature gate.
        #[arg(long, value_enum, default_value = "on")]
        feature_gate: Switch,
        /// Store the frustration signal.
        #[arg(long, value_enum, default_value = "off")]
        frustration: Switch,
    },
    /// Change an org's policy, gates, frustration opt-in or transcript retention; prints the
    /// org's settings as `orgs` lists them.
    SetOrg {
        /// The org's id (printed by create-org).
        org_id: i64,
        #[arg(long, value_enum)]
        sync_policy: Option<Policy>,
        /// The metadata lane's org-level feature gate.
        #[arg(long, value_enum)]
        feature_gate: Option<Switch>,
        #[arg(long, value_enum)]
        frustration: Option<Switch>,
        /// The org's transcript gate: off refuses the transcript lane (403 transcripts_disabled)
        /// and leaves the metadata lane as it is.
        #[arg(long, value_enum)]
        transcripts: Option<Switch>,
        /// Delete the org's transcript segments older than N days (1 to 36500), or `off` to keep
        /// them forever (`syncplane transcripts expire` deletes).
        #[arg(long, value_name = "N|off")]
        transcript_retention_days: Option<Retention>,
    },
    /// Switch a lane on or off globally (every org).
    SetGlobalFeature {
        /// on or off.
        #[arg(value_enum)]
        state: Switch,
        /// Which lane: sessions (the metadata lane) or transcripts.
        #[arg(long, value_enum, default_value = "sessions")]
        lane: Lane,
    },
    /// List every org's settings: sync policy, feature gate, frustration opt-in, transcript gate
    /// and retention, after the global switches.
    Orgs {
        /// Print JSON: `{"global": {...}, "orgs": [...]}`.
        #[arg(long)]
        json: bool,
    },
    /// Create a user in an org; prints its id alone on stdout.
    CreateUser {
        /// The org's id (printed by create-org).
        org_id: i64,
        /// The user's display name.
        name: String,
    },
    /// Register a compute target id as a user's.
    CreateTarget {
        /// The user's id (printed by create-user).
        user_id: i64,
        /// The compute target id the desktop client sends (`computeTargetId`).
        target_id: String,
    },
    /// Issue a device token for a user; the token is printed once and never stored.
    IssueToken {
        /// The user's id (printed by create-user).
        user_id: i64,
        #[arg(long)]
        label: Option<String>,
    },
    /// Revoke a device token by its id.
    RevokeToken {
        /// The token's id (printed on stderr by issue-token).
        token_id: i64,
    },
    /// Issue a read token for an org (what the web app reads transcripts with); the token is
    /// printed once and never stored.
    IssueReadToken {
        /// The org's id (printed by create-org).
        #[arg(long)]
        org: i64,
        #[arg(long)]
        label: Option<String>,
    },
    /// Revoke a read token by its id.
    RevokeReadToken {
        /// The token's id (printed on stderr by issue-read-token).
        token_id: i64,
    },
    /// List the ingested sessions per org, newest first (by the device's update time): time,
    /// compute target, session id, agent/model, event count, status, title.
    Sessions {
        /// Only this org (its id, printed by create-org); default: every org.
        #[arg(long)]
        org: Option<i64>,
        /// Sessions shown per org (1 to 1000).
        #[arg(long, default_value_t = listing::DEFAULT_LIMIT,
              value_parser = clap::value_parser!(i64).range(1..=listing::MAX_LIMIT))]
        limit: i64,
        /// Print JSON: `[{"orgId", "org", "total", "sessions": [...]}]`.
        #[arg(long)]
        json: bool,
    },
    /// Local demo only (`SYNCPLANE_LOCAL=1`, as `scripts/local.sh` sets): provision the org, user,
    /// compute target and device token the `events/ingest-*.json` samples carry. Idempotent.
    Demo,
}

/// Run one `syncplane ingest` command on the first configured tenant's database.
pub async fn run(
    config: &shared::config::Config,
    cmd: IngestCommand,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let tenant = config.tenants.first().context("no tenant configured")?;
    let pool = shared::db::connect_tenant(tenant, 1).await?;
    match cmd {
        IngestCommand::CreateOrg {
            name,
            sync_policy,
            feature_gate,
            frustration,
        } => {
            let org = NewOrg {
                name: &name,
                sync_policy: sync_policy.value(),
                feature_gate: feature_gate.on(),
                frustration_opt_in: frustration.on(),
            };
            create_org(&pool, &org, out).await?;
        }
        IngestCommand::SetOrg {
            org_id,
            sync_policy,
            feature_gate,
            frustration,
            transcripts,
            transcript_retention_days,
        } => {
            let flags = OrgFlags {
                sync_policy,
                feature_gate,
                frustration,
                transcripts,
                retention: transcript_retention_days,
            };
            set_org(&pool, org_id, flags, out).await?
        }
        IngestCommand::SetGlobalFeature { state, lane } => {
            set_global_feature(&pool, lane, state, out).await?
        }
        IngestCommand::Orgs { json } => list_orgs(&pool, json, out).await?,
        IngestCommand::CreateUser { org_id, name } => {
            let id = provision::create_user(&pool, org_id, &name).await?;
            eprintln!("user {id} created in org {org_id}");
            writeln!(out, "{id}")?;
        }
        IngestCommand::CreateTarget { user_id, target_id } => {
            provision::create_compute_target(&pool, user_id, &target_id)
                .await
                .with_context(|| format!("user {user_id} not found or target exists"))?;
            writeln!(out, "compute target {target_id}")?;
        }
        IngestCommand::IssueToken { user_id, label } => {
            issue_token(&pool, user_id, label.as_deref(), out).await?;
        }
        IngestCommand::RevokeToken { token_id } => {
            if !tokens::revoke(&pool, TokenKind::Device, token_id).await? {
                anyhow::bail!("token {token_id} not found or already revoked");
            }
            writeln!(out, "token {token_id} revoked")?;
        }
        IngestCommand::IssueReadToken { org, label } => {
            issue_read_token(&pool, org, label.as_deref(), out).await?;
        }
        IngestCommand::RevokeReadToken { token_id } => {
            if !tokens::revoke(&pool, TokenKind::Read, token_id).await? {
                anyhow::bail!("read token {token_id} not found or already revoked");
            }
            writeln!(out, "read token {token_id} revoked")?;
        }
        IngestCommand::Sessions { org, limit, json } => {
            crate::sessions::list(&pool, org, limit, json, out).await?;
        }
        IngestCommand::Demo => demo(&pool, config.local_run, out).await?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `set-global-feature`: a lane's global switch.
async fn set_global_feature(
    pool: &PgPool,
    lane: Lane,
    state: Switch,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    provision::set_global_feature(pool, lane.feature(), state.on()).await?;
    let what = match lane {
        Lane::Sessions => "agent session sync",
        Lane::Transcripts => "agent transcript sync",
    };
    writeln!(out, "{what} globally {}", on_off(state.on()))?;
    Ok(())
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// One org's settings on one line.
fn org_settings_line(o: &OrgSettings) -> String {
    let policy = o.sync_policy.map_or("none (off)", on_off);
    let retention = o
        .transcript_retention_days
        .map_or("kept forever".to_owned(), |d| format!("{d} days"));
    format!(
        "org {} {:?}: sync policy {policy}, feature gate {}, frustration {}, transcripts {}, transcript retention {retention}",
        o.id,
        o.name,
        on_off(o.feature_gate),
        on_off(o.frustration_opt_in),
        on_off(o.transcript_gate),
    )
}

/// `orgs`: the global switches, then every org's settings.
async fn list_orgs(pool: &PgPool, json: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    let global = provision::global_features(pool).await?;
    let orgs = provision::org_settings(pool, None).await?;
    if json {
        let global: serde_json::Map<String, serde_json::Value> = global
            .iter()
            .map(|(flag, on)| ((*flag).to_owned(), serde_json::Value::Bool(*on)))
            .collect();
        let doc = serde_json::json!({ "global": global, "orgs": orgs });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    let global: Vec<String> = global
        .iter()
        .map(|(flag, on)| format!("{flag} {}", on_off(*on)))
        .collect();
    writeln!(out, "global: {}", global.join(", "))?;
    if orgs.is_empty() {
        writeln!(out, "{NO_ORG_YET}")?;
    }
    for o in &orgs {
        writeln!(out, "{}", org_settings_line(o))?;
    }
    Ok(())
}

/// `create-org`: the id alone on stdout, so scripts can take it; the sentence on stderr.
async fn create_org(pool: &PgPool, org: &NewOrg<'_>, out: &mut dyn Write) -> anyhow::Result<()> {
    let id = provision::create_org(pool, org).await?;
    eprintln!("org {id} created");
    writeln!(out, "{id}")?;
    Ok(())
}

/// `--transcript-retention-days`: a number of days, or `off` (keep forever).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention(pub Option<u32>);

impl std::str::FromStr for Retention {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "off" {
            return Ok(Self(None));
        }
        s.parse::<u32>()
            .ok()
            .filter(|d| (1..=36_500).contains(d))
            .map(|d| Self(Some(d)))
            .ok_or_else(|| format!("{s:?}: a number of days from 1 to 36500, or off"))
    }
}

/// What `set-org` changes (`None`: left as it is).
pub struct OrgFlags {
    pub sync_policy: Option<Policy>,
    pub feature_gate: Option<Switch>,
    pub frustration: Option<Switch>,
    pub transcripts: Option<Switch>,
    pub retention: Option<Retention>,
}

/// `set-org`: only the settings given change; an unknown org is an error.
async fn set_org(
    pool: &PgPool,
    org_id: i64,
    flags: OrgFlags,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut found = provision::set_org_flags(
        pool,
        org_id,
        provision::OrgFlags {
            feature_gate: flags.feature_gate.map(Switch::on),
            frustration_opt_in: flags.frustration.map(Switch::on),
            transcript_gate: flags.transcripts.map(Switch::on),
        },
    )
    .await?;
    if let Some(policy) = flags.sync_policy {
        found &= provision::set_sync_policy(pool, org_id, policy.value()).await?;
    }
    if let Some(Retention(days)) = flags.retention {
        found &= retention::set_retention(pool, org_id, days).await?;
    }
    if !found {
        anyhow::bail!("org {org_id} not found");
    }
    for o in provision::org_settings(pool, Some(org_id)).await? {
        writeln!(out, "{}", org_settings_line(&o))?;
    }
    Ok(())
}

/// `issue-token`: the id on stderr (for revoking later), the token alone on stdout: it is shown
/// this once and cannot be recovered.
async fn issue_token(
    pool: &PgPool,
    user_id: i64,
    label: Option<&str>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let issued = tokens::issue_device_token(pool, user_id, label)
        .await
        .with_context(|| format!("user {user_id} not found"))?;
    eprintln!(
        "token {} issued; it is shown once and cannot be recovered",
        issued.id
    );
    writeln!(out, "{}", issued.token)?;
    Ok(())
}

/// `issue-read-token`: like `issue-token`, the id on stderr and the token alone on stdout, shown
/// this once.
async fn issue_read_token(
    pool: &PgPool,
    org_id: i64,
    label: Option<&str>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let issued = tokens::issue_read_token(pool, org_id, label)
        .await
        .with_context(|| format!("org {org_id} not found"))?;
    eprintln!(
        "read token {} issued for org {org_id}; it is shown once and cannot be recovered",
        issued.id
    );
    writeln!(out, "{}", issued.token)?;
    Ok(())
}

/// `demo`: local runs only. The samples' token is public: it must never open a deployed
/// database.
async fn demo(pool: &PgPool, local_run: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    if !local_run {
        anyhow::bail!(
            "SYNCPLANE_LOCAL: `ingest demo` provisions the public sample token, for local runs \
             only; set SYNCPLANE_LOCAL=1 (scripts/local.sh does) to use it"
        );
    }
    let done = provision::demo(pool).await?;
    writeln!(
        out,
        "{}",
        if done {
            "demo ingest token provisioned (events/ingest-*.json)"
        } else {
            "demo ingest token already provisioned"
        }
    )?;
    Ok(())
}
