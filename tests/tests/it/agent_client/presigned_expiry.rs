//! Expired and replayed presigned URLs (issue 20, "Bad input and faults": "an expired or replayed
//! presigned URL"; docs/transcript-wire-contract.md, "`POST .../intent`" and "`complete`"), end to
//! end: the real ingest handler, real Postgres, the client's transcript lane, and S3 as moto
//! behind [`S3Front`], which refuses a presigned request past its `X-Amz-Date + X-Amz-Expires`
//! with S3's `403 AccessDenied` "Request has expired" (moto alone stores it).
//!
//! - A URL used after it expired: `403`, nothing recorded; the lane asks a new intent and the file
//!   is archived once, byte-identical, without a dead letter for one expiry.
//! - URLs refused on every PUT: counted per file, so the file is dead-lettered after the lane's
//!   thresholds instead of asking intents forever.
//! - A PUT of the same URL replayed after success: `412` (create-only), success, one segment; once
//!   the URL expired the replay is `403` and still nothing is recorded twice.
//! - A `complete` for an intent whose URL expired without a PUT: `410 upload_expired`, nothing
//!   recorded.

use std::time::Duration;

use syncplane_agent::redact::Redactor;
use syncplane_agent::transcripts::segment::{Caps, Segment, stage};
use syncplane_agent::transcripts::transport::{Intent, IntentRequest};
use syncplane_agent::transcripts::{Api, Failure};
use syncplane_agent::{MemorySource, TokenHandle, TranscriptTransport};
use syncplane_contract::transcripts::path;
use syncplane_tests::s3;
use syncplane_tests::s3_front::S3Front;

use super::presigned::{
    Env, answered, archived, client, drain, env_on, objects, read_back, read_token, staged,
    transcript,
};
use super::support::TARGET;

/// Longer than an intent lives (300 s): a request this late finds its URL expired.
const PAST_THE_URL: Duration = Duration::from_secs(301);

/// The handler over a bucket reached through a front of its own, intents living `ttl`.
async fn fronted(ttl: Duration) -> (S3Front, Env) {
    let front = S3Front::start(&s3::endpoint()).await;
    let store = s3::bucket_at(&front.url()).await;
    let env = env_on(store, ttl).await;
    (front, env)
}

/// (uploads completed, uploads never completed, segments recorded) in the test's database.
async fn recorded(env: &Env) -> (i64, i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM transcript_uploads WHERE completed_at IS NOT NULL),
                (SELECT count(*) FROM transcript_uploads WHERE completed_at IS NULL),
                (SELECT count(*) FROM transcript_segments)",
    )
    .fetch_one(&env.db.pool)
    .await
    .unwrap()
}

/// The transport's calls, as the lane makes them, and the first segment of `bytes`.
fn api_and_segment(env: &Env, bytes: Vec<u8>) -> (TranscriptTransport, Segment, IntentRequest) {
    let src = MemorySource::default();
    src.put("s", "f.jsonl", bytes);
    let file = src.file("s", "f.jsonl").unwrap();
    let seg = stage(&src, &file, 0, &Caps::default(), &Redactor::new())
        .unwrap()
        .unwrap();
    let api = TranscriptTransport::new(
        &env.server.url(),
        TokenHandle::new(Some(env.token.clone())),
        Duration::from_secs(8),
    )
    .unwrap();
    let req = IntentRequest {
        compute_target_id: TARGET.into(),
        session_id: "s".into(),
        file_id: "f.jsonl".into(),
        generation: 1,
        offset: 0,
        source_bytes: seg.source_bytes,
        decoded_bytes: seg.decoded_bytes,
        compressed_bytes: seg.compressed.len() as u64,
        sha256: seg.sha256.clone(),
    };
    (api, seg, req)
}

#[tokio::test]
async fn an_intents_url_used_after_it_expired_is_403_and_the_lane_asks_a_new_intent_and_archives_the_file_once()
 {
    let (front, env) = fronted(Duration::from_secs(300)).await;
    let src = MemorySource::default();
    let bytes = transcript(0, 300);
    src.put("s", "f.jsonl", bytes.clone());
    // The first PUT arrives after its URL expired (the device slept between intent and PUT).
    front.arrive_late(PAST_THE_URL, 1);
    let (mut lane, clock) = client(&env, &src, &env.server.url(), Duration::from_secs(8));
    drain(&mut lane, &clock).await;

    assert_eq!(front.refused(), 1, "S3 refused the expired URL");
    let (segs, staging) = staged(&src, "s", "f.jsonl");
    assert!(segs.len() > 1, "several segments: {}", segs.len());
    assert_eq!(
        answered(&env, "POST", path::INTENT),
        segs.len() + 1,
        "one new intent for the refused URL"
    );
    assert_eq!(answered(&env, "POST", path::COMPLETE), segs.len());
    let n = segs.len() as i64;
    assert_eq!(
        recorded(&env).await,
        (n, 1, n),
        "the refused intent recorded nothing; each segment once"
    );
    assert_eq!(objects(&env).await.len(), segs.len());
    assert_eq!(
        archived(&env, "s", "f.jsonl").await,
        Some((1, bytes.len() as i64))
    );
    let token = read_token(&env).await;
    assert_eq!(read_back(&env, &token, "s", "f.jsonl").await, staging);
    assert_eq!(lane.figures().failures.get("upload_refused"), Some(&1));
    assert_eq!(lane.state().dead_letters().unwrap(), vec![]);
    assert_eq!(
        lane.state().budget_of("s", "f.jsonl").unwrap(),
        Some((None, 0)),
        "one expiry is not counted against the file"
    );
}

#[tokio::test]
async fn urls_refused_on_every_put_dead_letter_the_file_after_the_lanes_thresholds() {
    let (front, env) = fronted(Duration::from_secs(300)).await;
    let src = MemorySource::default();
    src.put("s", "f.jsonl", transcript(0, 20));
    // Every URL arrives expired (a signer whose clock is behind S3's by more than an intent's life).
    front.arrive_late(PAST_THE_URL, usize::MAX);
    let (mut lane, clock) = client(&env, &src, &env.server.url(), Duration::from_secs(8));
    drain(&mut lane, &clock).await;

    let dead = lane.state().dead_letters().unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(
        (dead[0].file_id.as_str(), dead[0].reason.as_str()),
        ("f.jsonl", "server_failure")
    );
    // Five attempts (the server-failure budget), each asking a new intent twice after its first.
    assert_eq!(front.refused(), 15);
    assert_eq!(answered(&env, "POST", path::INTENT), 15);
    assert_eq!(answered(&env, "POST", path::COMPLETE), 0);
    assert_eq!(lane.figures().failures.get("upload_refused"), Some(&15));
    assert_eq!(recorded(&env).await, (0, 15, 0), "nothing recorded");
    assert!(objects(&env).await.is_empty(), "nothing stored");
    assert_eq!(archived(&env, "s", "f.jsonl").await, Some((1, 0)));
}

#[tokio::test]
async fn a_replayed_put_of_the_same_url_after_success_is_412_success_and_one_segment() {
    let (front, env) = fronted(Duration::from_secs(300)).await;
    let (api, seg, req) = api_and_segment(&env, transcript(0, 30));
    let intent: Intent = api.intent(&req).await.unwrap();
    assert!(
        intent.upload.url.starts_with(&front.url()),
        "{}",
        intent.upload.url
    );
    api.upload(&intent, &seg.compressed).await.unwrap();
    let done = api.complete(&intent.upload_id).await.unwrap();
    assert_eq!((done.generation, done.acked_offset), (1, seg.end()));

    // The same PUT again, in time: S3's 412 (the object is there), which the client takes as
    // success; completing again is the same answer.
    assert_eq!(api.upload(&intent, &seg.compressed).await, Ok(()));
    assert_eq!(api.complete(&intent.upload_id).await, Ok(done));
    // Once the URL expired, the replay is S3's 403 (a spent URL: ask a new intent).
    front.arrive_late(PAST_THE_URL, 1);
    assert_eq!(
        api.upload(&intent, &seg.compressed).await,
        Err(Failure::UploadRefused)
    );
    assert_eq!(front.refused(), 1);
    assert_eq!(recorded(&env).await, (1, 0, 1), "one segment");
    assert_eq!(objects(&env).await.len(), 1);
    assert_eq!(
        archived(&env, "s", "f.jsonl").await,
        Some((1, seg.end() as i64))
    );
}

#[tokio::test]
async fn a_complete_for_an_intent_whose_url_expired_without_a_put_is_410_upload_expired_and_nothing_is_recorded()
 {
    let (front, env) = fronted(Duration::from_secs(2)).await;
    let (api, seg, req) = api_and_segment(&env, transcript(0, 30));
    let intent = api.intent(&req).await.unwrap();
    let expires_at = intent.upload.expires_at.as_deref().unwrap();
    let expires_at = chrono::DateTime::parse_from_rfc3339(expires_at).unwrap();
    // Past the intent's expiresAt, by the clock S3 (the front), Postgres and the handler share.
    let left = (expires_at.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(left + Duration::from_millis(1100)).await;

    let raw = reqwest::Client::new()
        .post(format!("{}{}", env.server.url(), path::COMPLETE))
        .bearer_auth(&env.token)
        .json(&serde_json::json!({ "uploadId": intent.upload_id }))
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 410);
    let v: serde_json::Value = raw.json().await.unwrap();
    assert_eq!(v["error"]["code"], "upload_expired", "{v}");
    assert_eq!(
        api.complete(&intent.upload_id).await,
        Err(Failure::UploadExpired)
    );
    // Its URL is as spent: S3 refuses the PUT, by the wall clock alone.
    assert_eq!(
        api.upload(&intent, &seg.compressed).await,
        Err(Failure::UploadRefused)
    );
    assert_eq!(front.refused(), 1);
    assert_eq!(
        api.complete(&intent.upload_id).await,
        Err(Failure::UploadExpired)
    );
    assert_eq!(recorded(&env).await, (0, 1, 0), "nothing recorded");
    assert!(objects(&env).await.is_empty());
    assert_eq!(archived(&env, "s", "f.jsonl").await, Some((1, 0)));

    // A new intent for the same segment goes through.
    let again = api.intent(&req).await.unwrap();
    api.upload(&again, &seg.compressed).await.unwrap();
    let done = api.complete(&again.upload_id).await.unwrap();
    assert_eq!((done.generation, done.acked_offset), (1, seg.end()));
    assert_eq!(recorded(&env).await, (1, 1, 1));
}
