//! `bench-ingest`: figures for the ingest path (not a test; prints numbers).
//!
//! A batch of 200 sessions, about 4 MiB decoded, gzip: handler time p50/p99 over many runs,
//! sessions per second, peak memory (VmHWM); inflate throughput beside `gzip -d` on the same
//! bytes; upsert time beside a plain COPY of the same rows. Needs Postgres at DATABASE_URL.
//!
//! `cargo run -p syncplane-tests --features tools --bin bench-ingest [--release] -- [runs]`

use std::io::Write;
use std::time::{Duration, Instant};

use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};
use shared::ingest::decode::inflate_bounded;
use shared::ingest::{IngestState, MAX_DECODED_BYTES, MAX_WIRE_BYTES, batch, handle, strict_json};
use syncplane_tests::db::TestDb;

const TARGET: &str = "bench-target";
const DECODED_GOAL: usize = 4_000_000;
const TOOLS: [&str; 4] = ["bash", "edit", "read", "grep"];

fn session(prefix: &str, i: usize, n_events: usize) -> Value {
    let events: Vec<Value> = (0..n_events)
        .map(|seq| {
            json!({"seq": seq, "ts": format!("2026-01-01T00:{:02}:{:02}Z", (seq / 60) % 60, seq % 60),
                   "kind": if seq % 3 == 0 { "tool_call" } else { "message" },
                   "toolName": TOOLS[seq % 4],
                   "durationMs": (seq * 37) % 5000, "inputTokens": (seq * 13) % 900,
                   "outputTokens": (seq * 7) % 400, "isError": seq % 17 == 0})
        })
        .collect();
    json!({
        "sessionId": format!("{prefix}-session-{i:04}"),
        "updatedAt": "2026-01-01T12:00:00Z",
        "dataRevision": format!("rev-{i}"),
        "agent": "claude-code", "model": "opus", "title": format!("Session number {i}"),
        "status": "completed", "startedAt": "2026-01-01T10:00:00Z", "endedAt": "2026-01-01T11:00:00Z",
        "repository": {"remoteUrl": "git@github.com:acme/app.git", "branch": "main",
                       "commitSha": format!("{:040x}", i * 7919)},
        "usage": {"inputTokens": 12345 + i, "outputTokens": 6789, "cacheReadTokens": 1000,
                  "cacheWriteTokens": 200, "costUsd": 1.25},
        "events": events,
        "tokenEvents": [{"ts": "2026-01-01T10:05:00Z", "inputTokens": 10, "outputTokens": 5}],
        "artifactRefs": [{"kind": "pr", "ref": format!("acme/app#{i}")}],
    })
}

/// A 200-session envelope close to 4 MiB decoded.
fn envelope(prefix: &str, n_events: usize) -> Value {
    let sessions: Vec<Value> = (0..200).map(|i| session(prefix, i, n_events)).collect();
    json!({"schemaVersion": 2, "batchId": prefix, "mode": "backfill", "computeTargetId": TARGET,
           "sessionCount": 200, "sessions": sessions})
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn request(token: &str, body: &[u8]) -> lambda_http::Request {
    let auth = format!("Bearer {token}");
    syncplane_tests::apigw::request(
        "POST",
        "/api/agent-sessions/sync",
        &[("authorization", &auth), ("content-encoding", "gzip")],
        Some(body),
    )
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50);
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("bench-ingest ({profile} build), {runs} runs");

    // Size the events so the batch lands just under 4 MiB decoded.
    let mut n_events = 10;
    loop {
        let len = serde_json::to_vec(&envelope("size", n_events))
            .unwrap()
            .len();
        if len >= DECODED_GOAL {
            n_events -= 1;
            break;
        }
        n_events += 1;
    }
    let sample = serde_json::to_vec(&envelope("sample", n_events)).unwrap();
    let sample_gz = gzip(&sample);
    println!(
        "batch: 200 sessions x {n_events} events, {} bytes decoded (cap {MAX_DECODED_BYTES}), {} bytes gzip (cap {MAX_WIRE_BYTES})",
        sample.len(),
        sample_gz.len()
    );
    assert!(
        sample_gz.len() <= MAX_WIRE_BYTES,
        "the bench batch must fit the wire cap"
    );

    // Where the handler's CPU goes before the database: the JSON check (step 2, duplicate keys
    // refused, nothing built), the typed schema parse (step 5), and freeing the parsed batch.
    let (mut json_t, mut schema_t, mut free_t) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.min(20) {
        let t = Instant::now();
        strict_json::check(&sample).unwrap();
        json_t.push(t.elapsed());
        let t = Instant::now();
        let parsed = batch::parse(&sample).unwrap();
        schema_t.push(t.elapsed());
        let t = Instant::now();
        drop(parsed);
        free_t.push(t.elapsed());
    }
    for v in [&mut json_t, &mut schema_t, &mut free_t] {
        v.sort();
    }
    println!(
        "parse: JSON check p50 {:.1} ms, schema parse p50 {:.1} ms, freeing the batch p50 {:.1} ms",
        ms(pct(&json_t, 0.5)),
        ms(pct(&schema_t, 0.5)),
        ms(pct(&free_t, 0.5))
    );

    let db = TestDb::new().await;
    let device = syncplane_tests::provisioned::device_on_target(&db.pool, TARGET).await;
    let (org, token) = (device.org, device.token);
    let state = IngestState {
        pool: db.pool.clone(),
        rate_limit_per_minute: 1_000_000,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };

    // 1. Handler time: every run is a fresh batch (new sessions: the full insert path).
    let hwm_before = vm_hwm_kib();
    let mut times = Vec::with_capacity(runs);
    for run in 0..runs + 3 {
        let body = gzip(&serde_json::to_vec(&envelope(&format!("run{run}"), n_events)).unwrap());
        let req = request(&token, &body);
        let t = Instant::now();
        let resp = handle(&state, req).await;
        let elapsed = t.elapsed();
        assert_eq!(resp.status(), 200, "run {run}");
        if run >= 3 {
            times.push(elapsed); // the first three warm the pool and caches
        }
    }
    times.sort();
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    println!(
        "handler (new sessions): p50 {:.1} ms, p99 {:.1} ms, mean {:.1} ms, {:.0} sessions/s (target p99 <= 150 ms)",
        ms(pct(&times, 0.5)),
        ms(pct(&times, 0.99)),
        ms(mean),
        200.0 / mean.as_secs_f64()
    );
    // A repeated batch (the idempotent retry path).
    let mut repeat = Vec::new();
    let body = gzip(&serde_json::to_vec(&envelope("run5", n_events)).unwrap());
    for _ in 0..runs.min(20) {
        let t = Instant::now();
        let resp = handle(&state, request(&token, &body)).await;
        repeat.push(t.elapsed());
        assert_eq!(resp.status(), 200);
    }
    repeat.sort();
    println!(
        "handler (repeated batch, rewrites nothing): p50 {:.1} ms, p99 {:.1} ms",
        ms(pct(&repeat, 0.5)),
        ms(pct(&repeat, 0.99))
    );
    println!(
        "peak memory VmHWM: {} KiB before the runs, {} KiB after",
        hwm_before,
        vm_hwm_kib()
    );

    // 2. Inflate throughput beside `gzip -d` on the same bytes (50 members back to back).
    let reps = 50;
    let t = Instant::now();
    let mut out = Vec::new();
    for _ in 0..reps {
        inflate_bounded(&sample_gz, MAX_DECODED_BYTES, &mut out).unwrap();
    }
    let ours = t.elapsed();
    let path = std::env::temp_dir().join(format!("bench-ingest-{}.gz", std::process::id()));
    std::fs::write(&path, sample_gz.repeat(reps)).unwrap();
    let t = Instant::now();
    let status = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(&path)
        .stdout(std::process::Stdio::null())
        .status();
    let theirs = t.elapsed();
    let _ = std::fs::remove_file(&path);
    let total_mib = (sample.len() * reps) as f64 / (1024.0 * 1024.0);
    match status {
        Ok(s) if s.success() => println!(
            "inflate: ours {:.0} MiB/s, gzip -d {:.0} MiB/s, ratio {:.2}x (target >= 0.7x)",
            total_mib / ours.as_secs_f64(),
            total_mib / theirs.as_secs_f64(),
            theirs.as_secs_f64() / ours.as_secs_f64()
        ),
        _ => println!(
            "inflate: ours {:.0} MiB/s; gzip -d unavailable",
            total_mib / ours.as_secs_f64()
        ),
    }

    // 3. Upsert beside a plain COPY of the same rows.
    let mut upserts = Vec::new();
    let mut copies = Vec::new();
    for run in 0..runs.min(20) {
        let doc = envelope(&format!("up{run}"), n_events);
        let parsed = batch::parse(&serde_json::to_vec(&doc).unwrap()).unwrap();
        let t = Instant::now();
        shared::ingest::upsert::upsert(&db.pool, org, TARGET, &parsed.sessions, false)
            .await
            .unwrap();
        upserts.push(t.elapsed());

        let copy_batch = batch::parse(&{
            let mut d = doc.clone();
            for s in d["sessions"].as_array_mut().unwrap() {
                let id = format!("copy-{}", s["sessionId"].as_str().unwrap());
                s["sessionId"] = json!(id);
            }
            serde_json::to_vec(&d).unwrap()
        })
        .unwrap();
        copies.push(copy_rows(&db.pool, org, &copy_batch.sessions).await);
    }
    upserts.sort();
    copies.sort();
    println!(
        "upsert (200 sessions, {} events): p50 {:.1} ms; plain COPY of the same rows: p50 {:.1} ms; ratio {:.2}x (target <= 3x)",
        200 * n_events,
        ms(pct(&upserts, 0.5)),
        ms(pct(&copies, 0.5)),
        pct(&upserts, 0.5).as_secs_f64() / pct(&copies, 0.5).as_secs_f64()
    );
}

/// The same session and event rows, by COPY in one transaction; only the database work is timed
/// (the COPY text is built outside the clock).
async fn copy_rows(pool: &sqlx::PgPool, org: i64, sessions: &[batch::Session]) -> Duration {
    let esc = |s: &str| {
        s.replace('\\', "\\\\")
            .replace('\t', "\\t")
            .replace('\n', "\\n")
    };
    let mut session_text = String::new();
    for s in sessions {
        let payload = shared::ingest::sanitize::sanitize(s, false).blob;
        session_text.push_str(&format!(
            "{org}\t{TARGET}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            esc(&s.session_id),
            s.updated_at.at.to_rfc3339(),
            esc(&s.data_revision),
            esc(&s.agent),
            esc(s.title.as_deref().unwrap_or("")),
            s.events.as_ref().map_or(0, Vec::len),
            esc(&Value::Object(payload).to_string()),
        ));
    }
    let t = Instant::now();
    let mut conn = pool.acquire().await.unwrap();
    sqlx::query("BEGIN").execute(&mut *conn).await.unwrap();
    let mut copy = conn
        .copy_in_raw(
            "COPY agent_sessions (org_id, compute_target_id, session_id, updated_at, committed_revision, agent, title, event_count, payload) FROM STDIN",
        )
        .await
        .unwrap();
    copy.send(session_text.as_bytes()).await.unwrap();
    copy.finish().await.unwrap();
    let ids: Vec<(i64, String)> = sqlx::query_as(
        "SELECT id, session_id FROM agent_sessions WHERE compute_target_id = $1 AND session_id = ANY($2)",
    )
    .bind(TARGET)
    .bind(sessions.iter().map(|s| s.session_id.clone()).collect::<Vec<_>>())
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    let db_time = t.elapsed();
    let by_id: std::collections::HashMap<_, _> = ids.into_iter().map(|(i, s)| (s, i)).collect();
    let mut events_text = String::new();
    for s in sessions {
        let pk = by_id[&s.session_id];
        for e in s.events.iter().flatten() {
            events_text.push_str(&format!(
                "{pk}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                e.seq,
                e.ts.to_rfc3339(),
                e.kind,
                e.tool_name.as_deref().unwrap_or("\\N"),
                e.duration_ms.map_or("\\N".into(), |v| v.to_string()),
                e.input_tokens.map_or("\\N".into(), |v| v.to_string()),
                e.output_tokens.map_or("\\N".into(), |v| v.to_string()),
                e.is_error.map_or("\\N".into(), |v| v.to_string()),
            ));
        }
    }
    let t = Instant::now();
    let mut copy = conn
        .copy_in_raw("COPY agent_session_events (session_pk, seq, ts, kind, tool_name, duration_ms, input_tokens, output_tokens, is_error) FROM STDIN")
        .await
        .unwrap();
    copy.send(events_text.as_bytes()).await.unwrap();
    copy.finish().await.unwrap();
    sqlx::query("COMMIT").execute(&mut *conn).await.unwrap();
    db_time + t.elapsed()
}
