//! The transcript lane over a [`MemorySource`] and an in-memory server that keeps the contract's
//! rules (positions, verification on `complete`), on a fake clock.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::clock::FakeClock;
use crate::transcripts::lane::TranscriptLane;
use crate::transcripts::outcome::{Failure, FileState};
use crate::transcripts::schedule::{Settings, TranscriptStatus, Trigger};
use crate::transcripts::source::MemorySource;
use crate::transcripts::state::TranscriptState;
use crate::transcripts::transport::{
    Api, FileRef, Hello, Intent, IntentRequest, UploadMode, UploadSpec,
};

/// A recorded segment: (session, file, generation, offset, decoded bytes).
type Stored = (String, String, u32, u64, Vec<u8>);

#[derive(Default)]
struct Inner {
    files: BTreeMap<(String, String), FileState>,
    intents: BTreeMap<String, IntentRequest>,
    bodies: BTreeMap<String, Vec<u8>>,
    segments: Vec<Stored>,
    /// Failures to answer, per call name, in order.
    faults: BTreeMap<&'static str, VecDeque<Failure>>,
    /// Commit the next `complete`, then answer it as a timeout.
    lose_next_complete: bool,
    calls: Vec<&'static str>,
    no_lane: bool,
}

#[derive(Clone, Default)]
struct Fake(Arc<Mutex<Inner>>);

impl Fake {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.0.lock().unwrap())
    }
    fn fault(&self, call: &'static str, f: Failure, times: usize) {
        self.with(|i| {
            i.faults
                .entry(call)
                .or_default()
                .extend((0..times).map(|_| f.clone()))
        });
    }
    fn take_fault(&self, call: &'static str) -> Result<(), Failure> {
        self.with(|i| {
            i.calls.push(call);
            match i.faults.get_mut(call).and_then(VecDeque::pop_front) {
                Some(f) => Err(f),
                None => Ok(()),
            }
        })
    }
    fn segments(&self) -> Vec<Stored> {
        self.with(|i| i.segments.clone())
    }
    fn calls(&self, name: &str) -> usize {
        self.with(|i| i.calls.iter().filter(|c| **c == name).count())
    }
    fn state_of(&self, s: &str, f: &str) -> FileState {
        self.with(|i| {
            i.files
                .get(&(s.into(), f.into()))
                .copied()
                .unwrap_or_default()
        })
    }
    /// The archive of a file at its current generation, as the web would read it back.
    fn archive(&self, s: &str, f: &str) -> Vec<u8> {
        let g = self.state_of(s, f).generation;
        let mut segs: Vec<_> = self
            .segments()
            .into_iter()
            .filter(|x| x.0 == s && x.1 == f && x.2 == g)
            .collect();
        segs.sort_by_key(|x| x.3);
        segs.into_iter().flat_map(|x| x.4).collect()
    }
}

fn position_ok(st: FileState, generation: u32, offset: u64) -> bool {
    if generation < st.generation {
        return false;
    }
    if generation == st.generation {
        offset == st.acked_offset
    } else {
        offset == 0
    }
}

impl Api for Fake {
    async fn hello(&self) -> Result<Option<Hello>, Failure> {
        self.take_fault("hello")?;
        Ok((!self.with(|i| i.no_lane)).then_some(Hello {
            mode: UploadMode::Direct,
            max_segment_bytes: 4_194_304,
            max_segment_decoded_bytes: 16_777_216,
        }))
    }

    async fn state(&self, file: FileRef<'_>) -> Result<FileState, Failure> {
        self.take_fault("state")?;
        Ok(self.state_of(file.session_id, file.file_id))
    }

    async fn intent(&self, req: &IntentRequest) -> Result<Intent, Failure> {
        self.take_fault("intent")?;
        self.with(|i| {
            let st = i
                .files
                .get(&(req.session_id.clone(), req.file_id.clone()))
                .copied()
                .unwrap_or_default();
            if !position_ok(st, req.generation, req.offset) {
                return Err(Failure::OffsetMismatch(st));
            }
            let id = format!("u{}", i.intents.len());
            i.intents.insert(id.clone(), req.clone());
            Ok(Intent {
                upload_id: id.clone(),
                upload: UploadSpec {
                    method: "PUT".into(),
                    url: format!("/api/agent-sessions/transcripts/uploads/{id}"),
                    headers: BTreeMap::new(),
                    expires_at: None,
                },
                object_key: None,
            })
        })
    }

    async fn upload(&self, intent: &Intent, body: &[u8]) -> Result<(), Failure> {
        self.take_fault("upload")?;
        self.with(|i| i.bodies.insert(intent.upload_id.clone(), body.to_vec()));
        Ok(())
    }

    async fn complete(&self, upload_id: &str) -> Result<FileState, Failure> {
        self.take_fault("complete")?;
        self.with(|i| {
            let req = i
                .intents
                .get(upload_id)
                .cloned()
                .ok_or(Failure::UploadExpired)?;
            let body = i
                .bodies
                .get(upload_id)
                .cloned()
                .ok_or(Failure::UploadMissing)?;
            assert_eq!(hex::encode(Sha256::digest(&body)), req.sha256, "verified");
            let decoded = zstd::bulk::decompress(&body, 1 << 25).unwrap();
            assert_eq!(decoded.len() as u64, req.decoded_bytes);
            assert_eq!(
                decoded.last(),
                Some(&b'\n'),
                "a segment ends after a newline"
            );
            let key = (req.session_id.clone(), req.file_id.clone());
            let st = i.files.get(&key).copied().unwrap_or_default();
            if !position_ok(st, req.generation, req.offset) {
                return Err(Failure::OffsetMismatch(st));
            }
            let new = FileState {
                generation: req.generation,
                acked_offset: req.offset + req.source_bytes,
            };
            i.files.insert(key, new);
            i.segments.push((
                req.session_id,
                req.file_id,
                req.generation,
                req.offset,
                decoded,
            ));
            if std::mem::take(&mut i.lose_next_complete) {
                return Err(Failure::Timeout);
            }
            Ok(new)
        })
    }
}

struct Rig {
    lane: TranscriptLane<MemorySource, Fake>,
    src: MemorySource,
    fake: Fake,
    clock: FakeClock,
}

fn settings() -> Settings {
    Settings {
        target_segment_bytes: 4096,
        ..Settings::default()
    }
}

fn rig_with(src: MemorySource, fake: Fake, state: TranscriptState) -> Rig {
    let clock = FakeClock::at(1_780_000_000_000);
    let lane = TranscriptLane::new(
        src.clone(),
        state,
        fake.clone(),
        Arc::new(clock.clone()),
        settings(),
        "laptop-1",
    )
    .unwrap();
    Rig {
        lane,
        src,
        fake,
        clock,
    }
}

fn rig() -> Rig {
    rig_with(
        MemorySource::default(),
        Fake::default(),
        TranscriptState::in_memory("ada", "laptop-1").unwrap(),
    )
}

fn lines(from: usize, n: usize) -> Vec<u8> {
    (from..from + n)
        .flat_map(|k| {
            format!("{{\"turn\":{k},\"text\":\"ordinary text of turn {k}\"}}\n").into_bytes()
        })
        .collect()
}

impl Rig {
    async fn drain(&mut self) {
        for _ in 0..200 {
            self.lane.tick().await.unwrap();
            if self.lane.drained().unwrap() {
                return;
            }
            self.clock.advance(Duration::from_secs(1));
        }
        panic!("not drained: {:?}", self.lane.figures());
    }
    async fn ticks(&mut self, n: usize, step: Duration) {
        for _ in 0..n {
            self.lane.tick().await.unwrap();
            self.clock.advance(step);
        }
    }
}

#[tokio::test]
async fn the_first_sweep_is_the_backfill_and_every_segment_ends_at_a_newline() {
    let mut r = rig();
    r.src.put("s-1", "s-1.jsonl", lines(0, 500));
    r.src.put("s-2", "main.jsonl", lines(0, 3));
    r.drain().await;
    assert_eq!(r.fake.archive("s-1", "s-1.jsonl"), lines(0, 500));
    assert_eq!(r.fake.archive("s-2", "main.jsonl"), lines(0, 3));
    let segs = r.fake.segments();
    assert!(segs.len() > 2, "4 KiB segments: {}", segs.len());
    assert!(segs.iter().all(|s| s.4.ends_with(b"\n")));
    assert_eq!(r.fake.state_of("s-1", "s-1.jsonl").generation, 1);
}

#[tokio::test]
async fn an_append_of_10_lines_sends_one_segment_of_those_lines_and_no_earlier_byte() {
    let mut r = rig();
    r.src.put("s", "f", lines(0, 300));
    r.drain().await;
    let before = r.fake.segments().len();
    let old_len = lines(0, 300).len() as u64;
    r.src.append("s", "f", &lines(300, 10));
    let file = r.src.file("s", "f").unwrap();
    r.lane.enqueue(&file, Trigger::Terminal).unwrap();
    r.lane.tick().await.unwrap();
    let segs = r.fake.segments();
    assert_eq!(segs.len(), before + 1, "one segment");
    let last = &segs[before];
    assert_eq!(
        (last.2, last.3),
        (1, old_len),
        "from the acknowledged offset"
    );
    assert_eq!(last.4, lines(300, 10), "exactly those lines");
    assert!(r.lane.drained().unwrap());
}

#[tokio::test]
async fn a_partial_last_line_waits_for_its_newline() {
    let mut r = rig();
    r.src.put("s", "f", lines(0, 2));
    r.src.append("s", "f", b"{\"turn\":2,");
    r.drain().await;
    assert_eq!(r.fake.archive("s", "f"), lines(0, 2));
    r.src.append("s", "f", b"\"x\":1}\n");
    r.lane
        .enqueue(&r.src.file("s", "f").unwrap(), Trigger::Terminal)
        .unwrap();
    r.lane.tick().await.unwrap();
    let mut want = lines(0, 2);
    want.extend_from_slice(b"{\"turn\":2,\"x\":1}\n");
    assert_eq!(r.fake.archive("s", "f"), want);
}

#[tokio::test]
async fn a_rewrite_in_place_starts_a_new_generation_at_offset_0() {
    let mut r = rig();
    r.src.put("s", "f", lines(0, 100));
    r.drain().await;
    // Same length, other bytes in the last acknowledged segment, then an append.
    let mut rewritten = lines(0, 100);
    let n = rewritten.len();
    rewritten[n - 5] = b'X';
    rewritten.extend_from_slice(&lines(100, 1));
    r.src.put("s", "f", rewritten.clone());
    r.lane
        .enqueue(&r.src.file("s", "f").unwrap(), Trigger::Terminal)
        .unwrap();
    r.drain().await;
    assert_eq!(r.fake.state_of("s", "f").generation, 2);
    assert_eq!(
        r.fake.archive("s", "f"),
        rewritten,
        "the new generation from 0"
    );
    // A rewrite of the head only (the tail witness unchanged) is noticed too.
    let mut head = rewritten.clone();
    head[3] = b'Y';
    head.extend_from_slice(&lines(101, 1));
    r.src.put("s", "f", head.clone());
    r.lane
        .enqueue(&r.src.file("s", "f").unwrap(), Trigger::Terminal)
        .unwrap();
    r.drain().await;
    assert_eq!(r.fake.state_of("s", "f").generation, 3);
    assert_eq!(r.fake.archive("s", "f"), head);
}

#[tokio::test]
async fn a_shrink_starts_a_new_generation() {
    let mut r = rig();
    r.src.put("s", "f", lines(0, 50));
    r.drain().await;
    r.src.put("s", "f", lines(0, 10));
    r.clock.advance(Duration::from_secs(61)); // the next sweep sees the new length
    r.drain().await;
    assert_eq!(
        r.fake.state_of("s", "f"),
        FileState {
            generation: 2,
            acked_offset: lines(0, 10).len() as u64
        }
    );
    assert_eq!(r.fake.archive("s", "f"), lines(0, 10));
    assert_eq!(r.lane.figures().generations_started, 1);
}

#[tokio::test]
async fn a_line_over_the_cap_sets_the_file_aside_until_a_cold_restart() {
    let mut r = rig();
    let mut big = vec![b'x'; 16 * 1024 * 1024 + 1];
    big.push(b'\n');
    r.src.put("s", "big", big);
    r.src.put("s", "ok", lines(0, 5));
    r.drain().await;
    let dead = r.lane.state().dead_letters().unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].file_id.as_str(), dead[0].class.as_str()),
        ("big", "deterministic")
    );
    assert_eq!(dead[0].retry_at_ms, None, "never by the timed pass");
    assert_eq!(
        r.fake.archive("s", "ok"),
        lines(0, 5),
        "the queue is not blocked"
    );
    assert!(
        r.fake.segments().iter().all(|s| s.1 != "big"),
        "nothing of it sent"
    );
    r.ticks(3, Duration::from_secs(24 * 3600)).await;
    assert_eq!(r.lane.state().dead_letters().unwrap().len(), 1);
}

#[tokio::test]
async fn three_timeouts_dead_letter_a_file_and_five_server_failures_but_not_four() {
    let mut r = rig();
    r.src.put("s", "t", lines(0, 3));
    r.fake.fault("intent", Failure::Timeout, 3);
    r.ticks(30, Duration::from_secs(10)).await;
    let dead = r.lane.state().dead_letters().unwrap();
    assert_eq!(dead.len(), 1, "after 3 consecutive timeouts");
    assert_eq!(
        (dead[0].class.as_str(), dead[0].reason.as_str()),
        ("transient", "timeout")
    );
    // The transient window (5 minutes) opens and the file goes.
    r.ticks(2, Duration::from_secs(301)).await;
    r.drain().await;
    assert_eq!(r.fake.archive("s", "t"), lines(0, 3));

    let mut r = rig();
    r.src.put("s", "u", lines(0, 3));
    r.fake.fault("complete", Failure::ServerFailure(503), 4);
    r.drain().await;
    assert!(r.lane.state().dead_letters().unwrap().is_empty(), "4 of 5");
    assert_eq!(r.fake.archive("s", "u"), lines(0, 3));

    let mut r = rig();
    r.src.put("s", "v", lines(0, 3));
    r.fake.fault("intent", Failure::ServerFailure(500), 5);
    r.ticks(12, Duration::from_secs(10)).await;
    assert_eq!(r.lane.state().dead_letters().unwrap().len(), 1, "5 of 5");
    assert_eq!(r.lane.figures().failures.get("server_failure"), Some(&5));
}

#[tokio::test]
async fn the_file_climbs_the_ladder_off_its_retry_count() {
    let mut r = rig();
    r.src.put("s", "f", lines(0, 1));
    r.fake.fault("intent", Failure::TransportError, 3);
    r.lane.tick().await.unwrap(); // 1st failure: 1 s
    assert_eq!(r.fake.calls("intent"), 1);
    r.clock.advance(Duration::from_millis(999));
    r.lane.tick().await.unwrap();
    assert_eq!(r.fake.calls("intent"), 1, "held 1 s");
    r.clock.advance(Duration::from_millis(1));
    r.lane.tick().await.unwrap(); // 2nd failure: 2 s
    assert_eq!(r.fake.calls("intent"), 2);
    r.clock.advance(Duration::from_millis(1999));
    r.lane.tick().await.unwrap();
    assert_eq!(r.fake.calls("intent"), 2, "held 2 s");
    r.clock.advance(Duration::from_millis(1));
    r.lane.tick().await.unwrap(); // 3rd failure: 4 s
    r.clock.advance(Duration::from_secs(4));
    r.lane.tick().await.unwrap();
    assert_eq!(r.fake.archive("s", "f"), lines(0, 1));
    assert_eq!(
        r.lane.state().retries("s", "f").unwrap(),
        0,
        "reset on success"
    );
}

#[tokio::test]
async fn a_401_is_never_budgeted_and_pauses_the_lane_until_the_token_works() {
    let mut r = rig();
    r.src.put("s", "f", lines(0, 3));
    r.fake.fault("intent", Failure::Unauthenticated, 10);
    r.fake.fault("hello", Failure::Unauthenticated, 9);
    r.lane.tick().await.unwrap();
    assert_eq!(r.lane.status(), TranscriptStatus::Paused);
    r.ticks(40, Duration::from_secs(31)).await;
    assert!(r.lane.state().dead_letters().unwrap().is_empty());
    assert_eq!(r.lane.state().budget_of("s", "f").unwrap(), Some((None, 0)));
    r.fake.with(|i| i.faults.clear());
    r.clock.advance(Duration::from_secs(31));
    r.drain().await;
    assert_eq!(r.lane.status(), TranscriptStatus::Running);
    assert_eq!(r.fake.archive("s", "f"), lines(0, 3));
}

#[tokio::test]
async fn offset_mismatch_adopts_the_server_state_and_continues_from_it() {
    let r = rig();
    r.src.put("s", "f", lines(0, 20));
    // The server already holds the first 10 lines in generation 1 (another install, a lost ack).
    let ten = lines(0, 10);
    r.fake.with(|i| {
        i.files.insert(
            ("s".into(), "f".into()),
            FileState {
                generation: 1,
                acked_offset: ten.len() as u64,
            },
        );
        i.segments.push(("s".into(), "f".into(), 1, 0, ten.clone()));
    });
    // Our own copy says nothing was acknowledged yet.
    let mut st = TranscriptState::in_memory("ada", "laptop-1").unwrap();
    st.schedule(&r.src.file("s", "f").unwrap(), 0).unwrap();
    let mut p = st.get("s", "f").unwrap().unwrap();
    p.generation = 1;
    p.known = true;
    st.save(&p).unwrap();
    let mut r = rig_with(r.src, r.fake, st);
    r.drain().await;
    assert_eq!(
        r.fake.archive("s", "f"),
        lines(0, 20),
        "no byte twice, none missing"
    );
    assert_eq!(r.lane.figures().failures.get("offset_mismatch"), None);
    assert_eq!(
        r.fake.calls("intent"),
        2,
        "the refused one, then from the server's offset"
    );
}

#[tokio::test]
async fn a_timed_out_complete_that_committed_is_not_sent_again() {
    let mut r = rig();
    r.src.put("s", "f", lines(0, 5));
    r.fake.with(|i| i.lose_next_complete = true);
    r.drain().await;
    assert_eq!(
        r.fake.segments().len(),
        1,
        "the server's state was asked first"
    );
    assert!(r.fake.calls("state") >= 2);
    assert_eq!(r.fake.archive("s", "f"), lines(0, 5));
}

#[tokio::test]
async fn a_terminal_hook_flushes_now_and_activity_after_the_debounce() {
    let mut r = rig();
    r.src.put("s", "f", lines(0, 1));
    r.drain().await;
    r.src.append("s", "f", &lines(1, 1));
    let f = r.src.file("s", "f").unwrap();
    r.lane.hooks().enqueue(f.clone(), Trigger::Activity);
    r.lane.tick().await.unwrap();
    assert_eq!(r.fake.segments().len(), 1, "debounced");
    r.clock.advance(Duration::from_secs(5));
    r.src.append("s", "f", &lines(2, 1));
    r.lane.hooks().enqueue(f.clone(), Trigger::Activity);
    r.clock.advance(Duration::from_secs(5));
    r.lane.tick().await.unwrap();
    assert_eq!(
        r.fake.segments().len(),
        2,
        "later activity does not push the flush back"
    );
    r.src.append("s", "f", &lines(3, 1));
    r.lane.hooks().enqueue(f, Trigger::Terminal);
    r.lane.tick().await.unwrap();
    assert_eq!(r.fake.segments().len(), 3, "flushed at once");
    assert_eq!(r.fake.archive("s", "f"), lines(0, 4));
}

#[tokio::test]
async fn a_server_without_the_lane_leaves_it_idle_and_sends_nothing() {
    let mut r = rig();
    r.fake.with(|i| i.no_lane = true);
    r.src.put("s", "f", lines(0, 1));
    r.ticks(3, Duration::from_secs(1)).await;
    assert_eq!(r.lane.status(), TranscriptStatus::Idle);
    assert_eq!(
        r.fake.calls("hello"),
        1,
        "asked again only after the probe interval"
    );
    assert_eq!(r.fake.calls("intent"), 0);
}

#[tokio::test]
async fn a_spent_upload_url_asks_a_new_intent_without_counting() {
    let mut r = rig();
    r.src.put("s", "f", lines(0, 2));
    r.fake.fault("upload", Failure::UploadRefused, 1);
    r.fake.fault("complete", Failure::UploadExpired, 1);
    r.lane.tick().await.unwrap();
    assert_eq!(r.fake.archive("s", "f"), lines(0, 2));
    assert_eq!(r.fake.calls("intent"), 3);
    assert_eq!(r.lane.state().budget_of("s", "f").unwrap(), Some((None, 0)));
}

#[tokio::test]
async fn a_rate_limit_waits_out_its_retry_after() {
    let mut r = rig();
    r.src.put("s", "f", lines(0, 2));
    r.fake.fault(
        "intent",
        Failure::RateLimited(Some(crate::answer::RetryAfter::Delay(Duration::from_secs(
            20,
        )))),
        1,
    );
    r.lane.tick().await.unwrap();
    r.ticks(19, Duration::from_secs(1)).await;
    assert_eq!(r.fake.calls("intent"), 1, "nothing before Retry-After");
    r.clock.advance(Duration::from_secs(1));
    r.drain().await;
    assert_eq!(r.fake.archive("s", "f"), lines(0, 2));
}

#[derive(Default)]
struct Seen {
    sent: Mutex<Vec<(String, u64, u64, u64)>>,
    aside: Mutex<Vec<(String, String)>>,
}

struct Watch(Arc<Seen>);

impl crate::transcripts::schedule::TranscriptObserver for Watch {
    fn segment_sent(
        &self,
        file: &crate::transcripts::source::TranscriptFile,
        source: u64,
        decoded: u64,
        compressed: u64,
    ) {
        self.0
            .sent
            .lock()
            .unwrap()
            .push((file.file_id.clone(), source, decoded, compressed));
    }
    fn set_aside(
        &self,
        file: &crate::transcripts::source::TranscriptFile,
        _class: crate::dead_letter::Class,
        reason: &str,
    ) {
        self.0
            .aside
            .lock()
            .unwrap()
            .push((file.file_id.clone(), reason.to_owned()));
    }
}

#[tokio::test]
async fn the_observer_hears_every_segment_sent_and_every_file_set_aside() {
    let r = rig();
    let seen = Arc::new(Seen::default());
    let mut r = Rig {
        lane: r.lane.with_observer(Box::new(Watch(seen.clone()))),
        ..r
    };
    r.src.put("s", "ok", lines(0, 200));
    let mut big = vec![b'x'; 16 * 1024 * 1024 + 1];
    big.push(b'\n');
    r.src.put("s", "big", big);
    r.drain().await;
    let sent = seen.sent.lock().unwrap().clone();
    assert_eq!(sent.len() as u64, r.lane.figures().segments);
    let source: u64 = sent.iter().map(|s| s.1).sum();
    assert_eq!(source, lines(0, 200).len() as u64);
    assert_eq!(source, r.lane.figures().source_bytes);
    assert_eq!(
        sent.iter().map(|s| s.3).sum::<u64>(),
        r.lane.figures().compressed_bytes
    );
    assert_eq!(
        *seen.aside.lock().unwrap(),
        [("big".to_owned(), "line_too_long".to_owned())]
    );
    assert_eq!(r.lane.figures().set_aside, 1);
}

/// Issue 31 point 2: a file rewritten in place to the same length (no hook, the sweep alone) is
/// noticed by its stamp and its prefix's hash, and archived again as a new generation: a change in
/// the middle that neither the head nor the tail witness covers, and the first record changed.
#[tokio::test]
async fn a_rewrite_that_keeps_the_length_is_noticed_by_the_sweep_and_archived_again() {
    let mut r = rig();
    let mut original = lines(0, 3000);
    assert!(original.len() > 128 * 1024, "past the head witness");
    r.src.put("s", "f", original.clone());
    r.drain().await;
    // An append: the last acknowledged segment (the tail witness) is these five lines.
    original.extend_from_slice(&lines(3000, 5));
    r.src.put("s", "f", original.clone());
    r.clock.advance(Settings::default().sweep_every);
    r.drain().await;
    assert_eq!(r.fake.state_of("s", "f").generation, 1);
    assert_eq!(r.fake.archive("s", "f"), original);

    // A byte in the middle, past the head witness and before the last segment, same length.
    let mut middle = original.clone();
    let at = middle.len() / 2;
    middle[at] = if middle[at] == b'1' { b'2' } else { b'1' };
    r.src.put("s", "f", middle.clone());
    r.clock.advance(Settings::default().sweep_every);
    r.drain().await;
    assert_eq!(r.fake.state_of("s", "f").generation, 2);
    assert_eq!(r.fake.archive("s", "f"), middle, "the new content");

    // The first record changed, same length.
    let mut first = middle.clone();
    first[2] = b'T';
    r.src.put("s", "f", first.clone());
    r.clock.advance(Settings::default().sweep_every);
    r.drain().await;
    assert_eq!(r.fake.state_of("s", "f").generation, 3);
    assert_eq!(r.fake.archive("s", "f"), first);

    // Written again with the same bytes: a new stamp, the same prefix, no new generation.
    r.src.put("s", "f", first.clone());
    r.clock.advance(Settings::default().sweep_every);
    r.drain().await;
    assert_eq!(r.fake.state_of("s", "f").generation, 3);
    assert_eq!(r.lane.figures().generations_started, 2);
}

/// A [`MemorySource`] watched: its writer appends `growth` the first time the lane reads the file
/// (the file grows between the flush's look at its length and the segment's read, as an agent
/// appending while the lane sends does), or deletes the file named by `vanish` as the lane first
/// reads it (after its length was read: a session deleted mid-flush), and the bytes the lane
/// reads are counted.
#[derive(Default)]
struct Watched {
    inner: MemorySource,
    growth: Mutex<Option<Vec<u8>>>,
    vanish: Mutex<Option<String>>,
    read: std::sync::atomic::AtomicUsize,
}

impl crate::transcripts::source::TranscriptSource for Watched {
    fn discover(&self) -> std::io::Result<Vec<crate::transcripts::source::TranscriptFile>> {
        self.inner.discover()
    }
    fn read_at(
        &self,
        file: &crate::transcripts::source::TranscriptFile,
        offset: u64,
        max: usize,
    ) -> std::io::Result<Vec<u8>> {
        if let Some(more) = self.growth.lock().unwrap().take() {
            self.inner.append(&file.session_id, &file.file_id, &more);
        }
        let mut vanish = self.vanish.lock().unwrap();
        if vanish.as_deref() == Some(file.file_id.as_str()) {
            *vanish = None;
            self.inner.remove(&file.session_id, &file.file_id);
        }
        drop(vanish);
        let bytes = self.inner.read_at(file, offset, max)?;
        self.read
            .fetch_add(bytes.len(), std::sync::atomic::Ordering::Relaxed);
        Ok(bytes)
    }
    fn len_of(
        &self,
        file: &crate::transcripts::source::TranscriptFile,
    ) -> std::io::Result<Option<u64>> {
        self.inner.len_of(file)
    }
}

/// A lane over `src` watched (its writer's part set by `set`), with its server and clock.
fn watched_lane(
    src: &MemorySource,
    set: impl FnOnce(&mut Watched),
) -> (TranscriptLane<Watched, Fake>, Fake, FakeClock) {
    let mut watched = Watched {
        inner: src.clone(),
        ..Watched::default()
    };
    set(&mut watched);
    let fake = Fake::default();
    let clock = FakeClock::at(1_780_000_000_000);
    let lane = TranscriptLane::new(
        watched,
        TranscriptState::in_memory("ada", "laptop-1").unwrap(),
        fake.clone(),
        Arc::new(clock.clone()),
        settings(),
        "laptop-1",
    )
    .unwrap();
    (lane, fake, clock)
}

#[tokio::test]
async fn a_file_appended_to_while_its_segment_is_read_is_not_taken_for_a_rewrite() {
    let src = MemorySource::default();
    src.put("s", "f", lines(0, 5));
    let (mut lane, fake, clock) =
        watched_lane(&src, |w| *w.growth.get_mut().unwrap() = Some(lines(5, 4)));
    let file = src.file("s", "f").unwrap();
    lane.enqueue(&file, Trigger::Terminal).unwrap();
    for _ in 0..5 {
        lane.tick().await.unwrap();
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(lane.figures().generations_started, 0, "no new generation");
    assert_eq!(
        fake.state_of("s", "f"),
        FileState {
            generation: 1,
            acked_offset: lines(0, 9).len() as u64
        }
    );
    assert_eq!(fake.archive("s", "f"), lines(0, 9), "every byte, once");
    let sent: usize = fake.segments().iter().map(|s| s.4.len()).sum();
    assert_eq!(sent, lines(0, 9).len(), "no byte sent twice");
}

#[tokio::test]
async fn a_flush_of_appended_lines_reads_them_and_the_witnesses_not_the_whole_file_again() {
    let src = MemorySource::default();
    src.put("s", "f", lines(0, 6000));
    let (mut lane, fake, clock) = watched_lane(&src, |_| {});
    for _ in 0..200 {
        lane.tick().await.unwrap();
        if lane.drained().unwrap() {
            break;
        }
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(fake.archive("s", "f"), lines(0, 6000), "the backfill");
    src.append("s", "f", &lines(6000, 10));
    lane.enqueue(&src.file("s", "f").unwrap(), Trigger::Terminal)
        .unwrap();
    let before = lane
        .source()
        .read
        .load(std::sync::atomic::Ordering::Relaxed);
    lane.tick().await.unwrap();
    let read = lane
        .source()
        .read
        .load(std::sync::atomic::Ordering::Relaxed)
        - before;
    let whole = lines(0, 6010).len();
    assert_eq!(fake.archive("s", "f"), lines(0, 6010), "the appended lines");
    // The new lines, the head witness (64 KiB) and the last segment's: not the whole file.
    assert!(read < whole / 2, "{read} bytes read of a {whole}-byte file");
}

#[tokio::test]
async fn a_file_deleted_between_its_length_and_its_read_is_gone_not_set_aside() {
    let src = MemorySource::default();
    src.put("s", "f", lines(0, 5));
    src.put("s", "ok", lines(0, 3));
    let (mut lane, fake, clock) =
        watched_lane(&src, |w| *w.vanish.get_mut().unwrap() = Some("f".into()));
    for id in ["f", "ok"] {
        let file = src.file("s", id).unwrap();
        lane.enqueue(&file, Trigger::Terminal).unwrap();
    }
    for _ in 0..5 {
        lane.tick().await.unwrap();
        clock.advance(Duration::from_secs(1));
    }
    assert!(
        src.file("s", "f").is_none(),
        "the file was deleted mid-flush"
    );
    assert_eq!(
        lane.state().dead_letters().unwrap(),
        vec![],
        "nothing set aside"
    );
    assert!(
        !lane.state().is_pending("s", "f").unwrap(),
        "unscheduled until it is written again"
    );
    assert!(
        fake.segments().iter().all(|s| s.1 != "f"),
        "nothing of it sent"
    );
    assert_eq!(fake.archive("s", "ok"), lines(0, 3), "the others go on");

    // Written again under the same name: sent whole at once, with no restart.
    src.put("s", "f", lines(10, 2));
    lane.enqueue(&src.file("s", "f").unwrap(), Trigger::Terminal)
        .unwrap();
    lane.tick().await.unwrap();
    assert_eq!(fake.archive("s", "f"), lines(10, 2));
}

#[tokio::test]
async fn a_file_deleted_mid_flush_and_written_again_longer_is_a_new_generation_not_a_continuation()
{
    let src = MemorySource::default();
    src.put("s", "f", lines(0, 5));
    let (mut lane, fake, clock) = watched_lane(&src, |_| {});
    lane.enqueue(&src.file("s", "f").unwrap(), Trigger::Terminal)
        .unwrap();
    lane.tick().await.unwrap();
    assert_eq!(fake.archive("s", "f"), lines(0, 5));

    // Grown, then deleted as the lane reads it.
    src.append("s", "f", &lines(5, 2));
    *lane.source().vanish.lock().unwrap() = Some("f".into());
    lane.enqueue(&src.file("s", "f").unwrap(), Trigger::Terminal)
        .unwrap();
    clock.advance(Duration::from_secs(1));
    lane.tick().await.unwrap();
    assert!(src.file("s", "f").is_none());
    assert_eq!(lane.state().dead_letters().unwrap(), vec![]);

    // Another file under its name, longer than what was acknowledged: none of the old file's
    // bytes are taken for its beginning.
    src.put("s", "f", lines(100, 9));
    lane.enqueue(&src.file("s", "f").unwrap(), Trigger::Terminal)
        .unwrap();
    for _ in 0..3 {
        clock.advance(Duration::from_secs(1));
        lane.tick().await.unwrap();
    }
    assert_eq!(fake.state_of("s", "f").generation, 2, "a new generation");
    assert_eq!(fake.archive("s", "f"), lines(100, 9), "the new file, whole");
}

#[tokio::test]
async fn a_file_deleted_and_written_again_longer_between_ticks_is_a_new_generation() {
    let mut r = rig();
    r.src.put("s", "f", lines(0, 5));
    r.drain().await;
    assert_eq!(r.fake.archive("s", "f"), lines(0, 5));

    // Deleted: the flush finds no length.
    let file = r.src.file("s", "f").unwrap();
    r.src.remove("s", "f");
    r.lane.enqueue(&file, Trigger::Terminal).unwrap();
    r.ticks(2, Duration::from_secs(1)).await;
    assert_eq!(r.lane.state().dead_letters().unwrap(), vec![]);

    // Another file under its name, longer than what was acknowledged.
    r.src.put("s", "f", lines(100, 9));
    r.lane
        .enqueue(&r.src.file("s", "f").unwrap(), Trigger::Terminal)
        .unwrap();
    r.drain().await;
    assert_eq!(r.fake.state_of("s", "f").generation, 2, "a new generation");
    assert_eq!(
        r.fake.archive("s", "f"),
        lines(100, 9),
        "the new file, whole"
    );
}
