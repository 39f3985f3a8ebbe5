//! The SQS jobs adapter against the real moto emulator on loopback (`scripts/services.sh` starts
//! it): send, receive, delay, visibility timeout, redelivery of a failing job, poison to the DLQ.
//! Each test creates its own queues with unique names.

use std::time::Duration;

use aws_lambda_events::event::sqs::SqsMessage;
use aws_sdk_sqs::types::QueueAttributeName;
use shared::config::TenantId;
use shared::jobs::adapter::JobsAdapter;
use shared::jobs::{Job, RepoRef};
use shared::sync::runs::Trigger;
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use shared::worker::Worker;

pub use syncplane_tests::sqs::Queue;

fn tenant(id: &str) -> TenantId {
    TenantId::parse(id).unwrap()
}

fn reap(id: &str) -> Job {
    Job::SyncReap { tenant: tenant(id) }
}

fn receive_count(m: &SqsMessage) -> u32 {
    m.attributes["ApproximateReceiveCount"].parse().unwrap()
}

#[tokio::test]
async fn a_sent_job_is_received_as_its_json_with_the_same_message_id() {
    let q = Queue::new(30).await;
    let job = Job::SyncRepo {
        tenant: tenant("default"),
        repository: RepoRef {
            github_id: Some(7),
            owner: "acme".into(),
            name: "docs".into(),
        },
        trigger: Trigger::Manual,
    };
    let id = q.adapter.send(&job, None).await.unwrap();
    assert!(!id.is_empty());
    let event = q.receive_event(1).await;
    assert_eq!(event.records.len(), 1);
    let m = &event.records[0];
    assert_eq!(m.message_id.as_deref(), Some(id.as_str()));
    let back: Job = serde_json::from_str(m.body.as_deref().unwrap()).unwrap();
    assert_eq!(back, job);
    assert_eq!(receive_count(m), 1);
}

#[tokio::test]
async fn the_jobs_adapter_queues_instead_of_running() {
    let q = Queue::new(30).await;
    let submitted = JobsAdapter::Sqs(q.adapter.clone())
        .submit(&reap("default"))
        .await
        .unwrap();
    let shared::jobs::adapter::Submitted::Queued { message_id } = submitted else {
        panic!("the SQS adapter ran the job: {submitted:?}");
    };
    assert!(!message_id.is_empty());
    assert_eq!(q.drain_jobs().await, vec![reap("default")]);
}

#[tokio::test]
async fn a_delayed_job_stays_invisible_until_its_delay_has_passed() {
    let q = Queue::new(30).await;
    q.adapter
        .send(&reap("default"), Some(Duration::from_secs(2)))
        .await
        .unwrap();
    assert!(q.receive_event(0).await.records.is_empty());
    assert_eq!(
        q.attribute(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
            .await,
        "1"
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(q.receive_event(1).await.records.len(), 1);
}

#[tokio::test]
async fn a_received_message_is_hidden_for_the_visibility_timeout_then_redelivered() {
    let q = Queue::new(2).await;
    q.adapter.send(&reap("default"), None).await.unwrap();
    let first = q.receive_event(1).await;
    assert_eq!(first.records.len(), 1);
    assert!(
        q.receive_event(0).await.records.is_empty(),
        "visible again before its visibility timeout"
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let again = q.receive_event(1).await;
    assert_eq!(again.records.len(), 1);
    assert_eq!(again.records[0].message_id, first.records[0].message_id);
    assert_eq!(receive_count(&again.records[0]), 2);
}

#[tokio::test]
async fn many_jobs_are_sent_in_batches_of_ten() {
    let q = Queue::new(30).await;
    let jobs: Vec<Job> = (0..23).map(|i| reap(&format!("t{i}"))).collect();
    assert_eq!(q.adapter.send_many(&jobs).await.unwrap(), 23);
    let mut got = q.drain_jobs().await;
    got.sort_by_key(|j| j.tenant().clone());
    let mut want = jobs;
    want.sort_by_key(|j| j.tenant().clone());
    assert_eq!(got, want);
}

/// A worker whose only tenant's database refuses connections: its jobs fail, retryably.
fn worker_with_unreachable_tenant() -> Worker {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .acquire_timeout(Duration::from_millis(500))
        .connect_lazy("postgres://postgres@127.0.0.1:1/unreachable")
        .unwrap();
    let config = shared::config::TenantConfig {
        id: tenant("down"),
        database_url: shared::config::Secret::new("postgres://postgres@127.0.0.1:1/unreachable"),
        github: None,
        webhook_secrets: Vec::new(),
        sync_api_token: None,
        read: Default::default(),
        sync: Default::default(),
    };
    let tenants = std::sync::Arc::new(Tenants::from_parts(
        vec![(config, pool, None)],
        RunOptions::default(),
    ));
    Worker::new(tenants.clone(), shared::worker::inline(tenants))
}

#[tokio::test]
async fn a_failing_job_is_named_and_redelivered_with_its_receive_count_incremented() {
    let q = Queue::new(1).await;
    let worker = worker_with_unreachable_tenant();
    q.adapter.send(&reap("down"), None).await.unwrap();

    let event = q.receive_event(1).await;
    let response = worker.handle(event.clone()).await;
    assert_eq!(response.batch_item_failures.len(), 1);
    assert_eq!(
        Some(&response.batch_item_failures[0].item_identifier),
        event.records[0].message_id.as_ref()
    );
    q.settle(&event, &response).await;

    tokio::time::sleep(Duration::from_millis(1500)).await;
    let again = q.receive_event(2).await;
    assert_eq!(again.records.len(), 1, "the failed job was not redelivered");
    assert_eq!(again.records[0].message_id, event.records[0].message_id);
    assert_eq!(receive_count(&again.records[0]), 2);
}

#[tokio::test]
async fn a_poison_job_moves_to_the_dead_letter_queue_after_max_receives() {
    let (q, dlq) = Queue::with_dlq(1, 2).await;
    let worker = worker_with_unreachable_tenant();
    let sent = q.adapter.send(&reap("down"), None).await.unwrap();

    let mut receives = 0;
    for _ in 0..4 {
        let event = q.receive_event(2).await;
        if event.records.is_empty() {
            continue;
        }
        receives += 1;
        let response = worker.handle(event.clone()).await;
        assert_eq!(response.batch_item_failures.len(), 1);
        q.settle(&event, &response).await;
        tokio::time::sleep(Duration::from_millis(1200)).await;
    }
    assert_eq!(
        receives, 2,
        "received {receives} times, maxReceiveCount is 2"
    );
    let dead = dlq.receive_event(1).await;
    assert_eq!(dead.records.len(), 1, "the poison job is not in the DLQ");
    assert_eq!(dead.records[0].message_id.as_deref(), Some(sent.as_str()));
    assert!(q.receive_event(0).await.records.is_empty());
}

#[tokio::test]
async fn a_message_that_is_not_a_job_is_deleted_not_redelivered() {
    let q = Queue::new(1).await;
    let worker = worker_with_unreachable_tenant();
    q.adapter
        .client()
        .send_message()
        .queue_url(&q.url)
        .message_body(r#"{"kind":"sync.everything"}"#)
        .send()
        .await
        .unwrap();
    let event = q.receive_event(1).await;
    let response = worker.handle(event.clone()).await;
    assert!(response.batch_item_failures.is_empty());
    q.settle(&event, &response).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(q.receive_event(1).await.records.is_empty());
}
