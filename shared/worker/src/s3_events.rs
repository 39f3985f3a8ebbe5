//! S3 `ObjectCreated` notifications on the jobs queue (docs/transcript-wire-contract.md
//! "`POST .../complete`": "an S3 `ObjectCreated` notification on the jobs queue lets the worker
//! complete an upload whose `complete` was lost, with the same verification").
//!
//! A message whose body is an S3 event notification is recognised before the job parse
//! ([`parse`]); each record under [`PREFIX`] is the object of an upload intent, found by its key
//! and completed through the archive ([`Uploads`]), against the FIRST tenant's database (the one
//! the ingest function serves). What a message comes to (the worker's verdict of the same name):
//! - `s3:TestEvent` (S3 sends it when the notification is configured), a record of another
//!   prefix or event: nothing to do, deleted ([`Completion::Done`]);
//! - an upload completed now or before: [`Completion::Done`];
//! - the store or the database failed: [`Completion::Retry`] (completion is idempotent, so the
//!   records of the message that did complete are harmless to run again);
//! - a key no intent names, or an upload that can never complete (expired, not what its intent
//!   said, overtaken): [`Completion::Dropped`], with a log line.
//!
//! After an upload completes, the worker indexes what waits in the search queue (issue 34;
//! `syncplane_archive::search::index::drain`, up to [`INDEX_PER_EVENT`] segments), so in AWS a
//! segment is searchable seconds after it is stored.
//!
//! Every completion that is not success counts one `TranscriptCompleteFailures` (EMF, by
//! verdict); template.yaml alarms on it.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use uuid::Uuid;

use syncplane_accounts::gates;
use syncplane_archive::search::index;
use syncplane_archive::store::Store;
use syncplane_archive::store::s3::S3Store;
use syncplane_archive::{ArchiveError, files};
use syncplane_core::config::Config;
use syncplane_jobs::tenants::Tenants;

/// Queued segments the worker indexes after each upload it completes (its own, and others'
/// waiting).
const INDEX_PER_EVENT: u64 = 8;
use syncplane_core::metrics::{Record, Unit, default_tenant};

/// Where transcript segments live in the bucket (docs/transcript-wire-contract.md "Segments").
pub const PREFIX: &str = "transcripts/";
/// The EMF metric of a completion that failed (template.yaml `TranscriptCompleteFailuresAlarm`).
pub const COMPLETE_FAILURES: &str = "TranscriptCompleteFailures";

/// What completing one upload came to (the archive's error, judged for a queue message), and
/// what a notification came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// Completed now, or before (idempotent); or nothing to do.
    Done,
    /// Worth another try: the store or the database failed.
    Retry(String),
    /// Can never complete: expired, not what its intent said, overtaken by the file.
    Dropped(String),
}

impl Completion {
    /// Its name in logs and in the metric's `Verdict` dimension.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Retry(_) => "retry",
            Self::Dropped(_) => "dropped",
        }
    }
}

/// The archive as the worker needs it: `syncplane_archive::files::{upload_by_key,
/// complete_upload}` on the first tenant's pool and the configured store.
pub trait Uploads: Send + Sync {
    /// The upload intent whose object is `key`; `Err` is a database failure (logged text).
    fn upload_by_key<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Uuid>, String>>;
    /// Verify what is stored for `upload_id` and record it (the `complete` route's path).
    fn complete(&self, upload_id: Uuid) -> BoxFuture<'_, Completion>;
}

/// [`Uploads`] on a tenant's database and the configured store: what the worker function uses.
pub struct Archive {
    pub pool: sqlx::PgPool,
    pub store: Store,
}

impl Uploads for Archive {
    fn upload_by_key<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Uuid>, String>> {
        Box::pin(async move {
            files::upload_by_key(&self.pool, key)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn complete(&self, upload_id: Uuid) -> BoxFuture<'_, Completion> {
        Box::pin(async move {
            // The route's checks that still apply without a device: the org's policy and gates
            // (switched off mid-upload: nothing recorded).
            let org = match files::upload(&self.pool, upload_id).await {
                Ok(Some(up)) => up.org_id,
                Ok(None) => return Completion::Dropped("no such upload".into()),
                Err(e) => return Completion::Retry(format!("database: {e}")),
            };
            match gates::org_allows(&self.pool, org).await {
                Ok(true) => {}
                Ok(false) => {
                    return Completion::Dropped("transcripts are off for the org".into());
                }
                Err(e) => return Completion::Retry(format!("database: {e}")),
            }
            match files::complete_upload(&self.pool, &self.store, upload_id).await {
                Ok(_) => {
                    // The segment is queued for search: indexed here, with what else waits
                    // (a failure leaves it queued for the next notification or the hourly run).
                    if let Err(e) = index::drain(&self.pool, &self.store, INDEX_PER_EVENT).await {
                        tracing::warn!(error = %e, "transcript indexing failed");
                    }
                    Completion::Done
                }
                Err(e @ (ArchiveError::Store(_) | ArchiveError::Db(_))) => {
                    Completion::Retry(e.to_string())
                }
                // S3 reported the object, so a missing one was deleted since: no retry helps.
                Err(e) => Completion::Dropped(e.to_string()),
            }
        })
    }
}

/// The archive the worker completes uploads in: with a transcript bucket (`TRANSCRIPT_BUCKET`),
/// the S3 store on the FIRST tenant's database (the one the ingest function serves); `None`
/// without a bucket (no notification can come). Its store is the one `transcripts.expire`
/// deletes from too (`crate::expire`).
pub async fn archive(config: &Config, tenants: &Tenants) -> Option<Arc<Archive>> {
    config.transcripts.bucket.as_ref()?;
    let pool = tenants.pool(config.tenants.first()?.id.as_str())?.clone();
    let store = Store::S3(S3Store::from_settings(&config.transcripts).await);
    Some(Arc::new(Archive { pool, store }))
}

/// A queue message that is an S3 event notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    /// `s3:TestEvent`: S3 checking that it can reach the queue.
    Test,
    /// The records of an event (`eventSource` `aws:s3`).
    Records(Vec<S3Record>),
}

/// One record of an S3 event notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Record {
    /// `ObjectCreated:Put`, `ObjectRemoved:Delete`, ...
    pub event_name: String,
    pub bucket: String,
    /// The key as S3 writes it in events: URL-encoded, spaces as `+` ([`decode_key`]).
    pub raw_key: String,
    pub size: Option<u64>,
}

#[derive(Deserialize)]
struct Body {
    #[serde(rename = "Records")]
    records: Option<Vec<RecordBody>>,
    #[serde(rename = "Event")]
    event: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RecordBody {
    event_source: Option<String>,
    event_name: Option<String>,
    s3: Option<Entity>,
}

#[derive(Deserialize)]
struct Entity {
    bucket: Named,
    object: Object,
}

#[derive(Deserialize)]
struct Named {
    name: String,
}

#[derive(Deserialize)]
struct Object {
    key: String,
    size: Option<u64>,
}

/// The S3 notification `body` is, or `None` when it is something else (a job, anything).
pub fn parse(body: &str) -> Option<Notification> {
    let body: Body = serde_json::from_str(body).ok()?;
    if body.event.as_deref() == Some("s3:TestEvent") {
        return Some(Notification::Test);
    }
    let records = body.records?;
    if !records
        .iter()
        .any(|r| r.event_source.as_deref() == Some("aws:s3"))
    {
        return None;
    }
    let records = records
        .into_iter()
        .filter(|r| r.event_source.as_deref() == Some("aws:s3"))
        .filter_map(|r| {
            let s3 = r.s3?;
            Some(S3Record {
                event_name: r.event_name.unwrap_or_default(),
                bucket: s3.bucket.name,
                raw_key: s3.object.key,
                size: s3.object.size,
            })
        })
        .collect();
    Some(Notification::Records(records))
}

/// An object key as S3 event notifications write it (URL-encoded, `+` for a space); `None` for
/// an encoding that is not UTF-8 or a broken escape.
pub(crate) fn decode_key(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// What the worker does with a notification; `uploads` is `None` on a worker without an archive.
pub async fn handle(
    message_id: &str,
    notification: Notification,
    uploads: Option<&Arc<dyn Uploads>>,
) -> Completion {
    let records = match notification {
        Notification::Test => {
            tracing::info!(message_id, "S3 test event: the bucket reaches the queue");
            return Completion::Done;
        }
        Notification::Records(records) => records,
    };
    let mut outcomes = Vec::with_capacity(records.len());
    for record in records {
        outcomes.push(handle_record(message_id, &record, uploads).await);
    }
    combine(outcomes)
}

/// One record: anything but a created object under [`PREFIX`] is not the worker's.
async fn handle_record(
    message_id: &str,
    record: &S3Record,
    uploads: Option<&Arc<dyn Uploads>>,
) -> Completion {
    if !record.event_name.starts_with("ObjectCreated:") {
        return Completion::Done;
    }
    let Some(key) = decode_key(&record.raw_key) else {
        tracing::warn!(message_id, bucket = %record.bucket, "S3 event with an undecodable key; ignored");
        return Completion::Dropped("undecodable key".into());
    };
    if !key.starts_with(PREFIX) {
        tracing::debug!(
            message_id,
            key,
            "S3 event outside the transcripts prefix; ignored"
        );
        return Completion::Done;
    }
    let Some(uploads) = uploads else {
        // A deployment sending notifications to a worker without TRANSCRIPT_BUCKET: redelivery
        // cannot change that; the client's own `complete` still records the segment.
        tracing::error!(
            message_id,
            key,
            "S3 event but this worker has no transcript archive"
        );
        return Completion::Dropped("no transcript archive configured".into());
    };
    let id = match uploads.upload_by_key(&key).await {
        Ok(Some(id)) => id,
        Ok(None) => {
            tracing::warn!(
                message_id,
                key,
                "S3 object no upload intent names; left alone"
            );
            return Completion::Dropped(format!("no upload intent for {key}"));
        }
        Err(e) => return counted_failure(Completion::Retry(format!("upload lookup: {e}"))),
    };
    match uploads.complete(id).await {
        Completion::Done => {
            tracing::info!(message_id, upload_id = %id, "upload completed from its S3 event");
            Completion::Done
        }
        failed => {
            tracing::warn!(message_id, upload_id = %id, outcome = ?failed, "upload not completed from its S3 event");
            counted_failure(failed)
        }
    }
}

/// A failed completion, counted in [`COMPLETE_FAILURES`].
fn counted_failure(failed: Completion) -> Completion {
    if failed != Completion::Done {
        Record::new(default_tenant())
            .metric_by(
                &[("Verdict", failed.name())],
                COMPLETE_FAILURES,
                Unit::Count,
                1,
            )
            .emit();
    }
    failed
}

/// A message's outcome from its records': any retry redelivers it (completion is idempotent),
/// else any drop, else done.
fn combine(outcomes: Vec<Completion>) -> Completion {
    let mut out = Completion::Done;
    for c in outcomes {
        match (&out, c) {
            (Completion::Retry(_), _) => {}
            (_, c @ Completion::Retry(_)) => out = c,
            (Completion::Done, c @ Completion::Dropped(_)) => out = c,
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use super::*;

    const KEY: &str =
        "transcripts/1/0123456789abcdef0123456789abcdef/s-1.jsonl/1/00000000000000000000-ab.zst";

    /// The archive's answers by key, and the completions asked for.
    #[derive(Default)]
    struct Archive {
        by_key: HashMap<String, Uuid>,
        outcomes: HashMap<Uuid, Completion>,
        lookup_fails: bool,
        completed: Mutex<Vec<Uuid>>,
    }

    impl Archive {
        fn with(key: &str, outcome: Completion) -> (Arc<dyn Uploads>, Arc<Archive>) {
            let id = Uuid::new_v4();
            let archive = Arc::new(Archive {
                by_key: HashMap::from([(key.to_owned(), id)]),
                outcomes: HashMap::from([(id, outcome)]),
                ..Archive::default()
            });
            (archive.clone(), archive)
        }
    }

    impl Uploads for Archive {
        fn upload_by_key<'a>(
            &'a self,
            key: &'a str,
        ) -> BoxFuture<'a, Result<Option<Uuid>, String>> {
            Box::pin(async move {
                if self.lookup_fails {
                    return Err("connection refused".into());
                }
                Ok(self.by_key.get(key).copied())
            })
        }
        fn complete(&self, upload_id: Uuid) -> BoxFuture<'_, Completion> {
            Box::pin(async move {
                self.completed.lock().unwrap().push(upload_id);
                self.outcomes[&upload_id].clone()
            })
        }
    }

    fn event(event_name: &str, key: &str) -> String {
        serde_json::json!({"Records": [{
            "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
            "eventTime": "2026-12-01T10:00:00.000Z", "eventName": event_name,
            "s3": {"s3SchemaVersion": "1.0", "configurationId": "transcripts",
                   "bucket": {"name": "syncplane-transcripts", "arn": "arn:aws:s3:::syncplane-transcripts"},
                   "object": {"key": key, "size": 1400, "eTag": "abc", "sequencer": "0A1B"}}
        }]})
        .to_string()
    }

    async fn verdict(body: &str, uploads: Option<&Arc<dyn Uploads>>) -> Completion {
        let notification = parse(body).expect("an S3 notification");
        handle("m-1", notification, uploads).await
    }

    #[test]
    fn an_s3_event_notification_is_recognised_and_a_job_is_not() {
        let Some(Notification::Records(records)) = parse(&event("ObjectCreated:Put", KEY)) else {
            panic!("records");
        };
        assert_eq!(
            records,
            [S3Record {
                event_name: "ObjectCreated:Put".into(),
                bucket: "syncplane-transcripts".into(),
                raw_key: KEY.into(),
                size: Some(1400),
            }]
        );
        let test_event = r#"{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-12-01T10:00:00.000Z","Bucket":"syncplane-transcripts","RequestId":"5582815E1AEA5ADF","HostId":"8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE"}"#;
        assert_eq!(parse(test_event), Some(Notification::Test));
        // Jobs, and what is not JSON or not S3's, go on to the job parse.
        assert_eq!(parse(r#"{"kind":"sync.drain","tenant":"default"}"#), None);
        assert_eq!(parse("not json"), None);
        assert_eq!(parse(r#"{"Records":[{"eventSource":"aws:sns"}]}"#), None);
        assert_eq!(parse(r#"["Records"]"#), None);
    }

    #[test]
    fn keys_in_s3_events_are_url_decoded() {
        assert_eq!(decode_key(KEY).as_deref(), Some(KEY));
        assert_eq!(
            decode_key("transcripts/a+b%2Bc%3D.zst").as_deref(),
            Some("transcripts/a b+c=.zst")
        );
        assert_eq!(
            decode_key("transcripts/%C3%A9").as_deref(),
            Some("transcripts/é")
        );
        for broken in [
            "transcripts/%",
            "transcripts/%4",
            "transcripts/%zz",
            "transcripts/%FF",
        ] {
            assert_eq!(decode_key(broken), None, "{broken}");
        }
    }

    #[tokio::test]
    async fn a_created_object_completes_its_upload_found_by_the_decoded_key() {
        let (uploads, archive) = Archive::with("transcripts/a b.zst", Completion::Done);
        let v = verdict(
            &event("ObjectCreated:Put", "transcripts/a+b.zst"),
            Some(&uploads),
        )
        .await;
        assert_eq!(v, Completion::Done);
        assert_eq!(archive.completed.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_store_or_database_failure_is_redelivered() {
        let (uploads, _) = Archive::with(KEY, Completion::Retry("store unavailable".into()));
        let v = verdict(&event("ObjectCreated:Put", KEY), Some(&uploads)).await;
        assert!(matches!(v, Completion::Retry(_)), "{v:?}");

        let failing: Arc<dyn Uploads> = Arc::new(Archive {
            lookup_fails: true,
            ..Archive::default()
        });
        let v = verdict(&event("ObjectCreated:Put", KEY), Some(&failing)).await;
        assert!(matches!(v, Completion::Retry(_)), "{v:?}");
    }

    #[tokio::test]
    async fn an_upload_that_can_never_complete_and_an_unknown_key_are_dropped() {
        let (uploads, _) = Archive::with(KEY, Completion::Dropped("upload expired".into()));
        let v = verdict(&event("ObjectCreated:Put", KEY), Some(&uploads)).await;
        assert_eq!(v, Completion::Dropped("upload expired".into()));

        let (uploads, archive) = Archive::with("transcripts/other.zst", Completion::Done);
        let v = verdict(&event("ObjectCreated:Put", KEY), Some(&uploads)).await;
        assert!(matches!(v, Completion::Dropped(_)), "{v:?}");
        assert!(
            archive.completed.lock().unwrap().is_empty(),
            "nothing completed"
        );
    }

    #[tokio::test]
    async fn test_events_other_prefixes_and_other_events_are_done_without_the_archive() {
        let (uploads, archive) = Archive::with(KEY, Completion::Done);
        let test_event = r#"{"Service":"Amazon S3","Event":"s3:TestEvent"}"#;
        assert_eq!(verdict(test_event, Some(&uploads)).await, Completion::Done);
        assert_eq!(verdict(test_event, None).await, Completion::Done);
        let elsewhere = event("ObjectCreated:Put", "exports/2026/x.csv");
        assert_eq!(verdict(&elsewhere, Some(&uploads)).await, Completion::Done);
        let removed = event("ObjectRemoved:Delete", KEY);
        assert_eq!(verdict(&removed, Some(&uploads)).await, Completion::Done);
        assert!(archive.completed.lock().unwrap().is_empty());
        // A transcript object reaching a worker without an archive cannot be completed there.
        let v = verdict(&event("ObjectCreated:Put", KEY), None).await;
        assert!(matches!(v, Completion::Dropped(_)), "{v:?}");
    }

    #[test]
    fn a_message_is_redelivered_if_any_record_must_be_retried() {
        let retry = || Completion::Retry("r".into());
        let drop = || Completion::Dropped("d".into());
        assert_eq!(combine(vec![]), Completion::Done);
        assert_eq!(combine(vec![Completion::Done, drop()]), drop());
        assert_eq!(combine(vec![drop(), retry(), Completion::Done]), retry());
        assert_eq!(combine(vec![retry(), drop()]), retry());
    }

    #[tokio::test]
    async fn a_failed_completion_counts_one_transcript_complete_failure() {
        let (uploads, _) = Archive::with(KEY, Completion::Retry("db".into()));
        let (v, lines) = syncplane_core::metrics::capture(verdict(
            &event("ObjectCreated:Put", KEY),
            Some(&uploads),
        ))
        .await;
        assert!(matches!(v, Completion::Retry(_)));
        assert_eq!(lines.len(), 1, "{lines:?}");
        let doc: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(doc[COMPLETE_FAILURES], 1.0);
        assert_eq!(doc["Verdict"], "retry");
        let (uploads, _) = Archive::with(KEY, Completion::Done);
        let (_, lines) = syncplane_core::metrics::capture(verdict(
            &event("ObjectCreated:Put", KEY),
            Some(&uploads),
        ))
        .await;
        assert!(lines.is_empty(), "{lines:?}");
    }
}
