//! `syncplane search "query"`: the read API's search (issue 11) for operators, through the same
//! library function as `GET /api/search`, against one tenant's database.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;
use shared::api::read::search::{DEFAULT_LIMIT, SearchRequest, search};
use shared::config::Config;

#[derive(Args)]
pub struct SearchArgs {
    /// The query: words, "quoted phrases", -exclusion, or.
    pub query: String,
    /// Only this repository (owner/name); repeat for several.
    #[arg(long = "repo")]
    pub repos: Vec<String>,
    /// Only paths under this prefix (e.g. docs/guides/).
    #[arg(long)]
    pub path: Option<String>,
    /// Hits to show (1 to 50).
    #[arg(long, default_value_t = DEFAULT_LIMIT)]
    pub limit: i64,
    /// Print the API's JSON instead of lines.
    #[arg(long)]
    pub json: bool,
    /// The tenant to search (default: the first configured).
    #[arg(long)]
    pub tenant: Option<String>,
}

/// Exit status: 0 with hits, 1 without, 2 when the query or a filter is refused.
pub async fn run(
    config: &Config,
    args: &SearchArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let tenant = match &args.tenant {
        Some(id) => config
            .tenant(id)
            .ok_or_else(|| anyhow::anyhow!("tenant {id}: not configured"))?,
        None => config
            .tenants
            .first()
            .ok_or_else(|| anyhow::anyhow!("no tenant configured"))?,
    };
    let req = match request(args) {
        Ok(r) => r,
        Err(e) => return refused(out, &e),
    };
    let pool = shared::db::connect_tenant(tenant, 1).await?;
    let data = match search(&pool, tenant.read.search, &req).await {
        Ok(d) => d,
        Err(e) => return refused(out, &e),
    };
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&data)?)?;
    } else {
        for hit in data["hits"].as_array().into_iter().flatten() {
            writeln!(out, "{}", line(hit))?;
        }
    }
    let any = data["hits"].as_array().is_some_and(|h| !h.is_empty());
    Ok(if any {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn request(args: &SearchArgs) -> Result<SearchRequest, shared::api::ApiError> {
    let repos: Vec<&str> = args.repos.iter().map(String::as_str).collect();
    SearchRequest::new(&args.query, &repos, args.path.as_deref(), args.limit, None)
}

fn refused(out: &mut dyn Write, e: &shared::api::ApiError) -> anyhow::Result<ExitCode> {
    writeln!(out, "refused ({}): {e}", e.code())?;
    Ok(ExitCode::from(2))
}

/// `owner/name path#anchor  title  (rank)`.
fn line(hit: &Value) -> String {
    let anchor = hit["heading"]["anchor"]
        .as_str()
        .map(|a| format!("#{a}"))
        .unwrap_or_default();
    format!(
        "{} {}{}  {}  ({:.3}){}",
        hit["repository"].as_str().unwrap_or(""),
        hit["path"].as_str().unwrap_or(""),
        anchor,
        hit["title"].as_str().unwrap_or(""),
        hit["rank"].as_f64().unwrap_or(0.0),
        if hit["kind"] == "readme" {
            "  [README]"
        } else {
            ""
        },
    )
}
