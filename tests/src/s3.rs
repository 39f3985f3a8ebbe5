//! Buckets of one's own on the S3 emulator (moto on loopback, the same server as SQS;
//! `scripts/services.sh` starts it), and an [`S3Store`] pointed at one.

use shared::archive::store::s3::S3Store;

/// The emulator's address: `AWS_ENDPOINT_URL_S3`, else the SQS emulator's (moto serves both).
pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL_S3").unwrap_or_else(|_| crate::sqs::endpoint())
}

/// A new bucket of this test's own, and a store on it.
pub async fn bucket() -> S3Store {
    let name = format!("syncplane-test-{}", uuid::Uuid::new_v4());
    let store = S3Store::for_emulator(&endpoint(), &name);
    store
        .client()
        .create_bucket()
        .bucket(&name)
        .send()
        .await
        .expect("the S3 emulator answers (scripts/services.sh starts it)");
    store
}
