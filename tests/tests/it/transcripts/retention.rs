//! The transcript archive's retention in the background (issue 20 §7: "retention per
//! organization (a setting, with a deletion path that removes objects and rows)"): the
//! `transcripts.expire` job through the inline runner (`syncplane serve`'s scheduler and its
//! upkeep) on the filesystem store, and through the worker on S3 (moto); a tenant or a process
//! without the archive gets `Ignored` and nothing is deleted; a store that does not answer has the
//! message redelivered with nothing deleted. The archive is filled through the real ingest routes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use serde_json::json;
use shared::archive::retention;
use shared::archive::store::Store;
use shared::archive::store::s3::S3Store;
use shared::config::{TenantConfig, TenantId};
use shared::jobs::adapter::Submitted;
use shared::jobs::tick::TickFunction;
use shared::jobs::{Job, JobError, JobOutcome};
use shared::sync::workspace::RunOptions;
use shared::tenants::Tenants;
use shared::worker::expire::TranscriptArchive;
use shared::worker::{Verdict, Worker, inline, inline_with_archive};

use super::support::{Env, env, lines, segment};

/// The objects of the archive [`fill`] made, by key.
struct Filled {
    /// A segment recorded 40 days ago: past the org's 30 days.
    old: String,
    /// A segment recorded now: kept.
    recent: String,
    /// Stored by a direct PUT whose upload was never completed, expired two hours ago.
    abandoned: String,
}

/// What the job deletes from [`fill`]'s archive.
const EXPIRED: JobOutcome = JobOutcome::Expired {
    segments: 1,
    files: 0,
    uploads: 1,
    objects: 2,
};

fn default_tenant() -> TenantId {
    TenantId::parse("default").unwrap()
}

fn tenant_config(id: &str, env: &Env) -> TenantConfig {
    TenantConfig {
        id: TenantId::parse(id).unwrap(),
        database_url: env.db.url(),
        github: None,
        webhook_secrets: Vec::new(),
        sync_api_token: None,
        read: Default::default(),
        sync: Default::default(),
    }
}

/// `default` (the archive's tenant) and `other`, both on the env's database.
fn tenants_of(env: &Env) -> Arc<Tenants> {
    let parts = Vec::from(
        ["default", "other"].map(|id| (tenant_config(id, env), env.db.pool.clone(), None)),
    );
    Arc::new(Tenants::from_parts(parts, RunOptions::default()))
}

fn expire_job(tenant: &str) -> Job {
    Job::TranscriptsExpire {
        tenant: TenantId::parse(tenant).unwrap(),
    }
}

/// The env's org keeps 30 days; its file holds an old and a recent segment, and an upload whose
/// bytes were stored but never completed, expired past the hour's grace.
async fn fill(env: &Env) -> Filled {
    retention::set_retention(&env.db.pool, env.org, Some(30))
        .await
        .unwrap();
    let old = segment(&lines(20, "old"));
    let recent = segment(&lines(10, "recent"));
    let abandoned = segment(&lines(5, "abandoned"));
    let r = env.upload(1, 0, &old).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let offset = old.decoded.len() as u64;
    let r = env.upload(1, offset, &recent).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let offset = offset + recent.decoded.len() as u64;
    let id = env.intent_ok(1, offset, &abandoned).await;
    let r = env.put(&id, &abandoned.compressed).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = uuid::Uuid::parse_str(&id).unwrap();
    env.exec("UPDATE transcript_segments SET created_at = now() - interval '40 days' WHERE start_offset = 0")
        .await;
    let abandoned: String = sqlx::query_scalar(
        "UPDATE transcript_uploads SET expires_at = now() - interval '2 hours'
          WHERE id = $1 RETURNING object_key",
    )
    .bind(id)
    .fetch_one(&env.db.pool)
    .await
    .unwrap();
    let keys: Vec<String> =
        sqlx::query_scalar("SELECT object_key FROM transcript_segments ORDER BY start_offset")
            .fetch_all(&env.db.pool)
            .await
            .unwrap();
    let [old, recent] = <[String; 2]>::try_from(keys).unwrap();
    Filled {
        old,
        recent,
        abandoned,
    }
}

/// The rows after the job: the recent segment and its completed upload only.
async fn assert_rows_expired(env: &Env) {
    assert_eq!(env.segments().await, 1, "the old segment's row is gone");
    assert_eq!(
        env.count("SELECT count(*) FROM transcript_segments WHERE start_offset = 0")
            .await,
        0
    );
    assert_eq!(
        env.count("SELECT count(*) FROM transcript_uploads WHERE completed_at IS NULL")
            .await,
        0,
        "the abandoned upload's row is gone"
    );
    assert_eq!(env.count("SELECT count(*) FROM transcript_files").await, 1);
}

/// Nothing deleted: both segments, the abandoned upload, every object on disk.
async fn assert_untouched(env: &Env, f: &Filled) {
    assert_eq!(env.segments().await, 2);
    assert_eq!(
        env.count("SELECT count(*) FROM transcript_uploads WHERE completed_at IS NULL")
            .await,
        1
    );
    for key in [&f.old, &f.recent, &f.abandoned] {
        assert!(env.dir.join(key).exists(), "{key} kept");
    }
}

#[tokio::test]
async fn the_expire_job_run_inline_deletes_expired_segments_and_an_abandoned_uploads_object() {
    let env = env().await;
    let f = fill(&env).await;
    let archive = TranscriptArchive {
        tenant: default_tenant(),
        store: env.state.transcripts.store.clone(),
    };
    let jobs = inline_with_archive(tenants_of(&env), Some(archive));
    let Ok(Submitted::Ran(outcome)) = jobs.submit(&expire_job("default")).await else {
        panic!("inline jobs run");
    };
    let outcome = outcome.unwrap();
    assert_eq!(outcome, EXPIRED);
    assert_eq!(
        serde_json::to_value(&outcome).unwrap(),
        json!({"result": "expired", "segments": 1, "files": 0, "uploads": 1, "objects": 2})
    );
    assert_rows_expired(&env).await;
    assert!(!env.dir.join(&f.old).exists(), "the old segment's object");
    assert!(!env.dir.join(&f.abandoned).exists(), "the abandoned object");
    assert!(
        env.dir.join(&f.recent).exists(),
        "the recent segment's kept"
    );

    let Ok(Submitted::Ran(again)) = jobs.submit(&expire_job("default")).await else {
        panic!("inline jobs run");
    };
    assert_eq!(
        again.unwrap(),
        JobOutcome::Expired {
            segments: 0,
            files: 0,
            uploads: 0,
            objects: 0
        },
        "nothing left to do"
    );
}

#[tokio::test]
async fn a_tenant_or_a_runner_without_the_archive_gets_ignored_and_nothing_is_deleted() {
    let env = env().await;
    let f = fill(&env).await;
    let tenants = tenants_of(&env);
    // The runner of a process with no archive (the webhook's, the sync API's).
    let Ok(Submitted::Ran(outcome)) = inline(tenants.clone()).submit(&expire_job("default")).await
    else {
        panic!("inline jobs run");
    };
    assert!(
        matches!(&outcome, Ok(JobOutcome::Ignored { reason }) if reason.contains("no transcript archive")),
        "{outcome:?}"
    );
    // Another tenant than the archive's, on the very same database.
    let archive = TranscriptArchive {
        tenant: default_tenant(),
        store: env.state.transcripts.store.clone(),
    };
    let jobs = inline_with_archive(tenants, Some(archive));
    let Ok(Submitted::Ran(outcome)) = jobs.submit(&expire_job("other")).await else {
        panic!("inline jobs run");
    };
    assert!(
        matches!(&outcome, Ok(JobOutcome::Ignored { reason }) if reason.contains("'other'")),
        "{outcome:?}"
    );
    assert_untouched(&env, &f).await;
    // An unknown tenant is the usual error, never retried.
    let Ok(Submitted::Ran(outcome)) = jobs.submit(&expire_job("nobody")).await else {
        panic!("inline jobs run");
    };
    let e = outcome.unwrap_err();
    assert!(
        matches!(e, JobError::UnknownTenant(_)) && !e.retryable(),
        "{e}"
    );
}

fn message(id: &str, job: &Job) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some(id.to_owned());
    m.body = Some(serde_json::to_string(job).unwrap());
    m
}

#[tokio::test]
async fn the_worker_runs_transcripts_expire_against_the_s3_bucket() {
    let env = env().await;
    let f = fill(&env).await;
    // The same objects in a bucket on moto, under the same keys.
    let bucket = syncplane_tests::s3::bucket().await;
    for key in [&f.old, &f.recent, &f.abandoned] {
        let bytes = std::fs::read(env.dir.join(key)).unwrap();
        bucket.put(key, &bytes).await.unwrap();
    }
    let tenants = tenants_of(&env);
    let worker = Worker::new(tenants.clone(), inline(tenants)).with_retention(TranscriptArchive {
        tenant: default_tenant(),
        store: Store::S3(bucket.clone()),
    });
    let mut event = SqsEvent::default();
    event.records = vec![message("m-1", &expire_job("default"))];
    let response = worker.serve(event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_rows_expired(&env).await;
    let in_bucket = |key: &String| {
        let bucket = bucket.clone();
        let key = key.clone();
        async move { bucket.get(&key, 1 << 20).await.unwrap().is_some() }
    };
    assert!(!in_bucket(&f.old).await, "the old segment's object");
    assert!(!in_bucket(&f.abandoned).await, "the abandoned object");
    assert!(in_bucket(&f.recent).await, "the recent segment's kept");
}

#[tokio::test]
async fn a_store_that_does_not_answer_redelivers_the_job_and_deletes_nothing() {
    let env = env().await;
    let f = fill(&env).await;
    let tenants = tenants_of(&env);
    // Nothing listens on port 9 of loopback.
    let down = S3Store::for_emulator("http://127.0.0.1:9", "nowhere");
    let worker = Worker::new(tenants.clone(), inline(tenants)).with_retention(TranscriptArchive {
        tenant: default_tenant(),
        store: Store::S3(down),
    });
    let verdict = worker.run_job(&expire_job("default")).await;
    assert!(
        matches!(&verdict, Verdict::Retry { reason } if reason.contains("transcript store")),
        "{verdict:?}"
    );
    assert_untouched(&env, &f).await;
}

/// `syncplane serve`'s configuration: the env's database, the scheduler on, no full syncs.
fn serve_config(env: &Env) -> shared::config::Config {
    let url = env.db.url().expose().to_owned();
    shared::config::from_lookup(move |name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "SYNC_SCHEDULER" => Some("1".into()),
        "SYNC_CONFIG" => Some(r#"{"sync":{"intervalMinutes":0,"onStartup":false}}"#.into()),
        _ => None,
    })
    .unwrap()
}

/// The kinds a tick handed over for the first tenant, and its errors of `transcripts.expire`.
async fn tick(
    function: &TickFunction,
    config: &shared::config::Config,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<&'static str> {
    let report = function.invoke(config, now).await.unwrap();
    let t = &report.tenants[0];
    // Drain and reap fail without a GitHub App; retention must not.
    let failed: Vec<_> = t
        .errors
        .iter()
        .filter(|e| e.contains("transcripts"))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    t.submitted.clone()
}

#[tokio::test]
async fn serves_scheduler_runs_transcripts_expire_inline_on_its_ingest_store_hourly() {
    let env = env().await;
    let f = fill(&env).await;
    let config = serve_config(&env);
    let now = chrono::Utc::now();
    // Without a store handed over (inline jobs): never submitted.
    let bare = TickFunction::with_queue(None).with_inline(shared::worker::runner());
    assert!(
        !tick(&bare, &config, now)
            .await
            .contains(&"transcripts.expire")
    );
    assert_untouched(&env, &f).await;

    let archive = TranscriptArchive {
        tenant: config.tenants[0].id.clone(),
        store: env.state.transcripts.store.clone(),
    };
    let function = TickFunction::with_queue(None).with_archive(
        archive.tenant.clone(),
        shared::worker::runner_with_archive(Some(archive)),
    );
    assert!(
        tick(&function, &config, now)
            .await
            .contains(&"transcripts.expire")
    );
    assert_rows_expired(&env).await;
    assert!(!env.dir.join(&f.old).exists() && !env.dir.join(&f.abandoned).exists());
    assert!(env.dir.join(&f.recent).exists());
    let minutes = |m| now + chrono::Duration::minutes(m);
    assert!(
        !tick(&function, &config, minutes(1))
            .await
            .contains(&"transcripts.expire")
    );
    assert!(
        tick(&function, &config, minutes(60))
            .await
            .contains(&"transcripts.expire")
    );
}

#[tokio::test]
async fn serves_upkeep_runs_transcripts_expire_with_the_scheduler_off() {
    let env = env().await;
    let f = fill(&env).await;
    let archive = TranscriptArchive {
        tenant: default_tenant(),
        store: env.state.transcripts.store.clone(),
    };
    // The upkeep's first round runs at once.
    let upkeep = syncplane_cli::serve::spawn_upkeep(tenants_of(&env), Some(archive));
    let started = Instant::now();
    while env.dir.join(&f.abandoned).exists() || env.segments().await != 1 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "retention ran within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    upkeep.abort();
    assert_rows_expired(&env).await;
    assert!(!env.dir.join(&f.old).exists() && env.dir.join(&f.recent).exists());
}
