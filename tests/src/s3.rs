//! Buckets of one's own on the S3 emulator (moto on loopback, the same server as SQS;
//! `scripts/services.sh` starts it), and an [`S3Store`] pointed at one.

use shared::archive::store::s3::S3Store;

/// The emulator's address: `AWS_ENDPOINT_URL_S3`, else the SQS emulator's (moto serves both).
pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL_S3").unwrap_or_else(|_| crate::sqs::endpoint())
}

/// A new bucket of this test's own, and a store on it.
pub async fn bucket() -> S3Store {
    bucket_at(&endpoint()).await
}

/// A new bucket of this test's own, and a store on it, through the S3 server at `endpoint` (the
/// emulator, or a [`crate::s3_front::S3Front`] before it: the URLs the store signs point there).
pub async fn bucket_at(endpoint: &str) -> S3Store {
    let name = format!("syncplane-test-{}", uuid::Uuid::new_v4());
    let store = S3Store::for_emulator(endpoint, &name);
    store
        .client()
        .create_bucket()
        .bucket(&name)
        .send()
        .await
        .expect("the S3 emulator answers (scripts/services.sh starts it)");
    store
}

/// Have the bucket notify `queue_arn` of every object created under `prefix` (as template.yaml
/// configures it); moto then sends the queue an `s3:TestEvent` first, as S3 does.
pub async fn notify(store: &S3Store, queue_arn: &str, prefix: &str) {
    use aws_sdk_s3::types::{
        Event, FilterRule, FilterRuleName, NotificationConfiguration,
        NotificationConfigurationFilter, QueueConfiguration, S3KeyFilter,
    };
    let filter = NotificationConfigurationFilter::builder()
        .key(
            S3KeyFilter::builder()
                .filter_rules(
                    FilterRule::builder()
                        .name(FilterRuleName::Prefix)
                        .value(prefix)
                        .build(),
                )
                .build(),
        )
        .build();
    let queue = QueueConfiguration::builder()
        .queue_arn(queue_arn)
        .events(Event::from("s3:ObjectCreated:*"))
        .filter(filter)
        .build()
        .unwrap();
    store
        .client()
        .put_bucket_notification_configuration()
        .bucket(store.bucket())
        .notification_configuration(
            NotificationConfiguration::builder()
                .queue_configurations(queue)
                .build(),
        )
        .send()
        .await
        .unwrap();
}
