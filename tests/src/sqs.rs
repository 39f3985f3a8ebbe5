//! Queues of one's own on the SQS emulator (moto on loopback; `scripts/services.sh` starts it),
//! and the part of the Lambda SQS event source mapping the worker relies on: receive a batch as
//! an `SqsEvent`, then delete every message its batch response does not name.
//! Shared by the integration tests and the load benchmark.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use shared::jobs::Job;
use shared::jobs::sqs::SqsAdapter;

pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL_SQS").unwrap_or_else(|_| "http://127.0.0.1:4566".into())
}

/// A queue of this test's own.
pub struct Queue {
    pub url: String,
    pub adapter: SqsAdapter,
}

/// What became of a batch's messages after its response.
#[derive(Debug, Default, Clone)]
pub struct Settled {
    /// Ids of the messages deleted.
    pub deleted: Vec<String>,
    /// Named in `batchItemFailures`: left for redelivery (or the dead-letter queue).
    pub left: u64,
    pub delete_errors: u64,
}

impl Queue {
    /// A queue that already exists (another process created it).
    pub fn open(url: &str) -> Self {
        Self {
            adapter: SqsAdapter::new(shared::jobs::sqs::emulator_client(&endpoint()), url),
            url: url.to_owned(),
        }
    }

    pub async fn new(visibility_secs: u32) -> Self {
        Self::create(visibility_secs, None).await
    }

    /// A queue whose messages move to a new dead-letter queue after `max_receive` receives.
    pub async fn with_dlq(visibility_secs: u32, max_receive: u32) -> (Self, Self) {
        Self::named_with_dlq("syncplane-test", visibility_secs, max_receive).await
    }

    async fn create(visibility_secs: u32, redrive: Option<String>) -> Self {
        Self::create_named("syncplane-test", visibility_secs, redrive).await
    }

    /// A queue named `<prefix>-<uuid>` whose messages move to a new dead-letter queue (named
    /// `<prefix>-dlq-<uuid>`) after `max_receive` receives.
    pub async fn named_with_dlq(
        prefix: &str,
        visibility_secs: u32,
        max_receive: u32,
    ) -> (Self, Self) {
        let dlq = Self::create_named(&format!("{prefix}-dlq"), visibility_secs, None).await;
        let arn = dlq.attribute(QueueAttributeName::QueueArn).await;
        let policy =
            format!(r#"{{"deadLetterTargetArn":"{arn}","maxReceiveCount":"{max_receive}"}}"#);
        let queue = Self::create_named(prefix, visibility_secs, Some(policy)).await;
        (queue, dlq)
    }

    async fn create_named(prefix: &str, visibility_secs: u32, redrive: Option<String>) -> Self {
        let client = shared::jobs::sqs::emulator_client(&endpoint());
        let name = format!("{prefix}-{}", uuid::Uuid::new_v4());
        let mut request = client.create_queue().queue_name(&name).attributes(
            QueueAttributeName::VisibilityTimeout,
            visibility_secs.to_string(),
        );
        if let Some(policy) = redrive {
            request = request.attributes(QueueAttributeName::RedrivePolicy, policy);
        }
        let created = request
            .send()
            .await
            .expect("the SQS emulator answers (scripts/services.sh starts it)");
        let url = created.queue_url().unwrap().to_owned();
        Self {
            adapter: SqsAdapter::new(client, &url),
            url,
        }
    }

    pub async fn attribute(&self, name: QueueAttributeName) -> String {
        let out = self
            .adapter
            .client()
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(name.clone())
            .send()
            .await
            .unwrap();
        out.attributes().unwrap().get(&name).unwrap().clone()
    }

    /// An approximate count (`ApproximateNumberOf...`) as a number.
    pub async fn count(&self, name: QueueAttributeName) -> u64 {
        self.attribute(name).await.parse().unwrap_or(0)
    }

    /// Messages visible, in flight and delayed: zero when every message was deleted.
    pub async fn outstanding(&self) -> u64 {
        self.count(QueueAttributeName::ApproximateNumberOfMessages)
            .await
            + self
                .count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
                .await
            + self
                .count(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
                .await
    }

    /// Receive up to 10 visible messages, as the Lambda event source mapping would hand them over.
    pub async fn receive_event(&self, wait_secs: i32) -> SqsEvent {
        let out = self
            .adapter
            .client()
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(10)
            .wait_time_seconds(wait_secs)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .unwrap();
        let mut event = SqsEvent::default();
        for m in out.messages() {
            let mut message = SqsMessage::default();
            message.message_id = m.message_id().map(str::to_owned);
            message.receipt_handle = m.receipt_handle().map(str::to_owned);
            message.body = m.body().map(str::to_owned);
            message.attributes = m
                .attributes()
                .map(|a| {
                    a.iter()
                        .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            event.records.push(message);
        }
        event
    }

    /// What the event source mapping does with a batch response: delete every message not named.
    pub async fn settle(&self, event: &SqsEvent, response: &SqsBatchResponse) {
        let settled = self.settle_counting(event, response).await;
        assert_eq!(settled.delete_errors, 0, "a delete was refused");
    }

    /// [`Queue::settle`], counting instead of failing: a receipt handle goes stale when a batch
    /// outlives its visibility timeout and the message was received again meanwhile.
    pub async fn settle_counting(&self, event: &SqsEvent, response: &SqsBatchResponse) -> Settled {
        let mut settled = Settled::default();
        for m in &event.records {
            let named = response
                .batch_item_failures
                .iter()
                .any(|f| Some(&f.item_identifier) == m.message_id.as_ref());
            if named {
                settled.left += 1;
                continue;
            }
            let deleted = self
                .adapter
                .client()
                .delete_message()
                .queue_url(&self.url)
                .receipt_handle(m.receipt_handle.clone().unwrap_or_default())
                .send()
                .await;
            match deleted {
                Ok(_) => settled
                    .deleted
                    .push(m.message_id.clone().unwrap_or_default()),
                Err(_) => settled.delete_errors += 1,
            }
        }
        settled
    }

    pub async fn delete(&self, m: &SqsMessage) {
        self.adapter
            .client()
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(m.receipt_handle.clone().unwrap())
            .send()
            .await
            .unwrap();
    }

    /// Every job visible now (received and deleted).
    pub async fn drain_jobs(&self) -> Vec<Job> {
        let mut jobs = Vec::new();
        loop {
            let event = self.receive_event(0).await;
            if event.records.is_empty() {
                return jobs;
            }
            for m in &event.records {
                jobs.push(serde_json::from_str(m.body.as_deref().unwrap()).unwrap());
                self.delete(m).await;
            }
        }
    }
}
