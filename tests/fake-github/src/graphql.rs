//! GitHub's GraphQL endpoint (`POST /graphql`, and `/api/graphql` as on GitHub Enterprise),
//! served by a real GraphQL engine (async-graphql) over the fake's git objects, with GitHub's
//! type and field names: `Node` (`nodes(ids:)`, `node(id:)`), `Repository` (`databaseId`,
//! `defaultBranchRef`, `object(expression:)`), `Ref`, `Commit`, `Tree`, `Blob`, `RateLimit`.
//!
//! Answers are GitHub-shaped: errors carry `type` and `path` at the top level
//! (`{"type":"NOT_FOUND","path":["nodes",0],...}` with `null` in `data`), more than 100 ids is
//! `ARGUMENT_LIMIT` with `data: null`, and the points budget (its own, separate from REST's)
//! answers an exhausted window with HTTP 200 and a `RATE_LIMITED` error. Faults on demand
//! ([`GraphqlFault`]) cover what GitHub does on a bad day.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_graphql::{
    Context, EmptyMutation, EmptySubscription, Error, ErrorExtensions, ID, Interface, Object,
    Schema, ServerError,
};
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::Shared;
use super::auth::{self, Refusal};
use super::git::{self, Object as GitObj, Oid};
use super::routes::{gh_error, rate_headers};
use super::state::{RateBudget, Repo, State as World};

/// `nodes(ids:)` takes at most this many ids, like GitHub's.
pub const MAX_NODE_IDS: usize = 100;
/// Points one query costs (GitHub's minimum; the fake's queries have no connections).
const QUERY_COST: u32 = 1;

/// A GraphQL failure on demand (HTTP-level ones, like a 502, are `Fault`s on
/// `Endpoint::Graphql`).
#[derive(Clone, Debug, PartialEq)]
pub enum GraphqlFault {
    /// HTTP 200, `data: null` and one error of this type (`RATE_LIMITED`, or the newer
    /// `RATE_LIMIT`), the points budget shown spent until `reset_in`.
    RateLimited {
        kind: &'static str,
        reset_in: Duration,
    },
    /// HTTP 200 with `errors` and `data: null` (GitHub's "Something went wrong").
    ErrorsWithoutData,
    /// The answer's `nodes[index]` nulled, with a `FORBIDDEN` error addressed to it.
    PartialData { index: usize },
    /// The answer's `nodes[index]` replaced by this value (a node of another type, bad oids).
    ReplaceNode { index: usize, node: Value },
    /// The answer's `nodes[index]` nulled with a `NOT_FOUND` error, as GitHub answers for a
    /// repository it cannot resolve for a moment.
    NotFound { index: usize },
}

#[derive(Clone, Debug)]
pub(crate) struct GraphqlFaultRule {
    pub fault: GraphqlFault,
    pub remaining: Option<u32>,
}

/// The installation the request's token belongs to, and the budget after this query.
pub(crate) struct Viewer {
    pub(crate) installation: u64,
    rate: RateSnapshot,
}

#[derive(Clone, Copy)]
struct RateSnapshot {
    limit: u32,
    remaining: u32,
    reset_at: i64,
}

fn iso(secs: i64) -> String {
    DateTime::<Utc>::from_timestamp(secs, 0).map_or_else(String::new, |t| {
        t.to_rfc3339_opts(SecondsFormat::Secs, true)
    })
}

type FakeSchema = Schema<Query, EmptyMutation, EmptySubscription>;

fn schema() -> &'static FakeSchema {
    static SCHEMA: OnceLock<FakeSchema> = OnceLock::new();
    SCHEMA.get_or_init(|| Schema::build(Query, EmptyMutation, EmptySubscription).finish())
}

// ---- Schema: GitHub's names ----

pub(crate) struct Query;

/// The fake's schema in SDL (the contract test compares it with GitHub's published one).
pub fn sdl() -> String {
    schema().sdl()
}

#[Object]
impl Query {
    /// Lookup nodes by a list of IDs.
    async fn nodes(
        &self,
        ctx: &Context<'_>,
        ids: Vec<ID>,
    ) -> async_graphql::Result<Vec<Option<Node>>> {
        if ids.len() > MAX_NODE_IDS {
            return Err(typed(
                format!(
                    "You may not provide more than {MAX_NODE_IDS} node ids; you provided {}.",
                    ids.len()
                ),
                "ARGUMENT_LIMIT",
            ));
        }
        let here: Vec<String> = ctx.path_node.map(|p| p.to_string_vec()).unwrap_or_default();
        Ok(ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let node = resolve_node(ctx, id);
                if node.is_none() {
                    let mut error = not_found(id);
                    error.path = here
                        .iter()
                        .map(|k| async_graphql::PathSegment::Field(k.clone()))
                        .chain([async_graphql::PathSegment::Index(i)])
                        .collect();
                    ctx.add_error(error);
                }
                node
            })
            .collect())
    }

    /// Fetches an object given its ID.
    async fn node(&self, ctx: &Context<'_>, id: ID) -> async_graphql::Result<Option<Node>> {
        match resolve_node(ctx, &id) {
            Some(node) => Ok(Some(node)),
            None => Err(typed(not_found_message(&id), "NOT_FOUND")),
        }
    }

    /// Lookup a given repository by the owner and repository name.
    async fn repository(
        &self,
        ctx: &Context<'_>,
        owner: String,
        name: String,
    ) -> async_graphql::Result<Option<Repository>> {
        let shared = ctx.data_unchecked::<Arc<Shared>>();
        let viewer = ctx.data_unchecked::<Viewer>();
        let state = shared.lock();
        state
            .repo_id(&owner, &name)
            .and_then(|id| state.repos.get(&id))
            .filter(|r| r.installation_id == Some(viewer.installation))
            .map(|r| Some(Repository::of(r)))
            .ok_or_else(|| {
                typed(
                    format!("Could not resolve to a Repository with the name '{owner}/{name}'."),
                    "NOT_FOUND",
                )
            })
    }

    /// The currently authenticated user: for an installation token, the App's bot, whose
    /// `repositories` are the installation's (see `graphql_viewer`).
    async fn viewer(&self, ctx: &Context<'_>) -> super::graphql_viewer::User {
        super::graphql_viewer::User::of(ctx.data_unchecked::<Viewer>().installation)
    }

    /// The client's rate limit information.
    async fn rate_limit(
        &self,
        ctx: &Context<'_>,
        #[graphql(default_with = "Some(false)")] dry_run: Option<bool>,
    ) -> Option<RateLimit> {
        let dry_run = dry_run.unwrap_or(false);
        let rate = ctx.data_unchecked::<Viewer>().rate;
        Some(RateLimit {
            cost: if dry_run { 0 } else { QUERY_COST as i32 },
            limit: rate.limit as i32,
            node_count: 0,
            remaining: rate.remaining as i32,
            reset_at: GhDateTime(iso(rate.reset_at)),
            used: rate.limit.saturating_sub(rate.remaining) as i32,
        })
    }
}

/// An error with GitHub's `type` (kept in extensions by the engine, lifted by `github_shape`).
pub(crate) fn typed(message: String, kind: &'static str) -> Error {
    Error::new(message).extend_with(|_, e| e.set("type", kind))
}

fn not_found_message(id: &ID) -> String {
    format!(
        "Could not resolve to a node with the global id of '{}'.",
        id.as_str()
    )
}

fn not_found(id: &ID) -> ServerError {
    let mut error = ServerError::new(not_found_message(id), None);
    let mut extensions = async_graphql::ErrorExtensionValues::default();
    extensions.set("type", "NOT_FOUND");
    error.extensions = Some(extensions);
    error
}

/// An object with an ID.
#[derive(Interface)]
#[graphql(field(name = "id", ty = "ID"))]
pub(crate) enum Node {
    Repository(Repository),
    Ref(Ref),
    Commit(Commit),
    Tree(Tree),
    Blob(Blob),
}

/// Represents a Git object.
#[derive(Interface)]
#[graphql(field(name = "id", ty = "ID"), field(name = "oid", ty = "GitObjectId"))]
pub(crate) enum GitObject {
    Commit(Commit),
    Tree(Tree),
    Blob(Blob),
}

/// An RFC 3986 URI (GitHub's `URI` scalar).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Uri(String);
async_graphql::scalar!(
    Uri,
    "URI",
    "An RFC 3986, RFC 3987, and RFC 6570 (level 4) compliant URI string."
);

/// An ISO-8601 encoded UTC date string (GitHub's `DateTime` scalar).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct GhDateTime(String);
async_graphql::scalar!(
    GhDateTime,
    "DateTime",
    "An ISO-8601 encoded UTC date string."
);

/// A Git object ID (GitHub's `GitObjectID` scalar).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct GitObjectId(String);
async_graphql::scalar!(GitObjectId, "GitObjectID", "A Git object ID.");

#[derive(Clone)]
pub(crate) struct Repository {
    repo_id: u64,
    name: String,
    owner: String,
    archived: bool,
    private: bool,
    description: Option<String>,
    default_branch: String,
}

impl Repository {
    pub(crate) fn of(repo: &Repo) -> Self {
        Self {
            repo_id: repo.id,
            name: repo.name.clone(),
            owner: repo.owner.clone(),
            archived: repo.archived,
            private: repo.private,
            description: repo.description.clone(),
            default_branch: repo.default_branch.clone(),
        }
    }
}

/// A repository's owner (only its login here).
#[derive(async_graphql::SimpleObject)]
pub(crate) struct RepositoryOwner {
    login: String,
}

/// The repository and the world, locked for one field.
fn with_repo<T>(ctx: &Context<'_>, repo_id: u64, read: impl FnOnce(&Repo) -> T) -> Option<T> {
    let shared = ctx.data_unchecked::<Arc<Shared>>();
    let state = shared.lock();
    state.repos.get(&repo_id).filter(|r| !r.deleted).map(read)
}

#[Object]
impl Repository {
    async fn id(&self) -> ID {
        ID(format!("R_fake{}", self.repo_id))
    }

    async fn database_id(&self) -> Option<i64> {
        i64::try_from(self.repo_id).ok()
    }

    async fn name(&self) -> &str {
        &self.name
    }

    async fn name_with_owner(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    async fn is_archived(&self) -> bool {
        self.archived
    }

    async fn is_private(&self) -> bool {
        self.private
    }

    async fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The HTTP URL for this repository.
    async fn url(&self) -> Uri {
        Uri(format!("https://github.com/{}/{}", self.owner, self.name))
    }

    async fn owner(&self) -> RepositoryOwner {
        RepositoryOwner {
            login: self.owner.clone(),
        }
    }

    /// The Ref associated with the repository's default branch (null when it has no commits).
    async fn default_branch_ref(&self, ctx: &Context<'_>) -> Option<Ref> {
        with_repo(ctx, self.repo_id, |repo| {
            repo.branches.get(&self.default_branch).map(|target| Ref {
                repo_id: self.repo_id,
                name: self.default_branch.clone(),
                target: *target,
            })
        })
        .flatten()
    }

    /// A Git object in the repository: by `oid`, or by a `<rev>:<path>` expression.
    async fn object(
        &self,
        ctx: &Context<'_>,
        expression: Option<String>,
        oid: Option<GitObjectId>,
    ) -> Option<GitObject> {
        with_repo(ctx, self.repo_id, |repo| {
            let found = match (oid, expression) {
                (Some(GitObjectId(hex)), _) => git::from_hex(&hex),
                (None, Some(expression)) => resolve_expression(repo, &expression),
                (None, None) => None,
            };
            found.and_then(|oid| git_object(repo, oid))
        })
        .flatten()
    }
}

/// `<rev>:<path>` (or a bare `<rev>`): rev is a branch, `HEAD` or a commit id; the path is
/// walked through the trees.
fn resolve_expression(repo: &Repo, expression: &str) -> Option<Oid> {
    let (rev, path) = match expression.split_once(':') {
        Some((rev, path)) => (rev, Some(path)),
        None => (expression, None),
    };
    let commit = match rev {
        "HEAD" => repo.head()?,
        rev => repo
            .branches
            .get(rev)
            .copied()
            .or_else(|| git::from_hex(rev))?,
    };
    let tree = repo.commit(&commit)?.tree;
    let Some(path) = path else {
        return Some(commit);
    };
    let mut here = tree;
    for part in path.split('/').filter(|p| !p.is_empty()) {
        let Some(GitObj::Tree(entries)) = repo.objects.get(&here) else {
            return None;
        };
        here = entries.iter().find(|e| e.name == part)?.oid;
    }
    Some(here)
}

fn git_object(repo: &Repo, oid: Oid) -> Option<GitObject> {
    Some(match repo.objects.get(&oid)? {
        GitObj::Commit(c) => GitObject::Commit(Commit {
            repo_id: repo.id,
            oid,
            tree: c.tree,
            message: c.message.clone(),
        }),
        GitObj::Tree(_) => GitObject::Tree(Tree {
            repo_id: repo.id,
            oid,
        }),
        GitObj::Blob(data) => GitObject::Blob(Blob {
            repo_id: repo.id,
            oid,
            byte_size: data.len(),
        }),
    })
}

#[derive(Clone)]
pub(crate) struct Ref {
    repo_id: u64,
    name: String,
    target: Oid,
}

#[Object]
impl Ref {
    async fn id(&self) -> ID {
        ID(format!("REF_fake{}_{}", self.repo_id, self.name))
    }

    async fn name(&self) -> &str {
        &self.name
    }

    async fn prefix(&self) -> &str {
        "refs/heads/"
    }

    async fn target(&self, ctx: &Context<'_>) -> Option<GitObject> {
        with_repo(ctx, self.repo_id, |repo| git_object(repo, self.target)).flatten()
    }
}

#[derive(Clone)]
pub(crate) struct Commit {
    repo_id: u64,
    oid: Oid,
    tree: Oid,
    message: String,
}

#[Object]
impl Commit {
    async fn id(&self) -> ID {
        ID(format!("C_fake{}", git::to_hex(&self.oid)))
    }

    async fn oid(&self) -> GitObjectId {
        GitObjectId(git::to_hex(&self.oid))
    }

    async fn message(&self) -> &str {
        &self.message
    }

    /// Commit's root Tree.
    async fn tree(&self) -> Tree {
        Tree {
            repo_id: self.repo_id,
            oid: self.tree,
        }
    }

    /// The tree entry at `path` (exact, case-sensitive like git), or null.
    async fn file(&self, ctx: &Context<'_>, path: String) -> Option<TreeEntry> {
        with_repo(ctx, self.repo_id, |repo| entry_at(repo, self.tree, &path)).flatten()
    }
}

/// The entry at a slash-separated path below `tree`.
fn entry_at(repo: &Repo, tree: Oid, path: &str) -> Option<TreeEntry> {
    let mut here = tree;
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let (last, folders) = parts.split_last()?;
    for part in folders {
        here = repo
            .objects
            .list_flat(&here)
            .into_iter()
            .find(|e| e.path == *part && e.mode.kind() == "tree")?
            .oid;
    }
    repo.objects
        .list_flat(&here)
        .into_iter()
        .find(|e| e.path == *last)
        .map(|e| TreeEntry {
            name: e.path.clone(),
            kind: e.mode.kind().to_owned(),
            mode: i32::from_str_radix(e.mode.api(), 8).unwrap_or(0),
            oid: GitObjectId(git::to_hex(&e.oid)),
            path: Some(path.to_owned()),
        })
}

#[derive(Clone)]
pub(crate) struct Tree {
    repo_id: u64,
    oid: Oid,
}

/// Represents a Git tree entry.
#[derive(async_graphql::SimpleObject)]
pub(crate) struct TreeEntry {
    name: String,
    #[graphql(name = "type")]
    kind: String,
    mode: i32,
    oid: GitObjectId,
    /// The full path of the file (null for entries listed by `Tree.entries`).
    path: Option<String>,
}

#[Object]
impl Tree {
    async fn id(&self) -> ID {
        ID(format!("T_fake{}", git::to_hex(&self.oid)))
    }

    async fn oid(&self) -> GitObjectId {
        GitObjectId(git::to_hex(&self.oid))
    }

    async fn entries(&self, ctx: &Context<'_>) -> Option<Vec<TreeEntry>> {
        with_repo(ctx, self.repo_id, |repo| {
            repo.objects
                .list_flat(&self.oid)
                .into_iter()
                .map(|e| TreeEntry {
                    name: e.path,
                    kind: e.mode.kind().to_owned(),
                    mode: i32::from_str_radix(e.mode.api(), 8).unwrap_or(0),
                    oid: GitObjectId(git::to_hex(&e.oid)),
                    path: None,
                })
                .collect()
        })
    }
}

#[derive(Clone)]
pub(crate) struct Blob {
    repo_id: u64,
    oid: Oid,
    byte_size: usize,
}

#[Object]
impl Blob {
    async fn id(&self) -> ID {
        ID(format!("B_fake{}", git::to_hex(&self.oid)))
    }

    async fn oid(&self) -> GitObjectId {
        GitObjectId(git::to_hex(&self.oid))
    }

    async fn byte_size(&self) -> i32 {
        i32::try_from(self.byte_size).unwrap_or(i32::MAX)
    }

    async fn text(&self, ctx: &Context<'_>) -> Option<String> {
        with_repo(ctx, self.repo_id, |repo| {
            match repo.objects.get(&self.oid) {
                Some(GitObj::Blob(data)) => String::from_utf8(data.clone()).ok(),
                _ => None,
            }
        })
        .flatten()
    }
}

/// Represents the client's rate limit.
#[derive(async_graphql::SimpleObject)]
pub(crate) struct RateLimit {
    cost: i32,
    limit: i32,
    node_count: i32,
    remaining: i32,
    reset_at: GhDateTime,
    used: i32,
}

/// A node id the viewer's installation can see: `R_fake<id>` for repositories, and the git
/// objects' and refs' ids (looked up in the installation's repositories).
fn resolve_node(ctx: &Context<'_>, id: &ID) -> Option<Node> {
    let shared = ctx.data_unchecked::<Arc<Shared>>();
    let viewer = ctx.data_unchecked::<Viewer>();
    let state = shared.lock();
    let visible = |repo: &&Repo| !repo.deleted && repo.installation_id == Some(viewer.installation);
    if let Some(repo_id) = id
        .strip_prefix("R_fake")
        .and_then(|n| n.parse::<u64>().ok())
    {
        return state
            .repos
            .get(&repo_id)
            .filter(visible)
            .map(|r| Node::Repository(Repository::of(r)));
    }
    let oid = ["C_fake", "T_fake", "B_fake"]
        .iter()
        .find_map(|prefix| id.strip_prefix(prefix))
        .and_then(git::from_hex)?;
    state
        .repos
        .values()
        .filter(visible)
        .find_map(|repo| git_object(repo, oid))
        .map(|object| match object {
            GitObject::Commit(c) => Node::Commit(c),
            GitObject::Tree(t) => Node::Tree(t),
            GitObject::Blob(b) => Node::Blob(b),
        })
}

// ---- HTTP ----

/// `POST /graphql`: authorize, spend points (or answer a rate limit), run the query, shape the
/// answer like GitHub's, apply an armed fault.
pub(crate) async fn serve(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (now, installation, fault, rate) = {
        let mut state = shared.lock();
        let now = state.rate_now();
        let installation = match auth::installation_of(&state, &headers, Utc::now()) {
            Ok(id) => id,
            Err(Refusal::BadCredentials) => {
                return gh_error(StatusCode::UNAUTHORIZED, "Bad credentials");
            }
            Err(Refusal::Suspended) => {
                return gh_error(
                    StatusCode::FORBIDDEN,
                    "This installation has been suspended",
                );
            }
        };
        let fault = take_fault(&mut state);
        let rate = spend(&mut state, now, &fault);
        (now, installation, fault, rate)
    };
    let Some(rate) = rate else {
        let reset_at = match &fault {
            Some(GraphqlFault::RateLimited { reset_in, .. }) => {
                now + reset_in.as_secs_f64().ceil() as i64
            }
            _ => shared.lock().graphql_rate.reset_at,
        };
        let kind = match &fault {
            Some(GraphqlFault::RateLimited { kind, .. }) => kind,
            _ => "RATE_LIMITED",
        };
        let limit = shared.lock().graphql_rate.limit;
        return answer(
            json!({"data": null, "errors": [{"type": kind, "code": "graphql_rate_limit",
                "message": format!("API rate limit exceeded for installation ID {installation}.")}]}),
            RateSnapshot {
                limit,
                remaining: 0,
                reset_at,
            },
        );
    };
    if fault == Some(GraphqlFault::ErrorsWithoutData) {
        return answer(
            json!({"data": null, "errors": [{"message": "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug. Please include `FAKE:0000:0000000` when reporting this issue."}]}),
            rate,
        );
    }
    let request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(_) => return gh_error(StatusCode::BAD_REQUEST, "Problems parsing JSON"),
    };
    let request = request
        .data(shared.clone())
        .data(Viewer { installation, rate });
    let response = schema().execute(request).await;
    let mut value = serde_json::to_value(&response).unwrap_or_else(|_| json!({"data": null}));
    github_shape(&mut value);
    if let Some(fault) = &fault {
        apply_fault(&mut value, fault);
    }
    answer(value, rate)
}

fn take_fault(state: &mut World) -> Option<GraphqlFault> {
    let rule = state.graphql_faults.first_mut()?;
    let fault = rule.fault.clone();
    if let Some(left) = rule.remaining.as_mut() {
        *left = left.saturating_sub(1);
        if *left == 0 {
            state.graphql_faults.remove(0);
        }
    }
    Some(fault)
}

/// Spend the query's points; `None` when the budget is spent (or a rate-limit fault is armed).
fn spend(state: &mut World, now: i64, fault: &Option<GraphqlFault>) -> Option<RateSnapshot> {
    let budget = &mut state.graphql_rate;
    budget.refresh(now);
    if matches!(fault, Some(GraphqlFault::RateLimited { .. })) || budget.remaining < QUERY_COST {
        return None;
    }
    budget.remaining -= QUERY_COST;
    Some(RateSnapshot {
        limit: budget.limit,
        remaining: budget.remaining,
        reset_at: budget.reset_at,
    })
}

/// Errors for which GitHub refuses the whole query (`data: null`), not just a field.
const WHOLE_QUERY_REFUSALS: [&str; 3] = [
    "ARGUMENT_LIMIT",
    "EXCESSIVE_PAGINATION",
    "MISSING_PAGINATION_BOUNDARIES",
];

/// GitHub puts `type` at the top of each error, where the engine keeps it in `extensions`; an
/// argument over a limit fails the whole query (`data: null`), not just its field.
fn github_shape(value: &mut Value) {
    let Some(errors) = value.get_mut("errors").and_then(Value::as_array_mut) else {
        return;
    };
    let mut refused = false;
    for error in errors {
        let Some(object) = error.as_object_mut() else {
            continue;
        };
        if let Some(kind) = object
            .remove("extensions")
            .and_then(|mut e| e.get_mut("type").map(Value::take))
        {
            refused |= WHOLE_QUERY_REFUSALS.contains(&kind.as_str().unwrap_or(""));
            object.insert("type".into(), kind);
        }
    }
    if refused {
        value["data"] = Value::Null;
    }
}

fn apply_fault(value: &mut Value, fault: &GraphqlFault) {
    let (index, replacement, error) = match fault {
        GraphqlFault::PartialData { index } => (
            *index,
            Value::Null,
            Some(json!({"type": "FORBIDDEN", "path": ["nodes", index],
                "message": "Resource not accessible by integration"})),
        ),
        GraphqlFault::ReplaceNode { index, node } => (*index, node.clone(), None),
        GraphqlFault::NotFound { index } => (
            *index,
            Value::Null,
            Some(json!({"type": "NOT_FOUND", "path": ["nodes", index],
                "message": "Could not resolve to a node with the global id of 'unknown'."})),
        ),
        _ => return,
    };
    if let Some(slot) = value
        .get_mut("data")
        .and_then(|d| d.get_mut("nodes"))
        .and_then(|n| n.get_mut(index))
    {
        *slot = replacement;
    }
    if let Some(error) = error {
        match value.get_mut("errors").and_then(Value::as_array_mut) {
            Some(errors) => errors.push(error),
            None => value["errors"] = json!([error]),
        }
    }
}

fn answer(body: Value, rate: RateSnapshot) -> Response {
    let mut response = axum::Json(body).into_response();
    let budget = RateBudget {
        limit: rate.limit,
        remaining: rate.remaining,
        reset_at: rate.reset_at,
    };
    rate_headers(response.headers_mut(), &budget, "graphql");
    response
}
