//! A faithful fake of the GitHub REST API surface syncplane uses (see
//! `notes/github-interfaces.md`): App JWT and installation tokens, repositories holding real
//! git objects (ids equal to git's), ETag/304 on branches (ETags scoped to the token that
//! received them, like GitHub's), gzip when asked, Link pagination, tree truncation, rate-limit
//! headers and budget, faults on demand, artificial latency and a request log; and its GraphQL
//! endpoint (`graphql`), with its own points budget and faults.
//!
//! Simplifications, on purpose: one rate-limit budget for the whole fake (App and installation
//! requests alike); a renamed repository's old name answers 404 (GitHub answers 301); pushes
//! always go to the default branch.

mod auth;
pub mod demo;
mod faults;
pub mod git;
mod graphql;
mod graphql_viewer;
mod routes;
mod state;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::Utc;
use hmac::{Hmac, KeyInit, Mac};
use rand::Rng;
use sha2::Sha256;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use faults::Fault;
pub use graphql::{GraphqlFault, MAX_NODE_IDS, sdl as graphql_sdl};

use faults::{FaultRule, Target};
use state::{Installation, Repo, State};

/// One change of a push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A regular file (mode 100644) with this content.
    Put(String, Vec<u8>),
    /// Removes a file (or a whole folder).
    Delete(String),
    /// A symlink (mode 120000) at the path, pointing to the target.
    Symlink(String, String),
    /// A submodule (mode 160000, type "commit") at the path, at this commit sha (hex).
    Submodule(String, String),
    /// An executable file (mode 100755).
    Executable(String, Vec<u8>),
}

/// The agreed endpoints, for faults and the request log.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Endpoint {
    Installation,
    AccessToken,
    InstallationRepos,
    Repo,
    Branch,
    Commits,
    Tree,
    Blob,
    /// `POST /graphql` (or `/api/graphql`).
    Graphql,
    Other,
}

/// One answered request. `status` 0 means it was never answered (a `Fault::Timeout`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedRequest {
    pub method: String,
    /// Path with query string.
    pub path: String,
    pub endpoint: Endpoint,
    pub status: u16,
    /// Response body bytes (before content encoding).
    pub bytes: u64,
    /// Body bytes as sent: gzipped when the request accepted gzip.
    pub wire_bytes: u64,
}

pub(crate) struct Shared {
    state: Mutex<State>,
    shutdown: watch::Receiver<bool>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock must not hide its own failure.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct Server {
    shared: Arc<Shared>,
    url: String,
    task: JoinHandle<()>,
    stop: watch::Sender<bool>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.task.abort();
    }
}

/// The fake GitHub server. Cheap to clone; the server stops when the last clone is dropped.
#[derive(Clone)]
pub struct FakeGithub {
    inner: Arc<Server>,
}

/// Path of the App's private key file (the committed test key the fake trusts).
pub fn app_key_path() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/keys/app.pem")
}

/// `X-Hub-Signature-256` for a webhook body: "sha256=<hex HMAC-SHA256>".
pub fn sign_webhook(secret: &str, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

impl FakeGithub {
    /// Starts on 127.0.0.1 with a free port and a fresh App id.
    pub async fn start() -> FakeGithub {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Starts on a given address (the local demo uses a fixed port).
    pub async fn start_on(addr: SocketAddr) -> FakeGithub {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .unwrap_or_else(|e| panic!("fake GitHub: cannot bind {addr}: {e}"));
        let local = listener
            .local_addr()
            .expect("bound listener has an address");
        let url = format!("http://{local}");
        let app_id = rand::rng().random_range(100_000..1_000_000);
        let mut state = State::new(app_id, Utc::now().timestamp());
        state.base_url = url.clone();
        let (stop, shutdown) = watch::channel(false);
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            shutdown,
        });
        let app = routes::router(shared.clone());
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "fake GitHub server stopped");
            }
        });
        FakeGithub {
            inner: Arc::new(Server {
                shared,
                url,
                task,
                stop,
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.shared.lock()
    }

    /// Base URL without a trailing slash, e.g. "http://127.0.0.1:41234".
    pub fn url(&self) -> String {
        self.inner.url.clone()
    }

    pub fn app_id(&self) -> u64 {
        self.state().app_id
    }

    /// The App's private key (PKCS#1 PEM).
    pub fn private_key_pem(&self) -> String {
        auth::APP_PRIVATE_KEY.to_owned()
    }

    /// A well-formed RSA key (PKCS#1 PEM) this fake does not trust.
    pub fn untrusted_private_key_pem() -> String {
        auth::OTHER_PRIVATE_KEY.to_owned()
    }

    /// Stops serving now (also happens when the last clone is dropped).
    pub fn stop(&self) {
        let _ = self.inner.stop.send(true);
        self.inner.task.abort();
    }

    pub fn add_installation(&self, account: &str) -> u64 {
        let id = {
            let mut state = self.state();
            let id = state.next_installation_id;
            state.next_installation_id += 1;
            id
        };
        self.add_installation_with_id(account, id)
    }

    /// An installation with a fixed id (the demo's, which the events/ samples name).
    pub fn add_installation_with_id(&self, account: &str, id: u64) -> u64 {
        let mut state = self.state();
        state.installations.insert(
            id,
            Installation {
                id,
                account: account.to_owned(),
                created_at: Utc::now(),
                suspended_at: None,
                deleted: false,
            },
        );
        id
    }

    /// Adds a private repository on branch "main" holding `files` in one initial commit;
    /// no files = an empty repository (no commits). Returns its GitHub id.
    pub fn add_repo(&self, installation_id: u64, full_name: &str, files: &[(&str, &[u8])]) -> u64 {
        let (owner, name) = state::split_full_name(full_name);
        let mut state = self.state();
        state.installation_mut(installation_id);
        assert!(
            state.repo_id(owner, name).is_none(),
            "fake GitHub: {full_name} exists already"
        );
        let id = state.next_repo_id;
        state.next_repo_id += 1;
        let now = Utc::now();
        let mut repo = Repo {
            id,
            owner: owner.to_owned(),
            name: name.to_owned(),
            installation_id: Some(installation_id),
            private: true,
            archived: false,
            deleted: false,
            description: None,
            default_branch: "main".to_owned(),
            branches: Default::default(),
            objects: Default::default(),
            created_at: now,
            pushed_at: None,
            commits: 0,
            size_bytes: 0,
        };
        if !files.is_empty() {
            let changes: Vec<Change> = files
                .iter()
                .map(|(path, data)| Change::Put((*path).to_owned(), data.to_vec()))
                .collect();
            repo.push(&changes, Some("Initial commit"), now);
        }
        state.repos.insert(id, repo);
        id
    }

    /// [`add_repo`](Self::add_repo) for generated (owned) contents.
    pub fn add_repo_owned(
        &self,
        installation_id: u64,
        full_name: &str,
        files: &[(String, Vec<u8>)],
    ) -> u64 {
        let files: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_slice()))
            .collect();
        self.add_repo(installation_id, full_name, &files)
    }

    /// A client configuration for this fake's App and `installation_id` (no rate-limit wait).
    pub fn app_config(&self, installation_id: u64) -> shared::config::GithubAppConfig {
        shared::config::GithubAppConfig {
            api_url: self.url().parse().expect("the fake's URL parses"),
            graphql_url: None,
            app_id: self.app_id(),
            private_key_pem: shared::config::Secret::new(self.private_key_pem()),
            installation_id,
            rate_limit_wait_budget_secs: 0,
        }
    }

    /// The environment variables that point the CLI or a function at this fake's App and
    /// `installation` (as a process reads them; `DATABASE_URL` and the rest are the caller's).
    pub fn app_env(&self, installation_id: u64) -> Vec<(&'static str, String)> {
        vec![
            ("GITHUB_API_URL", self.url()),
            ("GITHUB_APP_ID", self.app_id().to_string()),
            ("GITHUB_INSTALLATION_ID", installation_id.to_string()),
            ("GITHUB_APP_PRIVATE_KEY", self.private_key_pem()),
        ]
    }

    /// A new commit on the default branch (parent: the previous head). Returns its sha.
    pub fn push(&self, full_name: &str, changes: &[Change]) -> String {
        let commit = self
            .state()
            .repo_mut(full_name)
            .push(changes, None, Utc::now());
        git::to_hex(&commit)
    }

    /// Head commit sha of a branch, if it exists.
    pub fn branch_head(&self, full_name: &str, branch: &str) -> Option<String> {
        self.state()
            .repo_mut(full_name)
            .branches
            .get(branch)
            .map(git::to_hex)
    }

    /// The root tree sha at the default branch's head, if the repository has commits.
    pub fn head_tree(&self, full_name: &str) -> Option<String> {
        let mut state = self.state();
        let repo = state.repo_mut(full_name);
        let head = repo.head()?;
        repo.commit(&head).map(|c| git::to_hex(&c.tree))
    }

    /// The old name stops answering (GitHub would redirect it with 301).
    pub fn rename_repo(&self, full_name: &str, new_full_name: &str) {
        let (owner, name) = state::split_full_name(new_full_name);
        let mut state = self.state();
        let repo = state.repo_mut(full_name);
        repo.owner = owner.to_owned();
        repo.name = name.to_owned();
    }

    pub fn set_archived(&self, full_name: &str, archived: bool) {
        self.state().repo_mut(full_name).archived = archived;
    }

    pub fn set_private(&self, full_name: &str, private: bool) {
        self.state().repo_mut(full_name).private = private;
    }

    pub fn set_description(&self, full_name: &str, description: Option<&str>) {
        self.state().repo_mut(full_name).description = description.map(str::to_owned);
    }

    pub fn delete_repo(&self, full_name: &str) {
        self.state().repo_mut(full_name).deleted = true;
    }

    /// The installation no longer sees the repository (it still exists on GitHub).
    pub fn remove_from_installation(&self, full_name: &str) {
        self.state().repo_mut(full_name).installation_id = None;
    }

    /// Gives the repository to an installation (again).
    pub fn add_to_installation(&self, installation_id: u64, full_name: &str) {
        let mut state = self.state();
        state.installation_mut(installation_id);
        state.repo_mut(full_name).installation_id = Some(installation_id);
    }

    pub fn set_suspended(&self, installation_id: u64, suspended: bool) {
        self.state().installation_mut(installation_id).suspended_at = suspended.then(Utc::now);
    }

    /// Revokes every token of the installation (GitHub's `DELETE /installation/token`): the next
    /// request with one of them gets 401 Bad credentials.
    pub fn revoke_tokens(&self, installation_id: u64) {
        self.state()
            .tokens
            .retain(|_, token| token.installation_id != installation_id);
    }

    /// Tokens minted for the installation so far that are still valid.
    pub fn live_tokens(&self, installation_id: u64) -> usize {
        let now = Utc::now();
        self.state()
            .tokens
            .values()
            .filter(|t| t.installation_id == installation_id && t.expires_at > now)
            .count()
    }

    /// Deleting an installation also revokes its tokens.
    pub fn delete_installation(&self, installation_id: u64) {
        let mut state = self.state();
        state.installation_mut(installation_id).deleted = true;
        state
            .tokens
            .retain(|_, token| token.installation_id != installation_id);
    }

    /// Creates the branch at the current head if absent (nothing to point at in an empty repo).
    pub fn set_default_branch(&self, full_name: &str, branch: &str) {
        let mut state = self.state();
        let repo = state.repo_mut(full_name);
        if let Some(head) = repo.head() {
            repo.branches.entry(branch.to_owned()).or_insert(head);
        }
        repo.default_branch = branch.to_owned();
    }

    pub fn set_tree_truncation(&self, max_entries: Option<usize>) {
        self.state().tree_truncation = max_entries;
    }

    pub fn set_latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    pub fn set_token_ttl(&self, ttl: Duration) {
        self.state().token_ttl = ttl;
    }

    pub fn set_rate_limit(&self, limit: u32, remaining: u32, reset_in: Duration) {
        let mut state = self.state();
        state.rate.limit = limit;
        state.rate.remaining = remaining.min(limit);
        state.rate.reset_at = state.rate_now() + reset_in.as_secs_f64().ceil() as i64;
    }

    pub fn rate_limit_remaining(&self) -> u32 {
        let mut state = self.state();
        let now = state.rate_now();
        state.rate.refresh(now);
        state.rate.remaining
    }

    /// Move the rate-limit clock `by` ahead (whole seconds, rounded up): budgets whose reset
    /// falls inside reset at the next request, as if the time had passed. Token lifetimes and
    /// App JWTs keep the wall clock (the client under test signs with it).
    pub fn advance_rate_clock(&self, by: Duration) {
        self.state().rate_clock_ahead += by.as_secs_f64().ceil() as i64;
    }

    /// Arm a GraphQL fault for the next `times` queries (`None`: until cleared).
    pub fn graphql_fault(&self, fault: GraphqlFault, times: Option<u32>) {
        if times == Some(0) {
            return;
        }
        self.state().graphql_faults.push(graphql::GraphqlFaultRule {
            fault,
            remaining: times,
        });
    }

    /// The GraphQL points budget (separate from REST's).
    pub fn set_graphql_rate_limit(&self, limit: u32, remaining: u32, reset_in: Duration) {
        let mut state = self.state();
        state.graphql_rate.limit = limit;
        state.graphql_rate.remaining = remaining.min(limit);
        state.graphql_rate.reset_at = state.rate_now() + reset_in.as_secs_f64().ceil() as i64;
    }

    pub fn graphql_points_remaining(&self) -> u32 {
        let mut state = self.state();
        let now = state.rate_now();
        state.graphql_rate.refresh(now);
        state.graphql_rate.remaining
    }

    /// The node id the listing gives a repository (GraphQL resolves it).
    /// Leave a repository out of `viewer.repositories` (an incomplete listing; REST still lists
    /// it), or put it back.
    pub fn hide_from_viewer_listing(&self, full_name: &str, hidden: bool) {
        let mut state = self.state();
        let id = state.repo_mut(full_name).id;
        if hidden {
            state.viewer_hides.insert(id);
        } else {
            state.viewer_hides.remove(&id);
        }
    }

    pub fn node_id(&self, full_name: &str) -> String {
        format!("R_fake{}", self.state().repo_mut(full_name).id)
    }

    pub fn fault(&self, endpoint: Endpoint, fault: Fault, times: Option<u32>) {
        self.arm(Target::Endpoint(endpoint), fault, times);
    }

    pub fn fault_on_path(&self, path_contains: &str, fault: Fault, times: Option<u32>) {
        self.arm(Target::PathContains(path_contains.to_owned()), fault, times);
    }

    fn arm(&self, target: Target, fault: Fault, times: Option<u32>) {
        if times == Some(0) {
            return;
        }
        self.state().faults.push(FaultRule {
            target,
            fault,
            remaining: times,
        });
    }

    pub fn clear_faults(&self) {
        let mut state = self.state();
        state.faults.clear();
        state.graphql_faults.clear();
    }

    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.state().log.clone()
    }

    pub fn count(&self, endpoint: Endpoint) -> usize {
        self.state()
            .log
            .iter()
            .filter(|r| r.endpoint == endpoint)
            .count()
    }

    pub fn total_requests(&self) -> usize {
        self.state().log.len()
    }

    /// Body bytes sent, before content encoding (what a client counts after decoding).
    pub fn bytes_sent(&self) -> u64 {
        self.state().log.iter().map(|r| r.bytes).sum()
    }

    /// Body bytes sent on the wire (gzipped where the request accepted gzip).
    pub fn wire_bytes_sent(&self) -> u64 {
        self.state().log.iter().map(|r| r.wire_bytes).sum()
    }

    /// Clears the request log and the in-flight maxima.
    pub fn reset_log(&self) {
        let mut state = self.state();
        state.log.clear();
        state.max_in_flight.clear();
    }

    /// The most requests of `endpoint` answered at once since the last [`reset_log`](Self::reset_log).
    pub fn max_in_flight(&self, endpoint: Endpoint) -> usize {
        self.state()
            .max_in_flight
            .get(&endpoint)
            .copied()
            .unwrap_or(0)
    }

    pub fn token_exchanges(&self) -> usize {
        self.count(Endpoint::AccessToken)
    }

    /// Every installation token issued so far (secrets a log must never show).
    pub fn issued_tokens(&self) -> Vec<String> {
        self.state().tokens.keys().cloned().collect()
    }

    /// What `git hash-object` prints for this content.
    pub fn blob_sha(content: &[u8]) -> String {
        git::to_hex(&git::hash_object("blob", content))
    }
}
