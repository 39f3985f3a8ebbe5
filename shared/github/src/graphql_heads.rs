//! Batched head checks through GraphQL (issue 10, Build 2): the heads of up to 100 repositories
//! in one query, `nodes(ids:)` with the listing's `node_id`s. For each repository: its default
//! branch, the commit oid and root tree oid at its head, and, where the docs folder of the last
//! plan is known, that folder's tree oid (`object(expression: "<branch>:<path>")`, one alias per
//! repository).
//!
//! Every answer is checked before it is believed: a node of another type, another repository,
//! oids that are not 40 hex digits, or an error addressed to a repository make that repository
//! `Unusable` (the caller checks it over REST); a repository resolved as null with `NOT_FOUND`
//! is `NotFound`, a transient 404 and never a removal. An answer the batch cannot be read from
//! (errors without data, errors not addressed to a repository, a list of the wrong length) is an
//! error for the whole batch, which the caller checks over REST too.

use serde_json::{Map, Value, json};
use tracing::warn;

use super::client::GithubClient;
use super::error::GithubError;
use super::graphql::{GraphqlError, GraphqlReply, PathSegment};

/// GitHub refuses more ids than this in one `nodes(ids:)` (type `ARGUMENT_LIMIT`).
pub const MAX_IDS_PER_QUERY: usize = 100;

/// One repository to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadQuery {
    pub github_id: i64,
    /// The listing's `node_id`.
    pub node_id: String,
    /// The default branch the listing names (the docs folder is read at its head).
    pub branch: Option<String>,
    /// The docs folder the last plan used, if known.
    pub docs_path: Option<String>,
}

/// What the batch says about one repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchHead {
    Head {
        branch: String,
        commit_sha: String,
        tree_sha: String,
        /// The docs folder's tree oid at that commit; `None` when not asked for, absent, or not
        /// a folder.
        docs_tree_sha: Option<String>,
    },
    /// No default branch ref: an empty repository.
    NoBranch,
    /// Resolved as null with `NOT_FOUND`: a transient 404 (never a removal).
    NotFound,
    /// Anything that cannot be believed: check this repository over REST.
    Unusable,
}

/// A repository's head as both the batch and the listing ask for it.
pub(crate) const DEFAULT_BRANCH_FIELDS: &str =
    "defaultBranchRef { name target { __typename oid ... on Commit { tree { oid } } } }";

fn head_fields() -> String {
    format!(
        "nodes(ids: $ids) {{
    __typename
    ... on Repository {{
      databaseId
      {DEFAULT_BRANCH_FIELDS}
    }}
  }}"
    )
}

/// The query text and its variables. Branch names and paths travel as variables, never in
/// the query text.
fn build_query(repos: &[HeadQuery]) -> (String, Value) {
    let mut declarations = vec!["$ids: [ID!]!".to_owned()];
    let mut docs_fields = String::new();
    let mut variables = Map::new();
    variables.insert(
        "ids".into(),
        json!(repos.iter().map(|r| r.node_id.as_str()).collect::<Vec<_>>()),
    );
    for (i, repo) in repos.iter().enumerate() {
        let (Some(branch), Some(path)) = (&repo.branch, &repo.docs_path) else {
            continue;
        };
        declarations.push(format!("$n{i}: ID!, $e{i}: String!"));
        docs_fields.push_str(&format!(
            "\n  d{i}: node(id: $n{i}) {{ ... on Repository {{ object(expression: $e{i}) {{ __typename oid }} }} }}"
        ));
        variables.insert(format!("n{i}"), json!(repo.node_id));
        variables.insert(format!("e{i}"), json!(format!("{branch}:{path}")));
    }
    let query = format!(
        "query HeadCheck({}) {{\n  rateLimit {{ cost remaining resetAt }}\n  {}{docs_fields}\n}}",
        declarations.join(", "),
        head_fields()
    );
    (query, Value::Object(variables))
}

impl GithubClient {
    /// The heads of up to [`MAX_IDS_PER_QUERY`] repositories in one GraphQL request, in the
    /// order asked. `Err`: run-stopping errors (rate limit, refused token, abort) stop the run;
    /// any other error means "check this batch over REST".
    pub async fn batch_heads(&self, repos: &[HeadQuery]) -> Result<Vec<BatchHead>, GithubError> {
        if repos.is_empty() {
            return Ok(Vec::new());
        }
        if repos.len() > MAX_IDS_PER_QUERY {
            return Err(GithubError::Unexpected { status: 400 });
        }
        let (query, variables) = build_query(repos);
        let reply = self.graphql(&query, variables).await?;
        read_heads(repos, &reply)
    }
}

/// Read one answer, per repository (pure, so every fault is unit-tested).
pub(crate) fn read_heads(
    repos: &[HeadQuery],
    reply: &GraphqlReply,
) -> Result<Vec<BatchHead>, GithubError> {
    let Some(data) = reply.data.as_ref().filter(|d| d.is_object()) else {
        warn!("GraphQL head check answered errors without data");
        return Err(GithubError::Decode);
    };
    let Some(nodes) = data
        .get("nodes")
        .and_then(Value::as_array)
        .filter(|n| n.len() == repos.len())
    else {
        warn!("GraphQL head check: nodes missing or of the wrong length");
        return Err(GithubError::Decode);
    };
    let mut heads: Vec<BatchHead> = repos
        .iter()
        .zip(nodes)
        .enumerate()
        .map(|(i, (repo, node))| read_node(repo, node, data.get(format!("d{i}"))))
        .collect();
    // Per repository: whether an error said NOT_FOUND, and whether any other error named it.
    let mut named = vec![(false, false); repos.len()];
    for error in &reply.errors {
        let (index, verdict) = addressed(error, repos.len()).ok_or_else(|| {
            warn!(
                kind = error.kind.as_deref().unwrap_or("none"),
                "GraphQL head check: an error not addressed to a repository"
            );
            GithubError::Decode
        })?;
        match verdict {
            BatchHead::NotFound => named[index].0 = true,
            _ => named[index].1 = true,
        }
    }
    for (i, (not_found, other)) in named.into_iter().enumerate() {
        if not_found && !other && nodes[i].is_null() {
            heads[i] = BatchHead::NotFound;
        } else if not_found || other {
            heads[i] = BatchHead::Unusable;
        }
    }
    Ok(heads)
}

/// The repository an error is about, and what it means for it: `NOT_FOUND` at `["nodes", i]`
/// is a missing repository; any other error on `nodes[i]` or on its docs alias `d<i>` makes it
/// unusable. `None`: the error is not about one repository.
fn addressed(error: &GraphqlError, count: usize) -> Option<(usize, BatchHead)> {
    let index = match error.path.as_slice() {
        [PathSegment::Key(k), PathSegment::Index(i), ..] if k == "nodes" => {
            usize::try_from(*i).ok()?
        }
        [PathSegment::Key(k), ..] if k.starts_with('d') => k[1..].parse::<usize>().ok()?,
        _ => return None,
    };
    if index >= count {
        return None;
    }
    let not_found = error.kind.as_deref() == Some("NOT_FOUND")
        && matches!(error.path.as_slice(), [PathSegment::Key(k), PathSegment::Index(_)] if k == "nodes");
    Some((
        index,
        if not_found {
            BatchHead::NotFound
        } else {
            BatchHead::Unusable
        },
    ))
}

fn read_node(repo: &HeadQuery, node: &Value, docs: Option<&Value>) -> BatchHead {
    if node.is_null() {
        // Only null with a NOT_FOUND error is a missing repository (see `read_heads`).
        return BatchHead::Unusable;
    }
    if node.get("__typename").and_then(Value::as_str) != Some("Repository")
        || node.get("databaseId").and_then(Value::as_i64) != Some(repo.github_id)
    {
        warn!(
            github_id = repo.github_id,
            "GraphQL head check: the node is not this repository"
        );
        return BatchHead::Unusable;
    }
    match read_default_branch(repo.github_id, node) {
        BatchHead::Head {
            branch,
            commit_sha,
            tree_sha,
            ..
        } => {
            let docs_tree_sha = match docs_tree(docs) {
                Ok(sha) => sha,
                Err(()) => return BatchHead::Unusable,
            };
            BatchHead::Head {
                branch,
                commit_sha,
                tree_sha,
                docs_tree_sha,
            }
        }
        other => other,
    }
}

/// A repository node's `defaultBranchRef { name target { __typename oid ... on Commit { tree {
/// oid } } } }`: its head, `NoBranch` when it is null, `Unusable` when it is missing or not a
/// commit with 40-hex oids.
pub(crate) fn read_default_branch(github_id: i64, node: &Value) -> BatchHead {
    let branch_ref = node.get("defaultBranchRef");
    let Some(branch_ref) = branch_ref.filter(|b| !b.is_null()) else {
        return if branch_ref.is_some() {
            BatchHead::NoBranch
        } else {
            BatchHead::Unusable
        };
    };
    let target = branch_ref.get("target");
    let branch = branch_ref.get("name").and_then(Value::as_str);
    let commit = target
        .filter(|t| t.get("__typename").and_then(Value::as_str) == Some("Commit"))
        .and_then(|t| t.get("oid"))
        .and_then(oid);
    let tree = target
        .and_then(|t| t.get("tree"))
        .and_then(|t| t.get("oid"))
        .and_then(oid);
    let (Some(branch), Some(commit_sha), Some(tree_sha)) = (branch, commit, tree) else {
        warn!(
            github_id,
            "GraphQL head check: the head is not a commit with 40-hex oids"
        );
        return BatchHead::Unusable;
    };
    BatchHead::Head {
        branch: branch.to_owned(),
        commit_sha,
        tree_sha,
        docs_tree_sha: None,
    }
}

/// The docs alias: `{ object: { __typename: "Tree", oid } }`; a missing folder is `null`, a file
/// there is not a folder. An oid that is not 40 hex is not believed.
fn docs_tree(docs: Option<&Value>) -> Result<Option<String>, ()> {
    let Some(object) = docs.and_then(|d| d.get("object")).filter(|o| !o.is_null()) else {
        return Ok(None);
    };
    if object.get("__typename").and_then(Value::as_str) != Some("Tree") {
        return Ok(None);
    }
    object.get("oid").and_then(oid).map(Some).ok_or(())
}

/// A git object id as GitHub writes it: 40 hex digits (compared lowercase).
pub(crate) fn oid(value: &Value) -> Option<String> {
    let text = value.as_str()?;
    (text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| text.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str = "1111111111111111111111111111111111111111";
    const T: &str = "2222222222222222222222222222222222222222";
    const D: &str = "3333333333333333333333333333333333333333";

    fn query(id: i64, docs: Option<&str>) -> HeadQuery {
        HeadQuery {
            github_id: id,
            node_id: format!("R_{id}"),
            branch: Some("main".into()),
            docs_path: docs.map(str::to_owned),
        }
    }

    fn repo_node(id: i64) -> Value {
        json!({"__typename": "Repository", "databaseId": id, "defaultBranchRef": {
            "name": "main", "target": {"__typename": "Commit", "oid": C, "tree": {"oid": T}}}})
    }

    fn reply(body: Value) -> GraphqlReply {
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn the_query_asks_for_docs_trees_through_variables_only() {
        let (text, vars) = build_query(&[query(1, None), query(2, Some("docs\"}"))]);
        assert!(text.contains("nodes(ids: $ids)"));
        assert!(text.contains("d1: node(id: $n1)"));
        assert!(!text.contains("d0:"));
        assert!(
            !text.contains("docs\\\""),
            "paths never enter the query text"
        );
        assert_eq!(vars["e1"], json!("main:docs\"}"));
        assert_eq!(vars["ids"], json!(["R_1", "R_2"]));
    }

    #[test]
    fn heads_are_read_in_order_with_the_docs_tree() {
        let repos = [query(1, Some("docs")), query(2, None)];
        let heads = read_heads(
            &repos,
            &reply(json!({"data": {
                "nodes": [repo_node(1), repo_node(2)],
                "d0": {"object": {"__typename": "Tree", "oid": D}}
            }})),
        )
        .unwrap();
        assert_eq!(
            heads[0],
            BatchHead::Head {
                branch: "main".into(),
                commit_sha: C.into(),
                tree_sha: T.into(),
                docs_tree_sha: Some(D.into())
            }
        );
        assert!(matches!(
            &heads[1],
            BatchHead::Head {
                docs_tree_sha: None,
                ..
            }
        ));
    }

    #[test]
    fn a_null_repository_with_not_found_is_not_found() {
        let heads = read_heads(
            &[query(1, None), query(2, None)],
            &reply(json!({"data": {"nodes": [null, repo_node(2)]}, "errors": [
                {"type": "NOT_FOUND", "path": ["nodes", 0], "message": "Could not resolve to a node with the global id of 'R_1'."}]})),
        )
        .unwrap();
        assert_eq!(heads[0], BatchHead::NotFound);
        assert!(matches!(heads[1], BatchHead::Head { .. }));
    }

    #[test]
    fn a_null_repository_without_an_error_is_not_believed() {
        let heads = read_heads(
            &[query(1, None)],
            &reply(json!({"data": {"nodes": [null]}})),
        )
        .unwrap();
        assert_eq!(heads, [BatchHead::Unusable]);
    }

    #[test]
    fn partial_data_marks_only_the_repository_the_error_names() {
        let heads = read_heads(
            &[query(1, None), query(2, None)],
            &reply(json!({"data": {"nodes": [repo_node(1), null]}, "errors": [
                {"type": "FORBIDDEN", "path": ["nodes", 1], "message": "Resource not accessible by integration"}]})),
        )
        .unwrap();
        assert!(matches!(heads[0], BatchHead::Head { .. }));
        assert_eq!(heads[1], BatchHead::Unusable);
    }

    #[test]
    fn an_answer_the_batch_cannot_be_read_from_is_an_error() {
        let repos = [query(1, None)];
        for body in [
            json!({"data": null, "errors": [{"message": "Something went wrong while executing your query."}]}),
            json!({"errors": [{"type": "INTERNAL"}]}),
            json!({"data": {"nodes": [repo_node(1)]}, "errors": [{"type": "INTERNAL", "message": "x"}]}),
            json!({"data": {"nodes": []}}),
            json!({"data": {"nodes": [repo_node(1)]}, "errors": [{"type": "NOT_FOUND", "path": ["nodes", 7]}]}),
        ] {
            assert_eq!(
                read_heads(&repos, &reply(body.clone())),
                Err(GithubError::Decode),
                "{body}"
            );
        }
    }

    #[test]
    fn a_node_of_another_type_or_another_repository_is_unusable() {
        let repos = [query(1, None)];
        let issue = json!({"data": {"nodes": [{"__typename": "Issue", "databaseId": 1}]}});
        assert_eq!(
            read_heads(&repos, &reply(issue)).unwrap(),
            [BatchHead::Unusable]
        );
        let other = json!({"data": {"nodes": [repo_node(9)]}});
        assert_eq!(
            read_heads(&repos, &reply(other)).unwrap(),
            [BatchHead::Unusable]
        );
    }

    #[test]
    fn oids_that_are_not_40_hex_are_unusable() {
        let repos = [query(1, Some("docs"))];
        for (commit, tree, docs) in [
            ("abc", T, D),
            (C, "zz22222222222222222222222222222222222222", D),
            (C, T, "not-a-sha"),
        ] {
            let body = json!({"data": {"nodes": [{"__typename": "Repository", "databaseId": 1,
                "defaultBranchRef": {"name": "main", "target": {"__typename": "Commit", "oid": commit, "tree": {"oid": tree}}}}],
                "d0": {"object": {"__typename": "Tree", "oid": docs}}}});
            assert_eq!(
                read_heads(&repos, &reply(body)).unwrap(),
                [BatchHead::Unusable]
            );
        }
    }

    #[test]
    fn an_empty_repository_has_no_branch_and_a_missing_docs_folder_is_none() {
        let repos = [query(1, Some("docs")), query(2, Some("docs"))];
        let body = json!({"data": {"nodes": [
            {"__typename": "Repository", "databaseId": 1, "defaultBranchRef": null},
            repo_node(2)], "d0": {"object": null}, "d1": {"object": null}}});
        let heads = read_heads(&repos, &reply(body)).unwrap();
        assert_eq!(heads[0], BatchHead::NoBranch);
        assert!(matches!(
            &heads[1],
            BatchHead::Head {
                docs_tree_sha: None,
                ..
            }
        ));
    }
}
