//! The Sessions and Insights pages' routes on the ingest handler (issue 22 points 4 and 5): an
//! org's sessions newest first in keyset pages, and the org-wide aggregates, both with the org's
//! read token; another org's token sees none of it.

use serde_json::{Value, json};
use shared::accounts::provision::{self, NewOrg};
use shared::accounts::tokens;
use shared::ingest::IngestState;
use syncplane_tests::apigw::{Reply, checked_reply, request};
use syncplane_tests::db::TestDb;

struct Org {
    db: TestDb,
    state: IngestState,
    token: String,
    other_token: String,
}

/// One session row as the ingest path stores it.
struct Row<'a> {
    target: &'a str,
    id: &'a str,
    model: &'a str,
    repo: Option<&'a str>,
    days_ago: i32,
    tokens: (i64, i64),
    frustration: Option<Value>,
}

async fn org(db: &TestDb, name: &str, opted_in: bool, users: &[(&str, &str)]) -> (i64, String) {
    let new = NewOrg {
        name,
        sync_policy: Some(true),
        feature_gate: true,
        frustration_opt_in: opted_in,
    };
    let id = provision::create_org(&db.pool, &new).await.unwrap();
    for (user, target) in users {
        let user = provision::create_user(&db.pool, id, user).await.unwrap();
        provision::create_compute_target(&db.pool, user, target)
            .await
            .unwrap();
    }
    let token = tokens::issue_read_token(&db.pool, id, Some("web"))
        .await
        .unwrap();
    (id, token.token)
}

async fn insert(db: &TestDb, org: i64, r: &Row<'_>) {
    sqlx::query(
        "INSERT INTO agent_sessions (org_id, compute_target_id, session_id, updated_at, agent,
             model, title, started_at, input_tokens, output_tokens, repository_remote_url,
             frustration, payload)
         VALUES ($1, $2, $3, now() - make_interval(days => $4), 'claude-code', $5, $3,
                 now() - make_interval(days => $4), $6, $7, $8, $9, '{}')",
    )
    .bind(org)
    .bind(r.target)
    .bind(r.id)
    .bind(r.days_ago)
    .bind(r.model)
    .bind(r.tokens.0)
    .bind(r.tokens.1)
    .bind(r.repo)
    .bind(&r.frustration)
    .execute(&db.pool)
    .await
    .unwrap();
}

impl Org {
    /// Org "acme" (opted in to the frustration signal or not) with two users on two laptops, and
    /// org "globex" with one session of its own.
    async fn new(opted_in: bool) -> (Self, i64) {
        let db = TestDb::new().await;
        let (acme, token) = org(&db, "acme", opted_in, &[("ada", "a-1"), ("bob", "b-1")]).await;
        let (globex, other_token) = org(&db, "globex", false, &[("eve", "g-1")]).await;
        insert(
            &db,
            globex,
            &row("g-1", "globex-secret", "gpt", None, 0, None),
        )
        .await;
        let state = IngestState {
            pool: db.pool.clone(),
            rate_limit_per_minute: 10,
            admission: shared::ingest::Admission::unlimited(),
            transcripts: syncplane_tests::transcripts::temp_state(),
        };
        let o = Self {
            db,
            state,
            token,
            other_token,
        };
        (o, acme)
    }

    async fn get(&self, path_and_query: &str, token: &str) -> Reply {
        let auth = format!("Bearer {token}");
        let req = request("GET", path_and_query, &[("authorization", &auth)], None);
        checked_reply(
            "GET",
            path_and_query,
            shared::ingest::handle(&self.state, req).await,
        )
    }
}

fn row<'a>(
    target: &'a str,
    id: &'a str,
    model: &'a str,
    repo: Option<&'a str>,
    days_ago: i32,
    frustration: Option<Value>,
) -> Row<'a> {
    Row {
        target,
        id,
        model,
        repo,
        days_ago,
        tokens: (100, 10),
        frustration,
    }
}

#[tokio::test]
async fn an_orgs_sessions_list_newest_first_in_pages_and_another_orgs_token_sees_none_of_them() {
    let (o, acme) = Org::new(false).await;
    for (i, target) in ["a-1", "b-1", "a-1", "b-1", "a-1"].iter().enumerate() {
        let id = format!("s-{i}");
        insert(
            &o.db,
            acme,
            &row(
                target,
                &id,
                "opus",
                Some("git@github.com:acme/x.git"),
                i as i32,
                None,
            ),
        )
        .await;
    }
    let mut seen = Vec::new();
    let mut url = "/api/agent-sessions/sessions?limit=2".to_owned();
    loop {
        let r = o.get(&url, &o.token).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.data()["org"], "acme");
        for s in r.data()["sessions"].as_array().unwrap() {
            seen.push(s["sessionId"].as_str().unwrap().to_owned());
            assert_eq!(s["model"], "opus");
            assert_eq!(s["repository"], "git@github.com:acme/x.git");
        }
        match r.data()["nextCursor"].as_str() {
            Some(c) => url = format!("/api/agent-sessions/sessions?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(
        seen,
        ["s-0", "s-1", "s-2", "s-3", "s-4"],
        "newest first, each once"
    );
    let r = o.get("/api/agent-sessions/sessions", &o.other_token).await;
    let ids: Vec<&str> = r.data()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["globex-secret"]);
}

#[tokio::test]
async fn the_list_narrows_to_one_computer_or_one_session_of_the_readers_org_only() {
    let (o, acme) = Org::new(false).await;
    for (i, target) in ["a-1", "b-1", "a-1"].iter().enumerate() {
        let id = format!("s-{i}");
        insert(&o.db, acme, &row(target, &id, "opus", None, i as i32, None)).await;
    }
    let ids = |r: &Reply| -> Vec<String> {
        r.data()["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap().to_owned())
            .collect()
    };
    let r = o
        .get("/api/agent-sessions/sessions?computeTargetId=a-1", &o.token)
        .await;
    assert_eq!(ids(&r), ["s-0", "s-2"]);
    let r = o
        .get(
            "/api/agent-sessions/sessions?computeTargetId=b-1&sessionId=s-1",
            &o.token,
        )
        .await;
    assert_eq!(ids(&r), ["s-1"]);
    let r = o
        .get(
            "/api/agent-sessions/sessions?computeTargetId=g-1&sessionId=globex-secret",
            &o.token,
        )
        .await;
    assert_eq!(
        ids(&r),
        Vec::<String>::new(),
        "another org's session is not found by naming it"
    );
    let long = "x".repeat(201);
    let r = o
        .get(
            &format!("/api/agent-sessions/sessions?sessionId={long}"),
            &o.token,
        )
        .await;
    assert_eq!((r.status, r.code()), (400, Some("invalid_session_id")));
}

#[tokio::test]
async fn the_sessions_routes_refuse_a_missing_or_device_token_a_bad_limit_and_a_forged_cursor() {
    let (o, _) = Org::new(false).await;
    for token in ["", "spr_0000", "not-a-read-token"] {
        let r = o.get("/api/agent-sessions/sessions", token).await;
        assert_eq!(
            (r.status, r.code()),
            (401, Some("unauthenticated")),
            "{token}"
        );
        let said = r.body["error"]["message"].as_str().unwrap();
        assert!(
            said.contains("read token"),
            "names the token the route takes: {said}"
        );
    }
    for url in [
        "/api/agent-sessions/sessions?limit=0",
        "/api/agent-sessions/sessions?limit=201",
        "/api/agent-sessions/sessions?cursor=forged",
        "/api/agent-sessions/sessions?other=1",
        "/api/agent-sessions/insights?days=366",
    ] {
        let r = o.get(url, &o.token).await;
        assert_eq!(r.status, 400, "{url}: {}", r.body);
    }
}

#[tokio::test]
async fn insights_count_sessions_and_active_users_per_day_tokens_by_model_and_sessions_per_repository()
 {
    let (o, acme) = Org::new(true).await;
    let x = Some("git@github.com:acme/x.git");
    let y = Some("git@github.com:acme/y.git");
    let frustrated = Some(json!({"score": 0.8, "signals": ["repeated_prompt"]}));
    let calm = Some(json!({"score": 0.1, "signals": []}));
    insert(
        &o.db,
        acme,
        &row("a-1", "t-1", "opus", x, 0, frustrated.clone()),
    )
    .await;
    insert(&o.db, acme, &row("a-1", "t-2", "opus", x, 0, calm)).await;
    insert(&o.db, acme, &row("b-1", "t-3", "sonnet", y, 0, None)).await;
    insert(&o.db, acme, &row("b-1", "y-1", "sonnet", x, 1, frustrated)).await;
    insert(&o.db, acme, &row("a-1", "old", "opus", x, 40, None)).await;
    let r = o.get("/api/agent-sessions/insights?days=7", &o.token).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let d = r.data();
    assert_eq!(d["frustrationOptIn"], true);
    let days = d["perDay"].as_array().unwrap();
    assert_eq!(
        days.len(),
        2,
        "the session 40 days ago is outside the window: {d}"
    );
    let today = &days[1];
    assert_eq!(
        (today["sessions"].as_i64(), today["activeUsers"].as_i64()),
        (Some(3), Some(2))
    );
    assert_eq!(today["frustrated"], 1);
    assert_eq!(days[0]["sessions"], 1);
    let models = d["tokensByModel"].as_array().unwrap();
    let opus = models.iter().find(|m| m["model"] == "opus").unwrap();
    assert_eq!(
        (opus["sessions"].as_i64(), opus["inputTokens"].as_i64()),
        (Some(2), Some(200))
    );
    let repos = d["sessionsByRepository"].as_array().unwrap();
    assert_eq!(repos[0]["repository"], "git@github.com:acme/x.git");
    assert_eq!(repos[0]["sessions"], 3);
    let r = o
        .get("/api/agent-sessions/insights?days=60", &o.token)
        .await;
    let total: i64 = r.data()["perDay"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["sessions"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 5);
}

#[tokio::test]
async fn the_frustration_signal_is_null_where_the_org_did_not_opt_in() {
    let (o, acme) = Org::new(false).await;
    insert(&o.db, acme, &row("a-1", "t-1", "opus", None, 0, None)).await;
    let r = o.get("/api/agent-sessions/insights", &o.token).await;
    assert_eq!(r.data()["frustrationOptIn"], false);
    assert!(r.data()["perDay"][0]["frustrated"].is_null(), "{}", r.body);
    assert_eq!(r.data()["sessionsByRepository"][0]["repository"], "none");
}
