//! The presigned S3 transport (docs/transcript-wire-contract.md "`POST .../intent`", presigned;
//! docs/design.md "Transcripts"), for real over HTTP against the S3 emulator (moto).
//!
//! Where moto and S3 differ, the tests pin what moto does and show what catches it instead: moto
//! verifies neither a presigned URL's signature nor its expiry, nor the signed
//! `x-amz-checksum-sha256` (its `moto/s3/responses.py` only compares metadata hoisted into the
//! query with the headers sent; S3 answers `403` for an expired or altered URL and
//! `400 BadDigest` for another body). The server's own verification on `complete` (length,
//! SHA-256, bounded decompression) is what holds on every S3 server. For expiry the tests put
//! [`S3Front`] before moto, pinned here to S3's answer (`403 AccessDenied`, "Request has
//! expired"; see its module doc for the sources).

use std::collections::BTreeMap;
use std::sync::Arc;

use aws_sdk_sqs::types::QueueAttributeName;
use chrono::{DateTime, Duration, Utc};
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};
use shared::archive::store::s3::S3Store;
use shared::archive::store::{Put, StoreError, UploadSpec, UploadTarget};
use shared::jobs::adapter::JobsAdapter;
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use shared::worker::Worker;
use shared::worker::s3_events::{Completion, Uploads};
use syncplane_tests::s3;
use syncplane_tests::s3_front::S3Front;

fn spec<'a>(key: &'a str, body: &[u8], expires_at: DateTime<Utc>) -> UploadSpec<'a> {
    UploadSpec {
        key,
        upload_id: uuid::Uuid::new_v4(),
        compressed_bytes: body.len() as u64,
        sha256: Sha256::digest(body).into(),
        expires_at,
    }
}

fn segment_key() -> String {
    format!(
        "transcripts/1/{}/s-1.jsonl/1/{:020}-{}.zst",
        "0".repeat(32),
        0,
        "ab".repeat(32)
    )
}

/// The client's PUT: exactly the target's headers, the bytes as the body.
async fn put(target: &UploadTarget, body: &[u8]) -> reqwest::Response {
    let mut request = reqwest::Client::new().put(&target.url);
    for (name, value) in &target.headers {
        request = request.header(name, value);
    }
    request.body(body.to_vec()).send().await.unwrap()
}

/// The query of a presigned URL.
fn query(url: &str) -> BTreeMap<String, String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// When a SigV4 presigned URL stops being valid: `X-Amz-Date` + `X-Amz-Expires`.
fn url_expiry(url: &str) -> DateTime<Utc> {
    let q = query(url);
    let signed = chrono::NaiveDateTime::parse_from_str(&q["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
        .unwrap()
        .and_utc();
    signed + Duration::seconds(q["X-Amz-Expires"].parse().unwrap())
}

#[tokio::test]
async fn the_url_is_an_s3_put_signed_for_content_length_the_checksum_and_if_none_match() {
    let store = s3::bucket().await;
    let body = b"compressed segment bytes".as_slice();
    let key = segment_key();
    let expires_at = Utc::now() + Duration::seconds(300);
    let target = store
        .upload_target(&spec(&key, body, expires_at))
        .await
        .unwrap();

    assert_eq!(target.method, "PUT");
    assert_eq!(target.expires_at, expires_at);
    let sha = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        Sha256::digest(body),
    );
    let headers: BTreeMap<&str, &str> = target
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        headers,
        BTreeMap::from([
            ("content-length", body.len().to_string().as_str()),
            ("content-type", "application/octet-stream"),
            ("if-none-match", "*"),
            ("x-amz-checksum-sha256", sha.as_str()),
        ]),
        "exactly the headers to send"
    );
    // Each of them is signed (a header, never hoisted into the query where S3 ignores it).
    let q = query(&target.url);
    let mut signed: Vec<&str> = q["X-Amz-SignedHeaders"].split(';').collect();
    signed.sort();
    assert_eq!(
        signed,
        [
            "content-length",
            "content-type",
            "host",
            "if-none-match",
            "x-amz-checksum-sha256"
        ]
    );
    assert!(
        !q.keys()
            .any(|k| k.eq_ignore_ascii_case("x-amz-checksum-sha256"))
    );
    assert_eq!(q["X-Amz-Algorithm"], "AWS4-HMAC-SHA256");
    // Valid until the intent's expiresAt, to the second.
    let until = url_expiry(&target.url);
    assert!(
        (until - expires_at).num_seconds().abs() <= 1,
        "{until} vs {expires_at}"
    );
}

#[tokio::test]
async fn a_put_with_the_presigned_url_and_its_headers_stores_the_object() {
    let store = s3::bucket().await;
    let body = b"\x28\xb5\x2f\xfd segment".as_slice();
    let key = segment_key();
    let target = store
        .upload_target(&spec(&key, body, Utc::now() + Duration::seconds(300)))
        .await
        .unwrap();
    let response = put(&target, body).await;
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let stored = store.get(&key, 1024).await.unwrap();
    assert_eq!(stored.as_deref(), Some(body));
}

#[tokio::test]
async fn an_object_already_there_answers_412_and_both_are_success() {
    let store = s3::bucket().await;
    let body = b"first bytes".as_slice();
    let key = segment_key();
    let target = store
        .upload_target(&spec(&key, body, Utc::now() + Duration::seconds(300)))
        .await
        .unwrap();
    assert_eq!(put(&target, body).await.status(), 200);
    // The retried segment: S3 answers 412 PreconditionFailed (create-only), the object unchanged.
    let again = put(&target, body).await;
    assert_eq!(again.status(), 412);
    assert!(again.text().await.unwrap().contains("PreconditionFailed"));
    // The server's own write is create-only too: an object there is `Existed`, never replaced.
    assert_eq!(store.put(&key, b"other").await.unwrap(), Put::Existed);
    assert_eq!(store.get(&key, 1024).await.unwrap().as_deref(), Some(body));
    let fresh = format!("{key}.2");
    assert_eq!(store.put(&fresh, b"new").await.unwrap(), Put::Created);
    assert_eq!(
        store.get(&fresh, 1024).await.unwrap().as_deref(),
        Some(b"new".as_slice())
    );
}

#[tokio::test]
async fn an_expired_url_is_signed_as_expired_and_moto_does_not_refuse_it() {
    let store = s3::bucket().await;
    let body = b"late bytes".as_slice();
    let key = segment_key();
    let expired = Utc::now() - Duration::seconds(5);
    let target = store
        .upload_target(&spec(&key, body, expired))
        .await
        .unwrap();
    // The URL's window ended before now: S3 answers 403 AccessDenied ("Request has expired"),
    // and the client asks for a new intent.
    let until = url_expiry(&target.url);
    assert!(until <= Utc::now(), "{until}");
    assert!((until - expired).num_seconds().abs() <= 1);
    // moto never checks X-Amz-Expires (see the module's comment): it stores the bytes. What
    // holds there is the intent's own expiry: `complete` refuses it with 410 upload_expired.
    let response = put(&target, body).await;
    assert_eq!(
        response.status(),
        200,
        "moto enforces expiry now: make this test expect 403"
    );
}

/// The text of `<name>` in an S3 error body.
fn element<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let len = xml[start..].find(&format!("</{name}>"))?;
    Some(&xml[start..start + len])
}

#[tokio::test]
async fn the_front_refuses_an_expired_presigned_put_as_s3_does_403_access_denied_request_has_expired()
 {
    let front = S3Front::start(&s3::endpoint()).await;
    let store = s3::bucket_at(&front.url()).await;
    let body = b"late bytes".as_slice();
    let key = segment_key();
    let expired = chrono::DateTime::from_timestamp(Utc::now().timestamp() - 5, 0).unwrap();
    let target = store
        .upload_target(&spec(&key, body, expired))
        .await
        .unwrap();
    assert!(target.url.starts_with(&front.url()), "{}", target.url);

    let response = put(&target, body).await;
    assert_eq!(response.status(), 403);
    assert_eq!(response.headers()["content-type"], "application/xml");
    let xml = response.text().await.unwrap();
    assert_eq!(element(&xml, "Code"), Some("AccessDenied"), "{xml}");
    assert_eq!(element(&xml, "Message"), Some("Request has expired"));
    assert_eq!(element(&xml, "X-Amz-Expires"), Some("1"));
    let at = |name| {
        chrono::DateTime::parse_from_rfc3339(element(&xml, name).unwrap())
            .unwrap()
            .with_timezone(&Utc)
    };
    assert_eq!(at("Expires"), expired, "X-Amz-Date + X-Amz-Expires");
    assert!(at("ServerTime") > expired);
    assert!(element(&xml, "RequestId").is_some() && element(&xml, "HostId").is_some());
    assert_eq!(front.refused(), 1);
    assert_eq!(store.get(&key, 1024).await.unwrap(), None, "nothing stored");
}

#[tokio::test]
async fn the_front_forwards_a_valid_presigned_put_and_a_late_replay_is_403_before_it_is_412() {
    let front = S3Front::start(&s3::endpoint()).await;
    let store = s3::bucket_at(&front.url()).await;
    let body = b"bytes in time".as_slice();
    let key = segment_key();
    let target = store
        .upload_target(&spec(&key, body, Utc::now() + Duration::seconds(300)))
        .await
        .unwrap();
    assert_eq!(put(&target, body).await.status(), 200);
    assert_eq!(store.get(&key, 1024).await.unwrap().as_deref(), Some(body));
    // Replayed in time: moto's create-only answer, which is S3's.
    let again = put(&target, body).await;
    assert_eq!(again.status(), 412);
    assert_eq!(
        element(&again.text().await.unwrap(), "Code"),
        Some("PreconditionFailed")
    );
    // Replayed after the URL's window: S3 authenticates first, so it is the expiry's 403.
    front.arrive_late(std::time::Duration::from_secs(301), 1);
    let late = put(&target, body).await;
    assert_eq!(late.status(), 403);
    assert_eq!(
        element(&late.text().await.unwrap(), "Message"),
        Some("Request has expired")
    );
    assert_eq!(
        put(&target, body).await.status(),
        412,
        "only the next one late"
    );
    assert_eq!(front.refused(), 1);
    assert_eq!(store.get(&key, 1024).await.unwrap().as_deref(), Some(body));
}

#[tokio::test]
async fn a_body_other_than_the_signed_one_is_caught_by_the_servers_own_read() {
    let store = s3::bucket().await;
    let body = b"the intent's bytes".as_slice();
    let key = segment_key();
    let target = store
        .upload_target(&spec(&key, body, Utc::now() + Duration::seconds(300)))
        .await
        .unwrap();
    // Longer than signed: S3 refuses it (Content-Length is signed); moto stores it.
    let longer = [body, b" and more"].concat();
    let mut request = reqwest::Client::new().put(&target.url);
    for (name, value) in target.headers.iter().filter(|(n, _)| n != "content-length") {
        request = request.header(name, value);
    }
    let response = request.body(longer.clone()).send().await.unwrap();
    assert_eq!(response.status(), 200, "moto accepts another length");
    // `complete` reads at most the intent's length: the longer object is refused unread.
    assert!(matches!(
        store.get(&key, body.len() as u64).await,
        Err(StoreError::TooLarge { limit }) if limit == body.len() as u64
    ));

    // Same length, other bytes: S3 answers 400 BadDigest; moto stores them; the SHA-256 the
    // server computes is not the intent's.
    let key2 = format!("{key}.2");
    let target = store
        .upload_target(&spec(&key2, body, Utc::now() + Duration::seconds(300)))
        .await
        .unwrap();
    let forged = b"the intent's byteZ".as_slice();
    assert_eq!(forged.len(), body.len());
    assert_eq!(
        put(&target, forged).await.status(),
        200,
        "moto ignores the checksum"
    );
    let stored = store.get(&key2, body.len() as u64).await.unwrap().unwrap();
    assert_ne!(Sha256::digest(&stored), Sha256::digest(body));
}

#[tokio::test]
async fn get_reads_at_most_max_bytes_and_a_missing_object_is_none() {
    let store = s3::bucket().await;
    let key = segment_key();
    let bytes = vec![7u8; 100_000];
    assert_eq!(store.put(&key, &bytes).await.unwrap(), Put::Created);
    assert!(matches!(
        store.get(&key, 99_999).await,
        Err(StoreError::TooLarge { limit: 99_999 })
    ));
    assert_eq!(store.get(&key, 100_000).await.unwrap(), Some(bytes));
    assert_eq!(store.get("transcripts/none.zst", 10).await.unwrap(), None);
}

#[tokio::test]
async fn delete_removes_the_object_and_deleting_nothing_is_success() {
    let store = s3::bucket().await;
    let key = segment_key();
    store.put(&key, b"bytes").await.unwrap();
    store.delete(&key).await.unwrap();
    assert_eq!(store.get(&key, 10).await.unwrap(), None);
    store.delete(&key).await.unwrap();
}

#[tokio::test]
async fn the_read_url_is_a_presigned_get_of_the_stored_bytes() {
    let store = s3::bucket().await;
    let key = segment_key();
    let bytes = b"\x28\xb5\x2f\xfd stored".as_slice();
    store.put(&key, bytes).await.unwrap();
    let expires_at = Utc::now() + Duration::seconds(300);
    let url = store.read_url(&key, expires_at).await.unwrap();
    assert!((url_expiry(&url) - expires_at).num_seconds().abs() <= 1);
    let response = reqwest::get(&url).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.bytes().await.unwrap().as_ref(), bytes);
}

#[tokio::test]
async fn a_store_that_does_not_answer_is_unavailable() {
    // Nothing listens on port 9 of loopback.
    let store = S3Store::for_emulator("http://127.0.0.1:9", "nowhere");
    assert!(matches!(
        store.get("transcripts/x.zst", 10).await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store.put("transcripts/x.zst", b"x").await,
        Err(StoreError::Unavailable(_))
    ));
}

/// The archive as the worker sees it: every key it was asked about, each upload known.
#[derive(Default)]
struct Recorded {
    keys: std::sync::Mutex<Vec<String>>,
}

impl Uploads for Recorded {
    fn upload_by_key<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<uuid::Uuid>, String>> {
        self.keys.lock().unwrap().push(key.to_owned());
        Box::pin(async { Ok(Some(uuid::Uuid::new_v4())) })
    }
    fn complete(&self, _upload_id: uuid::Uuid) -> BoxFuture<'_, Completion> {
        Box::pin(async { Completion::Done })
    }
}

#[tokio::test]
async fn the_buckets_object_created_notification_reaches_the_worker_which_completes_the_upload() {
    let store = s3::bucket().await;
    let queue = syncplane_tests::sqs::Queue::new(30).await;
    let arn = queue.attribute(QueueAttributeName::QueueArn).await;
    s3::notify(&store, &arn, "transcripts/").await;

    // A key S3 must URL-encode in its event (and a fileId's characters need no encoding at all).
    let key = "transcripts/1/abc/s-1 (copy)+x.jsonl/1/00000000000000000000-ab.zst";
    let body = b"segment".as_slice();
    let target = store
        .upload_target(&spec(key, body, Utc::now() + Duration::seconds(300)))
        .await
        .unwrap();
    assert_eq!(put(&target, body).await.status(), 200);
    // Outside the prefix: no notification at all.
    store.put("exports/other.bin", b"x").await.unwrap();

    let recorded = Arc::new(Recorded::default());
    let tenants = Arc::new(Tenants::from_parts(Vec::new(), RunOptions::default()));
    let worker = Worker::new(tenants, JobsAdapter::Sqs(queue.adapter.clone()))
        .with_archive(recorded.clone());
    let mut bodies = Vec::new();
    for _ in 0..5 {
        let event = queue.receive_event(1).await;
        bodies.extend(event.records.iter().filter_map(|m| m.body.clone()));
        let response = worker.serve(event.clone()).await;
        assert!(response.batch_item_failures.is_empty(), "{bodies:?}");
        queue.settle(&event, &response).await;
        if bodies.len() >= 2 {
            break;
        }
    }
    // moto sends S3's test event first, then the record (its key encoded as S3 does).
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    assert!(bodies.iter().any(|b| b.contains("s3:TestEvent")));
    assert!(bodies.iter().any(|b| b.contains("transcripts%2F1%2Fabc")));
    assert_eq!(*recorded.keys.lock().unwrap(), [key], "the decoded key");
    assert_eq!(queue.outstanding().await, 0, "every message deleted");
}
