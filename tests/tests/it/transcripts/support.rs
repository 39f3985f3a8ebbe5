//! Test support: an org with a user, a compute target and a device token, a second org with its
//! own, the direct store in a temporary directory, and the lane's requests as API Gateway v2
//! delivers them.

use std::path::PathBuf;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use shared::accounts::provision::{self, NewOrg};
use shared::accounts::tokens;
use shared::ingest::{IngestState, handle};
use syncplane_tests::apigw::{Reply, reply, request};
use syncplane_tests::db::TestDb;

pub const TARGET: &str = "laptop-1";
pub const OTHER_TARGET: &str = "other-laptop";
pub const SESSION: &str = "s-1";
pub const FILE: &str = "s-1.jsonl";

pub const STATE: &str = "/api/agent-sessions/transcripts/state";
pub const INTENT: &str = "/api/agent-sessions/transcripts/intent";
pub const UPLOADS: &str = "/api/agent-sessions/transcripts/uploads";
pub const COMPLETE: &str = "/api/agent-sessions/transcripts/complete";

pub struct Env {
    pub db: TestDb,
    pub dir: PathBuf,
    pub state: IngestState,
    pub org: i64,
    pub token: String,
    /// A second org's token, owner of `OTHER_TARGET`.
    pub other_token: String,
}

/// A segment as the client makes it: the redacted lines, compressed in one zstd frame.
#[derive(Debug, Clone)]
pub struct Segment {
    pub decoded: Vec<u8>,
    pub compressed: Vec<u8>,
    pub sha256: String,
}

pub fn segment(text: &[u8]) -> Segment {
    let compressed = zstd::encode_all(text, 3).unwrap();
    seg_of(text.to_vec(), compressed)
}

pub fn seg_of(decoded: Vec<u8>, compressed: Vec<u8>) -> Segment {
    Segment {
        sha256: hex::encode(Sha256::digest(&compressed)),
        decoded,
        compressed,
    }
}

/// `n` JSON lines of about 40 bytes each.
pub fn lines(n: usize, tag: &str) -> Vec<u8> {
    (0..n)
        .map(|i| format!("{{\"type\":\"assistant\",\"n\":{i},\"t\":\"{tag}\"}}\n"))
        .collect::<String>()
        .into_bytes()
}

pub async fn env() -> Env {
    let db = TestDb::new().await;
    let org = org_with_token(&db, "acme", TARGET).await;
    let other = org_with_token(&db, "globex", OTHER_TARGET).await;
    let dir = syncplane_tests::transcripts::temp_dir();
    let state = syncplane_tests::transcripts::direct_state(&db.pool, &dir);
    Env {
        db,
        dir,
        state,
        org: org.0,
        token: org.1,
        other_token: other.1,
    }
}

/// An org (sync policy on, gate on), its user, `target`, a device token.
async fn org_with_token(db: &TestDb, name: &str, target: &str) -> (i64, String) {
    let org = provision::create_org(
        &db.pool,
        &NewOrg {
            name,
            sync_policy: Some(true),
            feature_gate: true,
            frustration_opt_in: false,
        },
    )
    .await
    .unwrap();
    let user = provision::create_user(&db.pool, org, name).await.unwrap();
    provision::create_compute_target(&db.pool, user, target)
        .await
        .unwrap();
    let issued = tokens::issue_device_token(&db.pool, user, Some("laptop"))
        .await
        .unwrap();
    (org, issued.token)
}

/// An intent's body for `seg` at `generation`/`offset` of the env's file.
pub fn intent_for(generation: u32, offset: u64, seg: &Segment) -> Value {
    json!({"computeTargetId": TARGET, "sessionId": SESSION, "fileId": FILE,
           "generation": generation, "offset": offset,
           "sourceBytes": seg.decoded.len(), "decodedBytes": seg.decoded.len(),
           "compressedBytes": seg.compressed.len(), "sha256": seg.sha256})
}

impl Env {
    pub async fn send_as(
        &self,
        token: &str,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> Reply {
        let auth = format!("Bearer {token}");
        let headers = [
            ("authorization", auth.as_str()),
            ("content-type", content_type),
        ];
        reply(handle(&self.state, request(method, path, &headers, Some(body))).await)
    }

    pub async fn intent(&self, body: &Value) -> Reply {
        self.intent_as(&self.token, body).await
    }

    pub async fn intent_as(&self, token: &str, body: &Value) -> Reply {
        let bytes = serde_json::to_vec(body).unwrap();
        self.send_as(token, "POST", INTENT, "application/json", &bytes)
            .await
    }

    pub async fn put(&self, upload_id: &str, bytes: &[u8]) -> Reply {
        self.put_as(&self.token, upload_id, bytes).await
    }

    pub async fn put_as(&self, token: &str, upload_id: &str, bytes: &[u8]) -> Reply {
        let path = format!("{UPLOADS}/{upload_id}");
        self.send_as(token, "PUT", &path, "application/octet-stream", bytes)
            .await
    }

    pub async fn complete(&self, upload_id: &str) -> Reply {
        self.complete_as(&self.token, upload_id).await
    }

    pub async fn complete_as(&self, token: &str, upload_id: &str) -> Reply {
        let body = serde_json::to_vec(&json!({ "uploadId": upload_id })).unwrap();
        self.send_as(token, "POST", COMPLETE, "application/json", &body)
            .await
    }

    pub async fn state_of(&self, target: &str, file: &str) -> Reply {
        let path = format!(
            "{STATE}?computeTargetId={target}&sessionId={SESSION}&fileId={}",
            url::form_urlencoded::byte_serialize(file.as_bytes()).collect::<String>()
        );
        self.send_as(&self.token, "GET", &path, "application/json", b"")
            .await
    }

    /// The env's file's `{generation, ackedOffset}`.
    pub async fn file_state(&self) -> Value {
        let r = self.state_of(TARGET, FILE).await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.data().clone()
    }

    /// Intent, PUT, complete: the complete's reply.
    pub async fn upload(&self, generation: u32, offset: u64, seg: &Segment) -> Reply {
        let id = self.intent_ok(generation, offset, seg).await;
        let put = self.put(&id, &seg.compressed).await;
        assert_eq!(put.status, 200, "{}", put.body);
        self.complete(&id).await
    }

    /// An accepted intent's upload id.
    pub async fn intent_ok(&self, generation: u32, offset: u64, seg: &Segment) -> String {
        let r = self.intent(&intent_for(generation, offset, seg)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.data()["uploadId"].as_str().unwrap().to_owned()
    }

    pub async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(&self.db.pool)
            .await
            .unwrap()
    }

    pub async fn segments(&self) -> i64 {
        self.count("SELECT count(*) FROM transcript_segments").await
    }

    pub async fn exec(&self, sql: &str) {
        sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(&self.db.pool)
            .await
            .unwrap();
    }

    /// Files the store holds (temporary names included).
    pub fn stored_files(&self) -> Vec<PathBuf> {
        fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.push(p);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.dir, &mut out);
        out
    }

    /// A metadata-lane batch for the env's target: its status.
    pub async fn metadata_sync(&self) -> u16 {
        let doc = json!({"schemaVersion": 2, "batchId": "b-1", "mode": "incremental",
            "computeTargetId": TARGET, "sessionCount": 1,
            "sessions": [{"sessionId": SESSION, "updatedAt": "2026-01-01T00:00:00Z",
                          "dataRevision": "r1", "agent": "claude-code"}]});
        let bytes = serde_json::to_vec(&doc).unwrap();
        self.send_as(
            &self.token,
            "POST",
            "/api/agent-sessions/sync",
            "application/json",
            &bytes,
        )
        .await
        .status
    }
}

pub fn assert_offset_mismatch(r: &Reply, generation: u32, acked_offset: u64) {
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.code(), Some("offset_mismatch"));
    assert_eq!(
        r.body["data"],
        json!({"generation": generation, "ackedOffset": acked_offset}),
        "the file's state beside the error"
    );
}
