//! Where the client's requests go, derived from `GITHUB_API_URL`: REST endpoints under the base
//! (GitHub Enterprise's `/api/v3` prefix included), pagination links kept on the API's origin,
//! and the GraphQL endpoint (`https://api.github.com` → `https://api.github.com/graphql`;
//! GitHub Enterprise's `https://HOST/api/v3` → `https://HOST/api/graphql`) unless
//! `GITHUB_GRAPHQL_URL` names it.

use tracing::warn;
use url::Url;

use super::error::GithubError;

/// The GraphQL endpoint for a REST API base URL.
pub fn graphql_url_for(api_url: &Url) -> Url {
    let mut url = api_url.clone();
    url.set_query(None);
    url.set_fragment(None);
    let path = url.path().trim_end_matches('/').to_owned();
    let graphql = match path.strip_suffix("/v3") {
        // GitHub Enterprise Server: `/api/v3` → `/api/graphql`.
        Some(api) if api.ends_with("/api") => format!("{api}/graphql"),
        _ => format!("{path}/graphql"),
    };
    url.set_path(&graphql);
    url
}

/// `base` + segments, whether or not the base ends in '/' or has a path prefix
/// (GitHub Enterprise's `/api/v3`). Segments are percent-encoded.
pub(super) fn endpoint(base: &Url, segments: &[&str]) -> Result<Url, GithubError> {
    // No GitHub owner, repository, branch part or SHA is empty, "." or "..": such a name
    // cannot exist, and must not navigate the path.
    if segments
        .iter()
        .any(|s| s.is_empty() || *s == "." || *s == "..")
    {
        return Err(GithubError::NotFound);
    }
    let mut url = base.clone();
    {
        let mut path = url
            .path_segments_mut()
            .map_err(|_| GithubError::Transport)?;
        path.pop_if_empty();
        path.extend(segments);
    }
    Ok(url)
}

/// A `rel="next"` target, accepted only on the API's own origin (`base`'s): the installation
/// token must never be sent elsewhere.
pub(super) fn same_origin(base: &Url, next: &str, current: &Url) -> Result<Url, GithubError> {
    let next = current.join(next).map_err(|_| GithubError::Decode)?;
    if next.origin() != base.origin() || &next == current {
        warn!(next = %next.path(), "refusing a pagination link off the API origin or looping");
        return Err(GithubError::Decode);
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_follows_the_rest_base() {
        for (api, graphql) in [
            ("https://api.github.com", "https://api.github.com/graphql"),
            ("https://api.github.com/", "https://api.github.com/graphql"),
            (
                "https://ghe.example.com/api/v3",
                "https://ghe.example.com/api/graphql",
            ),
            (
                "https://ghe.example.com/api/v3/",
                "https://ghe.example.com/api/graphql",
            ),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/graphql"),
        ] {
            assert_eq!(
                graphql_url_for(&Url::parse(api).unwrap()).as_str(),
                graphql,
                "{api}"
            );
        }
    }
}
