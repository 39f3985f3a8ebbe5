//! One installation token per installation, shared through Postgres by every process of a tenant
//! (issue 10, build 1): GitHub scopes ETags to the token that received them, so only a shared token
//! keeps spec "One repository", step 1 true across processes ("a 304 costs no rate limit; an
//! unchanged repository costs one request"). Each "process" here is a separately built client
//! with its own token cache; they share only the database.

use shared::worker::TenantWorkspace;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use shared::config::{GithubAppConfig, SyncConfig};
use shared::github::{ClientOptions, GithubClient, GithubError, RepoInfo};
use shared::sync::workspace::RunOptions;
use shared::sync::{RepoOutcome, sync_repository};
use shared::tenants::Tenants;
use sqlx::PgPool;
use syncplane_tests::db::TestDb;
use syncplane_tests::fake_github::{Endpoint, FakeGithub};
use syncplane_tests::rows::row_versions;

struct Setup {
    db: TestDb,
    gh: FakeGithub,
    installation: u64,
}

async fn setup() -> Setup {
    let db = TestDb::new().await;
    let gh = FakeGithub::start().await;
    let installation = gh.add_installation("acme");
    gh.add_repo(
        installation,
        "acme/docs",
        &[("README.md", b"# Docs\n"), ("docs/a.md", b"# A\n")],
    );
    Setup {
        db,
        gh,
        installation,
    }
}

impl Setup {
    fn config(&self, installation: u64) -> GithubAppConfig {
        self.gh.app_config(installation)
    }

    /// A new "process": its own client and token cache, the tenant's database.
    fn process(&self) -> GithubClient {
        self.process_with(&self.db.pool, ClientOptions::default())
    }

    fn process_with(&self, pool: &PgPool, options: ClientOptions) -> GithubClient {
        GithubClient::with_token_store(&self.config(self.installation), options, pool.clone())
            .unwrap()
    }

    /// A process the way the CLI and every function build it: configuration from environment
    /// variables, `Tenants::from_config`.
    fn tenant_process(&self) -> shared::sync::workspace::Workspace {
        let mut env = BTreeMap::from_iter(self.gh.app_env(self.installation));
        env.insert("DATABASE_URL", self.db.url().expose().to_owned());
        let config = shared::config::from_lookup(|k| env.get(k).cloned()).unwrap();
        let id = config.tenants[0].id.as_str().to_owned();
        Tenants::from_config(&config, 2, RunOptions::default())
            .unwrap()
            .workspace(&id)
            .unwrap()
    }

    async fn stored_rows(&self) -> Vec<(i64, Vec<u8>, Vec<u8>)> {
        sqlx::query_as(
            "SELECT installation_id, nonce, ciphertext FROM github_installation_tokens
             ORDER BY installation_id",
        )
        .fetch_all(&self.db.pool)
        .await
        .unwrap()
    }
}

async fn info(client: &GithubClient) -> RepoInfo {
    client.repo("acme", "docs").await.unwrap()
}

#[tokio::test]
async fn two_processes_sync_an_unchanged_repository_with_one_304_each_and_write_nothing() {
    let s = setup().await;
    let config = SyncConfig::default();
    let first = s.tenant_process();
    let repo = info(&first.client).await;
    let outcome = sync_repository(&first.pool, &first.client, &config, &repo)
        .await
        .unwrap();
    assert!(matches!(outcome, RepoOutcome::Synced(_)), "{outcome:?}");
    assert_eq!(s.gh.token_exchanges(), 1);

    for name in ["second process", "third process"] {
        let process = s.tenant_process();
        let before = row_versions(&s.db.pool).await;
        let remaining = s.gh.rate_limit_remaining();
        s.gh.reset_log();
        let outcome = sync_repository(&process.pool, &process.client, &config, &repo)
            .await
            .unwrap();
        assert_eq!(outcome, RepoOutcome::Unchanged, "{name}");
        let log = s.gh.requests();
        assert_eq!(
            log.len(),
            1,
            "{name}: one request, no token exchange: {log:?}"
        );
        assert_eq!(
            (log[0].endpoint, log[0].status),
            (Endpoint::Branch, 304),
            "{name}: the head check answers 304"
        );
        assert_eq!(
            s.gh.rate_limit_remaining(),
            remaining,
            "{name}: no rate-limit unit"
        );
        assert_eq!(
            row_versions(&s.db.pool).await,
            before,
            "{name}: no row written"
        );
    }
}

#[tokio::test]
async fn a_process_with_a_token_of_its_own_gets_200_for_the_stored_etag() {
    // What the shared token prevents: the stored ETag belongs to another token.
    let s = setup().await;
    let config = SyncConfig::default();
    let shared_process = s.process();
    let repo = info(&shared_process).await;
    sync_repository(&s.db.pool, &shared_process, &config, &repo)
        .await
        .unwrap();
    let own = GithubClient::new(&s.config(s.installation)).unwrap();
    let remaining = s.gh.rate_limit_remaining();
    s.gh.reset_log();
    let outcome = sync_repository(&s.db.pool, &own, &config, &repo)
        .await
        .unwrap();
    assert_eq!(outcome, RepoOutcome::Unchanged);
    assert_eq!(s.gh.token_exchanges(), 1, "it minted its own token");
    assert_eq!(s.gh.count(Endpoint::Branch), 1);
    assert_eq!(s.gh.requests().last().unwrap().status, 200);
    assert_eq!(s.gh.rate_limit_remaining(), remaining - 2, "both charged");
}

#[tokio::test]
async fn processes_minting_at_once_send_one_token_request_between_them() {
    let s = setup().await;
    // Every answer takes 300 ms: the first mint is still in flight when the others ask.
    s.gh.set_latency(Duration::from_millis(300));
    let processes: Vec<GithubClient> = (0..4).map(|_| s.process()).collect();
    let barrier = Arc::new(tokio::sync::Barrier::new(processes.len()));
    let calls = processes.iter().map(|p| {
        let (p, barrier) = (p.clone(), barrier.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            p.repo("acme", "docs").await
        })
    });
    for result in futures::future::join_all(calls).await {
        assert_eq!(result.unwrap().unwrap().name, "docs");
    }
    assert_eq!(
        s.gh.token_exchanges(),
        1,
        "only one mint request reaches GitHub"
    );
    assert_eq!(s.gh.live_tokens(s.installation), 1);
    assert_eq!(s.gh.count(Endpoint::Repo), 4);
    assert_eq!(s.stored_rows().await.len(), 1);
}

#[tokio::test]
async fn a_database_without_the_token_row_mints_one_and_stores_it_encrypted() {
    let s = setup().await;
    assert!(s.stored_rows().await.is_empty());
    let first = s.process();
    info(&first).await;
    assert_eq!(s.gh.token_exchanges(), 1);
    let rows = s.stored_rows().await;
    assert_eq!(rows.len(), 1);
    let (installation, nonce, ciphertext) = &rows[0];
    assert_eq!(*installation, s.installation as i64);
    assert_eq!(nonce.len(), 12);
    assert_eq!(ciphertext.len(), "ghs_".len() + 36 + 16, "token and tag");
    assert!(
        !ciphertext.windows(4).any(|w| w == b"ghs_"),
        "never stored in the clear"
    );
    let expires_at: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("SELECT expires_at FROM github_installation_tokens")
            .fetch_one(&s.db.pool)
            .await
            .unwrap();
    let left = expires_at - chrono::Utc::now();
    assert!(
        left > chrono::TimeDelta::minutes(55),
        "GitHub's expiry: {left}"
    );

    // A later process reuses it: no exchange.
    info(&s.process()).await;
    assert_eq!(s.gh.token_exchanges(), 1);
}

#[tokio::test]
async fn a_stored_token_near_expiry_is_replaced_not_reused() {
    let s = setup().await;
    // Tokens live 6 minutes: under the 5-minute margin after one minute.
    s.gh.set_token_ttl(Duration::from_secs(360));
    info(&s.process()).await;
    info(&s.process()).await;
    assert_eq!(s.gh.token_exchanges(), 1, "6 minutes left: reused");
    sqlx::query(
        "UPDATE github_installation_tokens SET expires_at = now() + interval '4 minutes 59 seconds'",
    )
    .execute(&s.db.pool)
    .await
    .unwrap();
    info(&s.process()).await;
    assert_eq!(s.gh.token_exchanges(), 2, "under 5 minutes left: replaced");
    info(&s.process()).await;
    assert_eq!(s.gh.token_exchanges(), 2, "the replacement is shared");
}

#[tokio::test]
async fn a_token_row_that_does_not_decrypt_is_replaced_by_a_new_mint() {
    let s = setup().await;
    info(&s.process()).await;
    let before = s.stored_rows().await;
    // The App key changed since the row was written (or the row was altered): same length,
    // other bytes.
    sqlx::query(
        "UPDATE github_installation_tokens
         SET ciphertext = decode(repeat('ab', octet_length(ciphertext)), 'hex')",
    )
    .execute(&s.db.pool)
    .await
    .unwrap();
    let process = s.process();
    assert_eq!(info(&process).await.name, "docs");
    assert_eq!(s.gh.token_exchanges(), 2, "a new token was minted");
    let after = s.stored_rows().await;
    assert_eq!(after.len(), 1);
    assert_ne!(after[0].1, before[0].1, "overwritten with a new nonce");
    info(&s.process()).await;
    assert_eq!(s.gh.token_exchanges(), 2, "the new row decrypts for others");
}

#[tokio::test]
async fn a_row_copied_to_another_installation_does_not_decrypt_there() {
    let s = setup().await;
    let other = s.gh.add_installation("globex");
    s.gh.add_repo(other, "globex/docs", &[("docs/g.md", b"# G\n")]);
    info(&s.process()).await;
    // Copy acme's sealed token under globex's installation id.
    sqlx::query(
        "INSERT INTO github_installation_tokens (api_url, installation_id, nonce, ciphertext, expires_at)
         SELECT api_url, $1, nonce, ciphertext, expires_at FROM github_installation_tokens",
    )
    .bind(other as i64)
    .execute(&s.db.pool)
    .await
    .unwrap();
    let globex = GithubClient::with_token_store(
        &s.config(other),
        ClientOptions::default(),
        s.db.pool.clone(),
    )
    .unwrap();
    let repo = globex.repo("globex", "docs").await.unwrap();
    assert_eq!(repo.name, "docs", "globex used a token of its own");
    assert_eq!(s.gh.token_exchanges(), 2);
}

#[tokio::test]
async fn a_refused_shared_token_is_replaced_once_for_every_process() {
    let s = setup().await;
    let (a, b) = (s.process(), s.process());
    info(&a).await;
    info(&b).await;
    assert_eq!(s.gh.token_exchanges(), 1, "b reused a's token");

    s.gh.revoke_tokens(s.installation);
    s.gh.reset_log();
    info(&a).await;
    info(&b).await;
    assert_eq!(
        s.gh.token_exchanges(),
        1,
        "a minted the replacement; b took it from the database"
    );
    let statuses: Vec<u16> = s.gh.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![401, 201, 200, 401, 200]);
    info(&s.process()).await;
    assert_eq!(s.gh.token_exchanges(), 1, "and a new process reuses it");
}

#[tokio::test]
async fn a_database_error_falls_back_to_a_token_of_this_process() {
    let s = setup().await;
    // A database that was never migrated to the token table.
    sqlx::query("DROP TABLE github_installation_tokens")
        .execute(&s.db.pool)
        .await
        .unwrap();
    let process = s.process();
    assert_eq!(info(&process).await.name, "docs");
    info(&process).await;
    assert_eq!(s.gh.token_exchanges(), 1, "minted once, kept in memory");

    // A database that cannot be reached at all.
    let unreachable = sqlx::postgres::PgPoolOptions::new()
        .acquire_timeout(Duration::from_millis(300))
        .connect_lazy("postgres://postgres@127.0.0.1:1/none")
        .unwrap();
    let offline = s.process_with(&unreachable, ClientOptions::default());
    assert_eq!(info(&offline).await.name, "docs");
    assert_eq!(s.gh.token_exchanges(), 2);
}

#[tokio::test]
async fn a_mint_slower_than_the_lock_wait_lets_the_waiter_mint_its_own() {
    let s = setup().await;
    s.gh.set_latency(Duration::from_millis(800));
    let slow = s.process();
    let impatient = s.process_with(
        &s.db.pool,
        ClientOptions {
            token_lock_wait: Duration::from_millis(100),
            ..ClientOptions::default()
        },
    );
    let first = tokio::spawn({
        let slow = slow.clone();
        async move { slow.repo("acme", "docs").await }
    });
    // The slow process holds the mint lock while its exchange takes 800 ms.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = impatient.repo("acme", "docs").await;
    assert_eq!(second.unwrap().name, "docs");
    assert_eq!(first.await.unwrap().unwrap().name, "docs");
    assert_eq!(s.gh.token_exchanges(), 2, "the waiter gave up and minted");
    assert_eq!(s.stored_rows().await.len(), 1);
    // The one stored is the slow process's, which the next process reuses.
    info(&s.process()).await;
    assert_eq!(s.gh.token_exchanges(), 2);
}

#[tokio::test]
async fn a_suspended_installation_stays_a_run_stopping_error_with_a_shared_token() {
    let s = setup().await;
    info(&s.process()).await;
    s.gh.set_suspended(s.installation, true);
    let err = s.process().repo("acme", "docs").await.unwrap_err();
    assert_eq!(
        err,
        GithubError::InstallationUnavailable { suspended: true }
    );
}

#[tokio::test]
async fn a_shared_token_client_never_prints_a_token() {
    let s = setup().await;
    let process = s.process();
    info(&process).await;
    let shown = format!("{process:?}");
    assert!(!shown.contains("ghs_"), "{shown}");
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
}
