//! The HTTP surface: GitHub's REST paths, the gate every request passes (latency, faults,
//! rate limit, log) and GitHub-shaped answers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Path, Query, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::auth::{self, Refusal};
use super::faults::{self, Fault};
use super::git::{self, Commit, Object, Oid};
use super::state::{self as model, Repo};
use super::{Endpoint, LoggedRequest, Shared};

const DOCS_URL: &str = "https://docs.github.com/rest";
/// A faulted "Timeout" hangs this long: far past any client timeout.
const HANG: Duration = Duration::from_secs(3600);

type Params = Query<HashMap<String, String>>;

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/app/installations/{id}", get(installation))
        .route("/app/installations/{id}/access_tokens", post(access_token))
        .route("/installation/repositories", get(installation_repos))
        .route("/repos/{owner}/{repo}", get(repo))
        .route("/repos/{owner}/{repo}/branches/{*branch}", get(branch))
        .route("/repos/{owner}/{repo}/commits", get(commits))
        .route("/repos/{owner}/{repo}/git/trees/{sha}", get(tree))
        .route("/repos/{owner}/{repo}/git/blobs/{sha}", get(blob))
        .route("/graphql", post(super::graphql::serve))
        .route("/api/graphql", post(super::graphql::serve))
        .fallback(|| async { not_found() })
        .layer(middleware::from_fn_with_state(shared.clone(), gate))
        .with_state(shared)
}

/// Which agreed endpoint a request is (for faults and the log).
pub(crate) fn classify(method: &Method, path: &str) -> Endpoint {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let get = *method == Method::GET;
    match parts.as_slice() {
        ["app", "installations", _] if get => Endpoint::Installation,
        ["app", "installations", _, "access_tokens"] if *method == Method::POST => {
            Endpoint::AccessToken
        }
        ["installation", "repositories"] if get => Endpoint::InstallationRepos,
        ["repos", _, _] if get => Endpoint::Repo,
        ["repos", _, _, "branches", rest @ ..] if get && !rest.is_empty() => Endpoint::Branch,
        ["repos", _, _, "commits"] if get => Endpoint::Commits,
        ["repos", _, _, "git", "trees", _] if get => Endpoint::Tree,
        ["repos", _, _, "git", "blobs", _] if get => Endpoint::Blob,
        ["graphql"] | ["api", "graphql"] if *method == Method::POST => Endpoint::Graphql,
        _ => Endpoint::Other,
    }
}

/// Every request: artificial latency, armed faults, the rate-limit budget (a 304 spends
/// nothing; GraphQL has its own), rate-limit headers on the answer, gzip when the request accepts
/// it, then the log entry.
async fn gate(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let gzip = accepts_gzip(request.headers());
    let path = request.uri().path_and_query().map_or_else(
        || request.uri().path().to_owned(),
        |p| p.as_str().to_owned(),
    );
    let endpoint = classify(&method, request.uri().path());
    let _flight = InFlight::enter(&shared, endpoint);

    let latency = shared.lock().latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }

    let (now, fault, limit, exhausted, installation) = {
        let mut state = shared.lock();
        let now = state.rate_now();
        let fault = faults::take(&mut state.faults, endpoint, &path);
        state.rate.refresh(now);
        let installation = auth::token_installation(&state, request.headers());
        (
            now,
            fault,
            state.rate.limit,
            state.rate.remaining == 0,
            installation,
        )
    };

    let response = match fault {
        Some(Fault::Timeout) => {
            shared.lock().log.push(LoggedRequest {
                method: method.to_string(),
                path,
                endpoint,
                status: 0,
                bytes: 0,
                wire_bytes: 0,
            });
            let mut stopped = shared.shutdown.clone();
            tokio::select! {
                _ = tokio::time::sleep(HANG) => {}
                _ = stopped.wait_for(|stop| *stop) => {}
            }
            return StatusCode::GATEWAY_TIMEOUT.into_response();
        }
        Some(fault) => faults::respond(&fault, limit, now, installation),
        // GraphQL spends its own points budget (see `graphql`).
        None if exhausted && endpoint != Endpoint::Graphql => {
            let reset_at = shared.lock().rate.reset_at;
            faults::primary_rate_limit(limit, reset_at, installation)
        }
        None => next.run(request).await,
    };

    let (mut parts, body) = response.into_parts();
    let body = to_bytes(body, usize::MAX).await.unwrap_or_default();
    let mut state = shared.lock();
    // A rate-limited answer already carries its (exhausted) headers and spends nothing; GraphQL
    // answers carry their own budget's headers.
    if !parts.headers.contains_key("x-ratelimit-remaining") && endpoint != Endpoint::Graphql {
        if parts.status != StatusCode::NOT_MODIFIED {
            state.rate.remaining = state.rate.remaining.saturating_sub(1);
        }
        let rate = &state.rate;
        rate_headers(&mut parts.headers, rate, "core");
    }
    drop(state);
    let bytes = body.len() as u64;
    let body = if gzip && !body.is_empty() {
        gzip_body(&mut parts.headers, &body)
    } else {
        body
    };
    shared.lock().log.push(LoggedRequest {
        method: method.to_string(),
        path,
        endpoint,
        status: parts.status.as_u16(),
        bytes,
        wire_bytes: body.len() as u64,
    });
    Response::from_parts(parts, Body::from(body))
}

/// `Accept-Encoding` lists gzip (or `*`) without `q=0`.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

/// The body gzipped, with the headers GitHub sends for it.
fn gzip_body(headers: &mut HeaderMap, body: &[u8]) -> bytes::Bytes {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(body);
    let compressed = encoder.finish().unwrap_or_default();
    headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    headers.remove(header::CONTENT_LENGTH);
    compressed.into()
}

/// GitHub's `x-ratelimit-*` headers for a budget (`resource`: `core`, `graphql`).
pub(crate) fn rate_headers(
    headers: &mut HeaderMap,
    rate: &model::RateBudget,
    resource: &'static str,
) {
    headers.insert("x-ratelimit-limit", HeaderValue::from(rate.limit));
    headers.insert("x-ratelimit-remaining", HeaderValue::from(rate.remaining));
    headers.insert(
        "x-ratelimit-used",
        HeaderValue::from(rate.limit.saturating_sub(rate.remaining)),
    );
    headers.insert("x-ratelimit-reset", HeaderValue::from(rate.reset_at));
    headers.insert("x-ratelimit-resource", HeaderValue::from_static(resource));
}

/// Counts a request as in flight until it is answered (or its future is dropped).
struct InFlight<'a> {
    shared: &'a Shared,
    endpoint: Endpoint,
}

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared, endpoint: Endpoint) -> Self {
        let mut state = shared.lock();
        let now = {
            let n = state.in_flight.entry(endpoint).or_insert(0);
            *n += 1;
            *n
        };
        let max = state.max_in_flight.entry(endpoint).or_insert(0);
        *max = (*max).max(now);
        Self { shared, endpoint }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(n) = self.shared.lock().in_flight.get_mut(&self.endpoint) {
            *n = n.saturating_sub(1);
        }
    }
}

/// GitHub's error body: {"message", "documentation_url", "status"}.
pub(crate) fn gh_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(json!({
            "message": message,
            "documentation_url": DOCS_URL,
            "status": status.as_u16().to_string(),
        })),
    )
        .into_response()
}

fn not_found() -> Response {
    gh_error(StatusCode::NOT_FOUND, "Not Found")
}

fn bad_credentials() -> Response {
    gh_error(StatusCode::UNAUTHORIZED, "Bad credentials")
}

fn suspended() -> Response {
    gh_error(
        StatusCode::FORBIDDEN,
        "This installation has been suspended",
    )
}

fn iso(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn iso_unix(secs: i64) -> String {
    DateTime::<Utc>::from_timestamp(secs, 0).map_or_else(String::new, iso)
}

// ---- App endpoints (App JWT) ----

async fn installation(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let state = shared.lock();
    if let Err(message) = auth::verify_app_jwt(&headers, state.app_id, Utc::now().timestamp()) {
        return gh_error(StatusCode::UNAUTHORIZED, &message);
    }
    let Some(inst) = id
        .parse::<u64>()
        .ok()
        .and_then(|id| state.installations.get(&id))
        .filter(|inst| !inst.deleted)
    else {
        return not_found();
    };
    axum::Json(json!({
        "id": inst.id,
        "account": {"login": inst.account, "id": inst.id + 1, "type": "Organization"},
        "app_id": state.app_id,
        "target_type": "Organization",
        "repository_selection": "selected",
        "permissions": {"contents": "read", "metadata": "read"},
        "events": ["push", "repository", "installation", "installation_repositories"],
        "created_at": iso(inst.created_at),
        "suspended_at": inst.suspended_at.map(iso),
        "suspended_by": inst.suspended_at.map(|_| json!({"login": inst.account})),
    }))
    .into_response()
}

async fn access_token(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let mut state = shared.lock();
    if let Err(message) = auth::verify_app_jwt(&headers, state.app_id, Utc::now().timestamp()) {
        return gh_error(StatusCode::UNAUTHORIZED, &message);
    }
    let Some(inst) = id
        .parse::<u64>()
        .ok()
        .and_then(|id| state.installations.get(&id))
        .filter(|inst| !inst.deleted)
    else {
        return not_found();
    };
    if inst.suspended_at.is_some() {
        return suspended();
    }
    let inst_id = inst.id;
    let (token, expires_at) = auth::mint_token(&mut state, inst_id, Utc::now());
    (
        StatusCode::CREATED,
        axum::Json(json!({
            "token": token,
            "expires_at": iso(expires_at),
            "permissions": {"contents": "read", "metadata": "read"},
            "repository_selection": "selected",
        })),
    )
        .into_response()
}

// ---- Installation endpoints (installation token) ----

/// Why an installation request is refused (small, unlike a built `Response`).
enum Denied {
    BadCredentials,
    Suspended,
    NotFound,
}

impl IntoResponse for Denied {
    fn into_response(self) -> Response {
        match self {
            Denied::BadCredentials => bad_credentials(),
            Denied::Suspended => suspended(),
            Denied::NotFound => not_found(),
        }
    }
}

fn authorize(state: &model::State, headers: &HeaderMap) -> Result<u64, Denied> {
    auth::installation_of(state, headers, Utc::now()).map_err(|refusal| match refusal {
        Refusal::BadCredentials => Denied::BadCredentials,
        Refusal::Suspended => Denied::Suspended,
    })
}

/// The repository `owner/name` if the request's token can see it.
fn visible<'a>(
    state: &'a model::State,
    headers: &HeaderMap,
    owner: &str,
    name: &str,
) -> Result<&'a Repo, Denied> {
    let installation = authorize(state, headers)?;
    state
        .repo_id(owner, name)
        .and_then(|id| state.repos.get(&id))
        .filter(|repo| repo.installation_id == Some(installation))
        .ok_or(Denied::NotFound)
}

fn repo_json(base: &str, repo: &Repo) -> Value {
    let full_name = repo.full_name();
    json!({
        "id": repo.id,
        "node_id": format!("R_fake{}", repo.id),
        "name": repo.name,
        "full_name": full_name,
        "owner": {"login": repo.owner, "type": "Organization"},
        "private": repo.private,
        "visibility": if repo.private { "private" } else { "public" },
        "html_url": format!("https://github.com/{full_name}"),
        "description": repo.description,
        "fork": false,
        "url": format!("{base}/repos/{full_name}"),
        "archived": repo.archived,
        "disabled": false,
        "default_branch": repo.default_branch,
        "size": repo.size_bytes.div_ceil(1024),
        "created_at": iso(repo.created_at),
        "updated_at": iso(repo.pushed_at.unwrap_or(repo.created_at)),
        "pushed_at": repo.pushed_at.map(iso),
    })
}

fn commit_json(base: &str, repo: &Repo, sha: &Oid, commit: &Commit) -> Value {
    let full_name = repo.full_name();
    let sha = git::to_hex(sha);
    let person = |who: &git::Signature| json!({"name": who.name, "email": who.email, "date": iso_unix(who.time)});
    json!({
        "sha": sha,
        "node_id": format!("C_fake{sha}"),
        "commit": {
            "author": person(&commit.author),
            "committer": person(&commit.committer),
            "message": commit.message,
            "tree": {"sha": git::to_hex(&commit.tree), "url": format!("{base}/repos/{full_name}/git/trees/{}", git::to_hex(&commit.tree))},
            "url": format!("{base}/repos/{full_name}/git/commits/{sha}"),
            "comment_count": 0,
        },
        "url": format!("{base}/repos/{full_name}/commits/{sha}"),
        "html_url": format!("https://github.com/{full_name}/commit/{sha}"),
        "parents": commit.parent.iter().map(|p| json!({"sha": git::to_hex(p)})).collect::<Vec<_>>(),
    })
}

/// GitHub's `per_page` (default 30, at most 100) and `page` (from 1).
fn paging(params: &HashMap<String, String>) -> (usize, usize) {
    let per_page = params
        .get("per_page")
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .map_or(30, |n| n.min(100));
    let page = params
        .get("page")
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1);
    (per_page, page)
}

/// GitHub's Link header: `<url>; rel="prev", <url>; rel="next", <url>; rel="last", <url>; rel="first"`,
/// each URL the request's own with `page` replaced.
fn link_header(
    base: &str,
    path: &str,
    params: &HashMap<String, String>,
    page: usize,
    last: usize,
) -> Option<HeaderValue> {
    let mut kept: Vec<(&String, &String)> = params.iter().filter(|(k, _)| *k != "page").collect();
    kept.sort();
    let url = |p: usize| {
        let mut query: Vec<String> = kept.iter().map(|(k, v)| format!("{k}={v}")).collect();
        query.push(format!("page={p}"));
        format!("<{base}{path}?{}>", query.join("&"))
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(format!("{}; rel=\"prev\"", url((page - 1).min(last))));
    }
    if page < last {
        links.push(format!("{}; rel=\"next\"", url(page + 1)));
        links.push(format!("{}; rel=\"last\"", url(last)));
    }
    if page > 1 {
        links.push(format!("{}; rel=\"first\"", url(1)));
    }
    (!links.is_empty())
        .then(|| HeaderValue::from_str(&links.join(", ")).ok())
        .flatten()
}

async fn installation_repos(
    State(shared): State<Arc<Shared>>,
    Query(params): Params,
    headers: HeaderMap,
) -> Response {
    let state = shared.lock();
    let installation = match authorize(&state, &headers) {
        Ok(id) => id,
        Err(denied) => return denied.into_response(),
    };
    let repos: Vec<&Repo> = state
        .repos
        .values()
        .filter(|r| !r.deleted && r.installation_id == Some(installation))
        .collect();
    let (per_page, page) = paging(&params);
    let last = repos.len().div_ceil(per_page).max(1);
    let page_items: Vec<Value> = repos
        .iter()
        .skip((page - 1).saturating_mul(per_page))
        .take(per_page)
        .map(|r| repo_json(&state.base_url, r))
        .collect();
    let mut response = axum::Json(json!({
        "total_count": repos.len(),
        "repository_selection": "selected",
        "repositories": page_items,
    }))
    .into_response();
    if let Some(link) = link_header(
        &state.base_url,
        "/installation/repositories",
        &params,
        page,
        last,
    ) {
        response.headers_mut().insert(header::LINK, link);
    }
    response
}

async fn repo(
    State(shared): State<Arc<Shared>>,
    Path((owner, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let state = shared.lock();
    let repo = match visible(&state, &headers, &owner, &name) {
        Ok(repo) => repo,
        Err(denied) => return denied.into_response(),
    };
    axum::Json(repo_json(&state.base_url, repo)).into_response()
}

/// The branch ETag, weak like GitHub's, a function of the token that asks, the branch and its
/// head commit: like GitHub's, an ETag another token received never matches (a new token gets a
/// 200 for an old ETag).
fn branch_etag(token: &str, branch: &str, head: &Oid) -> String {
    let digest = Sha256::digest(format!("{token}\0{branch}\0{}", git::to_hex(head)).as_bytes());
    format!("W/\"{}\"", hex::encode(digest))
}

/// `If-None-Match` may list several tags, weak or strong (weak comparison).
fn etag_matches(headers: &HeaderMap, etag: &str) -> bool {
    let strip = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim() == "*" || strip(tag) == strip(etag))
}

async fn branch(
    State(shared): State<Arc<Shared>>,
    Path((owner, name, branch)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let state = shared.lock();
    let repo = match visible(&state, &headers, &owner, &name) {
        Ok(repo) => repo,
        Err(denied) => return denied.into_response(),
    };
    let Some((head, commit)) = repo
        .branches
        .get(&branch)
        .and_then(|head| repo.commit(head).map(|c| (head, c)))
    else {
        return gh_error(StatusCode::NOT_FOUND, "Branch not found");
    };
    let token = auth::credentials(&headers).unwrap_or_default();
    let etag = branch_etag(token, &branch, head);
    let etag_value = HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("W/\"\""));
    if etag_matches(&headers, &etag) {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag_value)]).into_response();
    }
    let full_name = repo.full_name();
    let body = json!({
        "name": branch,
        "commit": commit_json(&state.base_url, repo, head, commit),
        "_links": {
            "self": format!("{}/repos/{full_name}/branches/{branch}", state.base_url),
            "html": format!("https://github.com/{full_name}/tree/{branch}"),
        },
        "protected": false,
    });
    ([(header::ETAG, etag_value)], axum::Json(body)).into_response()
}

async fn commits(
    State(shared): State<Arc<Shared>>,
    Path((owner, name)): Path<(String, String)>,
    Query(params): Params,
    headers: HeaderMap,
) -> Response {
    let state = shared.lock();
    let repo = match visible(&state, &headers, &owner, &name) {
        Ok(repo) => repo,
        Err(denied) => return denied.into_response(),
    };
    if repo.branches.is_empty() {
        return gh_error(StatusCode::CONFLICT, "Git Repository is empty.");
    }
    let start = match params.get("sha") {
        Some(reference) => repo
            .branches
            .get(reference)
            .copied()
            .or_else(|| git::from_hex(reference).filter(|oid| repo.commit(oid).is_some())),
        None => repo.head(),
    };
    let Some(start) = start else {
        return gh_error(StatusCode::NOT_FOUND, "No commit found for SHA");
    };
    let mut history = Vec::new();
    let mut next = Some(start);
    while let Some(sha) = next {
        let Some(commit) = repo.commit(&sha) else {
            break;
        };
        history.push((sha, commit));
        next = commit.parent;
    }
    let (per_page, page) = paging(&params);
    let last = history.len().div_ceil(per_page).max(1);
    let items: Vec<Value> = history
        .iter()
        .skip((page - 1).saturating_mul(per_page))
        .take(per_page)
        .map(|(sha, commit)| commit_json(&state.base_url, repo, sha, commit))
        .collect();
    let mut response = axum::Json(Value::Array(items)).into_response();
    let path = format!("/repos/{}/commits", repo.full_name());
    if let Some(link) = link_header(&state.base_url, &path, &params, page, last) {
        response.headers_mut().insert(header::LINK, link);
    }
    response
}

async fn tree(
    State(shared): State<Arc<Shared>>,
    Path((owner, name, reference)): Path<(String, String, String)>,
    Query(params): Params,
    headers: HeaderMap,
) -> Response {
    let state = shared.lock();
    let repo = match visible(&state, &headers, &owner, &name) {
        Ok(repo) => repo,
        Err(denied) => return denied.into_response(),
    };
    // A tree-ish: a tree id, a commit id, or a branch name.
    let oid = repo
        .branches
        .get(&reference)
        .copied()
        .or_else(|| git::from_hex(&reference));
    let tree = match oid.and_then(|oid| repo.objects.get(&oid).map(|o| (oid, o))) {
        Some((oid, Object::Tree(_))) => oid,
        Some((_, Object::Commit(commit))) => commit.tree,
        _ => return not_found(),
    };
    // GitHub treats any value of `recursive` as "recursive".
    let recursive = params.contains_key("recursive");
    let listed = if recursive {
        repo.objects.list_recursive(&tree)
    } else {
        repo.objects.list_flat(&tree)
    };
    let base = format!("{}/repos/{}", state.base_url, repo.full_name());
    let entries: Vec<Value> = listed
        .iter()
        .map(|entry| {
            let sha = git::to_hex(&entry.oid);
            let mut value = json!({
                "path": entry.path,
                "mode": entry.mode.api(),
                "type": entry.mode.kind(),
                "sha": sha,
            });
            match entry.mode.kind() {
                "blob" => {
                    value["size"] = json!(repo.objects.blob_size(&entry.oid).unwrap_or(0));
                    value["url"] = json!(format!("{base}/git/blobs/{sha}"));
                }
                "tree" => value["url"] = json!(format!("{base}/git/trees/{sha}")),
                _ => {}
            }
            value
        })
        .collect();
    let (entries, truncated) = if recursive {
        let max_entries = state.tree_truncation.unwrap_or(RECURSIVE_MAX_ENTRIES);
        let fit = entries_that_fit(&listed, max_entries, RECURSIVE_MAX_BYTES);
        let mut entries = entries;
        entries.truncate(fit);
        (entries, fit < listed.len())
    } else {
        (entries, false)
    };
    let sha = git::to_hex(&tree);
    axum::Json(json!({
        "sha": sha,
        "url": format!("{base}/git/trees/{sha}"),
        "tree": entries,
        "truncated": truncated,
    }))
    .into_response()
}

/// GitHub's limits on one recursive tree read: "The limit for the tree array is 100,000 entries
/// with a maximum size of 7 MB when using the recursive parameter." Past either, the answer lists
/// the first entries only and says `"truncated": true`. Non-recursive reads are not cut. The size
/// is taken as git prints the listing (`git ls-tree -r -t`: mode, type, id, path, one line each),
/// where 100,000 entries of ordinary paths come to about 7 MB: the two limits meet there.
pub(crate) const RECURSIVE_MAX_ENTRIES: usize = 100_000;
pub(crate) const RECURSIVE_MAX_BYTES: usize = 7 * 1024 * 1024;

/// How many of the first entries fit both limits.
pub(crate) fn entries_that_fit(
    listed: &[git::Listed],
    max_entries: usize,
    max_bytes: usize,
) -> usize {
    let mut bytes = 0;
    let mut fit = 0;
    for entry in listed.iter().take(max_entries) {
        // "<mode> <type> <40 hex>\t<path>\n"
        bytes += entry.mode.api().len()
            + 1
            + entry.mode.kind().len()
            + 1
            + 40
            + 1
            + entry.path.len()
            + 1;
        if bytes > max_bytes {
            break;
        }
        fit += 1;
    }
    fit
}

/// Base64 the way GitHub's blob API sends it: a line break after every 60 characters.
fn github_base64(data: &[u8]) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(data);
    let mut out = String::with_capacity(encoded.len() + encoded.len() / 60 + 1);
    for chunk in encoded.as_bytes().chunks(60) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out
}

async fn blob(
    State(shared): State<Arc<Shared>>,
    Path((owner, name, sha)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let state = shared.lock();
    let repo = match visible(&state, &headers, &owner, &name) {
        Ok(repo) => repo,
        Err(denied) => return denied.into_response(),
    };
    let Some((oid, data)) = git::from_hex(&sha).and_then(|oid| match repo.objects.get(&oid) {
        Some(Object::Blob(data)) => Some((oid, data)),
        _ => None,
    }) else {
        return not_found();
    };
    let raw = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| {
            // application/vnd.github.raw, .raw+json, and the older vnd.github.v3.raw.
            accept.split(',').any(|media| {
                let media = media.trim();
                media.starts_with("application/vnd.github") && media.contains(".raw")
            })
        });
    if raw {
        return (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/vnd.github.raw"),
            )],
            data.clone(),
        )
            .into_response();
    }
    let sha = git::to_hex(&oid);
    axum::Json(json!({
        "sha": sha,
        "node_id": format!("B_fake{sha}"),
        "size": data.len(),
        "url": format!("{}/repos/{}/git/blobs/{sha}", state.base_url, repo.full_name()),
        "content": github_base64(data),
        "encoding": "base64",
    }))
    .into_response()
}
