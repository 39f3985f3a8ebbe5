//! The `syncplane` operator commands (issue 5, item 11), run through the CLI's own entry point
//! (`syncplane_cli::run` with parsed arguments) against a configuration built from environment
//! variables exactly as the binary reads them: real Postgres, the fake GitHub.

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde_json::Value;
use syncplane_tests::db::TestDb;
use syncplane_tests::fake_github::{Endpoint, FakeGithub, Fault};

struct Setup {
    db: TestDb,
    gh: FakeGithub,
    installation: u64,
    sync_config: String,
}

impl Setup {
    async fn new() -> Self {
        let db = TestDb::new().await;
        let gh = FakeGithub::start().await;
        let installation = gh.add_installation("acme");
        gh.add_repo(
            installation,
            "acme/handbook",
            &[
                ("README.md", b"# Handbook\n"),
                ("docs/a.md", b"# A\n"),
                ("docs/b.md", b"# B\n"),
            ],
        );
        gh.add_repo(
            installation,
            "acme/widgets",
            &[("docs/usage.md", b"# Usage\n")],
        );
        gh.add_repo(installation, "acme/legacy", &[("docs/old.md", b"# Old\n")]);
        Self {
            db,
            gh,
            installation,
            sync_config: r#"{"exclude":["acme/legacy"]}"#.to_owned(),
        }
    }

    /// The process environment the binary would see.
    fn env(&self) -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("DATABASE_URL", self.db.url().expose().to_owned()),
            ("GITHUB_API_URL", self.gh.url()),
            ("GITHUB_APP_ID", self.gh.app_id().to_string()),
            ("GITHUB_INSTALLATION_ID", self.installation.to_string()),
            ("GITHUB_APP_PRIVATE_KEY", self.gh.private_key_pem()),
            ("GITHUB_RATE_LIMIT_WAIT_BUDGET_SECONDS", "0".to_owned()),
            ("SYNC_CONFIG", self.sync_config.clone()),
        ])
    }

    /// `syncplane <args>`: exit status and standard output.
    async fn syncplane(&self, args: &[&str]) -> (ExitCode, String) {
        let vars: Vec<(String, String)> = self
            .env()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        syncplane_tests::cli::syncplane(&vars, args).await
    }

    async fn json(&self, args: &[&str]) -> (ExitCode, Value) {
        let (code, out) = self.syncplane(args).await;
        (code, serde_json::from_str(&out).expect("JSON output"))
    }

    async fn stored(&self) -> Vec<String> {
        sqlx::query_scalar("SELECT owner || '/' || name FROM repos ORDER BY name")
            .fetch_all(&self.db.pool)
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn sync_without_a_repository_runs_a_manual_full_sync_of_every_selected_repository() {
    let s = Setup::new().await;
    let (code, out) = s.json(&["sync", "--json"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    let run = &out[0];
    assert_eq!(run["result"], "run");
    assert_eq!(run["tenant"], "default");
    assert_eq!(run["report"]["status"], "success");
    assert_eq!(run["report"]["counts"]["reposSynced"], 2);
    assert_eq!(run["report"]["counts"]["docsAdded"], 3);
    assert_eq!(s.stored().await, ["acme/handbook", "acme/widgets"]);
    let trigger: String = sqlx::query_scalar("SELECT trigger FROM sync_runs")
        .fetch_one(&s.db.pool)
        .await
        .unwrap();
    assert_eq!(trigger, "manual");
}

#[tokio::test]
async fn sync_prints_a_summary_with_the_run_counts() {
    let s = Setup::new().await;
    let (code, out) = s.syncplane(&["sync"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert!(out.starts_with("tenant default: run #"), "{out}");
    assert!(
        out.contains(
            " success: repositories 2 synced, 0 unchanged, 0 failed, 0 removed; documents 3 added"
        ),
        "{out}"
    );
    // A second run finds nothing changed.
    let (_, out) = s.syncplane(&["sync"]).await;
    assert!(out.contains("repositories 0 synced, 2 unchanged"), "{out}");
}

#[tokio::test]
async fn sync_with_a_repository_syncs_only_that_repository() {
    let s = Setup::new().await;
    let (code, out) = s.json(&["sync", "--repo", "acme/widgets", "--json"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert_eq!(out[0]["result"], "repository");
    assert_eq!(out[0]["outcome"]["outcome"], "synced");
    assert_eq!(out[0]["outcome"]["status"], "success");
    assert_eq!(out[0]["counts"]["docsAdded"], 1);
    assert_eq!(s.stored().await, ["acme/widgets"]);
    let scope: Option<String> = sqlx::query_scalar("SELECT scope FROM sync_runs")
        .fetch_one(&s.db.pool)
        .await
        .unwrap();
    assert_eq!(scope.as_deref(), Some("acme/widgets"));
}

#[tokio::test]
async fn sync_refuses_a_repository_the_configuration_does_not_select() {
    let s = Setup::new().await;
    let (code, _) = s.syncplane(&["sync", "--repo", "acme/legacy"]).await;
    assert_eq!(code, ExitCode::FAILURE);
    assert!(s.stored().await.is_empty());
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM sync_runs")
        .fetch_one(&s.db.pool)
        .await
        .unwrap();
    assert_eq!(runs, 0, "nothing was attempted");
}

#[tokio::test]
async fn sync_exits_non_zero_when_the_run_fails() {
    let s = Setup::new().await;
    s.gh.fault(Endpoint::InstallationRepos, Fault::Status(502), None);
    let (code, out) = s.json(&["sync", "--json"]).await;
    assert_eq!(code, ExitCode::FAILURE);
    assert_eq!(out[0]["report"]["status"], "failed");
    assert!(out[0]["report"]["error"].is_string());
}

#[tokio::test]
async fn sync_exits_with_the_partial_status_when_some_repositories_fail() {
    let s = Setup::new().await;
    s.gh.fault(Endpoint::Tree, Fault::Status(500), None);
    let (code, out) = s.json(&["sync", "--json"]).await;
    assert_eq!(out[0]["report"]["status"], "partial", "{out}");
    assert_eq!(
        code,
        ExitCode::from(syncplane_cli::report::EXIT_PARTIAL),
        "{out}"
    );
}

#[tokio::test]
async fn status_json_shows_each_repository_and_the_recent_runs() {
    let s = Setup::new().await;
    let (code, _) = s.syncplane(&["sync"]).await;
    assert_eq!(code, ExitCode::SUCCESS);
    let (code, out) = s.json(&["status", "--json"]).await;
    assert_eq!(code, ExitCode::SUCCESS);
    let status = &out[0]["status"];
    assert_eq!(out[0]["tenant"], "default");
    let repos: Vec<(String, i64, String)> = status["repos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["fullName"].as_str().unwrap().to_owned(),
                r["documentCount"].as_i64().unwrap(),
                r["syncStatus"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        repos,
        [
            ("acme/handbook".to_owned(), 2, "ok".to_owned()),
            ("acme/widgets".to_owned(), 1, "ok".to_owned()),
        ]
    );
    assert_eq!(status["recentRuns"][0]["trigger"], "manual");
    assert_eq!(status["recentRuns"][0]["status"], "success");

    // Issue 10, Build 5, and issue 23: a second, no-op run in a new process: one GraphQL query
    // lists the repositories with their heads (the installation token is the one the first
    // process stored, so no exchange; the listing's count was confirmed by the first run).
    let (code, _) = s.syncplane(&["sync"]).await;
    assert_eq!(code, ExitCode::SUCCESS);
    let (_, out) = s.json(&["status", "--json"]).await;
    let github = &out[0]["status"]["recentRuns"][0]["github"];
    assert_eq!(
        github,
        &serde_json::json!({"restRequests": 0, "graphqlRequests": 1, "restUnits": 0, "graphqlPoints": 1})
    );
    let (_, text) = s.syncplane(&["status"]).await;
    assert!(
        text.contains("GitHub: 0 REST + 1 GraphQL requests, 0 REST units + 1 GraphQL points"),
        "{text}"
    );
}

/// The number after `label` in a line such as `org 7`.
/// `create-org` and `create-user` print the id alone (issue 13 §11: scriptable).
fn bare_id(out: &str) -> i64 {
    assert!(
        out.ends_with('\n') && out.lines().count() == 1,
        "one line: {out:?}"
    );
    out.trim_end()
        .parse()
        .unwrap_or_else(|_| panic!("stdout is exactly the id, got {out:?}"))
}

/// Issue 6, item 6: `syncplane ingest ...` provisions what a desktop client needs, and the ingest
/// function then answers that client exactly as provisioned.
#[tokio::test]
async fn ingest_provisioning_through_the_cli_decides_what_the_ingest_function_accepts() {
    let s = Setup::new().await;
    let state = shared::ingest::IngestState {
        pool: s.db.pool.clone(),
        rate_limit_per_minute: 100,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };
    let post = |token: String| {
        let state = state.clone();
        async move {
            let batch = serde_json::json!({
                "schemaVersion": 2, "batchId": "b1", "mode": "incremental",
                "computeTargetId": "laptop-1", "sessionCount": 1,
                "sessions": [{"sessionId": "s1", "updatedAt": "2026-01-01T00:00:00Z",
                              "dataRevision": "r1", "agent": "claude-code"}]});
            let auth = format!("Bearer {token}");
            let req = syncplane_tests::apigw::request(
                "POST",
                "/api/agent-sessions/sync",
                &[("authorization", &auth)],
                Some(&serde_json::to_vec(&batch).unwrap()),
            );
            let r = syncplane_tests::apigw::reply(shared::ingest::handle(&state, req).await);
            (r.status, r.body["error"]["code"].clone())
        }
    };

    let (code, out) = s.syncplane(&["ingest", "create-org", "acme"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    let org = bare_id(&out).to_string();
    let (_, out) = s.syncplane(&["ingest", "create-user", &org, "ada"]).await;
    let user = bare_id(&out).to_string();
    let (code, _) = s
        .syncplane(&["ingest", "create-target", &user, "laptop-1"])
        .await;
    assert_eq!(code, ExitCode::SUCCESS);
    let (code, out) = s
        .syncplane(&["ingest", "issue-token", &user, "--label", "laptop"])
        .await;
    assert_eq!(code, ExitCode::SUCCESS);
    let token = out.trim().to_owned();
    assert!(token.len() >= 32, "the token is printed: {out:?}");
    let (hashed, anywhere): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE token_hash = sha256(convert_to($1, 'UTF8'))),
                count(*) FILTER (WHERE strpos(t::text, $1) > 0)
           FROM device_tokens t",
    )
    .bind(&token)
    .fetch_one(&s.db.pool)
    .await
    .unwrap();
    assert_eq!(
        (hashed, anywhere),
        (1, 0),
        "only the token's SHA-256 is stored"
    );
    assert_eq!(post(token.clone()).await, (200, Value::Null));

    // The org's policy switched off: fail-closed, and so is no policy at all.
    for policy in ["off", "none"] {
        let (code, _) = s
            .syncplane(&["ingest", "set-org", &org, "--sync-policy", policy])
            .await;
        assert_eq!(code, ExitCode::SUCCESS);
        assert_eq!(
            post(token.clone()).await,
            (403, Value::from("feature_disabled"))
        );
    }
    s.syncplane(&["ingest", "set-org", &org, "--sync-policy", "on"])
        .await;
    s.syncplane(&["ingest", "set-global-feature", "off"]).await;
    assert_eq!(
        post(token.clone()).await,
        (403, Value::from("feature_disabled"))
    );
    s.syncplane(&["ingest", "set-global-feature", "on"]).await;
    assert_eq!(post(token.clone()).await.0, 200);

    // Revoked: the same token is refused; revoking twice or an unknown org is an error.
    let token_id: i64 = sqlx::query_scalar("SELECT id FROM device_tokens")
        .fetch_one(&s.db.pool)
        .await
        .unwrap();
    let (code, _) = s
        .syncplane(&["ingest", "revoke-token", &token_id.to_string()])
        .await;
    assert_eq!(code, ExitCode::SUCCESS);
    assert_eq!(post(token).await.0, 401);
    let (code, _) = s
        .syncplane(&["ingest", "revoke-token", &token_id.to_string()])
        .await;
    assert_eq!(code, ExitCode::FAILURE);
    let (code, _) = s
        .syncplane(&["ingest", "set-org", "999999", "--feature-gate", "off"])
        .await;
    assert_eq!(code, ExitCode::FAILURE);
}

#[tokio::test]
async fn search_prints_the_hits_of_the_read_api_and_refuses_an_empty_query() {
    let s = Setup::new().await;
    let (code, _) = s.syncplane(&["sync"]).await;
    assert_eq!(code, ExitCode::SUCCESS);
    let (code, out) = s.syncplane(&["search", "usage"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert!(
        out.trim()
            .starts_with("acme/widgets docs/usage.md#usage  Usage  ("),
        "one line per hit: repository, path#heading, title, rank: {out}"
    );
    assert_eq!(out.lines().count(), 1);
    let (code, out) = s.json(&["search", "handbook", "--json"]).await;
    assert_eq!(code, ExitCode::SUCCESS);
    assert_eq!(out["hits"][0]["kind"], "readme");
    let (code, out) = s
        .syncplane(&["search", "usage", "--repo", "acme/handbook"])
        .await;
    assert_eq!(
        (code, out.as_str()),
        (ExitCode::from(1), ""),
        "no hits there"
    );
    let (code, out) = s.syncplane(&["search", "the"]).await;
    assert_eq!(code, ExitCode::from(2));
    assert!(out.starts_with("refused (empty_query)"), "{out}");
}

/// Issue 31 point 5: `syncplane ingest set-org ORG --transcripts off|on` switches the org's
/// transcript gate (the transcript lane answers `403 transcripts_disabled`, the metadata lane
/// goes on), `set-global-feature --lane transcripts` the global one, and both are shown where the
/// org's settings are listed (`ingest orgs`, and what `set-org` prints).
#[tokio::test]
async fn an_operator_switches_the_transcript_gate_and_sees_it_with_the_orgs_settings() {
    let s = Setup::new().await;
    let device = syncplane_tests::provisioned::device_on_target(&s.db.pool, "laptop-1").await;
    let org = device.org.to_string();
    let state = shared::ingest::IngestState {
        pool: s.db.pool.clone(),
        rate_limit_per_minute: 100,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: syncplane_tests::transcripts::temp_state(),
    };
    let auth = format!("Bearer {}", device.token);
    let send = |path: &'static str, body: Value| {
        let (state, auth) = (state.clone(), auth.clone());
        async move {
            let req = syncplane_tests::apigw::request(
                "POST",
                path,
                &[
                    ("authorization", &auth),
                    ("content-type", "application/json"),
                ],
                Some(&serde_json::to_vec(&body).unwrap()),
            );
            let r = syncplane_tests::apigw::reply(shared::ingest::handle(&state, req).await);
            (
                r.status,
                r.body["error"]["code"].as_str().map(str::to_owned),
            )
        }
    };
    let intent = || {
        send(
            "/api/agent-sessions/transcripts/intent",
            serde_json::json!({"computeTargetId": "laptop-1", "sessionId": "s-1",
                "fileId": "s-1.jsonl", "generation": 1, "offset": 0, "sourceBytes": 10,
                "decodedBytes": 10, "compressedBytes": 10, "sha256": "ab".repeat(32)}),
        )
    };
    let metadata = || {
        send(
            "/api/agent-sessions/sync",
            serde_json::json!({"schemaVersion": 2, "batchId": "b1", "mode": "incremental",
                "computeTargetId": "laptop-1", "sessionCount": 1,
                "sessions": [{"sessionId": "s1", "updatedAt": "2026-01-01T00:00:00Z",
                              "dataRevision": "r1", "agent": "claude-code"}]}),
        )
    };
    assert_eq!(intent().await, (200, None));

    let (code, out) = s.syncplane(&["ingest", "orgs"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert!(
        out.contains("agent_transcript_sync on") && out.contains("transcripts on"),
        "{out}"
    );
    let (code, out) = s
        .syncplane(&["ingest", "set-org", &org, "--transcripts", "off"])
        .await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert!(
        out.contains(&format!("org {org} ")) && out.contains("transcripts off"),
        "{out}"
    );
    assert_eq!(intent().await, (403, Some("transcripts_disabled".into())));
    assert_eq!(
        metadata().await.0,
        200,
        "the metadata lane is not the transcript gate's"
    );
    let (_, out) = s.syncplane(&["ingest", "orgs", "--json"]).await;
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed["orgs"][0]["transcriptGate"], false, "{out}");
    assert_eq!(listed["global"]["agent_transcript_sync"], true);

    s.syncplane(&["ingest", "set-org", &org, "--transcripts", "on"])
        .await;
    assert_eq!(intent().await.0, 200);
    let (code, out) = s
        .syncplane(&[
            "ingest",
            "set-global-feature",
            "off",
            "--lane",
            "transcripts",
        ])
        .await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert_eq!(intent().await, (403, Some("transcripts_disabled".into())));
    assert_eq!(metadata().await.0, 200);
    let (_, out) = s.syncplane(&["ingest", "orgs"]).await;
    assert!(out.contains("agent_transcript_sync off"), "{out}");
}

/// Issue 32 point 3: `syncplane demo load` (what a local run with no App does) syncs the demo
/// repositories and loads the example sessions and a transcript, every title marked as demo
/// data, readable with the demo's organization token; a second load changes nothing; `syncplane
/// demo remove` takes all of it out, the transcript's object too. Local runs only.
#[tokio::test]
async fn the_demo_loads_repositories_sessions_and_a_transcript_and_one_command_removes_it() {
    let s = Setup::new().await;
    let store = syncplane_tests::transcripts::temp_dir();
    let vars = |local: bool| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = s
            .env()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        v.push(("TRANSCRIPT_DATA_DIR".into(), store.display().to_string()));
        if local {
            v.push(("SYNCPLANE_LOCAL".into(), "1".into()));
        }
        v
    };
    let (code, out) = syncplane_tests::cli::syncplane(&vars(false), &["demo", "load"]).await;
    assert_eq!(code, ExitCode::FAILURE, "not outside a local run: {out}");

    for _ in 0..2 {
        let (code, out) = syncplane_tests::cli::syncplane(&vars(true), &["demo", "load"]).await;
        assert_eq!(code, ExitCode::SUCCESS, "{out}");
        assert!(
            out.contains(shared::accounts::provision::DEMO_READ_TOKEN),
            "{out}"
        );
    }
    let runs: Vec<(String, Option<String>, i32)> =
        sqlx::query_as("SELECT status, error, repos_synced FROM sync_runs")
            .fetch_all(&s.db.pool)
            .await
            .unwrap();
    assert_eq!(
        s.stored().await,
        ["acme/handbook", "acme/widgets"],
        "{runs:?}"
    );
    let titles: Vec<String> = sqlx::query_scalar(
        "SELECT s.title FROM agent_sessions s JOIN orgs o ON o.id = s.org_id
          WHERE o.name = 'demo-acme' ORDER BY s.title",
    )
    .fetch_all(&s.db.pool)
    .await
    .unwrap();
    assert_eq!(titles.len(), 2, "{titles:?}");
    assert!(titles.iter().all(|t| t.starts_with("Demo: ")), "{titles:?}");
    let acked: i64 = sqlx::query_scalar("SELECT acked_offset FROM transcript_files")
        .fetch_one(&s.db.pool)
        .await
        .unwrap();
    assert!(acked > 0, "the transcript is archived once");
    // The console reads them with the demo org's read token.
    let ingest = shared::ingest::IngestState {
        pool: s.db.pool.clone(),
        rate_limit_per_minute: 100,
        admission: shared::ingest::Admission::unlimited(),
        transcripts: shared::ingest::transcripts::TranscriptsState::direct(store.clone()),
    };
    let auth = format!("Bearer {}", shared::accounts::provision::DEMO_READ_TOKEN);
    let req = syncplane_tests::apigw::request(
        "GET",
        "/api/agent-sessions/transcripts/lines?computeTargetId=laptop-1&sessionId=example-claude-refactor&fileId=example-claude-refactor.jsonl",
        &[("authorization", &auth)],
        None,
    );
    let r = syncplane_tests::apigw::reply(shared::ingest::handle(&ingest, req).await);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.data()["lines"].as_array().unwrap().len() >= 5);
    let objects = || walk(&store);
    assert!(!objects().is_empty());

    let (code, out) = syncplane_tests::cli::syncplane(&vars(true), &["demo", "remove"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert!(
        s.stored().await.is_empty(),
        "the demo repositories are gone"
    );
    let left: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM orgs) + (SELECT count(*) FROM agent_sessions)
              + (SELECT count(*) FROM transcript_files) + (SELECT count(*) FROM documents)",
    )
    .fetch_one(&s.db.pool)
    .await
    .unwrap();
    assert_eq!(left, 0);
    assert!(
        objects().is_empty(),
        "the transcript's objects are deleted: {:?}",
        objects()
    );
}

/// The files under `dir`, recursively.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
