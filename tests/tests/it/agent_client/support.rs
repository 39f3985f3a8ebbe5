//! The agent client against the real ingest handler: an org with a user, a compute target and a
//! device token on a fresh database, the handler served on loopback, and lanes over an in-memory
//! store on a fake clock (so the spec's 5 s / 30 s schedule runs without waiting).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use shared::ingest::IngestState;
use syncplane_agent::{
    FakeClock, Lane, LocalSession, MemoryStore, Settings, State, TokenHandle, Transport,
};
use syncplane_tests::agent_server::IngestServer;
use syncplane_tests::db::TestDb;

pub const TARGET: &str = "laptop-1";
pub const TICK: Duration = Duration::from_secs(5);

pub struct Env {
    pub db: TestDb,
    pub org: i64,
    pub user: i64,
    pub token: String,
    pub token_id: i64,
    pub server: IngestServer,
    pub dir: TempDir,
}

pub async fn env() -> Env {
    env_with(1000).await
}

pub async fn env_with(rate_limit_per_minute: u32) -> Env {
    let db = TestDb::new().await;
    let device = syncplane_tests::provisioned::device_on_target(&db.pool, TARGET).await;
    let server = IngestServer::start(IngestState {
        pool: db.pool.clone(),
        rate_limit_per_minute,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    })
    .await;
    Env {
        db,
        org: device.org,
        user: device.user,
        token: device.token,
        token_id: device.token_id,
        server,
        dir: TempDir::new(),
    }
}

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl Default for TempDir {
    fn default() -> Self {
        Self::new()
    }
}

impl TempDir {
    pub fn new() -> Self {
        let p = std::env::temp_dir().join(format!("agent-client-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A session with `events` events carrying local text the lane must not send.
pub fn session(id: &str, updated_secs: i64, revision: &str, events: u64) -> LocalSession {
    let updated = chrono::DateTime::from_timestamp(1_772_000_000 + updated_secs, 0)
        .unwrap()
        .to_rfc3339();
    serde_json::from_value(json!({
        "sessionId": id, "updatedAt": updated, "dataRevision": revision,
        "agent": "claude-code", "model": "opus", "title": format!("session {id}"),
        "usage": {"inputTokens": 10, "outputTokens": 20},
        "events": (0..events).map(|seq| json!({
            "seq": seq, "ts": "2026-03-01T09:30:00Z", "kind": "tool_call",
            "toolName": format!("tool-{}", seq % 7), "durationMs": seq % 1000,
            "inputTokens": 3, "outputTokens": 4, "isError": seq % 11 == 0,
            "summary": "local text", "data": {"stdout": "local"}
        })).collect::<Vec<_>>(),
        "tokenEvents": [{"ts": "2026-03-01T09:30:00Z", "inputTokens": 1, "outputTokens": 2}],
        "tokenSeries": [[1, 2]],
        "artifactRefs": [{"kind": "pr", "ref": format!("acme/app#{id}")}],
    }))
    .unwrap()
}

pub fn store_of(sessions: impl IntoIterator<Item = LocalSession>) -> MemoryStore {
    let store = MemoryStore::default();
    for s in sessions {
        store.put(s);
    }
    store
}

pub struct Built {
    pub lane: Lane<MemoryStore>,
    pub clock: FakeClock,
}

/// A lane over `store` talking to `url`, its state in `env.dir`, on a fake clock.
pub fn lane(env: &Env, store: MemoryStore, url: &str, settings: Settings) -> Built {
    lane_with(env, store, url, settings, Duration::from_secs(8), "ada")
}

pub fn lane_with(
    env: &Env,
    store: MemoryStore,
    url: &str,
    settings: Settings,
    deadline: Duration,
    identity: &str,
) -> Built {
    let clock = FakeClock::at(1_780_000_000_000);
    let state = State::open(&env.dir.0.join("state.db"), identity, TARGET).unwrap();
    let transport =
        Transport::new(url, TokenHandle::new(Some(env.token.clone())), deadline).unwrap();
    let lane = Lane::new(
        store,
        state,
        transport,
        Arc::new(clock.clone()),
        settings,
        TARGET,
    )
    .unwrap();
    Built { lane, clock }
}

impl Built {
    /// Tick on the schedule (the fake clock moves 5 s per tick) until drained; the tick count.
    pub async fn drain(&mut self, max_ticks: usize) -> usize {
        for n in 1..=max_ticks {
            self.lane.tick().await.unwrap();
            if self.lane.drained().unwrap() {
                return n;
            }
            self.clock.advance(TICK);
        }
        panic!(
            "not drained after {max_ticks} ticks: {:?}",
            self.lane.counts()
        );
    }

    pub async fn ticks(&mut self, n: usize) {
        for _ in 0..n {
            self.lane.tick().await.unwrap();
            self.clock.advance(TICK);
        }
    }
}

/// Columnar event metadata as stored, or as the source has it.
type EventRow = (
    i64,
    String,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<bool>,
);

pub async fn stored_events(env: &Env, id: &str) -> Vec<EventRow> {
    sqlx::query_as(
        "SELECT e.seq, e.kind, e.tool_name, e.duration_ms, e.input_tokens, e.output_tokens, e.is_error
           FROM agent_session_events e JOIN agent_sessions s ON s.id = e.session_pk
          WHERE s.compute_target_id = $1 AND s.session_id = $2 ORDER BY e.seq",
    )
    .bind(TARGET)
    .bind(id)
    .fetch_all(&env.db.pool)
    .await
    .unwrap()
}

pub fn source_events(s: &LocalSession) -> Vec<EventRow> {
    s.events
        .iter()
        .flatten()
        .map(|e| {
            (
                e.seq as i64,
                e.kind.clone(),
                e.tool_name.clone(),
                e.duration_ms.map(|v| v as i64),
                e.input_tokens.map(|v| v as i64),
                e.output_tokens.map(|v| v as i64),
                e.is_error,
            )
        })
        .collect()
}

/// The stored (committed revision, pending revision, event_count) of a session.
pub async fn stored(env: &Env, id: &str) -> Option<(Option<String>, Option<String>, i32)> {
    sqlx::query_as(
        "SELECT committed_revision, pending_revision, event_count FROM agent_sessions
          WHERE compute_target_id = $1 AND session_id = $2",
    )
    .bind(TARGET)
    .bind(id)
    .fetch_optional(&env.db.pool)
    .await
    .unwrap()
}

pub async fn session_count(env: &Env) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM agent_sessions")
        .fetch_one(&env.db.pool)
        .await
        .unwrap()
}

/// Every source session is stored, committed at its revision, with exactly its events.
pub async fn assert_arrived(env: &Env, sessions: &[LocalSession]) {
    assert_eq!(session_count(env).await, sessions.len() as i64);
    for s in sessions {
        let (committed, pending, count) = stored(env, &s.session_id)
            .await
            .unwrap_or_else(|| panic!("{} not stored", s.session_id));
        assert_eq!(
            committed.as_deref(),
            Some(s.data_revision.as_str()),
            "{}",
            s.session_id
        );
        assert_eq!(pending, None, "{}", s.session_id);
        assert_eq!(count as usize, s.event_count(), "{}", s.session_id);
        assert_eq!(
            stored_events(env, &s.session_id).await,
            source_events(s),
            "{}",
            s.session_id
        );
    }
}

/// Every chunk was acknowledged exactly once.
pub fn assert_acked_once(env: &Env) {
    for (item, n) in env.server.acked_items() {
        assert_eq!(n, 1, "{item:?} acknowledged {n} times");
    }
}

/// A store directory of `sessions` under `env.dir`, named `name`: one JSON file per session, as
/// the CLI reads it.
pub fn store_dir(env: &Env, name: &str, sessions: &[LocalSession]) -> std::path::PathBuf {
    let dir = env.dir.0.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for s in sessions {
        std::fs::write(
            dir.join(format!("{}.json", s.session_id)),
            serde_json::to_vec(s).unwrap(),
        )
        .unwrap();
    }
    dir
}

/// `syncplane-agent push` over `store` with `token`, ticking every `tick_ms`, its output piped:
/// the command, for the caller to run or spawn.
pub fn push_command(
    env: &Env,
    store: &std::path::Path,
    token: &str,
    tick_ms: u32,
) -> std::process::Command {
    push_command_to(store, token, tick_ms, &env.server.url(), TARGET)
}

/// [`push_command`] against `url` for the compute target `target`.
pub fn push_command_to(
    store: &std::path::Path,
    token: &str,
    tick_ms: u32,
    url: &str,
    target: &str,
) -> std::process::Command {
    let mut cmd = agent_command();
    cmd.args(["push", "--store"])
        .arg(store)
        .args(["--url", url, "--target", target, "--tick-ms"])
        .arg(tick_ms.to_string())
        .env("SYNCPLANE_AGENT_TOKEN", token);
    cmd
}

/// The `syncplane-agent` binary with an empty environment, its output piped.
pub fn agent_command() -> std::process::Command {
    let mut cmd =
        std::process::Command::new(syncplane_tests::processes::workspace_bin("syncplane-agent"));
    cmd.env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// A transcript lane over `src` talking to `url` (the server, or a proxy in front of it) with a
/// JSON deadline of `deadline` and segments of `segment_bytes`, its state in `dir`'s `state.db`
/// (the metadata lane's file, as the CLI keeps them), on a fake clock of its own.
pub fn transcript_lane(
    dir: &std::path::Path,
    token: &str,
    src: &syncplane_agent::MemorySource,
    url: &str,
    deadline: Duration,
    segment_bytes: usize,
) -> (
    syncplane_agent::TranscriptLane<syncplane_agent::MemorySource>,
    FakeClock,
) {
    let clock = FakeClock::at(1_780_000_000_000);
    let state = syncplane_agent::TranscriptState::open(&dir.join("state.db"), "ada", TARGET)
        .expect("transcript state");
    let transport = syncplane_agent::TranscriptTransport::new(
        url,
        TokenHandle::new(Some(token.to_owned())),
        deadline,
    )
    .expect("transcript transport");
    let settings = syncplane_agent::transcripts::Settings {
        target_segment_bytes: segment_bytes,
        ..Default::default()
    };
    let lane = syncplane_agent::TranscriptLane::new(
        src.clone(),
        state,
        transport,
        Arc::new(clock.clone()),
        settings,
        TARGET,
    )
    .expect("transcript lane");
    (lane, clock)
}

/// An address nothing listens on.
pub async fn closed_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

/// A server that answers every request 404 with a page, as `cargo lambda watch` does for a path
/// that is not a function's.
pub async fn not_found_server() -> (String, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new().fallback(|| async {
        (
            axum::http::StatusCode::NOT_FOUND,
            "function not found; available functions: ingest, sync-api, webhook",
        )
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, task)
}

/// A read token for the org (stored as its SHA-256, as the CLI issues it).
pub async fn read_token(env: &Env) -> String {
    use sha2::{Digest, Sha256};
    let token = format!("spr_{}", hex::encode([7u8; 32]));
    sqlx::query("INSERT INTO read_tokens (token_hash, org_id) VALUES ($1, $2)")
        .bind(Sha256::digest(token.as_bytes()).to_vec())
        .bind(env.org)
        .execute(&env.db.pool)
        .await
        .unwrap();
    token
}

/// What the archive returns for a file: its lines through the `lines` route, every page.
pub async fn archived_lines(env: &Env, token: &str, session: &str, file_id: &str) -> Vec<String> {
    let mut got = Vec::new();
    let mut cursor: Option<String> = None;
    let http = reqwest::Client::new();
    loop {
        let mut url = format!(
            "{}/api/agent-sessions/transcripts/lines?computeTargetId={TARGET}&sessionId={session}&fileId={file_id}&limit=500",
            env.server.url()
        );
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let v: serde_json::Value = http
            .get(url)
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let data = &v["data"];
        for l in data["lines"].as_array().unwrap_or(&Vec::new()) {
            got.push(l.as_str().unwrap().to_owned());
        }
        match data["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    got
}
