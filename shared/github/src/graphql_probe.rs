//! One commit as the plan sees it, in one GraphQL request (issue 23, Builds 2 and 3): the root
//! tree's entry names and kinds, and the mode and oid of each path the plan depends on, all read
//! from the same commit (`Commit.tree`, `Commit.file(path:)`). At the default branch it is the
//! webhook push's one request (the head and the plan's paths); at a commit a batch already read,
//! it replaces the REST root read for a repository whose head moved.
//!
//! Names only, no oids, for the root: enough to see a README, CODEOWNERS or docs candidate
//! appear or go in any spelling, and a few hundred bytes for a usual root. Paths travel as
//! variables, never in the query text.

use serde_json::{Map, Value, json};
use tracing::warn;

use super::client::GithubClient;
use super::error::GithubError;
use super::graphql::GraphqlReply;
use super::graphql_heads::oid;
use super::model::EntryKind;

/// The most paths one probe asks for (the plan's root scope is a handful).
pub const MAX_PROBED_PATHS: usize = 16;

/// Where to look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeAt<'a> {
    /// The head of the repository's default branch, read by the same request.
    DefaultBranch,
    /// A commit already known (40 hex).
    Commit(&'a str),
}

/// One asked path at the commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbedFile {
    pub kind: EntryKind,
    /// The git mode as the REST tree listing writes it (`100644`, `040000`).
    pub mode: String,
    pub oid: String,
}

/// What one commit holds, as far as the plan looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The default branch's name, when probed at the default branch.
    pub branch: Option<String>,
    pub commit_sha: String,
    pub tree_sha: String,
    /// The root tree's entries: names and kinds.
    pub root: Vec<(String, EntryKind)>,
    /// Each asked path, in the order asked; `None` where nothing is there.
    pub files: Vec<Option<ProbedFile>>,
}

fn commit_fields(paths: usize) -> String {
    let mut fields =
        String::from("__typename ... on Commit { oid tree { oid entries { name type } }");
    for i in 0..paths {
        fields.push_str(&format!(" f{i}: file(path: $p{i}) {{ type mode oid }}"));
    }
    fields.push_str(" }");
    fields
}

/// The query text and its variables.
fn build_query(owner: &str, name: &str, at: ProbeAt<'_>, paths: &[String]) -> (String, Value) {
    let mut declarations = vec!["$owner: String!".to_owned(), "$name: String!".to_owned()];
    let mut variables = Map::new();
    variables.insert("owner".into(), json!(owner));
    variables.insert("name".into(), json!(name));
    for (i, path) in paths.iter().enumerate() {
        declarations.push(format!("$p{i}: String!"));
        variables.insert(format!("p{i}"), json!(path));
    }
    let commit = commit_fields(paths.len());
    let target = match at {
        ProbeAt::DefaultBranch => format!("defaultBranchRef {{ name target {{ {commit} }} }}"),
        ProbeAt::Commit(sha) => {
            declarations.push("$commit: GitObjectID!".to_owned());
            variables.insert("commit".into(), json!(sha));
            format!("object(oid: $commit) {{ {commit} }}")
        }
    };
    let query = format!(
        "query Probe({}) {{ rateLimit {{ cost remaining resetAt }} repository(owner: $owner, name: $name) {{ {target} }} }}",
        declarations.join(", ")
    );
    (query, Value::Object(variables))
}

impl GithubClient {
    /// Probe `owner/name` at `at` for `paths` (at most [`MAX_PROBED_PATHS`]). `Ok(None)`: the
    /// repository has no default branch or no such commit. `Err`: run-stopping errors stop the
    /// run; any other means "read it over REST instead".
    pub async fn probe(
        &self,
        owner: &str,
        name: &str,
        at: ProbeAt<'_>,
        paths: &[String],
    ) -> Result<Option<Probe>, GithubError> {
        if paths.len() > MAX_PROBED_PATHS {
            return Err(GithubError::Unexpected { status: 400 });
        }
        let (query, variables) = build_query(owner, name, at, paths);
        let reply = self.graphql(&query, variables).await?;
        read_probe(&reply, at, paths.len())
    }
}

/// Read one answer (pure, so every fault is unit-tested).
fn read_probe(
    reply: &GraphqlReply,
    at: ProbeAt<'_>,
    paths: usize,
) -> Result<Option<Probe>, GithubError> {
    let refuse = |why: &str| {
        warn!(why, "GraphQL probe answer not usable");
        GithubError::Decode
    };
    if !reply.errors.is_empty() {
        return Err(refuse("the answer carries errors"));
    }
    let repository = reply
        .data
        .as_ref()
        .and_then(|d| d.get("repository"))
        .filter(|r| r.is_object())
        .ok_or_else(|| refuse("no repository"))?;
    let (branch, commit) = match at {
        ProbeAt::DefaultBranch => {
            let Some(branch_ref) = repository.get("defaultBranchRef").filter(|b| !b.is_null())
            else {
                return Ok(None);
            };
            let branch = branch_ref
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| refuse("a branch without a name"))?;
            (Some(branch.to_owned()), branch_ref.get("target"))
        }
        ProbeAt::Commit(_) => (None, repository.get("object")),
    };
    let Some(commit) = commit.filter(|c| !c.is_null()) else {
        return Ok(None);
    };
    if commit.get("__typename").and_then(Value::as_str) != Some("Commit") {
        return Err(refuse("the target is not a commit"));
    }
    let commit_sha = commit.get("oid").and_then(oid);
    let tree = commit.get("tree");
    let tree_sha = tree.and_then(|t| t.get("oid")).and_then(oid);
    let root = tree
        .and_then(|t| t.get("entries"))
        .and_then(Value::as_array)
        .and_then(|entries| entries.iter().map(root_entry).collect::<Option<Vec<_>>>());
    let (Some(commit_sha), Some(tree_sha), Some(root)) = (commit_sha, tree_sha, root) else {
        return Err(refuse("no commit, tree or root entries"));
    };
    let files = (0..paths)
        .map(|i| match commit.get(format!("f{i}")) {
            Some(Value::Null) => Ok(None),
            Some(entry) => probed_file(entry).map(Some).ok_or(()),
            None => Err(()),
        })
        .collect::<Result<Vec<_>, ()>>()
        .map_err(|()| refuse("an asked path missing or malformed"))?;
    Ok(Some(Probe {
        branch,
        commit_sha,
        tree_sha,
        root,
        files,
    }))
}

fn kind(text: &str) -> Option<EntryKind> {
    match text {
        "blob" => Some(EntryKind::Blob),
        "tree" => Some(EntryKind::Tree),
        "commit" => Some(EntryKind::Commit),
        _ => None,
    }
}

fn root_entry(entry: &Value) -> Option<(String, EntryKind)> {
    let name = entry.get("name").and_then(Value::as_str)?;
    if name.is_empty() || name.contains('/') {
        return None;
    }
    Some((
        name.to_owned(),
        kind(entry.get("type").and_then(Value::as_str)?)?,
    ))
}

/// GraphQL's `mode` is the octal git mode read as a number (100644 is 33188).
fn probed_file(entry: &Value) -> Option<ProbedFile> {
    let mode = entry.get("mode").and_then(Value::as_u64)?;
    Some(ProbedFile {
        kind: kind(entry.get("type").and_then(Value::as_str)?)?,
        mode: format!("{mode:06o}"),
        oid: entry.get("oid").and_then(oid)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str = "1111111111111111111111111111111111111111";
    const T: &str = "2222222222222222222222222222222222222222";
    const B: &str = "3333333333333333333333333333333333333333";

    fn reply(body: Value) -> GraphqlReply {
        serde_json::from_value(body).unwrap()
    }

    fn commit() -> Value {
        json!({"__typename": "Commit", "oid": C, "tree": {"oid": T, "entries": [
            {"name": "README.md", "type": "blob"}, {"name": "docs", "type": "tree"}]},
            "f0": {"type": "blob", "mode": 33188, "oid": B}, "f1": null})
    }

    #[test]
    fn paths_travel_as_variables_and_the_commit_is_read_once() {
        let paths = vec!["README.md\"}".to_owned(), "docs".to_owned()];
        let (text, vars) = build_query("o", "n", ProbeAt::Commit(C), &paths);
        assert!(!text.contains("README"), "paths never enter the query text");
        assert!(text.contains("object(oid: $commit)"));
        assert!(text.contains("f1: file(path: $p1)"));
        assert_eq!(vars["p0"], json!("README.md\"}"));
        assert_eq!(vars["commit"], json!(C));
        let (text, _) = build_query("o", "n", ProbeAt::DefaultBranch, &paths);
        assert!(text.contains("defaultBranchRef { name target {"));
    }

    #[test]
    fn a_probe_reads_the_root_names_and_each_path_with_its_octal_mode() {
        let body = json!({"data": {"repository": {"defaultBranchRef": {"name": "main",
            "target": commit()}}}});
        let probe = read_probe(&reply(body), ProbeAt::DefaultBranch, 2)
            .unwrap()
            .unwrap();
        assert_eq!(probe.branch.as_deref(), Some("main"));
        assert_eq!((probe.commit_sha.as_str(), probe.tree_sha.as_str()), (C, T));
        assert_eq!(probe.root[1], ("docs".to_owned(), EntryKind::Tree));
        assert_eq!(
            probe.files,
            vec![
                Some(ProbedFile {
                    kind: EntryKind::Blob,
                    mode: "100644".into(),
                    oid: B.into()
                }),
                None
            ]
        );
    }

    #[test]
    fn an_empty_repository_or_a_missing_commit_is_none() {
        let empty = json!({"data": {"repository": {"defaultBranchRef": null}}});
        assert_eq!(
            read_probe(&reply(empty), ProbeAt::DefaultBranch, 0),
            Ok(None)
        );
        let gone = json!({"data": {"repository": {"object": null}}});
        assert_eq!(read_probe(&reply(gone), ProbeAt::Commit(C), 0), Ok(None));
    }

    #[test]
    fn errors_a_missing_path_or_bad_oids_are_refused() {
        let not_found = json!({"data": {"repository": null}, "errors": [{"type": "NOT_FOUND",
            "path": ["repository"], "message": "Could not resolve to a Repository with the name 'o/n'."}]});
        assert!(read_probe(&reply(not_found), ProbeAt::Commit(C), 0).is_err());
        let short = json!({"data": {"repository": {"object": commit()}}});
        assert!(
            read_probe(&reply(short), ProbeAt::Commit(C), 3).is_err(),
            "f2 was asked for and is absent"
        );
        let mut bad = commit();
        bad["f0"]["oid"] = json!("xyz");
        let body = json!({"data": {"repository": {"object": bad}}});
        assert!(read_probe(&reply(body), ProbeAt::Commit(C), 2).is_err());
    }
}
