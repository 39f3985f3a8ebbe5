//! The installation's repositories and their heads in one GraphQL query per 100 (issue 23,
//! Build 1): with an installation token, `viewer { repositories(first: 100, after:) }` lists
//! the repositories the installation can reach. GitHub does not document this use of `viewer`
//! (atlassian/github-for-jira lists an installation's repositories this way), so nothing here is
//! trusted past what it can check: every node must be a repository with its ids and name, the
//! pages must add up to the connection's `totalCount` without a repeat, and the caller compares
//! that count with the REST listing's `total_count` (`sync::estate`) before it drops the REST
//! listing. Any other answer is `Err`, and the caller falls back to the REST listing.

use std::collections::HashSet;

use serde_json::{Value, json};
use tracing::warn;

use super::client::GithubClient;
use super::error::GithubError;
use super::graphql::GraphqlReply;
use super::graphql_heads::{BatchHead, DEFAULT_BRANCH_FIELDS, read_default_branch};
use super::model::RepoInfo;

/// Repositories per page: GitHub's most for one connection (`first` over 100 is refused).
pub const LISTING_PAGE_SIZE: usize = 100;

/// One listed repository with the head the same query read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedRepo {
    pub info: RepoInfo,
    pub head: BatchHead,
}

/// A complete walk of the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewerListing {
    pub repos: Vec<ListedRepo>,
    /// The connection's `totalCount`, equal to `repos.len()` (checked).
    pub total_count: usize,
    /// Pages read (GraphQL requests).
    pub pages: u32,
}

fn listing_query() -> String {
    format!(
        "query Listing($after: String) {{
  rateLimit {{ cost remaining resetAt }}
  viewer {{
    repositories(first: {LISTING_PAGE_SIZE}, after: $after) {{
      totalCount
      pageInfo {{ hasNextPage endCursor }}
      nodes {{
        databaseId id name owner {{ login }} isPrivate isArchived url description
        {DEFAULT_BRANCH_FIELDS}
      }}
    }}
  }}
}}"
    )
}

impl GithubClient {
    /// Walk `viewer.repositories` to the end. `Err`: run-stopping errors stop the run; any other
    /// means "list over REST instead".
    pub async fn viewer_listing(&self) -> Result<ViewerListing, GithubError> {
        let query = listing_query();
        let mut walk = Walk::default();
        let mut after: Option<String> = None;
        loop {
            walk.pages += 1;
            if walk.pages > self.max_pages() {
                warn!(pages = walk.pages, "viewer.repositories did not end");
                return Err(GithubError::Decode);
            }
            let reply = self.graphql(&query, json!({ "after": after })).await?;
            match walk.page(&reply)? {
                Some(cursor) => after = Some(cursor),
                None => return walk.finish(),
            }
        }
    }
}

#[derive(Default)]
struct Walk {
    repos: Vec<ListedRepo>,
    seen: HashSet<i64>,
    total: Option<usize>,
    pages: u32,
}

impl Walk {
    /// Read one page; `Some(cursor)` when there is another.
    fn page(&mut self, reply: &GraphqlReply) -> Result<Option<String>, GithubError> {
        let refuse = |why: &str| {
            warn!(why, "viewer.repositories answer not usable");
            GithubError::Decode
        };
        if !reply.errors.is_empty() {
            return Err(refuse("the answer carries errors"));
        }
        let connection = reply
            .data
            .as_ref()
            .and_then(|d| d.get("viewer"))
            .and_then(|v| v.get("repositories"))
            .ok_or_else(|| refuse("no viewer.repositories"))?;
        let total = connection
            .get("totalCount")
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| refuse("no totalCount"))?;
        if self.total.is_some_and(|t| t != total) {
            return Err(refuse("totalCount changed between pages"));
        }
        self.total = Some(total);
        let nodes = connection
            .get("nodes")
            .and_then(Value::as_array)
            .ok_or_else(|| refuse("no nodes"))?;
        for node in nodes {
            let listed = read_repo(node).ok_or_else(|| refuse("a node is not a repository"))?;
            if !self.seen.insert(listed.info.github_id) {
                return Err(refuse("a repository listed twice"));
            }
            self.repos.push(listed);
        }
        let page_info = connection.get("pageInfo");
        let more = page_info
            .and_then(|p| p.get("hasNextPage"))
            .and_then(Value::as_bool)
            .ok_or_else(|| refuse("no pageInfo.hasNextPage"))?;
        if !more {
            return Ok(None);
        }
        if nodes.is_empty() {
            return Err(refuse("an empty page that says there is more"));
        }
        page_info
            .and_then(|p| p.get("endCursor"))
            .and_then(Value::as_str)
            .map(|c| Some(c.to_owned()))
            .ok_or_else(|| refuse("no endCursor"))
    }

    fn finish(self) -> Result<ViewerListing, GithubError> {
        let total = self.total.unwrap_or(0);
        if total != self.repos.len() {
            warn!(
                total_count = total,
                listed = self.repos.len(),
                "viewer.repositories pages do not add up to totalCount"
            );
            return Err(GithubError::Decode);
        }
        Ok(ViewerListing {
            repos: self.repos,
            total_count: total,
            pages: self.pages,
        })
    }
}

/// One node as the REST listing would describe it, with its head.
fn read_repo(node: &Value) -> Option<ListedRepo> {
    let text = |key: &str| node.get(key).and_then(Value::as_str).map(str::to_owned);
    let github_id = node.get("databaseId").and_then(Value::as_i64)?;
    let owner = node
        .get("owner")
        .and_then(|o| o.get("login"))
        .and_then(Value::as_str)?;
    let head = read_default_branch(github_id, node);
    let default_branch = match &head {
        BatchHead::Head { branch, .. } => Some(branch.clone()),
        _ => node
            .get("defaultBranchRef")
            .and_then(|r| r.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    Some(ListedRepo {
        info: RepoInfo {
            github_id,
            owner: owner.to_owned(),
            name: text("name").filter(|n| !n.is_empty())?,
            private: node.get("isPrivate").and_then(Value::as_bool)?,
            archived: node.get("isArchived").and_then(Value::as_bool)?,
            default_branch,
            html_url: text("url"),
            description: text("description"),
            node_id: Some(text("id").filter(|n| !n.is_empty())?),
        },
        head,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str = "1111111111111111111111111111111111111111";
    const T: &str = "2222222222222222222222222222222222222222";

    fn node(id: i64) -> Value {
        json!({"databaseId": id, "id": format!("R_{id}"), "name": format!("r{id}"),
            "owner": {"login": "acme"}, "isPrivate": true, "isArchived": false,
            "url": format!("https://github.com/acme/r{id}"), "description": null,
            "defaultBranchRef": {"name": "main", "target": {"__typename": "Commit", "oid": C,
                "tree": {"oid": T}}}})
    }

    fn page(total: u64, nodes: Vec<Value>, next: Option<&str>) -> GraphqlReply {
        serde_json::from_value(json!({"data": {"viewer": {"repositories": {
            "totalCount": total, "nodes": nodes,
            "pageInfo": {"hasNextPage": next.is_some(), "endCursor": next}}}}}))
        .unwrap()
    }

    #[test]
    fn the_query_asks_for_pages_of_one_hundred_with_the_head() {
        let q = listing_query();
        assert!(q.contains("repositories(first: 100, after: $after)"));
        assert!(q.contains("totalCount"));
        assert!(q.contains(DEFAULT_BRANCH_FIELDS));
    }

    #[test]
    fn pages_that_add_up_to_the_total_count_are_a_listing() {
        let mut walk = Walk::default();
        assert_eq!(
            walk.page(&page(3, vec![node(1), node(2)], Some("c1")))
                .unwrap(),
            Some("c1".to_owned())
        );
        assert_eq!(walk.page(&page(3, vec![node(3)], None)).unwrap(), None);
        let listing = walk.finish().unwrap();
        assert_eq!(listing.total_count, 3);
        let first = &listing.repos[0];
        assert_eq!(first.info.full_name(), "acme/r1");
        assert_eq!(first.info.node_id.as_deref(), Some("R_1"));
        assert_eq!(first.info.default_branch.as_deref(), Some("main"));
        assert!(matches!(&first.head, BatchHead::Head { commit_sha, .. } if commit_sha == C));
    }

    #[test]
    fn a_listing_short_of_its_total_count_or_with_a_repeat_is_refused() {
        let mut short = Walk::default();
        short.page(&page(3, vec![node(1)], None)).unwrap();
        assert_eq!(short.finish(), Err(GithubError::Decode));

        let mut twice = Walk::default();
        twice.page(&page(2, vec![node(1)], Some("c"))).unwrap();
        assert_eq!(
            twice.page(&page(2, vec![node(1)], None)),
            Err(GithubError::Decode)
        );

        let mut moved = Walk::default();
        moved.page(&page(2, vec![node(1)], Some("c"))).unwrap();
        assert_eq!(
            moved.page(&page(3, vec![node(2)], None)),
            Err(GithubError::Decode)
        );
    }

    #[test]
    fn errors_or_a_node_without_its_ids_are_refused() {
        let mut walk = Walk::default();
        let mut bad = node(1);
        bad["databaseId"] = Value::Null;
        assert_eq!(
            walk.page(&page(1, vec![bad], None)),
            Err(GithubError::Decode)
        );
        let errors: GraphqlReply = serde_json::from_value(json!({"data": null, "errors": [
            {"type": "FORBIDDEN", "message": "Resource not accessible by integration"}]}))
        .unwrap();
        assert_eq!(Walk::default().page(&errors), Err(GithubError::Decode));
    }

    #[test]
    fn an_empty_repository_is_listed_without_a_head() {
        let mut empty = node(1);
        empty["defaultBranchRef"] = Value::Null;
        let listed = read_repo(&empty).unwrap();
        assert_eq!(listed.head, BatchHead::NoBranch);
        assert_eq!(listed.info.default_branch, None);
    }
}
