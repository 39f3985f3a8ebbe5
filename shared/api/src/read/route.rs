//! The read routes under `/api/repos/{owner}/{name}` and `/api/search` (docs/api.md "Read
//! API"): matching the path (strictly percent-decoded) and answering a matched route.

use serde_json::Value;
use sqlx::PgPool;

use super::super::error::ApiError;
use super::documents::Format;
use super::params::{parse, percent_decode, repo_path};
use super::search::SearchRequest;
use super::{documents, owners, repos, search};
use syncplane_core::config::{TenantConfig, is_repo_name_part};

pub(crate) const SEARCH_PATH: &str = "/api/search";
pub(crate) const REPOS_PREFIX: &str = "/api/repos/";

#[derive(Debug, PartialEq, Eq)]
pub enum ReadRoute {
    Search,
    Repo(RepoRef),
    Documents(RepoRef),
    /// The document path, decoded and checked (an error is answered after authentication).
    Document(RepoRef, Result<String, PathError>),
    Readme(RepoRef),
    Owners(RepoRef),
    /// An image a document references (raw bytes, not JSON: `super::images`).
    Images(RepoRef),
}

#[derive(Debug, PartialEq, Eq)]
pub struct RepoRef {
    pub owner: String,
    pub name: String,
}

/// A document path that cannot name a file.
#[derive(Debug, PartialEq, Eq)]
pub struct PathError;

/// The read route of `path` (already stripped of any stage prefix), if it is one.
pub(crate) fn match_read(path: &str) -> Option<ReadRoute> {
    if path.strip_suffix('/').unwrap_or(path) == SEARCH_PATH {
        return Some(ReadRoute::Search);
    }
    let rest = path.strip_prefix(REPOS_PREFIX)?;
    let mut parts = rest.splitn(4, '/');
    let owner = parts.next()?;
    let name = parts.next()?;
    if !(is_repo_name_part(owner) && is_repo_name_part(name)) {
        return None;
    }
    let repo = RepoRef {
        owner: owner.to_owned(),
        name: name.to_owned(),
    };
    match (parts.next(), parts.next()) {
        (None | Some(""), None) => Some(ReadRoute::Repo(repo)),
        (Some("documents"), None | Some("")) => Some(ReadRoute::Documents(repo)),
        (Some("documents"), Some(raw)) => {
            let decoded = percent_decode(raw)
                .and_then(|p| repo_path(&p, false))
                .map_err(|_| PathError);
            Some(ReadRoute::Document(repo, decoded))
        }
        (Some("readme"), None) => Some(ReadRoute::Readme(repo)),
        (Some("owners"), None) => Some(ReadRoute::Owners(repo)),
        (Some("images"), None) => Some(ReadRoute::Images(repo)),
        _ => None,
    }
}

/// The query parameters each read route takes.
pub(crate) fn known_params(route: &ReadRoute) -> &'static [&'static str] {
    match route {
        ReadRoute::Search => &["q", "repo", "path", "limit", "cursor"],
        ReadRoute::Documents(_) => &["limit", "cursor"],
        ReadRoute::Owners(_) => &["path"],
        ReadRoute::Document(..) | ReadRoute::Readme(_) => &["format"],
        ReadRoute::Repo(_) => &[],
        ReadRoute::Images(_) => super::images::PARAMS,
    }
}

/// Answer a matched read route for `tenant` (authenticated already).
pub async fn serve(
    pool: &PgPool,
    tenant: &TenantConfig,
    route: ReadRoute,
    query: Option<&str>,
) -> Result<Value, ApiError> {
    let params = parse(query, known_params(&route))?;
    match route {
        ReadRoute::Search => {
            let req = SearchRequest::from_params(&params)?;
            search::search(pool, tenant.read.search, &req).await
        }
        ReadRoute::Repo(r) => repos::detail(pool, &find(pool, &r).await?).await,
        ReadRoute::Documents(r) => documents::list(pool, &find(pool, &r).await?, &params).await,
        ReadRoute::Document(r, path) => {
            let path = path.map_err(|_| ApiError::InvalidPath)?;
            let format = Format::from_params(&params)?;
            documents::fetch(pool, &find(pool, &r).await?, &path, format).await
        }
        ReadRoute::Readme(r) => {
            let format = Format::from_params(&params)?;
            documents::readme(pool, &find(pool, &r).await?, format).await
        }
        ReadRoute::Owners(r) => owners::owners(pool, &find(pool, &r).await?, &params).await,
        // Answered with bytes by the handler (`image`), never as JSON.
        ReadRoute::Images(_) => Err(ApiError::NotFound),
    }
}

/// The image route's answer for `tenant` (authenticated already): the image, or its refusal.
pub async fn image(
    pool: &PgPool,
    client: Option<&syncplane_github::GithubClient>,
    r: &RepoRef,
    query: Option<&str>,
) -> Result<super::images::Image, ApiError> {
    let params = parse(query, super::images::PARAMS)?;
    let repo = find(pool, r).await?;
    super::images::fetch(pool, client, &repo, &params).await
}

pub async fn find(pool: &PgPool, r: &RepoRef) -> Result<repos::Repo, ApiError> {
    repos::find(pool, &r.owner, &r.name).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> RepoRef {
        RepoRef {
            owner: "acme".into(),
            name: "handbook".into(),
        }
    }

    #[test]
    fn read_routes_match_their_paths() {
        assert_eq!(match_read("/api/search"), Some(ReadRoute::Search));
        assert_eq!(
            match_read("/api/repos/acme/handbook"),
            Some(ReadRoute::Repo(repo()))
        );
        assert_eq!(
            match_read("/api/repos/acme/handbook/documents"),
            Some(ReadRoute::Documents(repo()))
        );
        assert_eq!(
            match_read("/api/repos/acme/handbook/documents/docs/a%20b.md"),
            Some(ReadRoute::Document(repo(), Ok("docs/a b.md".into())))
        );
        for bad in ["docs/%2e%2e/x.md", "docs/a%00.md", "docs/%zz", "docs/"] {
            assert_eq!(
                match_read(&format!("/api/repos/acme/handbook/documents/{bad}")),
                Some(ReadRoute::Document(repo(), Err(PathError))),
                "{bad}"
            );
        }
        assert_eq!(
            match_read("/api/repos/acme/handbook/readme"),
            Some(ReadRoute::Readme(repo()))
        );
        assert_eq!(
            match_read("/api/repos/acme/handbook/owners"),
            Some(ReadRoute::Owners(repo()))
        );
        assert_eq!(match_read("/api/repos/acme/handbook/other"), None);
        assert_eq!(match_read("/api/repos/acme"), None);
        assert_eq!(match_read("/api/repos/a%20b/c"), None);
    }
}
