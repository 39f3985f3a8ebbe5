//! The client end to end through the presigned S3 transport (docs/transcript-wire-contract.md,
//! "`POST .../intent`", presigned): the real ingest handler on loopback with its store an
//! [`S3Store`] on a bucket of the test's own on the S3 emulator (moto), real Postgres, and the
//! client's transcript lane (the library, and the `syncplane-agent transcripts push` CLI).
//!
//! The hello-ack says `agentTranscriptUpload: "presigned"`; every byte goes straight to the
//! bucket through the intent's URL (the ingest server never sees an upload PUT); the archive reads
//! back byte-identical to the client's redacted staging; a replayed PUT (`412`, the object already
//! there) is success; a `complete` whose answer is lost is recovered by asking the state; and a
//! `complete` that never came is done by the worker from the bucket's `ObjectCreated`
//! notification.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use shared::archive::store::Store;
use shared::archive::store::s3::S3Store;
use shared::ingest::IngestState;
use shared::ingest::transcripts::TranscriptsState;
use shared::jobs::adapter::JobsAdapter;
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use shared::worker::Worker;
use shared::worker::s3_events::Archive;
use syncplane_agent::redact::Redactor;
use syncplane_agent::transcripts::segment::{Caps, stage};
use syncplane_agent::transcripts::{Api, TranscriptStatus};
use syncplane_agent::{
    FakeClock, MemorySource, TokenHandle, TranscriptLane, TranscriptTransport, Trigger,
};
use syncplane_contract::transcripts::path;
use syncplane_tests::agent_server::IngestServer;
use syncplane_tests::db::TestDb;
use syncplane_tests::s3;

use super::support::{TARGET, TempDir};

/// Segments of this many source bytes, so a few hundred lines make several.
pub(super) const SEGMENT: usize = 16 * 1024;

/// The ingest handler with the presigned transport into a bucket of its own.
pub(super) struct Env {
    pub(super) db: TestDb,
    org: i64,
    pub(super) token: String,
    store: S3Store,
    pub(super) server: IngestServer,
    dir: TempDir,
}

async fn env() -> Env {
    env_on(s3::bucket().await, Duration::from_secs(300)).await
}

/// As [`env`], the handler's store `store` (on the emulator or a front of it), intents living `ttl`.
pub(super) async fn env_on(store: S3Store, ttl: Duration) -> Env {
    let db = TestDb::new().await;
    let device = syncplane_tests::provisioned::device_on_target(&db.pool, TARGET).await;
    let server = IngestServer::start(IngestState {
        pool: db.pool.clone(),
        rate_limit_per_minute: 1000,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: TranscriptsState {
            store: Store::S3(store.clone()),
            upload_ttl: ttl,
            rate_limit_per_minute: 1_000_000,
            search_rate_limit_per_minute: 1_000_000,
            export_rate_limit_per_minute: 1_000_000,
        },
    })
    .await;
    Env {
        db,
        org: device.org,
        token: device.token,
        store,
        server,
        dir: TempDir::new(),
    }
}

/// A lane over `src` talking to `url` (the server, or a proxy in front of it) with a JSON
/// deadline of `deadline`, its state in `env.dir`, on a fake clock.
pub(super) fn client(
    env: &Env,
    src: &MemorySource,
    url: &str,
    deadline: Duration,
) -> (TranscriptLane<MemorySource>, FakeClock) {
    super::support::transcript_lane(&env.dir.0, &env.token, src, url, deadline, SEGMENT)
}

pub(super) async fn drain(lane: &mut TranscriptLane<MemorySource>, clock: &FakeClock) {
    for _ in 0..300 {
        lane.tick().await.unwrap();
        if lane.drained().unwrap() {
            return;
        }
        clock.advance(Duration::from_secs(1));
    }
    panic!("not drained ({:?}): {:?}", lane.status(), lane.figures());
}

/// JSON Lines with ordinary text and, every 7th line, a planted secret.
pub(super) fn transcript(from: usize, n: usize) -> Vec<u8> {
    (from..from + n)
        .flat_map(|k| {
            let text = if k % 7 == 0 {
                format!("export AWS_ACCESS_KEY_ID=AKIA{:016}", k)
            } else {
                format!("ordinary per-turn text of turn {k}, with a tool call and its output")
            };
            format!("{{\"type\":\"message\",\"turn\":{k},\"text\":\"{text}\"}}\n").into_bytes()
        })
        .collect()
}

/// The client's redacted staging of `bytes`: each line redacted as the lane stages it.
fn redacted(bytes: &[u8]) -> Vec<u8> {
    let redactor = Redactor::new();
    bytes
        .split_inclusive(|b| *b == b'\n')
        .flat_map(|l| {
            let line = std::str::from_utf8(&l[..l.len() - 1]).unwrap();
            let mut out = redactor.redact_line(line).text.into_owned().into_bytes();
            out.push(b'\n');
            out
        })
        .collect()
}

/// The (offset, sha256) of the segments the client stages for a file from 0, and the
/// decompressed bytes of all of them, in order.
pub(super) fn staged(
    src: &MemorySource,
    session: &str,
    file_id: &str,
) -> (Vec<(u64, String)>, Vec<u8>) {
    let file = src.file(session, file_id).unwrap();
    let caps = Caps {
        target_source: SEGMENT,
        ..Caps::default()
    };
    let redactor = Redactor::new();
    let (mut segs, mut bytes) = (Vec::new(), Vec::new());
    let mut at = 0;
    while let Some(seg) = stage(src, &file, at, &caps, &redactor).unwrap() {
        segs.push((seg.offset, seg.sha256.clone()));
        bytes.extend(zstd::decode_all(seg.compressed.as_slice()).unwrap());
        at = seg.end();
    }
    (segs, bytes)
}

/// The archive's (generation, acked offset) of a file.
pub(super) async fn archived(env: &Env, session: &str, file_id: &str) -> Option<(i32, i64)> {
    sqlx::query_as(
        "SELECT generation, acked_offset FROM transcript_files
          WHERE compute_target_id = $1 AND session_id = $2 AND file_id = $3",
    )
    .bind(TARGET)
    .bind(session)
    .bind(file_id)
    .fetch_optional(&env.db.pool)
    .await
    .unwrap()
}

/// The keys of the bucket's objects, sorted.
pub(super) async fn objects(env: &Env) -> Vec<String> {
    let listed = env
        .store
        .client()
        .list_objects_v2()
        .bucket(env.store.bucket())
        .send()
        .await
        .unwrap();
    let mut keys: Vec<String> = listed
        .contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect();
    keys.sort();
    keys
}

/// Requests of `method` on `route` the ingest server answered `200`.
pub(super) fn answered(env: &Env, method: &str, route: &str) -> usize {
    env.server
        .seen()
        .iter()
        .filter(|s| s.method == method && s.path == route && s.status == 200)
        .count()
}

/// No upload PUT (nor any PUT) ever reached the ingest server.
pub(super) fn no_put_reached_the_server(env: &Env) {
    let puts: Vec<_> = env
        .server
        .seen()
        .into_iter()
        .filter(|s| s.method == "PUT" || s.path.starts_with(path::UPLOADS))
        .collect();
    assert!(puts.is_empty(), "the ingest server saw uploads: {puts:?}");
}

/// A read token of `env.org`, as an operator issues it.
pub(super) async fn read_token(env: &Env) -> String {
    shared::accounts::tokens::issue_read_token(&env.db.pool, env.org, Some("web"))
        .await
        .unwrap()
        .token
}

/// A file's archive read back through the read routes: its segments' presigned GETs, each
/// fetched from where the URL points and decompressed, in order.
pub(super) async fn read_back(env: &Env, token: &str, session: &str, file_id: &str) -> Vec<u8> {
    let http = reqwest::Client::new();
    let v: serde_json::Value = http
        .get(
            reqwest::Url::parse_with_params(
                &format!("{}{}", env.server.url(), path::FILES),
                [("computeTargetId", TARGET), ("sessionId", session)],
            )
            .unwrap(),
        )
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let files = v["data"]["files"].as_array().expect("files");
    let file = files
        .iter()
        .find(|f| f["fileId"] == file_id)
        .unwrap_or_else(|| panic!("{file_id} not listed: {v}"));
    let mut out = Vec::new();
    for seg in file["segments"].as_array().unwrap() {
        let url = seg["url"].as_str().unwrap();
        assert!(
            !url.starts_with(&env.server.url()) && url.starts_with("http"),
            "a presigned GET on the bucket, not the ingest function: {url}"
        );
        let resp = http.get(url).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{url}");
        let stored = resp.bytes().await.unwrap();
        out.extend(zstd::decode_all(stored.as_ref()).unwrap());
    }
    out
}

#[tokio::test]
async fn the_hello_ack_of_a_deployment_with_a_bucket_says_presigned() {
    let env = env().await;
    let v: serde_json::Value = reqwest::Client::new()
        .get(format!(
            "{}{}",
            env.server.url(),
            syncplane_contract::path::HELLO
        ))
        .bearer_auth(&env.token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["data"]["capabilities"]["agentTranscriptUpload"], "presigned",
        "{v}"
    );
}

#[tokio::test]
async fn every_byte_goes_straight_to_s3_and_the_archive_reads_back_the_clients_redacted_staging() {
    let env = env().await;
    let src = MemorySource::default();
    src.put("s-1", "s-1.jsonl", transcript(0, 600));
    src.put("s-2", "main.jsonl", transcript(0, 40));
    src.put("s-2", "agent-1.jsonl", transcript(0, 3));
    let (mut lane, clock) = client(&env, &src, &env.server.url(), Duration::from_secs(8));
    drain(&mut lane, &clock).await;
    assert_eq!(lane.status(), TranscriptStatus::Running);
    no_put_reached_the_server(&env);

    let token = read_token(&env).await;
    let keys = objects(&env).await;
    let mut segments = 0;
    for (s, f, bytes) in [
        ("s-1", "s-1.jsonl", transcript(0, 600)),
        ("s-2", "main.jsonl", transcript(0, 40)),
        ("s-2", "agent-1.jsonl", transcript(0, 3)),
    ] {
        assert_eq!(archived(&env, s, f).await, Some((1, bytes.len() as i64)));
        let (segs, staging) = staged(&src, s, f);
        assert_eq!(
            staging,
            redacted(&bytes),
            "{s}/{f}: the staging is redacted"
        );
        assert_ne!(staging, bytes, "{s}/{f}: a secret was planted");
        // Each staged segment is an object of the bucket, under its content address.
        for (offset, sha) in &segs {
            let tail = format!("/{f}/1/{offset:020}-{sha}.zst");
            assert!(
                keys.iter().any(|k| k.ends_with(&tail)),
                "{tail} not in {keys:?}"
            );
        }
        segments += segs.len();
        assert_eq!(read_back(&env, &token, s, f).await, staging, "{s}/{f}");
    }
    assert_eq!(keys.len(), segments, "one object per segment: {keys:?}");
    assert_eq!(lane.figures().segments as usize, segments);
    assert_eq!(answered(&env, "POST", path::INTENT), segments);
    assert_eq!(answered(&env, "POST", path::COMPLETE), segments);
    assert_eq!(lane.state().dead_letters().unwrap(), vec![]);
}

#[tokio::test]
async fn an_append_of_10_lines_sends_one_segment_to_the_bucket_and_no_earlier_byte() {
    let env = env().await;
    let src = MemorySource::default();
    src.put("s", "s.jsonl", transcript(0, 500));
    let (mut lane, clock) = client(&env, &src, &env.server.url(), Duration::from_secs(8));
    drain(&mut lane, &clock).await;
    let before = objects(&env).await;
    let intents = answered(&env, "POST", path::INTENT);
    let old_len = transcript(0, 500).len() as u64;

    src.append("s", "s.jsonl", &transcript(500, 10));
    lane.enqueue(&src.file("s", "s.jsonl").unwrap(), Trigger::Terminal)
        .unwrap();
    lane.tick().await.unwrap();

    assert_eq!(answered(&env, "POST", path::INTENT), intents + 1);
    let after = objects(&env).await;
    let new: Vec<_> = after.iter().filter(|k| !before.contains(k)).collect();
    assert_eq!(new.len(), 1, "one new object: {new:?}");
    assert!(
        new[0].contains(&format!("/s.jsonl/1/{old_len:020}-")),
        "from the acked offset: {}",
        new[0]
    );
    let stored = env.store.get(new[0], 1 << 20).await.unwrap().unwrap();
    assert_eq!(
        zstd::decode_all(stored.as_slice()).unwrap(),
        redacted(&transcript(500, 10)),
        "exactly the 10 lines, redacted"
    );
    let len = old_len + transcript(500, 10).len() as u64;
    assert_eq!(archived(&env, "s", "s.jsonl").await, Some((1, len as i64)));
    no_put_reached_the_server(&env);
}

#[tokio::test]
async fn a_replayed_put_of_an_object_already_there_is_412_and_success() {
    let env = env().await;
    let src = MemorySource::default();
    src.put("s", "f.jsonl", transcript(0, 30));
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
    let req = syncplane_agent::transcripts::transport::IntentRequest {
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
    let intent = api.intent(&req).await.unwrap();
    assert!(
        !intent.upload.url.starts_with(&env.server.url()),
        "{}",
        intent.upload.url
    );
    api.upload(&intent, &seg.compressed).await.unwrap();
    // What S3 (here moto) answers the same PUT again: 412, the object is create-only.
    let mut again = reqwest::Client::new().put(&intent.upload.url);
    for (k, v) in &intent.upload.headers {
        again = again.header(k, v);
    }
    let again = again.body(seg.compressed.clone()).send().await.unwrap();
    assert_eq!(again.status(), 412);
    // The client's replay of it is success, and the segment completes.
    assert_eq!(api.upload(&intent, &seg.compressed).await, Ok(()));
    let st = api.complete(&intent.upload_id).await.unwrap();
    assert_eq!((st.generation, st.acked_offset), (1, seg.end()));
    assert_eq!(
        archived(&env, "s", "f.jsonl").await,
        Some((1, seg.end() as i64))
    );
    no_put_reached_the_server(&env);
}

/// What the proxy does with `complete`s.
#[derive(Clone, Default)]
struct Faults {
    /// Forward the next this many, then never answer (the answer is lost).
    lose_answers: Arc<AtomicUsize>,
    /// Never forward, never answer (the client was killed, or the request lost on the way).
    swallow: Arc<AtomicBool>,
}

#[derive(Clone)]
struct Proxy {
    upstream: String,
    http: reqwest::Client,
    faults: Faults,
}

/// An HTTP proxy on loopback in front of the ingest server that can lose `complete`s.
async fn proxy(env: &Env, faults: Faults) -> String {
    let state = Proxy {
        upstream: env.server.url(),
        http: reqwest::Client::new(),
        faults,
    };
    let app = axum::Router::new().fallback(forward).with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

async fn forward(
    State(p): State<Proxy>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let complete = uri.path() == path::COMPLETE;
    if complete && p.faults.swallow.load(Ordering::SeqCst) {
        return std::future::pending().await;
    }
    let lose = complete
        && p.faults
            .lose_answers
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
    let pq = uri.path_and_query().map_or("/", |x| x.as_str());
    let mut req = p
        .http
        .request(method, format!("{}{pq}", p.upstream))
        .body(body);
    for name in ["authorization", "content-type", "content-encoding"] {
        if let Some(v) = headers.get(name) {
            req = req.header(name, v);
        }
    }
    let Ok(resp) = req.send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let status = resp.status();
    let retry_after = resp.headers().get("retry-after").cloned();
    let bytes = resp.bytes().await.unwrap_or_default();
    if lose {
        return std::future::pending().await;
    }
    let mut out = (status, bytes).into_response();
    out.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    if let Some(v) = retry_after {
        out.headers_mut().insert("retry-after", v);
    }
    out
}

#[tokio::test]
async fn a_complete_whose_answer_was_lost_is_recovered_by_asking_the_state_and_nothing_is_resent() {
    let env = env().await;
    let faults = Faults::default();
    faults.lose_answers.store(1, Ordering::SeqCst);
    let url = proxy(&env, faults.clone()).await;
    let src = MemorySource::default();
    let bytes = transcript(0, 300);
    src.put("s", "f.jsonl", bytes.clone());
    let (mut lane, clock) = client(&env, &src, &url, Duration::from_secs(2));

    lane.tick().await.unwrap();
    assert_eq!(faults.lose_answers.load(Ordering::SeqCst), 0, "one lost");
    assert_eq!(
        lane.figures().failures.get("timeout"),
        Some(&1),
        "{:?}",
        lane.figures()
    );
    // The server completed it: the archive moved though the client never heard.
    let first = archived(&env, "s", "f.jsonl").await.unwrap();
    assert!(first.1 > 0);
    let states = answered(&env, "GET", path::STATE);
    clock.advance(Duration::from_secs(2));
    drain(&mut lane, &clock).await;

    assert!(
        answered(&env, "GET", path::STATE) > states,
        "the state was asked after the lost answer"
    );
    let (segs, staging) = staged(&src, "s", "f.jsonl");
    assert!(segs.len() > 1, "several segments: {}", segs.len());
    assert_eq!(
        answered(&env, "POST", path::INTENT),
        segs.len(),
        "no segment asked for twice"
    );
    assert_eq!(objects(&env).await.len(), segs.len());
    assert_eq!(
        archived(&env, "s", "f.jsonl").await,
        Some((1, bytes.len() as i64))
    );
    let token = read_token(&env).await;
    assert_eq!(read_back(&env, &token, "s", "f.jsonl").await, staging);
    no_put_reached_the_server(&env);
}

#[tokio::test]
async fn a_complete_that_never_came_is_asked_again_and_the_replayed_put_is_success() {
    let env = env().await;
    let faults = Faults::default();
    faults.swallow.store(true, Ordering::SeqCst);
    let url = proxy(&env, faults.clone()).await;
    let src = MemorySource::default();
    let bytes = transcript(0, 20);
    src.put("s", "f.jsonl", bytes.clone());
    let (mut lane, clock) = client(&env, &src, &url, Duration::from_secs(1));

    lane.tick().await.unwrap();
    assert_eq!(lane.figures().failures.get("timeout"), Some(&1));
    assert_eq!(objects(&env).await.len(), 1, "the PUT reached the bucket");
    assert_eq!(
        archived(&env, "s", "f.jsonl").await,
        Some((1, 0)),
        "not completed: nothing acknowledged"
    );

    faults.swallow.store(false, Ordering::SeqCst);
    clock.advance(Duration::from_secs(2));
    drain(&mut lane, &clock).await;
    // The state said nothing moved: a new intent for the same segment, its PUT met the object
    // already there (412, success), and the complete went through.
    assert_eq!(
        answered(&env, "GET", path::STATE),
        2,
        "asked at start and after"
    );
    assert_eq!(answered(&env, "POST", path::INTENT), 2);
    assert_eq!(answered(&env, "POST", path::COMPLETE), 1);
    assert_eq!(objects(&env).await.len(), 1, "the same object");
    assert_eq!(
        archived(&env, "s", "f.jsonl").await,
        Some((1, bytes.len() as i64))
    );
    assert_eq!(lane.state().dead_letters().unwrap(), vec![]);
}

#[tokio::test]
async fn a_complete_that_never_came_is_done_by_the_worker_from_the_buckets_notification() {
    let env = env().await;
    let queue = syncplane_tests::sqs::Queue::new(30).await;
    let arn = queue.attribute(QueueAttributeName::QueueArn).await;
    s3::notify(&env.store, &arn, "transcripts/").await;
    let faults = Faults::default();
    faults.swallow.store(true, Ordering::SeqCst);
    let url = proxy(&env, faults.clone()).await;
    let src = MemorySource::default();
    let bytes = transcript(0, 20);
    src.put("s", "f.jsonl", bytes.clone());

    // The client PUTs the segment, then is gone before its complete arrives.
    let (mut lane, _clock) = client(&env, &src, &url, Duration::from_secs(1));
    lane.tick().await.unwrap();
    drop(lane);
    assert_eq!(objects(&env).await.len(), 1);
    assert_eq!(archived(&env, "s", "f.jsonl").await, Some((1, 0)));

    let archive = Arc::new(Archive {
        pool: env.db.pool.clone(),
        store: Store::S3(env.store.clone()),
    });
    let tenants = Arc::new(Tenants::from_parts(Vec::new(), RunOptions::default()));
    let worker =
        Worker::new(tenants, JobsAdapter::Sqs(queue.adapter.clone())).with_archive(archive);
    let mut bodies = Vec::new();
    for _ in 0..5 {
        let event = queue.receive_event(1).await;
        bodies.extend(event.records.iter().filter_map(|m| m.body.clone()));
        let response = worker.serve(event.clone()).await;
        assert!(response.batch_item_failures.is_empty(), "{bodies:?}");
        queue.settle(&event, &response).await;
        if bodies.iter().any(|b| b.contains("ObjectCreated")) {
            break;
        }
    }
    assert!(
        bodies.iter().any(|b| b.contains("ObjectCreated")),
        "{bodies:?}"
    );
    assert_eq!(
        archived(&env, "s", "f.jsonl").await,
        Some((1, bytes.len() as i64)),
        "the worker completed the upload"
    );
    assert_eq!(queue.outstanding().await, 0);

    // The client comes back: it takes the server's state and sends nothing again.
    faults.swallow.store(false, Ordering::SeqCst);
    let intents = answered(&env, "POST", path::INTENT);
    let (mut again, clock) = client(&env, &src, &url, Duration::from_secs(8));
    drain(&mut again, &clock).await;
    assert_eq!(
        answered(&env, "POST", path::INTENT),
        intents,
        "nothing resent"
    );
    assert_eq!(answered(&env, "POST", path::COMPLETE), 0);
    let token = read_token(&env).await;
    let (_, staging) = staged(&src, "s", "f.jsonl");
    assert_eq!(read_back(&env, &token, "s", "f.jsonl").await, staging);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_pushes_a_directory_straight_to_the_bucket() {
    let env = env().await;
    let dir = env.dir.0.join("transcripts");
    std::fs::create_dir_all(dir.join("s-2")).unwrap();
    std::fs::write(dir.join("s-1.jsonl"), transcript(0, 200)).unwrap();
    std::fs::write(dir.join("s-2/main.jsonl"), transcript(0, 20)).unwrap();
    let mut cmd =
        std::process::Command::new(syncplane_tests::processes::workspace_bin("syncplane-agent"));
    cmd.args(["transcripts", "push", "--dir"])
        .arg(&dir)
        .args([
            "--url",
            &env.server.url(),
            "--target",
            TARGET,
            "--tick-ms",
            "50",
        ])
        .env_clear()
        .env("SYNCPLANE_AGENT_TOKEN", &env.token)
        .stdin(std::process::Stdio::null());
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["deadLetters"], 0, "{summary}");
    no_put_reached_the_server(&env);
    let token = read_token(&env).await;
    for (s, f, bytes) in [
        ("s-1", "s-1.jsonl", transcript(0, 200)),
        ("s-2", "main.jsonl", transcript(0, 20)),
    ] {
        assert_eq!(archived(&env, s, f).await, Some((1, bytes.len() as i64)));
        assert_eq!(read_back(&env, &token, s, f).await, redacted(&bytes));
    }
    assert_eq!(
        objects(&env).await.len(),
        answered(&env, "POST", path::COMPLETE)
    );
}
