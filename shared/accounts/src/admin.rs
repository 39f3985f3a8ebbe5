//! The migrate function's admin action, `{"action": "provision", ...}` (issue 21 point 15): the
//! first org, user, compute target and device token of a deployment whose database only the VPC
//! reaches, created with `aws lambda invoke` of the migrate function (docs/deploy.md, "The first
//! org, user and device token").
//!
//! It runs the provisioning of the `syncplane ingest` commands (`create-org`, `create-user`,
//! `create-target`, `issue-token`: the same functions of [`super::provision`]) in one
//! transaction, so a refused step leaves nothing behind, on the first configured tenant's
//! database (the one the ingest function serves). The device token is returned in the invoke
//! response, this once; only its SHA-256 is stored, and nothing here logs it (one line names the
//! ids).
//!
//! The migrate function dispatches its events (its own `dispatch` module): this action here, every
//! other event (CloudFormation's custom resource, `{"action": "migrate"}`) to
//! `syncplane_core::schema::invoke::handle`.

use http::StatusCode;
use serde_json::{Map, Value, json};
use sqlx::PgPool;

use crate::provision::{self, NewOrg};
use crate::tokens;
use syncplane_core::config::Config;
use syncplane_core::http::HttpError;
use syncplane_core::schema::SchemaBehind;

/// The event's `action` that provisions.
pub const PROVISION: &str = "provision";
/// The fields a provision event may carry, besides `action`.
pub const FIELDS: &[&str] = &[
    "org",
    "org_id",
    "user",
    "user_id",
    "compute_target",
    "token_label",
    "sync_policy",
    "feature_gate",
    "frustration",
];
/// Longest org name, user name and token label (the schema's checks); a compute target id's.
const MAX_NAME_CHARS: usize = 200;
const MAX_TARGET_CHARS: usize = 128;

/// The one error type of the provision action: each variant has a status and a stable code, and
/// its message starts with the code (`aws lambda invoke` shows only the message).
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// The event is not a valid provision request; the message names the field and the rule.
    #[error("invalid_request: {0}")]
    InvalidRequest(String),
    #[error("org_not_found: org {0} does not exist")]
    OrgNotFound(i64),
    #[error("user_not_found: user {0} does not exist")]
    UserNotFound(i64),
    #[error(
        "org_exists: an org named {name:?} exists already (org {id}; names are unique): give `\"org_id\": {id}` to add a user to it"
    )]
    OrgExists { name: String, id: i64 },
    #[error(
        "user_exists: org {org_id} has a user named {name:?} already (user {id}): give `\"user_id\": {id}` to issue it another token"
    )]
    UserExists { org_id: i64, name: String, id: i64 },
    #[error(
        "compute_target_exists: the compute target {target:?} is registered already (to user {user_id})"
    )]
    ComputeTargetExists { target: String, user_id: i64 },
    #[error("schema_behind: {0} (database at version {db}, this build needs {build}): invoke the migrate function with {{\"action\":\"migrate\"}} first", db = .0.database, build = .0.build)]
    SchemaBehind(SchemaBehind),
    #[error("configuration_error: {0}")]
    Configuration(String),
    #[error("database_unreachable: {0}")]
    DatabaseUnreachable(String),
    #[error(
        "out_of_time: provisioning did not finish within the {0}s the function had left; nothing was created (the transaction is rolled back)"
    )]
    OutOfTime(u64),
    #[error("database_error: {0}")]
    Database(String),
}

impl HttpError for ProvisionError {
    fn status(&self) -> StatusCode {
        match self {
            Self::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            Self::OrgNotFound(_) | Self::UserNotFound(_) => StatusCode::NOT_FOUND,
            Self::OrgExists { .. } | Self::UserExists { .. } | Self::ComputeTargetExists { .. } => {
                StatusCode::CONFLICT
            }
            Self::SchemaBehind(_) | Self::DatabaseUnreachable(_) | Self::OutOfTime(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::Configuration(_) | Self::Database(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
    fn code(&self) -> Option<&'static str> {
        Some(match self {
            Self::InvalidRequest(_) => "invalid_request",
            Self::OrgNotFound(_) => "org_not_found",
            Self::UserNotFound(_) => "user_not_found",
            Self::OrgExists { .. } => "org_exists",
            Self::UserExists { .. } => "user_exists",
            Self::ComputeTargetExists { .. } => "compute_target_exists",
            Self::SchemaBehind(_) => "schema_behind",
            Self::Configuration(_) => "configuration_error",
            Self::DatabaseUnreachable(_) => "database_unreachable",
            Self::OutOfTime(_) => "out_of_time",
            Self::Database(_) => "database_error",
        })
    }
}

/// Which org a new user joins.
#[derive(Debug, Clone)]
pub enum OrgPlan {
    /// `org`: a new org, with the CLI's defaults (sync policy on, gate on, frustration off).
    New {
        name: String,
        sync_policy: Option<bool>,
        feature_gate: bool,
        frustration_opt_in: bool,
    },
    /// `org_id`: an existing org.
    Existing(i64),
}

/// Whose token is issued.
#[derive(Debug, Clone)]
pub enum UserPlan {
    /// `user`: a new user of the org.
    New { org: OrgPlan, name: String },
    /// `user_id`: an existing user (in its own org).
    Existing(i64),
}

/// A valid provision request.
#[derive(Debug, Clone)]
pub struct ProvisionRequest {
    pub user: UserPlan,
    pub compute_target: Option<String>,
    pub token_label: Option<String>,
}

/// What was provisioned. Its `Debug` leaves the token out.
pub struct Provisioned {
    pub org_id: i64,
    pub user_id: i64,
    pub compute_target: Option<String>,
    pub token_id: i64,
    pub token: String,
    /// What this call created (`org`, `user`, `compute_target`, `device_token`).
    pub created: Vec<&'static str>,
}

impl std::fmt::Debug for Provisioned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provisioned")
            .field("org_id", &self.org_id)
            .field("user_id", &self.user_id)
            .field("compute_target", &self.compute_target)
            .field("token_id", &self.token_id)
            .field("token", &"[shown once]")
            .finish()
    }
}

impl Provisioned {
    /// The invoke response: the ids, and the token this once.
    pub fn answer(&self) -> Value {
        json!({
            "org_id": self.org_id,
            "user_id": self.user_id,
            "compute_target": self.compute_target,
            "token_id": self.token_id,
            "token": self.token,
            "created": self.created,
            "note": "the device token is shown this once and only its SHA-256 is stored: hand it \
                     to the desktop client, then delete this response",
        })
    }
}

/// Provision `request` on the first configured tenant's database (the ingest function's).
pub async fn provision_on(
    config: &Config,
    request: &ProvisionRequest,
) -> Result<Provisioned, ProvisionError> {
    let tenant = config.tenants.first().ok_or_else(|| {
        ProvisionError::Configuration(
            "no tenant configured: set DATABASE_URL (or TENANTS_FILE)".to_owned(),
        )
    })?;
    let pool = syncplane_core::db::connect_tenant(tenant, 1)
        .await
        .map_err(|e| ProvisionError::DatabaseUnreachable(e.to_string()))?;
    let done = provision(&pool, request).await;
    pool.close().await;
    done
}

/// Provision `request` in one transaction: all of it, or nothing. A name or compute target that
/// is taken is refused naming what holds it (the migrate function runs one invocation at a time,
/// `ReservedConcurrentExecutions: 1`, so nothing takes it between the look and the insert; if
/// something else did, the unique constraint refuses as a `database_error`).
pub async fn provision(
    pool: &PgPool,
    request: &ProvisionRequest,
) -> Result<Provisioned, ProvisionError> {
    if let Some(behind) = syncplane_core::schema::check::behind(pool)
        .await
        .map_err(failed)?
    {
        return Err(ProvisionError::SchemaBehind(behind));
    }
    let mut created = Vec::new();
    let mut tx = pool.begin().await.map_err(failed)?;
    let (org_id, user_id) = user_of(&mut tx, &request.user, &mut created).await?;
    if let Some(target) = &request.compute_target {
        let owner: Option<i64> =
            sqlx::query_scalar("SELECT user_id FROM compute_targets WHERE id = $1")
                .bind(target)
                .fetch_optional(&mut *tx)
                .await
                .map_err(failed)?;
        if let Some(user_id) = owner {
            return Err(ProvisionError::ComputeTargetExists {
                target: target.clone(),
                user_id,
            });
        }
        provision::create_compute_target(&mut *tx, user_id, target)
            .await
            .map_err(failed)?;
        created.push("compute_target");
    }
    let label = request.token_label.as_deref();
    let issued = tokens::issue_device_token(&mut *tx, user_id, label)
        .await
        .map_err(failed)?;
    created.push("device_token");
    tx.commit().await.map_err(failed)?;
    Ok(Provisioned {
        org_id,
        user_id,
        compute_target: request.compute_target.clone(),
        token_id: issued.id,
        token: issued.token,
        created,
    })
}

/// The token's user and its org: an existing user, or a new one (in a new or existing org).
async fn user_of(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    user: &UserPlan,
    created: &mut Vec<&'static str>,
) -> Result<(i64, i64), ProvisionError> {
    match user {
        UserPlan::Existing(user_id) => {
            let org: Option<i64> = sqlx::query_scalar("SELECT org_id FROM users WHERE id = $1")
                .bind(user_id)
                .fetch_optional(&mut **tx)
                .await
                .map_err(failed)?;
            Ok((org.ok_or(ProvisionError::UserNotFound(*user_id))?, *user_id))
        }
        UserPlan::New { org, name } => {
            let org_id = org_of(tx, org, created).await?;
            let taken: Option<i64> =
                sqlx::query_scalar("SELECT id FROM users WHERE org_id = $1 AND name = $2")
                    .bind(org_id)
                    .bind(name)
                    .fetch_optional(&mut **tx)
                    .await
                    .map_err(failed)?;
            if let Some(id) = taken {
                return Err(ProvisionError::UserExists {
                    org_id,
                    name: name.clone(),
                    id,
                });
            }
            let user_id = provision::create_user(&mut **tx, org_id, name)
                .await
                .map_err(failed)?;
            created.push("user");
            Ok((org_id, user_id))
        }
    }
}

/// The new user's org: created, or checked to exist.
async fn org_of(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    org: &OrgPlan,
    created: &mut Vec<&'static str>,
) -> Result<i64, ProvisionError> {
    let (name, new) = match org {
        OrgPlan::Existing(id) => {
            let exists: bool =
                sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM orgs WHERE id = $1)")
                    .bind(id)
                    .fetch_one(&mut **tx)
                    .await
                    .map_err(failed)?;
            return exists
                .then_some(*id)
                .ok_or(ProvisionError::OrgNotFound(*id));
        }
        OrgPlan::New {
            name,
            sync_policy,
            feature_gate,
            frustration_opt_in,
        } => (
            name,
            NewOrg {
                name,
                sync_policy: *sync_policy,
                feature_gate: *feature_gate,
                frustration_opt_in: *frustration_opt_in,
            },
        ),
    };
    let taken: Option<i64> = sqlx::query_scalar("SELECT id FROM orgs WHERE name = $1")
        .bind(name)
        .fetch_optional(&mut **tx)
        .await
        .map_err(failed)?;
    if let Some(id) = taken {
        return Err(ProvisionError::OrgExists {
            name: name.clone(),
            id,
        });
    }
    let id = provision::create_org(&mut **tx, &new)
        .await
        .map_err(failed)?;
    created.push("org");
    Ok(id)
}

/// A database failure as one line (sqlx's text names no connection string or secret).
fn failed(e: sqlx::Error) -> ProvisionError {
    ProvisionError::Database(
        e.to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn invalid(message: impl Into<String>) -> ProvisionError {
    ProvisionError::InvalidRequest(message.into())
}

/// The provision event's fields, each checked by its rule, then how they combine.
pub fn parse(event: &Value) -> Result<ProvisionRequest, ProvisionError> {
    let fields = event
        .as_object()
        .ok_or_else(|| invalid("the event must be a JSON object"))?;
    if let Some(unknown) = fields
        .keys()
        .find(|k| *k != "action" && !FIELDS.contains(&k.as_str()))
    {
        return Err(invalid(format!(
            "unknown field `{unknown}`; a provision event takes `action` and {}",
            FIELDS
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let user = match (
        text(fields, "user", MAX_NAME_CHARS)?,
        id(fields, "user_id")?,
    ) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "`user` (a new user's name) and `user_id` (an existing user): give one, not both",
            ));
        }
        (None, None) => {
            return Err(invalid(
                "`user` (a new user's name) or `user_id` (an existing user) is required",
            ));
        }
        (None, Some(user_id)) => {
            if let Some(f) = [
                "org",
                "org_id",
                "sync_policy",
                "feature_gate",
                "frustration",
            ]
            .into_iter()
            .find(|f| fields.contains_key(*f))
            {
                return Err(invalid(format!(
                    "`{f}`: an existing user (`user_id`) stays in its own org; leave `{f}` out"
                )));
            }
            UserPlan::Existing(user_id)
        }
        (Some(name), None) => UserPlan::New {
            org: org_plan(fields)?,
            name,
        },
    };
    Ok(ProvisionRequest {
        user,
        compute_target: text(fields, "compute_target", MAX_TARGET_CHARS)?,
        token_label: text(fields, "token_label", MAX_NAME_CHARS)?,
    })
}

/// `org` (a new org, with its switches) or `org_id` (an existing one).
fn org_plan(fields: &Map<String, Value>) -> Result<OrgPlan, ProvisionError> {
    match (text(fields, "org", MAX_NAME_CHARS)?, id(fields, "org_id")?) {
        (Some(_), Some(_)) => Err(invalid(
            "`org` (a new org's name) and `org_id` (an existing org): give one, not both",
        )),
        (None, None) => Err(invalid(
            "a new user needs `org` (a new org's name) or `org_id` (an existing org)",
        )),
        (None, Some(id)) => {
            if let Some(f) = ["sync_policy", "feature_gate", "frustration"]
                .into_iter()
                .find(|f| fields.contains_key(*f))
            {
                return Err(invalid(format!(
                    "`{f}`: sets up a new org (`org`), not an existing one (`org_id`)"
                )));
            }
            Ok(OrgPlan::Existing(id))
        }
        (Some(name), None) => Ok(OrgPlan::New {
            name,
            sync_policy: match choice(fields, "sync_policy", &["on", "off", "none"])? {
                Some("off") => Some(false),
                Some("none") => None,
                _ => Some(true),
            },
            feature_gate: choice(fields, "feature_gate", &["on", "off"])? != Some("off"),
            frustration_opt_in: choice(fields, "frustration", &["on", "off"])? == Some("on"),
        }),
    }
}

/// A text field of 1 to `max` characters, not blank, without U+0000 (Postgres text cannot hold
/// it); `None` when absent or `null`.
fn text(
    fields: &Map<String, Value>,
    name: &str,
    max: usize,
) -> Result<Option<String>, ProvisionError> {
    let Some(value) = fields.get(name).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let rule = || invalid(format!("`{name}`: a string of 1 to {max} characters"));
    let text = value.as_str().ok_or_else(rule)?;
    if text.trim().is_empty() || text.chars().count() > max || text.contains('\0') {
        return Err(rule());
    }
    Ok(Some(text.to_owned()))
}

/// A positive integer id; `None` when absent or `null`.
fn id(fields: &Map<String, Value>, name: &str) -> Result<Option<i64>, ProvisionError> {
    let Some(value) = fields.get(name).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    value
        .as_i64()
        .filter(|id| *id > 0)
        .map(Some)
        .ok_or_else(|| invalid(format!("`{name}`: a positive integer id")))
}

/// One of `allowed`; `None` when absent or `null`.
fn choice(
    fields: &Map<String, Value>,
    name: &str,
    allowed: &[&'static str],
) -> Result<Option<&'static str>, ProvisionError> {
    let Some(value) = fields.get(name).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    value
        .as_str()
        .and_then(|v| allowed.iter().find(|a| **a == v).copied())
        .map(Some)
        .ok_or_else(|| {
            invalid(format!(
                "`{name}`: one of {}",
                allowed
                    .iter()
                    .map(|a| format!("\"{a}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}
