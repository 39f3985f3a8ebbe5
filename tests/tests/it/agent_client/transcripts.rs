//! The transcript lane (`syncplane_agent::transcripts`, issue 20) against the real ingest handler
//! served on loopback, over a real Postgres, in direct mode (docs/transcript-wire-contract.md).
//!
//! These need the server's transcript routes (the transcript server work); before they are
//! merged, the hello-ack has no `agentTranscriptUpload` and every test but the idle one fails.

use std::sync::Arc;
use std::time::Duration;

use shared::accounts::tokens::{self, TokenKind};
use syncplane_agent::redact::Redactor;
use syncplane_agent::transcripts::TranscriptStatus;
use syncplane_agent::transcripts::segment::{Caps, stage};
use syncplane_agent::{FakeClock, MemorySource, TranscriptLane, TranscriptSource, Trigger};

use super::support::*;

/// Segments of this many source bytes, so a few hundred lines make several.
const SEGMENT: usize = 16 * 1024;

struct Rig {
    lane: TranscriptLane<MemorySource>,
    src: MemorySource,
    clock: FakeClock,
}

fn rig(env: &Env, src: &MemorySource) -> Rig {
    let (lane, clock) = super::support::transcript_lane(
        &env.dir.0,
        &env.token,
        src,
        &env.server.url(),
        Duration::from_secs(8),
        SEGMENT,
    );
    Rig {
        lane,
        src: src.clone(),
        clock,
    }
}

impl Rig {
    async fn drain(&mut self) {
        for _ in 0..300 {
            self.lane.tick().await.unwrap();
            if self.lane.drained().unwrap() {
                return;
            }
            self.clock.advance(Duration::from_secs(1));
        }
        panic!(
            "not drained ({:?}): {:?}",
            self.lane.status(),
            self.lane.figures()
        );
    }
}

/// JSON Lines with ordinary text and, every 7th line, a planted secret.
fn transcript(from: usize, n: usize) -> Vec<u8> {
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

/// The SHA-256s of the segments the client stages for `file` from 0 (what the archive must hold).
fn staged(src: &MemorySource, session: &str, file_id: &str) -> Vec<(u64, String)> {
    let file = src.file(session, file_id).unwrap();
    let caps = Caps {
        target_source: SEGMENT,
        ..Caps::default()
    };
    let redactor = Redactor::new();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(seg) = stage(src, &file, at, &caps, &redactor).unwrap() {
        out.push((seg.offset, seg.sha256.clone()));
        at = seg.end();
    }
    out
}

/// The archive's (generation, acked offset) of a file.
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

/// The archive's segments of a file's generation: (offset, sha256 hex), in offset order.
async fn segments(env: &Env, session: &str, file_id: &str, generation: i32) -> Vec<(u64, String)> {
    let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(
        "SELECT s.start_offset, s.sha256 FROM transcript_segments s
           JOIN transcript_files f ON f.id = s.file_row
          WHERE f.compute_target_id = $1 AND f.session_id = $2 AND f.file_id = $3
            AND s.generation = $4 ORDER BY s.start_offset",
    )
    .bind(TARGET)
    .bind(session)
    .bind(file_id)
    .bind(generation)
    .fetch_all(&env.db.pool)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(o, sha)| (o as u64, hex::encode(sha)))
        .collect()
}

/// Upload PUTs the server answered.
fn uploads(env: &Env) -> usize {
    env.server
        .seen()
        .iter()
        .filter(|s| s.method == "PUT" && s.status == 200)
        .count()
}

#[tokio::test]
async fn every_transcript_arrives_once_as_the_clients_redacted_staging() {
    let env = env().await;
    let src = MemorySource::default();
    src.put("s-1", "s-1.jsonl", transcript(0, 600));
    src.put("s-2", "main.jsonl", transcript(0, 40));
    src.put("s-2", "agent-1.jsonl", transcript(0, 3));
    let mut r = rig(&env, &src);
    r.drain().await;
    for (s, f) in [
        ("s-1", "s-1.jsonl"),
        ("s-2", "main.jsonl"),
        ("s-2", "agent-1.jsonl"),
    ] {
        let len = src.len_of(&src.file(s, f).unwrap()).unwrap().unwrap() as i64;
        assert_eq!(archived(&env, s, f).await, Some((1, len)), "{s}/{f}");
        assert_eq!(segments(&env, s, f, 1).await, staged(&src, s, f), "{s}/{f}");
    }
    let sent = r.lane.figures().segments as usize;
    assert!(sent > 3, "several segments: {sent}");
    assert_eq!(uploads(&env), sent, "each segment uploaded once");
    assert_eq!(r.lane.state().dead_letters().unwrap(), vec![]);
}

#[tokio::test]
async fn an_append_of_10_lines_uploads_one_segment_and_no_earlier_byte() {
    let env = env().await;
    let src = MemorySource::default();
    src.put("s", "s.jsonl", transcript(0, 500));
    let mut r = rig(&env, &src);
    r.drain().await;
    let before = uploads(&env);
    let old_len = transcript(0, 500).len() as i64;
    src.append("s", "s.jsonl", &transcript(500, 10));
    r.lane
        .enqueue(&src.file("s", "s.jsonl").unwrap(), Trigger::Terminal)
        .unwrap();
    // Until it is caught up, not one tick: under the suite's load the tick after the append can
    // send nothing (a request past its deadline, a wait left by the backfill); a later one sends.
    r.drain().await;
    assert_eq!(uploads(&env), before + 1, "one segment");
    let segs = segments(&env, "s", "s.jsonl", 1).await;
    assert_eq!(
        segs.last().map(|s| s.0 as i64),
        Some(old_len),
        "from the acked offset"
    );
    let len = old_len + transcript(500, 10).len() as i64;
    assert_eq!(archived(&env, "s", "s.jsonl").await, Some((1, len)));
    assert!(r.lane.figures().compressed_bytes > 0);
}

#[tokio::test]
async fn a_transcript_rewritten_in_place_is_archived_again_as_a_new_generation() {
    let env = env().await;
    let src = MemorySource::default();
    src.put("s", "f.jsonl", transcript(0, 100));
    let mut r = rig(&env, &src);
    r.drain().await;
    let mut rewritten = transcript(0, 100);
    rewritten[10] = b'Z';
    rewritten.extend_from_slice(&transcript(100, 5));
    src.put("s", "f.jsonl", rewritten.clone());
    r.lane
        .enqueue(&src.file("s", "f.jsonl").unwrap(), Trigger::Terminal)
        .unwrap();
    r.drain().await;
    assert_eq!(
        archived(&env, "s", "f.jsonl").await,
        Some((2, rewritten.len() as i64))
    );
    assert_eq!(
        segments(&env, "s", "f.jsonl", 2).await,
        staged(&src, "s", "f.jsonl")
    );
}

#[tokio::test]
async fn a_client_that_lost_its_state_takes_the_servers_and_sends_nothing_again() {
    let env = env().await;
    let src = MemorySource::default();
    src.put("s", "f.jsonl", transcript(0, 50));
    let mut r = rig(&env, &src);
    r.drain().await;
    // Forget the client's copy: the server's state is the truth, nothing is sent again.
    drop(r);
    for f in ["state.db", "state.db-wal", "state.db-shm"] {
        let _ = std::fs::remove_file(env.dir.0.join(f));
    }
    let before = uploads(&env);
    let mut again = rig(&env, &src);
    again.drain().await;
    assert_eq!(uploads(&env), before, "no segment re-sent");
    assert_eq!(
        again
            .src
            .len_of(&src.file("s", "f.jsonl").unwrap())
            .unwrap(),
        Some(transcript(0, 50).len() as u64)
    );
}

#[tokio::test]
async fn a_revoked_token_pauses_the_transcript_lane_without_counting() {
    let env = env().await;
    let src = MemorySource::default();
    src.put("s", "f.jsonl", transcript(0, 20));
    tokens::revoke(&env.db.pool, TokenKind::Device, env.token_id)
        .await
        .unwrap();
    let mut r = rig(&env, &src);
    for _ in 0..40 {
        r.lane.tick().await.unwrap();
        r.clock.advance(Duration::from_secs(31));
    }
    assert_eq!(r.lane.status(), TranscriptStatus::Paused);
    assert!(r.lane.state().dead_letters().unwrap().is_empty());
    let fresh = tokens::issue_device_token(&env.db.pool, env.user, None)
        .await
        .unwrap();
    r.lane.api().token().set(Some(fresh.token));
    r.clock.advance(Duration::from_secs(31));
    r.drain().await;
    assert_eq!(r.lane.status(), TranscriptStatus::Running);
    assert_eq!(
        archived(&env, "s", "f.jsonl").await,
        Some((1, transcript(0, 20).len() as i64))
    );
}

#[tokio::test]
async fn a_server_without_the_transcript_lane_leaves_the_client_idle() {
    let env = env().await;
    env.server.advertise_gzip(false); // a hello-ack without capabilities
    let src = MemorySource::default();
    src.put("s", "f.jsonl", transcript(0, 5));
    let mut r = rig(&env, &src);
    for _ in 0..5 {
        r.lane.tick().await.unwrap();
        r.clock.advance(Duration::from_secs(1));
    }
    assert_eq!(r.lane.status(), TranscriptStatus::Idle);
    assert_eq!(env.server.hellos(), 1, "asked once, not at every tick");
    assert!(
        env.server
            .seen()
            .iter()
            .all(|s| !s.path.contains("/transcripts")),
        "nothing sent"
    );
}

#[tokio::test]
async fn the_archive_reads_back_byte_identical_to_the_clients_redacted_staging() {
    let env = env().await;
    let src = MemorySource::default();
    let bytes = transcript(0, 300);
    src.put("s", "f.jsonl", bytes.clone());
    let mut r = rig(&env, &src);
    r.drain().await;
    let redactor = Redactor::new();
    let want: Vec<String> = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            redactor
                .redact_line(std::str::from_utf8(l).unwrap())
                .text
                .into_owned()
        })
        .collect();
    let got = archived_lines(&env, &read_token(&env).await, "s", "f.jsonl").await;
    assert_eq!(got, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_pushes_a_directory_and_a_terminal_hook_flushes_an_append() {
    let env = env().await;
    let dir = env.dir.0.join("transcripts");
    std::fs::create_dir_all(dir.join("s-2")).unwrap();
    std::fs::write(dir.join("s-1.jsonl"), transcript(0, 200)).unwrap();
    std::fs::write(dir.join("s-2/main.jsonl"), transcript(0, 20)).unwrap();
    let bin = syncplane_tests::processes::workspace_bin("syncplane-agent");
    let run = |args: Vec<String>| {
        let mut cmd = std::process::Command::new(&bin);
        cmd.args(args)
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
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
    };
    let d = dir.to_string_lossy().into_owned();
    let out = run(vec![
        "transcripts".into(),
        "push".into(),
        "--dir".into(),
        d.clone(),
    ])
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["deadLetters"], 0);
    assert_eq!(
        archived(&env, "s-1", "s-1.jsonl").await,
        Some((1, transcript(0, 200).len() as i64))
    );
    assert_eq!(
        archived(&env, "s-2", "main.jsonl").await,
        Some((1, transcript(0, 20).len() as i64))
    );
    // An activity hook only marks the file; a terminal one flushes it.
    let mut grown = transcript(0, 20);
    grown.extend_from_slice(&transcript(20, 10));
    std::fs::write(dir.join("s-2/main.jsonl"), &grown).unwrap();
    let file = dir.join("s-2/main.jsonl").to_string_lossy().into_owned();
    let hook = |event: &str| {
        vec![
            "hook".into(),
            event.into(),
            "--session".into(),
            "s-2".into(),
            "--file".into(),
            file.clone(),
            "--dir".into(),
            d.clone(),
        ]
    };
    let out = run(hook("post-tool-use")).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        archived(&env, "s-2", "main.jsonl").await,
        Some((1, transcript(0, 20).len() as i64)),
        "debounced"
    );
    let out = run(hook("stop")).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        archived(&env, "s-2", "main.jsonl").await,
        Some((1, grown.len() as i64))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_exits_4_when_the_server_has_no_transcript_lane() {
    let env = env().await;
    env.server.advertise_gzip(false); // a hello-ack without capabilities
    let dir = env.dir.0.join("transcripts");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("s-1.jsonl"), transcript(0, 3)).unwrap();
    let mut cmd =
        std::process::Command::new(syncplane_tests::processes::workspace_bin("syncplane-agent"));
    cmd.args(["transcripts", "push", "--dir"])
        .arg(&dir)
        .args(["--url", &env.server.url(), "--target", TARGET])
        .env_clear()
        .env("SYNCPLANE_AGENT_TOKEN", &env.token)
        .stdin(std::process::Stdio::null());
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no transcript lane"));
}

/// Issue 31 point 4, the client's side: a segment damaged on the way (`400 checksum_mismatch`
/// from the direct PUT) is sent again at once and archived, with no failure budget spent; a
/// deterministic refusal (`400 invalid_file_id`) sets the file aside at once, not after three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lane_sends_damaged_bytes_again_and_sets_a_deterministic_refusal_aside_at_once() {
    use syncplane_contract::transcripts::path as tpath;
    use syncplane_tests::lane_proxy::{LaneFaultProxy, PathFault};
    let env = env().await;
    let src = MemorySource::default();
    let bytes = transcript(0, 40);
    src.put("s", "damaged.jsonl", bytes.clone());
    let proxy = LaneFaultProxy::start(env.server.addr, tpath::UPLOADS).await;
    proxy.set(PathFault::CorruptOnce);
    let (mut lane, _clock) = super::support::transcript_lane(
        &env.dir.0,
        &env.token,
        &src,
        &proxy.url(),
        Duration::from_secs(8),
        SEGMENT,
    );
    lane.tick().await.unwrap();
    assert_eq!(proxy.faulted(), 1, "one body damaged on the way");
    assert_eq!(
        archived(&env, "s", "damaged.jsonl").await,
        Some((1, bytes.len() as i64)),
        "sent again in the same flush and archived"
    );
    assert_eq!(lane.figures().failures.get("checksum_mismatch"), Some(&1));
    assert_eq!(
        lane.state().budget_of("s", "damaged.jsonl").unwrap(),
        Some((None, 0))
    );

    // A refusal the same request would meet again: set aside after one attempt.
    let proxy = LaneFaultProxy::start(env.server.addr, tpath::INTENT).await;
    proxy.refuse_with("invalid_file_id");
    let src = MemorySource::default();
    src.put("s", "refused.jsonl", transcript(0, 3));
    let dir = super::support::TempDir::new();
    let (mut lane, _clock) = super::support::transcript_lane(
        &dir.0,
        &env.token,
        &src,
        &proxy.url(),
        Duration::from_secs(8),
        SEGMENT,
    );
    lane.tick().await.unwrap();
    assert_eq!(proxy.faulted(), 1, "asked once");
    let dead = lane.state().dead_letters().unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (
            dead[0].class.as_str(),
            dead[0].reason.as_str(),
            dead[0].retry_at_ms
        ),
        ("deterministic", "invalid_file_id", None)
    );
}

/// Issue 31 point 2, from the outside: `transcripts push` over a real directory, the file then
/// rewritten in place (same inode, same length, the first record changed) and pushed again: the
/// archive reads back the new content as a new generation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_rewritten_in_place_to_the_same_length_is_archived_again_by_the_next_push() {
    use std::io::{Seek, SeekFrom, Write};
    let env = env().await;
    let dir = env.dir.0.join("transcripts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s-1.jsonl");
    let before = transcript(0, 50);
    std::fs::write(&path, &before).unwrap();
    let push = || {
        let mut cmd = std::process::Command::new(syncplane_tests::processes::workspace_bin(
            "syncplane-agent",
        ));
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
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
    };
    let out = push().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        archived(&env, "s-1", "s-1.jsonl").await,
        Some((1, before.len() as i64))
    );

    // In place: the same inode, the first record's text changed, not one byte more or less.
    let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap());
    let first_end = before.iter().position(|b| *b == b'\n').unwrap();
    let mut first = before[..first_end].to_vec();
    let at = first.iter().rposition(|b| b.is_ascii_lowercase()).unwrap();
    first[at] = first[at].to_ascii_uppercase();
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(&first).unwrap();
    drop(f);
    let after = std::fs::read(&path).unwrap();
    assert_eq!(after.len(), before.len());
    assert_ne!(after, before);
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap()),
        inode
    );

    let out = push().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        archived(&env, "s-1", "s-1.jsonl").await,
        Some((2, after.len() as i64))
    );
    let redactor = Redactor::new();
    let want: Vec<String> = after
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            redactor
                .redact_line(std::str::from_utf8(l).unwrap())
                .text
                .into_owned()
        })
        .collect();
    let got = archived_lines(&env, &read_token(&env).await, "s-1", "s-1.jsonl").await;
    assert_eq!(got, want, "the archive reads back the new content");
}

/// `syncplane-agent hook <event> --session S --file F --dir D` with the env's server and token.
fn hook_command(
    env: &Env,
    dir: &std::path::Path,
    event: &str,
    session: &str,
    file: &std::path::Path,
    debounce_ms: u64,
) -> std::process::Command {
    let mut cmd =
        std::process::Command::new(syncplane_tests::processes::workspace_bin("syncplane-agent"));
    cmd.args(["hook", event, "--session", session, "--file"])
        .arg(file)
        .arg("--dir")
        .arg(dir)
        .args(["--debounce-ms", &debounce_ms.to_string()])
        .args(["--url", &env.server.url(), "--target", TARGET])
        .env_clear()
        .env("SYNCPLANE_AGENT_TOKEN", &env.token)
        .stdin(std::process::Stdio::null());
    cmd
}

/// When the server answered each transcript upload (direct PUT).
fn upload_times(env: &Env) -> Vec<std::time::Instant> {
    env.server
        .seen()
        .iter()
        .filter(|s| s.method == "PUT" && s.path.contains("/transcripts/uploads/"))
        .map(|s| s.at)
        .collect()
}

/// Issue 31 point 3: with hooks alone (no lane process), two ordinary events 0.6 s apart give
/// exactly one upload carrying both appends, at the end of the debounce window (not before half
/// of it), and each hook command returns at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_alone_flush_ordinary_activity_once_at_the_end_of_the_debounce() {
    const DEBOUNCE_MS: u64 = 2_000;
    let env = env().await;
    let dir = env.dir.0.join("transcripts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s-1.jsonl");
    let mut bytes = transcript(0, 10);
    std::fs::write(&path, &bytes).unwrap();
    // The first part archived by a terminal hook (one process, no lane left running).
    let out = hook_command(&env, &dir, "stop", "s-1", &path, DEBOUNCE_MS)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        archived(&env, "s-1", "s-1.jsonl").await,
        Some((1, bytes.len() as i64))
    );
    let before = upload_times(&env).len();

    let append = |bytes: &mut Vec<u8>, from: usize| {
        let more = transcript(from, 3);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, &more).unwrap();
        bytes.extend_from_slice(&more);
    };
    append(&mut bytes, 10);
    let first = std::time::Instant::now();
    let out = hook_command(&env, &dir, "post-tool-use", "s-1", &path, DEBOUNCE_MS)
        .output()
        .unwrap();
    let took = first.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        took < std::time::Duration::from_millis(DEBOUNCE_MS / 4),
        "the hook returned after {took:?}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    append(&mut bytes, 13);
    let second = std::time::Instant::now();
    let out = hook_command(&env, &dir, "post-tool-use", "s-1", &path, DEBOUNCE_MS)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(second.elapsed() < std::time::Duration::from_millis(DEBOUNCE_MS / 4));

    // Nothing before the window's end; then one upload with both appends.
    let deadline = first + std::time::Duration::from_millis(DEBOUNCE_MS * 4);
    while archived(&env, "s-1", "s-1.jsonl").await != Some((1, bytes.len() as i64)) {
        assert!(
            std::time::Instant::now() < deadline,
            "never flushed: {:?}",
            archived(&env, "s-1", "s-1.jsonl").await
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let sent = upload_times(&env);
    assert_eq!(
        sent.len() - before,
        1,
        "exactly one upload for both appends"
    );
    let after = sent[before].duration_since(first);
    assert!(
        after >= std::time::Duration::from_millis(DEBOUNCE_MS / 2),
        "uploaded {after:?} after the first event, before half the {DEBOUNCE_MS} ms window"
    );
    let segments: i64 = sqlx::query_scalar("SELECT count(*) FROM transcript_segments")
        .fetch_one(&env.db.pool)
        .await
        .unwrap();
    assert_eq!(segments, 2, "the terminal hook's and the debounced one's");
}

/// Issue 31 point 3: an embedded lane running over the same state file while hook processes
/// (activity and terminal) come and go never sends the same bytes twice: every upload the server
/// answered became a segment, and no intent met another process's segment (`409`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_lane_and_hook_processes_never_upload_the_same_bytes_twice() {
    use syncplane_agent::{
        JsonlDirSource, SystemClock, TokenHandle, TranscriptState, TranscriptTransport,
    };
    let env = env().await;
    let dir = env.dir.0.join("transcripts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s-1.jsonl");
    let mut bytes = transcript(0, 5);
    std::fs::write(&path, &bytes).unwrap();
    // The app's embedded lane: the CLI's state file in the same directory.
    let state = TranscriptState::open(&dir.join(".syncplane-agent.db"), "default", TARGET).unwrap();
    let transport = TranscriptTransport::new(
        &env.server.url(),
        TokenHandle::new(Some(env.token.clone())),
        Duration::from_secs(8),
    )
    .unwrap();
    let settings = syncplane_agent::transcripts::Settings {
        tick: Duration::from_millis(40),
        debounce: Duration::from_millis(300),
        ..Default::default()
    };
    let mut lane = syncplane_agent::TranscriptLane::new(
        JsonlDirSource::new(&dir),
        state,
        transport,
        Arc::new(SystemClock),
        settings,
        TARGET,
    )
    .unwrap();
    let running = tokio::spawn(async move { lane.run().await });
    for round in 0..12 {
        let more = transcript(5 + round * 4, 4);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, &more).unwrap();
        bytes.extend_from_slice(&more);
        let event = if round % 4 == 3 {
            "stop"
        } else {
            "post-tool-use"
        };
        let mut cmd = hook_command(&env, &dir, event, "s-1", &path, 300);
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 2)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        tokio::time::sleep(Duration::from_millis(120)).await;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while archived(&env, "s-1", "s-1.jsonl").await != Some((1, bytes.len() as i64)) {
        assert!(std::time::Instant::now() < deadline, "not all archived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.abort();
    let segments: i64 = sqlx::query_scalar("SELECT count(*) FROM transcript_segments")
        .fetch_one(&env.db.pool)
        .await
        .unwrap();
    let seen = env.server.seen();
    let puts = seen
        .iter()
        .filter(|s| s.method == "PUT" && s.path.contains("/uploads/"))
        .count();
    let conflicts = seen
        .iter()
        .filter(|s| s.path.contains("/transcripts/") && s.status == 409)
        .count();
    assert_eq!(
        puts as i64, segments,
        "every upload became a segment: none sent twice"
    );
    assert_eq!(conflicts, 0, "no intent met bytes another process had sent");
}
