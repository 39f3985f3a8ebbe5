//! Jobs and tenants: the wire shape of a job, one `run` entry per job, a second copy of a job
//! leaves the state of one sync, one tenant's failures never hold up another's.

use serde_json::json;
use shared::config::{SyncConfig, TenantConfig, TenantId};
use shared::jobs::{Job, JobOutcome, RepoRef};
use shared::sync::runs::{RunStatus, Trigger};
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use shared::worker::run;
use syncplane_tests::db::TestDb;
use syncplane_tests::fake_github::FakeGithub;

use crate::engine::{World, client_for};

fn tenant(id: &str) -> TenantId {
    TenantId::parse(id).unwrap()
}

fn tenant_config(id: &str, db: &TestDb) -> TenantConfig {
    TenantConfig {
        id: tenant(id),
        database_url: db.url(),
        github: None,
        webhook_secrets: Vec::new(),
        sync_api_token: None,
        read: Default::default(),
        sync: SyncConfig::default(),
    }
}

fn tenants_of(w: &World) -> Tenants {
    Tenants::from_parts(
        vec![(
            tenant_config("default", &w.db),
            w.db.pool.clone(),
            Some(w.client.clone()),
        )],
        RunOptions::default(),
    )
}

#[test]
fn jobs_are_serialized_with_their_kind_and_tenant() {
    let jobs = [
        (
            Job::SyncFull {
                tenant: tenant("acme"),
                trigger: Trigger::Schedule,
            },
            json!({"kind": "sync.full", "tenant": "acme", "trigger": "schedule"}),
        ),
        (
            Job::SyncRepo {
                tenant: tenant("acme"),
                repository: RepoRef {
                    github_id: Some(7),
                    owner: "o".into(),
                    name: "n".into(),
                },
                trigger: Trigger::Manual,
            },
            json!({"kind": "sync.repo", "tenant": "acme", "repository": {"githubId": 7, "owner": "o", "name": "n"}, "trigger": "manual"}),
        ),
        (
            Job::SyncDrain {
                tenant: tenant("acme"),
            },
            json!({"kind": "sync.drain", "tenant": "acme"}),
        ),
        (
            Job::SyncReap {
                tenant: tenant("acme"),
            },
            json!({"kind": "sync.reap", "tenant": "acme"}),
        ),
        (
            Job::WebhookDispatch {
                tenant: tenant("acme"),
                event: "push".into(),
                delivery: "d-1".into(),
                payload: json!({"ref": "x"}),
            },
            json!({"kind": "webhook.dispatch", "tenant": "acme", "event": "push", "delivery": "d-1", "payload": {"ref": "x"}}),
        ),
        (
            Job::TranscriptsExpire {
                tenant: tenant("acme"),
            },
            json!({"kind": "transcripts.expire", "tenant": "acme"}),
        ),
    ];
    for (job, wire) in jobs {
        assert_eq!(serde_json::to_value(&job).unwrap(), wire);
        assert_eq!(job.kind(), wire["kind"], "kind() is the wire's kind");
        assert_eq!(job.tenant().as_str(), "acme");
        assert_eq!(serde_json::from_value::<Job>(wire).unwrap(), job);
    }
    assert!(serde_json::from_value::<Job>(json!({"kind": "sync.nope", "tenant": "acme"})).is_err());
    assert!(
        serde_json::from_value::<Job>(json!({"kind": "sync.drain", "tenant": "Not Valid"}))
            .is_err()
    );
}

#[tokio::test]
async fn a_second_copy_of_the_same_job_leaves_the_state_of_one_sync() {
    let w = World::new().await;
    w.repo("acme/a", &[("docs/a.md", "# A"), ("docs/b.md", "# B")]);
    let tenants = tenants_of(&w);
    let job = Job::SyncRepo {
        tenant: tenant("default"),
        repository: RepoRef {
            github_id: None,
            owner: "acme".into(),
            name: "a".into(),
        },
        trigger: Trigger::Webhook,
    };
    let (one, two) = tokio::join!(run(&tenants, &job), run(&tenants, &job));
    for outcome in [one.unwrap(), two.unwrap()] {
        assert!(matches!(outcome, JobOutcome::Request { .. }), "{outcome:?}");
    }
    let docs: Vec<(String, i64)> =
        sqlx::query_as("SELECT path, count(*) OVER () FROM documents ORDER BY path")
            .fetch_all(&w.db.pool)
            .await
            .unwrap();
    assert_eq!(
        docs,
        [("docs/a.md".to_owned(), 2), ("docs/b.md".to_owned(), 2)]
    );
    let repos: i64 = sqlx::query_scalar("SELECT count(*) FROM repos")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(repos, 1);
}

#[tokio::test]
async fn one_tenants_failures_never_hold_up_another() {
    let good = World::new().await;
    good.repo("acme/a", &[("docs/a.md", "# A")]);
    // A second tenant on its own database, whose installation is suspended.
    let bad_db = TestDb::new().await;
    let bad_installation = good.gh.add_installation("beta");
    good.gh.add_repo(
        bad_installation,
        "beta/x",
        &[("docs/x.md", b"# X".as_slice())],
    );
    good.gh.set_suspended(bad_installation, true);
    let tenants = Tenants::from_parts(
        vec![
            (
                tenant_config("bad", &bad_db),
                bad_db.pool.clone(),
                Some(client_for(&good.gh, bad_installation, 0)),
            ),
            (
                tenant_config("good", &good.db),
                good.db.pool.clone(),
                Some(good.client.clone()),
            ),
        ],
        RunOptions::default(),
    );
    let mut outcomes = Vec::new();
    for id in tenants.ids().map(str::to_owned).collect::<Vec<_>>() {
        outcomes.push((
            id.clone(),
            run(
                &tenants,
                &Job::SyncFull {
                    tenant: tenant(&id),
                    trigger: Trigger::Schedule,
                },
            )
            .await,
        ));
    }
    let status = |id: &str| match &outcomes.iter().find(|(t, _)| t == id).unwrap().1 {
        Ok(JobOutcome::Run { report: Some(r) }) => r.status,
        other => panic!("{other:?}"),
    };
    assert_eq!(status("bad"), RunStatus::Failed);
    assert_eq!(status("good"), RunStatus::Success);
    assert_eq!(good.doc_paths("acme/a").await, ["docs/a.md"]);
    // Each tenant's schedule records its own result: the failing one retries soon.
    let failures: i32 =
        sqlx::query_scalar("SELECT consecutive_failures FROM scheduler_state WHERE tenant = 'bad'")
            .fetch_one(&bad_db.pool)
            .await
            .unwrap();
    assert_eq!(failures, 1);
    let ok: i32 = sqlx::query_scalar(
        "SELECT consecutive_failures FROM scheduler_state WHERE tenant = 'good'",
    )
    .fetch_one(&good.db.pool)
    .await
    .unwrap();
    assert_eq!(ok, 0);
}

#[tokio::test]
async fn unknown_tenants_and_tenants_without_an_app_are_refused_without_retry() {
    let w = World::new().await;
    let tenants = Tenants::from_parts(
        vec![(tenant_config("default", &w.db), w.db.pool.clone(), None)],
        RunOptions::default(),
    );
    let err = run(
        &tenants,
        &Job::SyncDrain {
            tenant: tenant("nobody"),
        },
    )
    .await
    .unwrap_err();
    assert!(!err.retryable(), "{err}");
    let err = run(
        &tenants,
        &Job::SyncDrain {
            tenant: tenant("default"),
        },
    )
    .await
    .unwrap_err();
    assert!(!err.retryable(), "{err}");
    // Reaping needs only the database.
    assert!(matches!(
        run(
            &tenants,
            &Job::SyncReap {
                tenant: tenant("default")
            }
        )
        .await
        .unwrap(),
        JobOutcome::Reaped { runs: 0 }
    ));
}

#[tokio::test]
async fn the_scheduled_full_sync_takes_the_tenants_scheduler_lock() {
    let w = World::new().await;
    w.repo("acme/a", &[("docs/a.md", "# A")]);
    let tenants = tenants_of(&w);
    // Another instance is running the scheduled full sync of this tenant.
    let held = shared::sync::lock::HeldLock::try_acquire(
        &w.db.pool,
        shared::sync::lock::scheduler_key("default"),
    )
    .await
    .unwrap()
    .unwrap();
    let job = Job::SyncFull {
        tenant: tenant("default"),
        trigger: Trigger::Schedule,
    };
    assert_eq!(
        run(&tenants, &job).await.unwrap(),
        JobOutcome::Run { report: None },
        "skipped while another runs"
    );
    held.release().await;
    assert!(matches!(
        run(&tenants, &job).await.unwrap(),
        JobOutcome::Run { report: Some(_) }
    ));
}

#[tokio::test]
async fn an_unusable_app_key_fails_the_tenants_jobs_as_run_stopping_not_the_start() {
    let db = TestDb::new().await;
    let url = db.url();
    let mut config = shared::config::from_lookup(|k| match k {
        "DATABASE_URL" => Some(url.expose().to_owned()),
        "GITHUB_APP_ID" => Some("1".to_owned()),
        "GITHUB_INSTALLATION_ID" => Some("2".to_owned()),
        "GITHUB_API_URL" => Some("http://127.0.0.1:9".to_owned()),
        "GITHUB_APP_PRIVATE_KEY" => Some(FakeGithub::untrusted_private_key_pem()),
        _ => None,
    })
    .unwrap();
    // Configuration refuses a junk key at start (issue 13 §10); one that gets past it (its
    // structure intact, its numbers not a key) is the engine's to refuse.
    config.tenants[0].github.as_mut().unwrap().private_key_pem = shared::config::Secret::new(
        "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----",
    );
    // Building the tenants (a function's start) does not touch the key...
    let tenants = Tenants::from_config(&config, 2, RunOptions::default()).unwrap();
    // ...its first sync job reports it, as a run-stopping error.
    let err = run(
        &tenants,
        &Job::SyncDrain {
            tenant: tenant("default"),
        },
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            shared::jobs::JobError::Sync(shared::sync::SyncError::RunStopped(
                shared::github::GithubError::InvalidPrivateKey
            ))
        ),
        "{err:?}"
    );
}
