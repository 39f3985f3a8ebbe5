//! Spec, "Two independent lanes": "a transcript upload that fails or is throttled never touches
//! the metadata lane, and the reverse." Both lanes run at once in one process, on their own
//! tickers (each its own fake clock and loop), against the real ingest handler behind a loopback
//! proxy that fails (`500`) or stalls every request of one lane's routes: the other lane
//! delivers everything exactly once in the same number of ticks as when the faulty lane is idle,
//! and the failures are counted on the faulty lane's files or sessions only.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::Duration;

use syncplane_agent::{
    FakeClock, LocalSession, MemorySource, Settings, TranscriptLane, TranscriptSource,
};
use syncplane_contract::transcripts::path as tpath;
use syncplane_tests::lane_proxy::{LaneFaultProxy, PathFault};

use super::support::*;

const SESSIONS: usize = 200;
const SEGMENT: usize = 16 * 1024;
/// The faulty lane's deadline under a stall (the lane's own timeout).
const DEADLINE: Duration = Duration::from_millis(300);
/// The healthy lane's deadline: long enough that a loaded machine never times it out, since a
/// timeout would be a failure of its own and move its tick count.
const HEALTHY: Duration = Duration::from_secs(30);
const FILES: [(&str, &str, usize); 3] = [
    ("s-1", "s-1.jsonl", 400),
    ("s-2", "main.jsonl", 60),
    ("s-2", "agent-1.jsonl", 5),
];

fn sessions() -> Vec<LocalSession> {
    (0..SESSIONS)
        .map(|i| session(&format!("s{i:04}"), i as i64, "r1", 4))
        .collect()
}

fn transcript(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|k| {
            format!(
                "{{\"type\":\"message\",\"turn\":{k},\"text\":\"ordinary text of turn {k}\"}}\n"
            )
            .into_bytes()
        })
        .collect()
}

fn source() -> MemorySource {
    let src = MemorySource::default();
    for (s, f, lines) in FILES {
        src.put(s, f, transcript(lines));
    }
    src
}

struct Tx {
    lane: TranscriptLane<MemorySource>,
    clock: FakeClock,
}

/// The transcript lane over `src` talking to `url`, its state in the same SQLite file as the
/// metadata lane's (as the CLI keeps them), on its own fake clock.
fn transcript_lane(env: &Env, src: &MemorySource, url: &str, deadline: Duration) -> Tx {
    let (lane, clock) =
        super::support::transcript_lane(&env.dir.0, &env.token, src, url, deadline, SEGMENT);
    Tx { lane, clock }
}

impl Tx {
    /// Tick (the clock moves `step` per tick) until drained; the tick count.
    async fn drain(&mut self, step: Duration, max: usize) -> usize {
        for n in 1..=max {
            self.lane.tick().await.unwrap();
            if self.lane.drained().unwrap() {
                return n;
            }
            self.clock.advance(step);
        }
        panic!("transcripts not drained: {:?}", self.lane.figures());
    }

    /// Tick (the clock moves `step` per tick) until drained with nothing set aside: the dead
    /// letters' windows pass and they come back.
    async fn drain_all(&mut self, step: Duration, max: usize) {
        for _ in 0..max {
            self.lane.tick().await.unwrap();
            if self.lane.drained().unwrap() && self.lane.state().dead_letters().unwrap().is_empty()
            {
                return;
            }
            self.clock.advance(step);
        }
        panic!("transcripts not all delivered: {:?}", self.lane.figures());
    }

    /// Tick on its own schedule until `done` is set.
    async fn tick_until(&mut self, done: &Cell<bool>) {
        while !done.get() {
            self.lane.tick().await.unwrap();
            self.clock.advance(Duration::from_secs(1));
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// The metadata lane's ticks on its own schedule until `done` is set.
async fn meta_tick_until(b: &mut Built, done: &Cell<bool>) {
    while !done.get() {
        b.lane.tick().await.unwrap();
        b.clock.advance(TICK);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Tick the metadata lane until drained with nothing set aside (the dead letters come back).
async fn meta_drain_all(b: &mut Built, max: usize) {
    for _ in 0..max {
        b.lane.tick().await.unwrap();
        if b.lane.drained().unwrap() && b.lane.state().dead_letters().unwrap().is_empty() {
            return;
        }
        b.clock.advance(TICK);
    }
    panic!("metadata not all delivered: {:?}", b.lane.counts());
}

/// Ticks the metadata lane takes for the backfill alone, the transcript lane idle.
async fn metadata_ticks_alone() -> usize {
    let env = env().await;
    let mut b = lane(
        &env,
        store_of(sessions()),
        &env.server.url(),
        Settings::default(),
    );
    b.drain(1000).await
}

/// Ticks the transcript lane takes for the corpus alone, the metadata lane idle.
async fn transcript_ticks_alone() -> usize {
    let env = env().await;
    let mut tx = transcript_lane(&env, &source(), &env.server.url(), HEALTHY);
    tx.drain(Duration::from_secs(1), 300).await
}

async fn archived(env: &Env, session: &str, file_id: &str) -> Option<(i32, i64)> {
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

async fn segment_rows(env: &Env) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM transcript_segments")
        .fetch_one(&env.db.pool)
        .await
        .unwrap()
}

/// The segments the corpus makes: each file cut at the last line end within `SEGMENT` bytes.
fn expected_segments(src: &MemorySource) -> u64 {
    let mut n = 0;
    for (s, f, _) in FILES {
        let bytes = src
            .read_at(&src.file(s, f).unwrap(), 0, usize::MAX)
            .unwrap();
        let mut at = 0;
        while at < bytes.len() {
            let window = &bytes[at..bytes.len().min(at + SEGMENT)];
            at += window.iter().rposition(|b| *b == b'\n').unwrap() + 1;
            n += 1;
        }
    }
    n
}

/// Every file is archived whole at generation 1, each segment stored once. `healthy`: the lane
/// never timed out, so each segment was also uploaded once and counted as sent. A lane that ran
/// at the stall's short deadline may have timed out on an upload the server took: it then learns
/// the acknowledged offset from the server's state and sends nothing again, so its sent count is
/// at most the stored one and a replayed upload is harmless (the contract's create-only write).
async fn assert_transcripts_arrived_once(env: &Env, tx: &Tx, src: &MemorySource, healthy: bool) {
    for (s, f, _) in FILES {
        let len = src.len_of(&src.file(s, f).unwrap()).unwrap().unwrap() as i64;
        assert_eq!(archived(env, s, f).await, Some((1, len)), "{s}/{f}");
    }
    let expected = expected_segments(src);
    assert!(
        expected > FILES.len() as u64,
        "several segments: {expected}"
    );
    assert_eq!(
        segment_rows(env).await as u64,
        expected,
        "each segment stored once"
    );
    let uploads = env
        .server
        .seen()
        .iter()
        .filter(|s| s.method == "PUT" && s.path.starts_with(tpath::FILES) && s.status == 200)
        .count() as u64;
    let sent = tx.lane.figures().segments;
    if healthy {
        assert_eq!(uploads, expected, "each segment uploaded once");
        assert_eq!(sent, expected, "each segment sent once");
    } else {
        assert!(
            uploads >= expected && sent <= expected,
            "{uploads} uploads, {sent} sent, {expected} segments"
        );
    }
}

async fn transcripts_fail_or_stall_and_metadata_delivers(fault: PathFault, kind: &str) {
    let alone = metadata_ticks_alone().await;
    let env = env().await;
    let proxy = LaneFaultProxy::start(env.server.addr, tpath::FILES).await;
    proxy.set(fault);
    let sessions = sessions();
    let src = source();
    let mut meta = lane_with(
        &env,
        store_of(sessions.clone()),
        &proxy.url(),
        Settings::default(),
        HEALTHY,
        "ada",
    );
    let mut tx = transcript_lane(&env, &src, &proxy.url(), DEADLINE);
    let done = Cell::new(false);
    let (ticks, ()) = tokio::join!(
        async {
            let n = meta.drain(1000).await;
            done.set(true);
            n
        },
        tx.tick_until(&done)
    );
    // The metadata lane: everything, exactly once, in the same ticks, nothing counted.
    assert_arrived(&env, &sessions).await;
    assert_acked_once(&env);
    assert_eq!(
        ticks, alone,
        "the backfill's ticks, transcripts idle: {alone}"
    );
    assert_eq!(
        meta.lane.counts(),
        BTreeMap::from([("synced", SESSIONS as u64)])
    );
    assert!(meta.lane.state().dead_letters().unwrap().is_empty());
    for s in &sessions {
        let budget = meta.lane.state().budget_of(&s.session_id).unwrap();
        assert!(
            budget.as_ref().is_none_or(|(k, n)| k.is_none() && *n == 0),
            "{}: {budget:?}",
            s.session_id
        );
    }
    // The transcript lane: the failures are its own, on its files.
    assert!(proxy.faulted() > 0);
    let failures = &tx.lane.figures().failures;
    assert!(failures.get(kind).is_some_and(|n| *n > 0), "{failures:?}");
    assert_eq!(failures.keys().copied().collect::<Vec<_>>(), vec![kind]);
    let dead = tx.lane.state().dead_letters().unwrap();
    for (s, f, _) in FILES {
        assert_eq!(archived(&env, s, f).await, None, "{s}/{f}");
        let budget = tx.lane.state().budget_of(s, f).unwrap();
        let counted = budget
            .as_ref()
            .is_some_and(|(k, n)| k.as_deref() == Some(kind) && *n > 0);
        let set_aside = dead.iter().any(|d| d.session_id == s && d.file_id == f);
        assert!(counted || set_aside, "{s}/{f}: {budget:?} {dead:?}");
    }
    // Lifted: the transcript lane catches up on its own (its dead letters come back in time),
    // and the metadata lane's traffic does not move.
    let posts = env.server.posts().len();
    proxy.set(PathFault::Pass);
    tx.drain_all(Duration::from_secs(31), 400).await;
    assert_transcripts_arrived_once(&env, &tx, &src, false).await;
    assert_eq!(
        env.server
            .posts()
            .iter()
            .filter(|p| p.path == syncplane_contract::path::SYNC)
            .count(),
        env.server.posts()[..posts]
            .iter()
            .filter(|p| p.path == syncplane_contract::path::SYNC)
            .count()
    );
}

async fn metadata_fails_or_stalls_and_transcripts_arrive(fault: PathFault, kind: &str) {
    let alone = transcript_ticks_alone().await;
    let env = env().await;
    let proxy = LaneFaultProxy::start(env.server.addr, syncplane_contract::path::SYNC).await;
    proxy.set(fault);
    let sessions = sessions();
    let src = source();
    let mut meta = lane_with(
        &env,
        store_of(sessions.clone()),
        &proxy.url(),
        Settings::default(),
        DEADLINE,
        "ada",
    );
    let mut tx = transcript_lane(&env, &src, &proxy.url(), HEALTHY);
    let done = Cell::new(false);
    let ((), ticks) = tokio::join!(meta_tick_until(&mut meta, &done), async {
        let n = tx.drain(Duration::from_secs(1), 300).await;
        done.set(true);
        n
    });
    // The transcript lane: everything, exactly once, in the same ticks, nothing counted.
    assert_transcripts_arrived_once(&env, &tx, &src, true).await;
    assert_eq!(ticks, alone, "the corpus's ticks, metadata idle: {alone}");
    assert!(
        tx.lane.figures().failures.is_empty(),
        "{:?}",
        tx.lane.figures()
    );
    assert!(tx.lane.state().dead_letters().unwrap().is_empty());
    for (s, f, _) in FILES {
        let budget = tx.lane.state().budget_of(s, f).unwrap();
        assert!(
            budget.as_ref().is_none_or(|(k, n)| k.is_none() && *n == 0),
            "{s}/{f}: {budget:?}"
        );
    }
    // The metadata lane: the failures are its own, on its sessions.
    assert!(proxy.faulted() > 0);
    assert_eq!(session_count(&env).await, 0);
    let counts = meta.lane.counts();
    assert!(counts.get(kind).is_some_and(|n| *n > 0), "{counts:?}");
    assert_eq!(counts.keys().copied().collect::<Vec<_>>(), vec![kind]);
    // Lifted: the metadata lane delivers every session exactly once.
    proxy.set(PathFault::Pass);
    meta_drain_all(&mut meta, 2000).await;
    assert_arrived(&env, &sessions).await;
    assert_acked_once(&env);
}

#[tokio::test]
async fn a_transcript_upload_that_fails_never_touches_the_metadata_lane() {
    transcripts_fail_or_stall_and_metadata_delivers(PathFault::Fail, "server_failure").await;
}

#[tokio::test]
async fn a_transcript_upload_that_stalls_never_touches_the_metadata_lane() {
    transcripts_fail_or_stall_and_metadata_delivers(PathFault::Stall, "timeout").await;
}

#[tokio::test]
async fn and_the_reverse_a_failing_metadata_lane_never_touches_the_transcript_lane() {
    metadata_fails_or_stalls_and_transcripts_arrive(PathFault::Fail, "ingestion_failed").await;
}

#[tokio::test]
async fn and_the_reverse_a_stalling_metadata_lane_never_touches_the_transcript_lane() {
    metadata_fails_or_stalls_and_transcripts_arrive(PathFault::Stall, "transport_timeout").await;
}
