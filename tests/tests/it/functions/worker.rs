//! The worker: partial batch failures, the rate-limit pause shared through Postgres, the
//! fan-out of a full sync through the queue, and the events/ SQS batch.

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use chrono::Utc;
use shared::config::{GithubAppConfig, Secret, SyncConfig, TenantConfig, TenantId};
use shared::jobs::adapter::JobsAdapter;
use shared::jobs::{Job, RepoRef};
use shared::sync::runs::Trigger;
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use shared::worker::pause;
use shared::worker::{Verdict, Worker};
use syncplane_tests::fake_github::{Change, Endpoint, Fault, GraphqlFault};

use super::sqs::Queue;
use crate::engine::World;

fn tenant(id: &str) -> TenantId {
    TenantId::parse(id).unwrap()
}

/// The world's tenant "default", with its App (so the worker knows its installation).
fn tenants_of(w: &World, sync: SyncConfig) -> Arc<Tenants> {
    let config = TenantConfig {
        id: tenant("default"),
        database_url: w.db.url(),
        github: Some(GithubAppConfig {
            api_url: w.gh.url().parse().unwrap(),
            graphql_url: None,
            app_id: w.gh.app_id(),
            private_key_pem: Secret::new(w.gh.private_key_pem()),
            installation_id: w.installation,
            rate_limit_wait_budget_secs: 0,
        }),
        webhook_secrets: Vec::new(),
        sync_api_token: None,
        read: Default::default(),
        sync,
    };
    Arc::new(Tenants::from_parts(
        vec![(config, w.db.pool.clone(), Some(w.client.clone()))],
        RunOptions::default(),
    ))
}

fn message(id: Option<&str>, body: &str) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = id.map(str::to_owned);
    m.body = Some(body.to_owned());
    m
}

fn job_message(id: &str, job: &Job) -> SqsMessage {
    message(Some(id), &serde_json::to_string(job).unwrap())
}

fn repo_job(owner: &str, name: &str) -> Job {
    Job::SyncRepo {
        tenant: tenant("default"),
        repository: RepoRef {
            github_id: None,
            owner: owner.into(),
            name: name.into(),
        },
        trigger: Trigger::Manual,
    }
}

async fn runs(w: &World) -> Vec<(String, Option<String>, String)> {
    sqlx::query_as("SELECT trigger, scope, status FROM sync_runs ORDER BY id")
        .fetch_all(&w.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn only_the_failing_message_is_named_in_batch_item_failures() {
    let w = World::new().await;
    w.repo("acme/docs", &[("docs/a.md", "# A\n")]);
    let tenants = tenants_of(&w, SyncConfig::default());
    let worker = Worker::new(tenants.clone(), shared::worker::inline(tenants));
    // The repository listing answers 500 every time: a retryable failure of that job only.
    w.gh.fault(Endpoint::Repo, Fault::Status(500), None);
    let mut event = SqsEvent::default();
    event.records = vec![
        job_message(
            "good",
            &Job::SyncReap {
                tenant: tenant("default"),
            },
        ),
        job_message("failing", &repo_job("acme", "docs")),
        message(Some("invalid"), "{not json"),
        job_message(
            "unknown-tenant",
            &Job::SyncReap {
                tenant: tenant("nobody"),
            },
        ),
        job_message("", &repo_job("acme", "docs")),
        message(
            None,
            &serde_json::to_string(&repo_job("acme", "docs")).unwrap(),
        ),
    ];
    let response = worker.handle(event).await;
    let named: Vec<&str> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(named, vec!["failing"]);
    let wire = serde_json::to_value(&response).unwrap();
    assert_eq!(
        wire,
        serde_json::json!({"batchItemFailures": [{"itemIdentifier": "failing"}]})
    );
}

#[tokio::test]
async fn a_repository_job_that_succeeds_is_not_named() {
    let w = World::new().await;
    w.repo("acme/docs", &[("docs/a.md", "# A\n")]);
    let tenants = tenants_of(&w, SyncConfig::default());
    let worker = Worker::new(tenants.clone(), shared::worker::inline(tenants));
    let mut event = SqsEvent::default();
    event.records = vec![job_message("one", &repo_job("acme", "docs"))];
    assert!(worker.handle(event).await.batch_item_failures.is_empty());
    assert_eq!(w.doc_paths("acme/docs").await, vec!["docs/a.md"]);
}

#[tokio::test]
async fn a_rate_limited_job_records_the_pause_and_is_requeued_with_a_delay() {
    let w = World::new().await;
    w.repo("acme/docs", &[("docs/a.md", "# A\n")]);
    let q = Queue::new(30).await;
    let tenants = tenants_of(&w, SyncConfig::default());
    let worker = Worker::new(tenants, JobsAdapter::Sqs(q.adapter.clone()));
    w.gh.fault(
        Endpoint::Repo,
        Fault::PrimaryRateLimit {
            reset_in: Duration::from_secs(120),
        },
        None,
    );
    let before = Utc::now();
    let verdict = worker.run_job(&repo_job("acme", "docs")).await;
    let Verdict::Requeued { delay } = verdict else {
        panic!("not requeued: {verdict:?}");
    };
    assert!(
        (100..=121).contains(&delay.as_secs()),
        "delay {delay:?} is not the time to the reset"
    );
    let paused_until = pause::active(&w.db.pool, w.installation as i64, Utc::now())
        .await
        .unwrap()
        .expect("the pause is recorded in Postgres");
    assert!(paused_until > before + chrono::Duration::seconds(100));
    // The requeued copy waits in the queue, delayed.
    assert!(q.receive_event(0).await.records.is_empty());
    assert_eq!(
        q.attribute(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesDelayed)
            .await,
        "1"
    );
}

#[tokio::test]
async fn a_paused_installation_is_not_called_until_the_pause_ends() {
    let w = World::new().await;
    w.repo("acme/docs", &[("docs/a.md", "# A\n")]);
    let q = Queue::new(30).await;
    let tenants = tenants_of(&w, SyncConfig::default());
    let worker = Worker::new(tenants, JobsAdapter::Sqs(q.adapter.clone()));
    // Another worker hit the limit: the pause is all this one knows.
    let installation = w.installation as i64;
    pause::record(
        &w.db.pool,
        installation,
        Utc::now() + chrono::Duration::seconds(45),
    )
    .await
    .unwrap();
    w.gh.reset_log();

    let verdict = worker.run_job(&repo_job("acme", "docs")).await;
    assert!(
        matches!(verdict, Verdict::Requeued { delay } if (40..=45).contains(&delay.as_secs())),
        "{verdict:?}"
    );
    let webhook = Job::WebhookDispatch {
        tenant: tenant("default"),
        event: "push".into(),
        delivery: "d1".into(),
        payload: serde_json::json!({}),
    };
    assert!(matches!(
        worker.run_job(&webhook).await,
        Verdict::Requeued { .. }
    ));
    // A drain is submitted by every tick: a paused one is dropped rather than piled up.
    assert!(matches!(
        worker
            .run_job(&Job::SyncDrain {
                tenant: tenant("default")
            })
            .await,
        Verdict::Dropped { .. }
    ));
    // Reaping never calls GitHub: it runs during a pause.
    assert_eq!(
        worker
            .run_job(&Job::SyncReap {
                tenant: tenant("default")
            })
            .await,
        Verdict::Done
    );
    assert!(
        w.gh.requests().is_empty(),
        "GitHub was called during the pause"
    );
    assert!(w.doc_paths("acme/docs").await.is_empty());

    // The pause ended: the job runs and calls GitHub.
    sqlx::query("UPDATE github_rate_limit_pauses SET paused_until = now() - interval '1 second'")
        .execute(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(
        worker.run_job(&repo_job("acme", "docs")).await,
        Verdict::Done
    );
    assert_eq!(w.doc_paths("acme/docs").await, vec!["docs/a.md"]);
}

#[tokio::test]
async fn a_pause_keeps_the_later_end_of_two_workers() {
    let w = World::new().await;
    let now = Utc::now();
    let later = now + chrono::Duration::seconds(60);
    let sooner = now + chrono::Duration::seconds(30);
    let at = |t: chrono::DateTime<Utc>| t.timestamp_micros();
    assert_eq!(
        at(pause::record(&w.db.pool, 5, later).await.unwrap()),
        at(later)
    );
    assert_eq!(
        at(pause::record(&w.db.pool, 5, sooner).await.unwrap()),
        at(later)
    );
    let latest = now + chrono::Duration::seconds(90);
    assert_eq!(
        at(pause::record(&w.db.pool, 5, latest).await.unwrap()),
        at(latest)
    );
    // Pauses are per installation.
    assert_eq!(pause::active(&w.db.pool, 6, now).await.unwrap(), None);
}

#[tokio::test]
async fn a_paused_job_without_a_queue_is_named_for_redelivery() {
    let w = World::new().await;
    let tenants = tenants_of(&w, SyncConfig::default());
    let worker = Worker::new(tenants.clone(), shared::worker::inline(tenants));
    pause::record(
        &w.db.pool,
        w.installation as i64,
        Utc::now() + chrono::Duration::seconds(60),
    )
    .await
    .unwrap();
    let mut event = SqsEvent::default();
    event.records = vec![job_message("paused", &repo_job("acme", "docs"))];
    let response = worker.handle(event).await;
    assert_eq!(response.batch_item_failures.len(), 1);
    assert!(w.gh.requests().is_empty());
}

#[tokio::test]
async fn a_full_sync_through_sqs_fans_out_one_repo_job_per_selected_repository() {
    let w = World::new().await;
    w.repo("acme/docs", &[("docs/a.md", "# A\n")]);
    w.repo("acme/api", &[("docs/b.md", "# B\n")]);
    w.repo("acme/secret", &[("docs/c.md", "# C\n")]);
    w.repo("acme/gone", &[("docs/d.md", "# D\n")]);
    let config = SyncConfig {
        exclude: vec![shared::config::RepoPattern::parse("acme/secret").unwrap()],
        ..SyncConfig::default()
    };
    // acme/gone is stored, then deleted upstream: the fan-out's listing applies the removal rule.
    let tenants = tenants_of(&w, config);
    let inline = Worker::new(tenants.clone(), shared::worker::inline(tenants.clone()));
    assert_eq!(
        inline.run_job(&repo_job("acme", "gone")).await,
        Verdict::Done
    );
    assert_eq!(w.doc_paths("acme/gone").await, vec!["docs/d.md"]);
    w.gh.delete_repo("acme/gone");

    let q = Queue::new(30).await;
    let worker = Worker::new(tenants, JobsAdapter::Sqs(q.adapter.clone()));
    let full = Job::SyncFull {
        tenant: tenant("default"),
        trigger: Trigger::Manual,
    };
    assert_eq!(worker.run_job(&full).await, Verdict::Done);

    let mut kinds: Vec<String> = Vec::new();
    let mut repos: Vec<String> = Vec::new();
    let mut event = SqsEvent::default();
    loop {
        let batch = q.receive_event(0).await;
        if batch.records.is_empty() {
            break;
        }
        for m in &batch.records {
            let job: Job = serde_json::from_str(m.body.as_deref().unwrap()).unwrap();
            kinds.push(job.kind().to_owned());
            if let Job::SyncRepo {
                repository,
                trigger,
                ..
            } = &job
            {
                assert_eq!(*trigger, Trigger::Manual);
                assert!(repository.github_id.is_some());
                repos.push(format!("{}/{}", repository.owner, repository.name));
            }
            q.delete(m).await;
        }
        event.records.extend(batch.records);
    }
    repos.sort();
    assert_eq!(repos, vec!["acme/api", "acme/docs"]);
    kinds.sort();
    assert_eq!(kinds, vec!["sync.drain", "sync.repo", "sync.repo"]);
    // Nothing was synced by the fan-out itself; the removal rule was applied.
    assert!(w.doc_paths("acme/docs").await.is_empty());
    assert!(w.doc_paths("acme/gone").await.is_empty());
    let fan_out_run: (String, String, i32) = sqlx::query_as(
        "SELECT trigger, status, repos_removed FROM sync_runs WHERE scope IS NULL ORDER BY id DESC LIMIT 1",
    )
    .fetch_one(&w.db.pool)
    .await
    .unwrap();
    assert_eq!(fan_out_run, ("manual".into(), "success".into(), 1));

    // Other workers run the fanned-out jobs.
    assert!(worker.handle(event).await.batch_item_failures.is_empty());
    assert_eq!(w.doc_paths("acme/docs").await, vec!["docs/a.md"]);
    assert_eq!(w.doc_paths("acme/api").await, vec!["docs/b.md"]);
    assert!(w.doc_paths("acme/secret").await.is_empty());
    let scoped: Vec<(String, Option<String>, String)> = runs(&w)
        .await
        .into_iter()
        .filter(|(_, scope, _)| scope.as_deref().is_some_and(|s| s != "acme/gone"))
        .collect();
    assert_eq!(scoped.len(), 2);
    assert!(
        scoped
            .iter()
            .all(|(t, _, s)| t == "manual" && s == "success"),
        "{scoped:?}"
    );
}

#[tokio::test]
async fn the_sample_sqs_batch_runs_through_the_worker() {
    let w = World::new().await;
    // The demo repositories of the local run, which the sample names.
    let id = syncplane_tests::fake_github::demo::add_repos(&w.gh, w.installation)[0];
    let raw = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../events/sqs-batch.json"
    ))
    .unwrap();
    // The sample names the fake's first repository by its GitHub id.
    assert_eq!(id, 700_000_000);
    let event: SqsEvent = serde_json::from_str(&raw).unwrap();
    let kinds: Vec<String> = event
        .records
        .iter()
        .map(|m| {
            let job: Job = serde_json::from_str(m.body.as_deref().unwrap()).unwrap();
            assert_eq!(job.tenant().as_str(), "default");
            job.kind().to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "sync.full",
            "sync.repo",
            "sync.drain",
            "sync.reap",
            "webhook.dispatch"
        ]
    );
    let tenants = tenants_of(&w, SyncConfig::default());
    // One at a time: run concurrently, the sync.repo of a repository with no row yet may find
    // the full sync holding its lock and be (rightly) named as busy.
    let worker = Worker::new(tenants.clone(), shared::worker::inline(tenants)).with_concurrency(1);
    let response = worker.handle(event).await;
    let wire = serde_json::to_value(&response).unwrap();
    assert_eq!(wire, serde_json::json!({"batchItemFailures": []}));
    assert_eq!(
        w.doc_paths("acme/handbook").await,
        vec![
            "docs/api/reference.md",
            "docs/faq.mdx",
            "docs/getting-started.md"
        ]
    );
}

/// Every job in the queue, by kind and repository (deleted as read).
async fn queued(q: &Queue) -> (Vec<String>, Vec<String>) {
    let (mut kinds, mut repos) = (Vec::new(), Vec::new());
    for job in q.drain_jobs().await {
        kinds.push(job.kind().to_owned());
        if let Job::SyncRepo { repository, .. } = &job {
            repos.push(format!("{}/{}", repository.owner, repository.name));
        }
    }
    kinds.sort();
    (kinds, repos)
}

#[tokio::test]
async fn only_changed_repositories_get_a_sync_repo_message() {
    let w = World::new().await;
    for name in ["acme/a", "acme/b", "acme/c"] {
        w.repo(name, &[("docs/a.md", "# A\n")]);
    }
    let tenants = tenants_of(&w, SyncConfig::default());
    let full = Job::SyncFull {
        tenant: tenant("default"),
        trigger: Trigger::Schedule,
    };
    let inline = Worker::new(tenants.clone(), shared::worker::inline(tenants.clone()));
    assert_eq!(inline.run_job(&full).await, Verdict::Done);

    let q = Queue::new(30).await;
    let worker = Worker::new(tenants, JobsAdapter::Sqs(q.adapter.clone()));
    w.gh.reset_log();
    assert_eq!(worker.run_job(&full).await, Verdict::Done);
    let (kinds, _) = queued(&q).await;
    assert_eq!(
        kinds,
        ["sync.drain"],
        "nothing changed: no sync.repo message"
    );
    assert_eq!(w.gh.count(Endpoint::Branch), 0);
    assert_eq!(w.gh.count(Endpoint::Graphql), 1);

    w.gh.push(
        "acme/b",
        &[Change::Put("docs/b.md".into(), b"# B\n".to_vec())],
    );
    assert_eq!(worker.run_job(&full).await, Verdict::Done);
    let (kinds, repos) = queued(&q).await;
    assert_eq!(kinds, ["sync.drain", "sync.repo"]);
    assert_eq!(repos, ["acme/b"]);
    let unchanged: i32 = sqlx::query_scalar(
        "SELECT repos_unchanged FROM sync_runs WHERE scope IS NULL ORDER BY id DESC LIMIT 1",
    )
    .fetch_one(&w.db.pool)
    .await
    .unwrap();
    assert_eq!(unchanged, 2);
}

#[tokio::test]
async fn a_graphql_rate_limit_in_a_fan_out_records_the_installation_pause() {
    let w = World::new().await;
    w.repo("acme/a", &[("docs/a.md", "# A\n")]);
    let tenants = tenants_of(&w, SyncConfig::default());
    let full = Job::SyncFull {
        tenant: tenant("default"),
        trigger: Trigger::Schedule,
    };
    let inline = Worker::new(tenants.clone(), shared::worker::inline(tenants.clone()));
    assert_eq!(inline.run_job(&full).await, Verdict::Done);

    w.gh.graphql_fault(
        GraphqlFault::RateLimited {
            kind: "RATE_LIMITED",
            reset_in: Duration::from_secs(600),
        },
        None,
    );
    let q = Queue::new(30).await;
    let worker = Worker::new(tenants, JobsAdapter::Sqs(q.adapter.clone()));
    worker.run_job(&full).await;
    let paused = pause::active(&w.db.pool, w.installation as i64, Utc::now())
        .await
        .unwrap()
        .expect("the installation is paused");
    assert!(paused > Utc::now() + chrono::Duration::seconds(500));
    let (kinds, _) = queued(&q).await;
    assert!(!kinds.iter().any(|k| k == "sync.repo"), "{kinds:?}");
}
