//! Code owners on the read API: `GET /api/repos/{owner}/{name}/owners?path=`, and the owners every
//! document and search hit carries, from the same function (`sync::parse::owners_of`) over the
//! CODEOWNERS rules the last sync stored.

use std::collections::HashMap;

use serde_json::{Value, json};
use sqlx::PgPool;

use super::super::error::{ApiError, db_failure};
use super::params::{Params, repo_path};
use super::repos::Repo;
use syncplane_engine::sync::parse::{CodeOwnersRule, deciding_rule, owners_of};

/// The stored rules of each repository in `repo_ids`, in file order.
pub(crate) async fn rules_of(
    pool: &PgPool,
    repo_ids: &[i64],
) -> Result<HashMap<i64, Vec<CodeOwnersRule>>, ApiError> {
    let rows: Vec<(i64, i32, String, Vec<String>)> = sqlx::query_as(
        "SELECT repo_id, line, pattern, owners FROM code_owners
         WHERE repo_id = ANY($1) ORDER BY repo_id, line",
    )
    .bind(repo_ids)
    .fetch_all(pool)
    .await
    .map_err(db_failure("read code owners"))?;
    let mut rules: HashMap<i64, Vec<CodeOwnersRule>> = HashMap::new();
    for (repo_id, line, pattern, owners) in rows {
        rules.entry(repo_id).or_default().push(CodeOwnersRule {
            line: u32::try_from(line).unwrap_or(0),
            pattern,
            owners,
        });
    }
    Ok(rules)
}

/// The owners of `path` under `rules` (none when the repository has no rules).
pub(crate) fn owners_json(rules: Option<&Vec<CodeOwnersRule>>, path: &str) -> Value {
    json!(rules.map_or(&[][..], |r| owners_of(r, path)))
}

/// `GET .../owners?path=`: who owns the path, and by which rule.
pub async fn owners(pool: &PgPool, repo: &Repo, params: &Params) -> Result<Value, ApiError> {
    let path = params.required("path")?;
    let path = repo_path(path, false)?;
    let rules = rules_of(pool, &[repo.id]).await?;
    let rules = rules.get(&repo.id).map(Vec::as_slice).unwrap_or_default();
    let rule = deciding_rule(rules, &path);
    Ok(json!({
        "repository": repo.full_name(),
        "path": path,
        "owners": rule.map_or(&[][..], |r| r.owners.as_slice()),
        "rule": rule.map(|r| json!({"line": r.line, "pattern": r.pattern})),
        "codeownersPath": repo.codeowners_path,
    }))
}
