//! Test support: an org, a user, a compute target and a device token on a fresh database, and
//! requests built as API Gateway v2 delivers them (base64 body, `isBase64Encoded: true`).

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use lambda_http::Request;
use serde_json::{Value, json};
use shared::accounts::provision::{self, NewOrg};
use shared::accounts::tokens;
use shared::ingest::{IngestState, handle};
pub use syncplane_tests::apigw::{Reply, checked_reply};
use syncplane_tests::db::TestDb;

pub const TARGET: &str = "laptop-1";

pub struct Env {
    pub db: TestDb,
    pub state: IngestState,
    pub org: i64,
    /// The token's user, owner of `TARGET`.
    pub user: i64,
    pub token: String,
    pub token_id: i64,
}

/// Org with sync policy on, gate on, frustration off; a generous rate limit.
pub async fn env() -> Env {
    env_with(
        NewOrg {
            name: "acme",
            sync_policy: Some(true),
            feature_gate: true,
            frustration_opt_in: false,
        },
        1000,
    )
    .await
}

pub async fn env_with(org: NewOrg<'_>, rate_limit_per_minute: u32) -> Env {
    let db = TestDb::new().await;
    let org = provision::create_org(&db.pool, &org).await.unwrap();
    let user = provision::create_user(&db.pool, org, "ada").await.unwrap();
    provision::create_compute_target(&db.pool, user, TARGET)
        .await
        .unwrap();
    let issued = tokens::issue_device_token(&db.pool, user, Some("laptop"))
        .await
        .unwrap();
    let state = IngestState {
        pool: db.pool.clone(),
        rate_limit_per_minute,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };
    Env {
        db,
        state,
        org,
        user,
        token: issued.token,
        token_id: issued.id,
    }
}

/// A request as API Gateway (HTTP API, payload v2) hands it to the function.
pub fn apigw(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Request {
    syncplane_tests::apigw::request(method, path, headers, Some(body))
}

/// The ingest function's answer, checked against openapi.json.
pub async fn send(env: &Env, req: Request) -> Reply {
    let (method, path) = (req.method().to_string(), req.uri().path().to_owned());
    checked_reply(&method, &path, handle(&env.state, req).await)
}

impl Env {
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// POST /sync with the device token and extra headers.
    pub async fn post_raw(&self, extra: &[(&str, &str)], body: &[u8]) -> Reply {
        let auth = self.bearer();
        let mut headers = vec![("authorization", auth.as_str())];
        headers.extend_from_slice(extra);
        send(
            self,
            apigw("POST", "/api/agent-sessions/sync", &headers, body),
        )
        .await
    }

    pub async fn post(&self, doc: &Value) -> Reply {
        self.post_raw(
            &[("content-type", "application/json")],
            &serde_json::to_vec(doc).unwrap(),
        )
        .await
    }

    pub async fn post_gzip(&self, doc: &Value) -> Reply {
        self.post_raw(
            &[("content-encoding", "gzip")],
            &gzip(&serde_json::to_vec(doc).unwrap()),
        )
        .await
    }

    pub async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(&self.db.pool)
            .await
            .unwrap()
    }

    /// Rows in the ingest data tables: sessions, events.
    pub async fn written(&self) -> (i64, i64) {
        (
            self.count("SELECT count(*) FROM agent_sessions").await,
            self.count("SELECT count(*) FROM agent_session_events")
                .await,
        )
    }

    /// Batches the rate limiter counted for a target.
    pub async fn counted(&self, target: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT coalesce(sum(batches), 0)::int8 FROM ingest_rate_limits WHERE compute_target_id = $1",
        )
        .bind(target)
        .fetch_one(&self.db.pool)
        .await
        .unwrap()
    }

    pub async fn session_row(&self, session_id: &str) -> Value {
        sqlx::query_scalar(
            "SELECT to_jsonb(s) FROM agent_sessions s WHERE compute_target_id = $1 AND session_id = $2",
        )
        .bind(TARGET)
        .bind(session_id)
        .fetch_one(&self.db.pool)
        .await
        .unwrap()
    }

    pub async fn event_seqs(&self, session_id: &str) -> Vec<i64> {
        sqlx::query_scalar(
            "SELECT e.seq FROM agent_session_events e JOIN agent_sessions s ON s.id = e.session_pk
              WHERE s.session_id = $1 ORDER BY e.seq",
        )
        .bind(session_id)
        .fetch_all(&self.db.pool)
        .await
        .unwrap()
    }
}

/// A valid envelope around `sessions` for the env's target.
pub fn batch(sessions: Vec<Value>) -> Value {
    json!({
        "schemaVersion": 2,
        "batchId": "batch-1",
        "mode": "incremental",
        "computeTargetId": TARGET,
        "sessionCount": sessions.len(),
        "sessions": sessions,
    })
}

/// A minimal valid session.
pub fn session(id: &str, revision: &str, updated_at: &str) -> Value {
    json!({
        "sessionId": id,
        "updatedAt": updated_at,
        "dataRevision": revision,
        "agent": "claude-code",
    })
}

pub fn event(seq: u64) -> Value {
    json!({"seq": seq, "ts": "2026-01-01T00:00:00Z", "kind": "tool_call", "toolName": "bash",
           "durationMs": 12, "inputTokens": 3, "outputTokens": 4, "isError": false})
}

pub fn events(seqs: impl IntoIterator<Item = u64>) -> Value {
    Value::Array(seqs.into_iter().map(event).collect())
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// `doc` serialized with a top-level unknown `pad` field sized so the JSON is exactly `len` bytes.
pub fn padded_to(mut doc: Value, len: usize) -> Vec<u8> {
    doc["pad"] = json!("");
    let base = serde_json::to_vec(&doc).unwrap().len();
    doc["pad"] = json!("a".repeat(len - base));
    let out = serde_json::to_vec(&doc).unwrap();
    assert_eq!(out.len(), len);
    out
}

/// A 400 with no code and nothing written.
pub async fn assert_refused_400(env: &Env, doc: &Value) {
    let r = env.post(doc).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.code(), None, "400 never carries a code");
    assert_eq!(r.body["success"], false);
    assert_eq!(env.written().await, (0, 0), "nothing written");
}
