//! Documents on the read API: `GET /api/repos/{owner}/{name}/documents` (keyset pages by path),
//! `.../documents/{path...}` and `.../readme` (frontmatter, title, headings with anchors, body,
//! blob SHA, code owners, and a link to the file on GitHub at the synced commit). With
//! `?format=markdown` the answer adds the file's source as synced, with `?format=html` that source
//! rendered and sanitized for the web console (`sync::parse::render_html`; issue 22). Both are
//! null for a row synced before sources were stored (migration 0012) until the file next changes.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::PgPool;

use super::super::error::{ApiError, db_failure};
use super::cursor;
use super::owners::{owners_json, rules_of};
use super::params::{Params, like_prefix};
use super::repos::{Repo, next_cursor};
use syncplane_engine::sync::parse::{LinkBase, render_html};

pub const DEFAULT_LIMIT: i64 = 100;
pub const MAX_LIMIT: i64 = 500;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListKey {
    path: String,
}

#[derive(Serialize, syncplane_core::FromRow)]
#[serde(rename_all = "camelCase")]
struct Listed {
    path: String,
    title: String,
    headings: Value,
    blob_sha: String,
}

/// `GET .../documents?cursor=&limit=`: paths in order, with title, outline and blob SHA.
pub async fn list(pool: &PgPool, repo: &Repo, params: &Params) -> Result<Value, ApiError> {
    let limit = params.limit(DEFAULT_LIMIT, MAX_LIMIT)?;
    let listing = repo.id.to_string();
    let fp = cursor::fingerprint(&[&listing]);
    let after: Option<ListKey> = params
        .one("cursor")?
        .map(|c| cursor::decode("documents", &fp, c))
        .transpose()?;
    let mut rows: Vec<Listed> = sqlx::query_as(
        "SELECT path, title, headings, blob_sha FROM documents
         WHERE repo_id = $1 AND ($2::text IS NULL OR path > $2)
         ORDER BY path LIMIT $3",
    )
    .bind(repo.id)
    .bind(after.map(|k| k.path))
    .bind(limit + 1)
    .fetch_all(pool)
    .await
    .map_err(db_failure("list documents"))?;
    let next = next_cursor(&mut rows, limit, |last| {
        cursor::encode(
            "documents",
            &fp,
            &ListKey {
                path: last.path.clone(),
            },
        )
    });
    Ok(json!({
        "repository": repo.full_name(),
        "documents": rows,
        "nextCursor": next,
    }))
}

/// What a document or README answer carries besides its stored fields (`?format=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The stored fields only (no `format` given).
    Fields,
    /// Plus `markdown`: the file's text as synced.
    Markdown,
    /// Plus `html`: that text rendered and sanitized.
    Html,
}

impl Format {
    pub(crate) fn from_params(params: &Params) -> Result<Self, ApiError> {
        match params.one("format")? {
            None => Ok(Self::Fields),
            Some("markdown") => Ok(Self::Markdown),
            Some("html") => Ok(Self::Html),
            Some(_) => Err(ApiError::InvalidFormat),
        }
    }
}

#[derive(syncplane_core::FromRow)]
struct Stored {
    path: String,
    title: String,
    frontmatter: Value,
    headings: Value,
    body: String,
    blob_sha: String,
    size_bytes: i32,
    updated_at: DateTime<Utc>,
    source: Option<String>,
}

/// `GET .../documents/{path}`; a path that only prefixes documents is a folder.
pub async fn fetch(
    pool: &PgPool,
    repo: &Repo,
    path: &str,
    format: Format,
) -> Result<Value, ApiError> {
    let doc: Option<Stored> = sqlx::query_as(
        "SELECT path, title, frontmatter, headings, body, blob_sha, size_bytes, updated_at, source
         FROM documents WHERE repo_id = $1 AND path = $2",
    )
    .bind(repo.id)
    .bind(path)
    .fetch_optional(pool)
    .await
    .map_err(db_failure("read document"))?;
    match doc {
        Some(doc) => shape(pool, repo, "document", doc, format).await,
        None if is_folder(pool, repo, path).await? => Err(ApiError::PathIsFolder),
        None => Err(ApiError::DocumentNotFound),
    }
}

async fn is_folder(pool: &PgPool, repo: &Repo, path: &str) -> Result<bool, ApiError> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM documents WHERE repo_id = $1 AND path LIKE $2 ESCAPE '\\')",
    )
    .bind(repo.id)
    .bind(like_prefix(&format!("{}/", path.trim_end_matches('/'))))
    .fetch_one(pool)
    .await
    .map_err(db_failure("look up folder"))
}

/// `GET .../readme`.
pub async fn readme(pool: &PgPool, repo: &Repo, format: Format) -> Result<Value, ApiError> {
    let doc: Stored = sqlx::query_as(
        "SELECT path, title, frontmatter, headings, body, blob_sha, size_bytes, updated_at, source
         FROM readmes WHERE repo_id = $1",
    )
    .bind(repo.id)
    .fetch_optional(pool)
    .await
    .map_err(db_failure("read readme"))?
    .ok_or(ApiError::ReadmeNotFound)?;
    shape(pool, repo, "readme", doc, format).await
}

async fn shape(
    pool: &PgPool,
    repo: &Repo,
    kind: &str,
    doc: Stored,
    format: Format,
) -> Result<Value, ApiError> {
    let rules = rules_of(pool, &[repo.id]).await?;
    let extra = match format {
        Format::Fields => None,
        Format::Markdown => Some(("markdown", json!(doc.source))),
        Format::Html => {
            let base = blob_base(repo).map(|blob_base| LinkBase { blob_base });
            // The outline stored with the source gives the headings their anchors.
            let anchors: Vec<String> = doc
                .headings
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|h| h["anchor"].as_str().map(str::to_owned))
                .collect();
            let html = doc
                .source
                .as_deref()
                .map(|source| render_html(&doc.path, source, &anchors, base.as_ref()));
            Some(("html", json!(html)))
        }
    };
    let mut answer = json!({
        "kind": kind,
        "repository": repo.full_name(),
        "path": doc.path,
        "title": doc.title,
        "frontmatter": doc.frontmatter,
        "headings": doc.headings,
        "body": doc.body,
        "blobSha": doc.blob_sha,
        "sizeBytes": doc.size_bytes,
        "updatedAt": doc.updated_at,
        "codeOwners": owners_json(rules.get(&repo.id), &doc.path),
        "githubUrl": github_url(repo, &doc.path),
    });
    if let Some((key, value)) = extra {
        answer[key] = value;
    }
    Ok(answer)
}

/// `{html_url}/blob/{sha}/`: where the document's relative links point. None until synced.
fn blob_base(repo: &Repo) -> Option<String> {
    let base = repo.html_url.as_deref()?.trim_end_matches('/');
    let sha = repo.head_commit_sha.as_deref()?;
    Some(format!("{base}/blob/{sha}/"))
}

/// The file on GitHub at the synced commit: `{html_url}/blob/{sha}/{path}`, each path segment
/// percent-encoded. Null until a sync has recorded both.
pub(crate) fn github_url(repo: &Repo, path: &str) -> Option<String> {
    let base = blob_base(repo)?;
    let encoded: Vec<String> = path
        .split('/')
        .map(|seg| url::form_urlencoded::byte_serialize(seg.as_bytes()).collect::<String>())
        .map(|seg| seg.replace('+', "%20"))
        .collect();
    Some(format!("{base}{}", encoded.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_links_point_at_the_synced_commit_with_encoded_segments() {
        let repo = Repo {
            id: 1,
            owner: "acme".into(),
            name: "handbook".into(),
            html_url: Some("https://github.com/acme/handbook".into()),
            head_commit_sha: Some("abc123".into()),
            codeowners_path: None,
        };
        assert_eq!(
            github_url(&repo, "docs/a b#1.md").as_deref(),
            Some("https://github.com/acme/handbook/blob/abc123/docs/a%20b%231.md")
        );
        let unsynced = Repo {
            head_commit_sha: None,
            ..repo
        };
        assert_eq!(github_url(&unsynced, "docs/a.md"), None);
    }
}
