//! `GithubClient`: one GitHub App installation, spoken to over GitHub's REST API.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use http::header::{ETAG, LINK};
use http::{Method, StatusCode};
use tokio::sync::watch;
use tracing::{debug, info, warn};
use url::Url;

use super::error::{AuthKind, Failure, GithubError, classify};
use super::jwt::AppSigner;
use super::model::{
    HeadCheck, Installation, RawAccessToken, RawBranch, RawInstallation, RawInstallationRepos,
    RawRepo, RawTree, RepoInfo, Tree, verify_blob,
};
use super::pagination::next_link;
use super::rate_limit::{Decision, RateLimit, RateLimitHit, decide};
use super::token::{CachedToken, DEFAULT_REFRESH_MARGIN, IssuedToken, TokenSlot};
use super::token_store::TokenStore;
use super::transport::{Call, RAW, Reply, Transport, Waits, decode, expect_status, is_pass};
use super::urls;
use super::usage::{RequestKind, Usage};
use syncplane_core::config::{GithubAppConfig, Secret};

/// Tunables; the defaults suit production, tests shorten them.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Whole request, body included.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// Renew the installation token when less than this remains of its life.
    pub token_refresh_margin: Duration,
    /// Page size of the installation listing (GitHub caps it at 100).
    pub per_page: u32,
    /// A listing longer than this many pages is refused as `Decode` (a server looping on `next`).
    pub max_pages: u32,
    /// With a shared token store: how long to wait for another process that is minting the
    /// installation token before minting one for this process only.
    pub token_lock_wait: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            token_refresh_margin: DEFAULT_REFRESH_MARGIN,
            per_page: 100,
            max_pages: 1000,
            token_lock_wait: Duration::from_secs(10),
        }
    }
}

/// One GitHub App installation. Cheap to clone; clones share the token, counters and abort flag.
#[derive(Clone)]
pub struct GithubClient {
    inner: Arc<Inner>,
}

struct Inner {
    /// The HTTP round trips, with what they sent and received.
    transport: Transport,
    base: Url,
    /// The GraphQL endpoint (`GITHUB_GRAPHQL_URL`, else derived from the REST base).
    graphql: Url,
    installation_id: u64,
    signer: AppSigner,
    rate_limit_budget: Duration,
    options: ClientOptions,
    token: TokenSlot,
    /// The installation token shared with the tenant's other processes; `None`: this process's own.
    store: Option<TokenStore>,
    token_generation: AtomicU64,
    aborted: watch::Sender<bool>,
}

impl std::fmt::Debug for GithubClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GithubClient")
            .field("base", &self.inner.base.as_str())
            .field("installation_id", &self.inner.installation_id)
            .finish_non_exhaustive()
    }
}

impl GithubClient {
    pub fn new(config: &GithubAppConfig) -> Result<Self, GithubError> {
        Self::with_options(config, ClientOptions::default())
    }

    pub fn with_options(
        config: &GithubAppConfig,
        options: ClientOptions,
    ) -> Result<Self, GithubError> {
        Self::build(config, options, None)
    }

    /// A client whose installation token is shared, through the tenant's database, with every
    /// other process of the tenant (so ETags stored by one answer 304 for the others).
    pub fn with_token_store(
        config: &GithubAppConfig,
        options: ClientOptions,
        pool: sqlx::PgPool,
    ) -> Result<Self, GithubError> {
        Self::build(config, options, Some(pool))
    }

    fn build(
        config: &GithubAppConfig,
        options: ClientOptions,
        pool: Option<sqlx::PgPool>,
    ) -> Result<Self, GithubError> {
        let signer = AppSigner::new(config.app_id, config.private_key_pem.expose())?;
        let mut base = config.api_url.clone();
        base.set_query(None);
        base.set_fragment(None);
        if base.cannot_be_a_base() {
            return Err(GithubError::Transport);
        }
        let store = pool.map(|pool| {
            TokenStore::new(
                pool,
                config.private_key_pem.expose(),
                base.as_str(),
                config.app_id,
                config.installation_id,
                options.token_lock_wait,
            )
        });
        let graphql = config
            .graphql_url
            .clone()
            .unwrap_or_else(|| urls::graphql_url_for(&base));
        let (aborted, _) = watch::channel(false);
        Ok(Self {
            inner: Arc::new(Inner {
                transport: Transport::new(options.request_timeout, options.connect_timeout),
                base,
                graphql,
                installation_id: config.installation_id,
                signer,
                rate_limit_budget: Duration::from_secs(config.rate_limit_wait_budget_secs),
                options,
                token: TokenSlot::default(),
                store,
                token_generation: AtomicU64::new(0),
                aborted,
            }),
        })
    }

    /// `GET /app/installations/{id}` with the App JWT. A suspended installation is returned with
    /// `suspended: true` (see `Installation::require_active`); a deleted one is
    /// `InstallationUnavailable`.
    pub async fn installation(&self) -> Result<Installation, GithubError> {
        self.abortable(async {
            let id = self.inner.installation_id.to_string();
            let url = self.endpoint(&["app", "installations", &id])?;
            let reply = self.app_call(&Call::get(url)).await?;
            expect_status(&reply, StatusCode::OK)?;
            let raw: RawInstallation = decode(&reply.body)?;
            Ok(Installation {
                id: raw.id,
                account: raw.account.map(|a| a.login).unwrap_or_default(),
                suspended: raw.suspended_at.is_some(),
            })
        })
        .await
    }

    /// Every repository the installation can access, following `Link: rel="next"` to the end.
    pub async fn list_installation_repos(&self) -> Result<Vec<RepoInfo>, GithubError> {
        self.abortable(async {
            let mut url = self.endpoint(&["installation", "repositories"])?;
            url.query_pairs_mut()
                .append_pair("per_page", &self.inner.options.per_page.to_string());
            let mut repos = Vec::new();
            let mut pages = 0u32;
            loop {
                pages += 1;
                if pages > self.inner.options.max_pages {
                    warn!(pages, "installation listing did not end");
                    return Err(GithubError::Decode);
                }
                let reply = self.installation_call(&Call::get(url.clone())).await?;
                expect_status(&reply, StatusCode::OK)?;
                let page: RawInstallationRepos = decode(&reply.body)?;
                repos.extend(page.repositories.into_iter().map(RepoInfo::from));
                let next = reply
                    .headers
                    .get(LINK)
                    .and_then(|v| v.to_str().ok())
                    .and_then(next_link);
                match next {
                    None => return Ok(repos),
                    Some(next) => url = self.same_origin(&next, &url)?,
                }
            }
        })
        .await
    }

    /// How many repositories the installation can access, from the REST listing's
    /// `total_count` (one page of one): what `viewer.repositories` is checked against.
    pub async fn installation_repo_count(&self) -> Result<u64, GithubError> {
        self.abortable(async {
            let mut url = self.endpoint(&["installation", "repositories"])?;
            url.query_pairs_mut().append_pair("per_page", "1");
            let reply = self.installation_call(&Call::get(url)).await?;
            expect_status(&reply, StatusCode::OK)?;
            let page: RawInstallationRepos = decode(&reply.body)?;
            page.total_count.ok_or(GithubError::Decode)
        })
        .await
    }

    /// The installation this client acts for.
    pub fn installation_id(&self) -> u64 {
        self.inner.installation_id
    }

    /// Pages a listing may take before it is taken to be endless.
    pub(crate) fn max_pages(&self) -> u32 {
        self.inner.options.max_pages
    }

    pub async fn repo(&self, owner: &str, name: &str) -> Result<RepoInfo, GithubError> {
        self.abortable(async {
            let url = self.endpoint(&["repos", owner, name])?;
            let reply = self.installation_call(&Call::get(url)).await?;
            expect_status(&reply, StatusCode::OK)?;
            let raw: RawRepo = decode(&reply.body)?;
            Ok(RepoInfo::from(raw))
        })
        .await
    }

    /// The branch head, conditional on `etag`: a 304 (which costs no rate limit) is
    /// `HeadCheck::NotModified`.
    pub async fn branch_head(
        &self,
        owner: &str,
        name: &str,
        branch: &str,
        etag: Option<&str>,
    ) -> Result<HeadCheck, GithubError> {
        self.abortable(async {
            // A branch name may contain '/': each part is its own path segment.
            let mut segments = vec!["repos", owner, name, "branches"];
            segments.extend(branch.split('/'));
            let url = self.endpoint(&segments)?;
            let call = Call {
                if_none_match: etag.map(str::to_owned),
                passthrough: if etag.is_some() { &[304] } else { &[] },
                ..Call::get(url)
            };
            let reply = self.installation_call(&call).await?;
            if reply.status == StatusCode::NOT_MODIFIED {
                return Ok(HeadCheck::NotModified);
            }
            expect_status(&reply, StatusCode::OK)?;
            let raw: RawBranch = decode(&reply.body)?;
            Ok(HeadCheck::Head {
                commit_sha: raw.commit.sha,
                tree_sha: raw.commit.commit.tree.sha,
                etag: reply
                    .headers
                    .get(ETAG)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
            })
        })
        .await
    }

    /// Whether the repository has no commits at all (GitHub answers 409 for its commits), which
    /// tells an empty repository from a missing branch.
    pub async fn is_empty_repository(&self, owner: &str, name: &str) -> Result<bool, GithubError> {
        self.abortable(async {
            let mut url = self.endpoint(&["repos", owner, name, "commits"])?;
            url.query_pairs_mut().append_pair("per_page", "1");
            let call = Call {
                passthrough: &[409],
                ..Call::get(url)
            };
            let reply = self.installation_call(&call).await?;
            if reply.status == StatusCode::CONFLICT {
                return Ok(true);
            }
            expect_status(&reply, StatusCode::OK)?;
            Ok(false)
        })
        .await
    }

    /// The recursive tree, with GitHub's `truncated` flag.
    pub async fn tree(&self, owner: &str, name: &str, tree_sha: &str) -> Result<Tree, GithubError> {
        self.read_tree(owner, name, tree_sha, true).await
    }

    /// One tree's own entries (not recursive): GitHub does not cut these at its recursive
    /// limit of 100,000 entries / 7 MB, so a large monorepo's root can be read this way.
    pub async fn tree_level(
        &self,
        owner: &str,
        name: &str,
        tree_sha: &str,
    ) -> Result<Tree, GithubError> {
        self.read_tree(owner, name, tree_sha, false).await
    }

    async fn read_tree(
        &self,
        owner: &str,
        name: &str,
        tree_sha: &str,
        recursive: bool,
    ) -> Result<Tree, GithubError> {
        self.abortable(async {
            let mut url = self.endpoint(&["repos", owner, name, "git", "trees", tree_sha])?;
            if recursive {
                url.query_pairs_mut().append_pair("recursive", "1");
            }
            let reply = self.installation_call(&Call::get(url)).await?;
            expect_status(&reply, StatusCode::OK)?;
            Tree::try_from(decode::<RawTree>(&reply.body)?)
        })
        .await
    }

    /// A blob's raw bytes, checked against the requested SHA (a mismatch is `Decode`).
    pub async fn blob(&self, owner: &str, name: &str, sha: &str) -> Result<Bytes, GithubError> {
        self.abortable(async {
            let url = self.endpoint(&["repos", owner, name, "git", "blobs", sha])?;
            let call = Call {
                accept: RAW,
                ..Call::get(url)
            };
            let reply = self.installation_call(&call).await?;
            expect_status(&reply, StatusCode::OK)?;
            verify_blob(sha, &reply.body).inspect_err(|_| {
                warn!(
                    repo = %format!("{owner}/{name}"),
                    sha,
                    bytes = reply.body.len(),
                    "blob bytes do not hash to the requested sha"
                );
            })?;
            Ok(reply.body)
        })
        .await
    }

    /// HTTP requests sent by this client (and its clones), token exchanges included.
    pub fn requests_made(&self) -> u64 {
        self.inner.transport.requests()
    }

    /// Requests by kind and rate-limit units spent so far by this client (and its clones); a
    /// run reports the difference between two readings ([`Usage::since`]).
    pub fn usage(&self) -> Usage {
        self.inner.transport.usage.read()
    }

    /// Body bytes received (after content decoding).
    pub fn bytes_received(&self) -> u64 {
        self.inner.transport.bytes()
    }

    /// The last rate-limit headers seen.
    pub fn rate_limit(&self) -> Option<RateLimit> {
        self.inner.transport.rate_limit()
    }

    /// Every pending and later call fails with `GithubError::Aborted`.
    pub fn abort(&self) {
        self.inner.aborted.send_replace(true);
    }

    pub fn is_aborted(&self) -> bool {
        *self.inner.aborted.borrow()
    }

    // -----------------------------------------------------------------------------------------

    pub(super) fn graphql_url(&self) -> &Url {
        &self.inner.graphql
    }

    /// Race `work` against the abort flag.
    pub(super) async fn abortable<T>(
        &self,
        work: impl Future<Output = Result<T, GithubError>>,
    ) -> Result<T, GithubError> {
        let mut flag = self.inner.aborted.subscribe();
        if *flag.borrow_and_update() {
            return Err(GithubError::Aborted);
        }
        tokio::select! {
            biased;
            // The sender lives in `self`, so `wait_for` only returns once the flag is set.
            _ = flag.wait_for(|aborted| *aborted) => Err(GithubError::Aborted),
            result = work => result,
        }
    }

    /// `base` + segments, whether or not the base ends in '/' or has a path prefix
    /// (GitHub Enterprise's `/api/v3`). Segments are percent-encoded.
    fn endpoint(&self, segments: &[&str]) -> Result<Url, GithubError> {
        urls::endpoint(&self.inner.base, segments)
    }

    /// A `rel="next"` target, accepted only on the API's own origin: the installation token
    /// must never be sent elsewhere.
    fn same_origin(&self, next: &str, current: &Url) -> Result<Url, GithubError> {
        urls::same_origin(&self.inner.base, next, current)
    }

    /// A call authenticated with the App JWT, rate limits waited out within the budget.
    async fn app_call(&self, call: &Call) -> Result<Reply, GithubError> {
        let mut waits = Waits::default();
        loop {
            let jwt = Secret::new(self.inner.signer.sign()?);
            let reply = self
                .inner
                .transport
                .send_once(call, &format!("Bearer {}", jwt.expose()))
                .await?;
            if is_pass(call, reply.status) {
                return Ok(reply);
            }
            match self.classify(&reply, AuthKind::App) {
                Failure::RateLimit(hit) => self.wait_out(&hit, &mut waits).await?,
                Failure::TokenRefused => return Err(GithubError::BadCredentials),
                Failure::Error(e) => return Err(e),
            }
        }
    }

    /// A call authenticated with the installation token: rate limits waited out within the
    /// budget; a refused token is exchanged afresh once, then `Unauthorized`.
    pub(super) async fn installation_call(&self, call: &Call) -> Result<Reply, GithubError> {
        let mut waits = Waits::default();
        let mut exchanged_after_refusal = false;
        loop {
            let token = self.installation_token().await?;
            let reply = self
                .inner
                .transport
                .send_once(call, &format!("token {}", token.token.value.expose()))
                .await?;
            if is_pass(call, reply.status) {
                self.charge_rest(call, reply.status);
                return Ok(reply);
            }
            let failure = self.classify(&reply, AuthKind::Installation);
            if !matches!(failure, Failure::RateLimit(_)) {
                self.charge_rest(call, reply.status);
            }
            match failure {
                Failure::RateLimit(hit) => self.wait_out(&hit, &mut waits).await?,
                Failure::TokenRefused if !exchanged_after_refusal => {
                    info!("installation token refused; exchanging a fresh one");
                    self.forget_token(token.generation).await;
                    exchanged_after_refusal = true;
                }
                Failure::TokenRefused => return Err(GithubError::Unauthorized),
                Failure::Error(e) => return Err(e),
            }
        }
    }

    /// A REST answer to an installation token spends one unit of the installation's core
    /// budget, except a 304 (GitHub does not charge it) and a rate-limit refusal.
    fn charge_rest(&self, call: &Call, status: StatusCode) {
        if call.kind == RequestKind::Rest && status != StatusCode::NOT_MODIFIED {
            self.inner.transport.usage.charge(RequestKind::Rest, 1);
        }
    }

    /// GraphQL points a query cost (read from its `rateLimit { cost }`).
    pub(super) fn charge_graphql(&self, points: u64) {
        self.inner
            .transport
            .usage
            .charge(RequestKind::Graphql, points);
    }

    fn classify(&self, reply: &Reply, auth: AuthKind) -> Failure {
        classify(reply.status, &reply.headers, &reply.body, auth, Utc::now())
    }

    /// Sleep through a rate limit when it fits the budget; otherwise fail with the retry time.
    pub(super) async fn wait_out(
        &self,
        hit: &RateLimitHit,
        waits: &mut Waits,
    ) -> Result<(), GithubError> {
        match decide(hit, waits.waited, waits.count, self.inner.rate_limit_budget) {
            Decision::Wait(wait) => {
                info!(
                    wait_ms = wait.as_millis() as u64,
                    secondary = hit.secondary,
                    "waiting out a GitHub rate limit"
                );
                tokio::time::sleep(wait).await;
                waits.waited += wait;
                waits.count += 1;
                Ok(())
            }
            Decision::Fail => {
                warn!(
                    retry_at = %hit.retry_at,
                    secondary = hit.secondary,
                    "GitHub rate limit exhausted beyond the wait budget"
                );
                Err(GithubError::RateLimited {
                    retry_at: hit.retry_at,
                    secondary: hit.secondary,
                })
            }
        }
    }

    /// The cached installation token; when missing or near expiry, the shared one (if a store is
    /// configured and its token is usable) or a fresh exchange. Concurrent callers share one
    /// acquisition (the slot's lock is held across it).
    async fn installation_token(&self) -> Result<CachedToken, GithubError> {
        let mut slot = self.inner.token.slot.lock().await;
        let margin = self.inner.options.token_refresh_margin;
        if let Some(cached) = slot.current.as_ref()
            && !cached.token.needs_renewal(Utc::now(), margin)
        {
            return Ok(cached.clone());
        }
        let token = match &self.inner.store {
            None => self.exchange_token().await?,
            Some(store) => {
                let refused = slot.refused.as_ref();
                let usable = |t: &IssuedToken| {
                    !t.needs_renewal(Utc::now(), margin) && !refused.is_some_and(|r| t.is(r))
                };
                store
                    .obtain(usable, async || self.exchange_token().await)
                    .await?
            }
        };
        let generation = self.inner.token_generation.fetch_add(1, Ordering::Relaxed) + 1;
        let fresh = CachedToken { token, generation };
        slot.current = Some(fresh.clone());
        slot.refused = None;
        Ok(fresh)
    }

    /// Drop the cached token if it is still the one that was refused, and remember it so the
    /// shared store does not hand it out again.
    async fn forget_token(&self, generation: u64) {
        let mut slot = self.inner.token.slot.lock().await;
        if slot
            .current
            .as_ref()
            .is_some_and(|t| t.generation == generation)
        {
            slot.refused = slot.current.take().map(|t| t.token.value);
        }
    }

    /// `POST /app/installations/{id}/access_tokens` with the App JWT.
    async fn exchange_token(&self) -> Result<IssuedToken, GithubError> {
        let id = self.inner.installation_id.to_string();
        let url = self.endpoint(&["app", "installations", &id, "access_tokens"])?;
        let call = Call {
            method: Method::POST,
            ..Call::get(url)
        };
        let reply = self.app_call(&call).await?;
        expect_status(&reply, StatusCode::CREATED)?;
        let raw: RawAccessToken = decode(&reply.body)?;
        debug!(expires_at = %raw.expires_at, "installation token exchanged");
        Ok(IssuedToken {
            value: Secret::new(raw.token),
            expires_at: raw.expires_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(api_url: &str) -> GithubClient {
        let pem = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/keys/app.pem"
        ))
        .unwrap();
        GithubClient::new(&GithubAppConfig {
            api_url: Url::parse(api_url).unwrap(),
            app_id: 1,
            private_key_pem: Secret::new(pem),
            installation_id: 7,
            rate_limit_wait_budget_secs: 60,
            graphql_url: None,
        })
        .unwrap()
    }

    #[test]
    fn paths_join_onto_the_base_with_or_without_a_trailing_slash_or_prefix() {
        for (base, expected) in [
            ("https://api.github.com", "https://api.github.com/repos/o/r"),
            (
                "https://api.github.com/",
                "https://api.github.com/repos/o/r",
            ),
            (
                "https://ghe.example.com/api/v3",
                "https://ghe.example.com/api/v3/repos/o/r",
            ),
            (
                "https://ghe.example.com/api/v3/",
                "https://ghe.example.com/api/v3/repos/o/r",
            ),
        ] {
            assert_eq!(
                client(base)
                    .endpoint(&["repos", "o", "r"])
                    .unwrap()
                    .as_str(),
                expected
            );
        }
    }

    #[test]
    fn path_parts_are_encoded_and_cannot_navigate() {
        let c = client("https://ghe.example.com/api/v3/");
        let url = c
            .endpoint(&["repos", "o", "r", "branches", "feature", "a b#c"])
            .unwrap();
        assert_eq!(
            url.as_str(),
            "https://ghe.example.com/api/v3/repos/o/r/branches/feature/a%20b%23c"
        );
        assert_eq!(
            c.endpoint(&["repos", "..", "r"]).unwrap_err(),
            GithubError::NotFound
        );
        assert_eq!(
            c.endpoint(&["repos", "o", ""]).unwrap_err(),
            GithubError::NotFound
        );
    }

    #[test]
    fn pagination_links_stay_on_the_api_origin() {
        let c = client("https://ghe.example.com/api/v3");
        let current =
            Url::parse("https://ghe.example.com/api/v3/installation/repositories?page=1").unwrap();
        assert!(
            c.same_origin(
                "https://ghe.example.com/api/v3/installation/repositories?page=2",
                &current
            )
            .is_ok()
        );
        assert_eq!(
            c.same_origin("https://evil.example.com/steal?page=2", &current)
                .unwrap_err(),
            GithubError::Decode
        );
        assert_eq!(
            c.same_origin(current.as_str(), &current).unwrap_err(),
            GithubError::Decode,
            "a next link to the same page would loop"
        );
    }

    /// Accepts one connection, records the request head, answers `body` with 200.
    async fn capture_one(body: &'static str) -> (String, tokio::task::JoinHandle<String>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).await.unwrap();
                assert!(n > 0, "connection closed before the request head ended");
                head.extend_from_slice(&buf[..n]);
            }
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(answer.as_bytes()).await.unwrap();
            String::from_utf8(head).unwrap()
        });
        (format!("http://{addr}/api/v3"), task)
    }

    #[tokio::test]
    async fn requests_carry_githubs_headers_under_the_enterprise_prefix() {
        let (base, server) =
            capture_one(r#"{"id":7,"account":{"login":"acme"},"suspended_at":null}"#).await;
        let c = client(&base);
        let installation = c.installation().await.unwrap();
        assert_eq!(installation.account, "acme");
        let head = server.await.unwrap().to_ascii_lowercase();
        assert!(
            head.starts_with("get /api/v3/app/installations/7 http/1.1\r\n"),
            "{head}"
        );
        assert!(head.contains("accept: application/vnd.github+json\r\n"));
        assert!(head.contains("x-github-api-version: 2022-11-28\r\n"));
        assert!(head.contains(&format!(
            "user-agent: syncplane/{}\r\n",
            env!("CARGO_PKG_VERSION")
        )));
        assert!(head.contains("authorization: bearer ey"), "the App JWT");
        assert_eq!(c.requests_made(), 1);
    }

    #[tokio::test]
    async fn an_aborted_client_fails_every_call_without_a_request() {
        let c = client("http://127.0.0.1:9");
        c.abort();
        assert_eq!(c.repo("o", "r").await.unwrap_err(), GithubError::Aborted);
        assert_eq!(c.installation().await.unwrap_err(), GithubError::Aborted);
        assert_eq!(c.requests_made(), 0);
    }
}
