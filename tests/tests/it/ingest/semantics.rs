//! Contract "Semantics" and sanitizing at ingest.

use serde_json::{Value, json};
use shared::accounts::provision::{self, NewOrg};

use super::support::*;

const T1: &str = "2026-01-01T00:00:00Z";
const T2: &str = "2026-01-02T00:00:00Z";

#[tokio::test]
async fn a_stale_clients_summary_and_data_never_reach_the_database() {
    let env = env().await;
    let mut s = session("s1", "r1", T1);
    let mut e = event(1);
    e["summary"] = json!("SECRET-SUMMARY-TEXT");
    e["data"] = json!({"stdout": "SECRET-DATA-TEXT"});
    s["events"] = json!([e]);
    let r = env.post_gzip(&batch(vec![s])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let everything: String = sqlx::query_scalar(
        "SELECT coalesce((SELECT string_agg(s::text, '') FROM agent_sessions s), '')
             || coalesce((SELECT string_agg(e::text, '') FROM agent_session_events e), '')",
    )
    .fetch_one(&env.db.pool)
    .await
    .unwrap();
    assert!(!everything.contains("SECRET-SUMMARY-TEXT"));
    assert!(!everything.contains("SECRET-DATA-TEXT"));
    assert_eq!(
        env.event_seqs("s1").await,
        vec![1],
        "the event's metadata is kept"
    );
}

#[tokio::test]
async fn token_series_is_dropped_and_token_events_kept() {
    let env = env().await;
    let mut s = session("s1", "r1", T1);
    s["tokenSeries"] = json!([[1, 2, 3], "TOKEN-SERIES-MARKER"]);
    s["tokenEvents"] = json!([{"ts": T1, "inputTokens": 10, "outputTokens": 20}]);
    assert_eq!(env.post(&batch(vec![s])).await.status, 200);
    let row = env.session_row("s1").await;
    assert!(!row.to_string().contains("TOKEN-SERIES-MARKER"));
    assert!(row["payload"].get("tokenSeries").is_none());
    assert_eq!(
        row["payload"]["tokenEvents"],
        json!([{"ts": T1, "inputTokens": 10, "outputTokens": 20}])
    );
}

/// Issue 21 point 19: `frustration.signals` holds at most 100 strings, like every capped array a
/// plain 400 naming the field over the cap; nothing of the batch is written.
#[tokio::test]
async fn frustration_signals_at_the_cap_are_stored_and_one_over_is_400() {
    let cap = syncplane_contract::MAX_FRUSTRATION_SIGNALS;
    let env = env_with(
        NewOrg {
            name: "acme",
            sync_policy: Some(true),
            feature_gate: true,
            frustration_opt_in: true,
        },
        100,
    )
    .await;
    let with_signals = |id: &str, n: usize| {
        let mut s = session(id, "r1", T1);
        let signals: Vec<String> = (0..n).map(|i| format!("signal-{i}")).collect();
        s["frustration"] = json!({"score": 0.5, "signals": signals});
        batch(vec![s])
    };
    let r = env.post(&with_signals("s1", cap)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let stored = env.session_row("s1").await;
    assert_eq!(
        stored["frustration"]["signals"].as_array().map(Vec::len),
        Some(cap)
    );
    let r = env.post(&with_signals("s2", cap + 1)).await;
    assert_eq!((r.status, r.code()), (400, None), "{}", r.body);
    assert_eq!(
        r.body["error"]["message"],
        format!("sessions[0].frustration.signals: must hold at most {cap} signals")
    );
    assert_eq!(env.written().await.0, 1, "the refused batch wrote nothing");
}

#[tokio::test]
async fn frustration_is_stored_only_when_the_org_opted_in() {
    let frustration = json!({"score": 0.75, "signals": ["retry-loop"]});
    let env = env().await;
    let mut s = session("s1", "r1", T1);
    s["frustration"] = frustration.clone();
    assert_eq!(env.post(&batch(vec![s.clone()])).await.status, 200);
    let row = env.session_row("s1").await;
    assert_eq!(
        row["frustration"],
        Value::Null,
        "not opted in: the column stays null"
    );
    assert!(!row.to_string().contains("retry-loop"));

    let env = env_with(
        NewOrg {
            name: "acme",
            sync_policy: Some(true),
            feature_gate: true,
            frustration_opt_in: true,
        },
        100,
    )
    .await;
    assert_eq!(env.post(&batch(vec![s])).await.status, 200);
    assert_eq!(env.session_row("s1").await["frustration"], frustration);
}

#[tokio::test]
async fn promoted_columns_and_the_compact_blob() {
    let env = env().await;
    let mut s = session("s1", "r1", T1);
    s["model"] = json!("opus");
    s["title"] = json!("Fix the build");
    s["status"] = json!("done");
    s["startedAt"] = json!("2026-01-01T00:00:00+02:00");
    s["endedAt"] = json!(T1);
    s["repository"] =
        json!({"remoteUrl": "git@github.com:acme/app", "branch": "main", "commitSha": "abc"});
    s["usage"] = json!({"inputTokens": 100, "outputTokens": 50, "cacheReadTokens": 7, "cacheWriteTokens": 8, "costUsd": 0.25});
    s["events"] = events([1, 2, 3]);
    assert_eq!(env.post(&batch(vec![s])).await.status, 200);
    let row = env.session_row("s1").await;
    assert_eq!(row["agent"], "claude-code");
    assert_eq!(row["model"], "opus");
    assert_eq!(row["title"], "Fix the build");
    assert_eq!(row["status"], "done");
    assert_eq!(row["started_at"], "2025-12-31T22:00:00+00:00");
    assert_eq!(row["repository_branch"], "main");
    assert_eq!(row["input_tokens"], 100);
    assert_eq!(row["cache_write_tokens"], 8);
    assert_eq!(row["cost_usd"], 0.25);
    assert_eq!(row["event_count"], 3);
    assert_eq!(row["committed_revision"], "r1");
    assert_eq!(row["payload"]["title"], "Fix the build");
    assert!(
        row["payload"].get("events").is_none(),
        "events live in their own rows"
    );
}

#[tokio::test]
async fn an_omitted_array_keeps_stored_data_and_an_empty_one_clears_it() {
    let env = env().await;
    let mut s = session("s1", "r1", T1);
    s["title"] = json!("kept");
    s["usage"] = json!({"inputTokens": 5, "costUsd": 1.5});
    s["tokenEvents"] = json!([{"ts": T1, "inputTokens": 1, "outputTokens": 2}]);
    s["artifactRefs"] = json!([{"kind": "pr", "ref": "acme/app#1"}]);
    s["events"] = events([1, 2]);
    assert_eq!(env.post(&batch(vec![s])).await.status, 200);

    // Same revision, everything optional omitted or null: nothing is cleared.
    let mut s = session("s1", "r1", T2);
    s["title"] = Value::Null;
    s["tokenEvents"] = Value::Null;
    s["usage"] = json!({"outputTokens": 9});
    assert_eq!(env.post(&batch(vec![s])).await.status, 200);
    let row = env.session_row("s1").await;
    assert_eq!(row["title"], "kept");
    assert_eq!(
        row["input_tokens"], 5,
        "an omitted field of the rollup is kept"
    );
    assert_eq!(row["output_tokens"], 9);
    assert_eq!(row["payload"]["tokenEvents"].as_array().unwrap().len(), 1);
    assert_eq!(row["payload"]["artifactRefs"].as_array().unwrap().len(), 1);
    assert_eq!(env.event_seqs("s1").await, vec![1, 2]);

    // Empty arrays replace with empty; a new revision's empty events replace the events.
    let mut s = session("s1", "r2", T2);
    s["tokenEvents"] = json!([]);
    s["artifactRefs"] = json!([]);
    s["events"] = json!([]);
    assert_eq!(env.post(&batch(vec![s])).await.status, 200);
    let row = env.session_row("s1").await;
    assert_eq!(row["payload"]["tokenEvents"], json!([]));
    assert_eq!(row["payload"]["artifactRefs"], json!([]));
    assert_eq!(env.event_seqs("s1").await, Vec::<i64>::new());
    assert_eq!(row["event_count"], 0);
    assert_eq!(row["title"], "kept");
}

#[tokio::test]
async fn an_older_updated_at_is_acknowledged_and_not_applied() {
    let env = env().await;
    let mut s = session("s1", "r2", T2);
    s["title"] = json!("newer");
    s["events"] = events([1]);
    assert_eq!(env.post(&batch(vec![s])).await.status, 200);
    let before = env.session_row("s1").await;
    let mut old = session("s1", "r1", T1);
    old["title"] = json!("older");
    old["events"] = events([7, 8]);
    let r = env.post(&batch(vec![old])).await;
    assert_eq!(r.body, json!({"success": true, "data": {"synced": true}}));
    assert_eq!(env.session_row("s1").await, before);
    assert_eq!(env.event_seqs("s1").await, vec![1]);
}

async fn xmins(env: &Env) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT 's' || id || ':' || xmin::text FROM agent_sessions
         UNION ALL SELECT 'e' || session_pk || '/' || seq || ':' || xmin::text FROM agent_session_events
         ORDER BY 1",
    )
    .fetch_all(&env.db.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_repeated_batch_rewrites_nothing() {
    let env = env().await;
    let mut a = session("s1", "r1", T1);
    a["title"] = json!("t");
    a["usage"] = json!({"inputTokens": 1, "costUsd": 0.1});
    a["events"] = events([1, 2, 3]);
    a["tokenEvents"] = json!([{"ts": T1, "inputTokens": 1, "outputTokens": 2}]);
    // A pending revision (chunk 0 of 2) must not be rewritten by a resend either.
    let mut b = session("s2", "r1", T1);
    b["chunk"] = json!({"index": 0, "total": 2});
    b["events"] = events([1, 2]);
    let doc = batch(vec![a, b]);
    assert_eq!(env.post_gzip(&doc).await.status, 200);
    let first = xmins(&env).await;
    let first_rows = (env.session_row("s1").await, env.session_row("s2").await);
    assert_eq!(first.len(), 2 + 5);
    assert_eq!(env.post_gzip(&doc).await.status, 200);
    assert_eq!(xmins(&env).await, first, "no row version changed");
    assert_eq!(
        (env.session_row("s1").await, env.session_row("s2").await),
        first_rows
    );
}

#[tokio::test]
async fn two_concurrent_batches_for_one_session_leave_a_consistent_state() {
    let env = env().await;
    for round in 0..5 {
        let mut a = session("s1", &format!("a{round}"), T2);
        a["events"] = events(0..50);
        let mut b = session("s1", &format!("b{round}"), T2);
        b["events"] = events(100..130);
        let (da, db) = (batch(vec![a]), batch(vec![b]));
        let (ra, rb) = tokio::join!(env.post(&da), env.post(&db));
        assert_eq!((ra.status, rb.status), (200, 200));
        let row = env.session_row("s1").await;
        let seqs = env.event_seqs("s1").await;
        let expected: Vec<i64> = if row["committed_revision"] == json!(format!("a{round}")) {
            (0..50).collect()
        } else {
            assert_eq!(row["committed_revision"], json!(format!("b{round}")));
            (100..130).collect()
        };
        assert_eq!(seqs, expected, "events belong to the committed revision");
        assert_eq!(row["event_count"], json!(expected.len()));
        assert_eq!(row["pending_revision"], Value::Null);
    }
}

#[tokio::test]
async fn a_database_failure_is_500_ingestion_failed_and_nothing_partial_remains() {
    let env = env().await;
    // Make the event insert (which runs after the session upsert) fail inside the transaction.
    sqlx::query("ALTER TABLE agent_session_events ADD CONSTRAINT test_seq_cap CHECK (seq < 1000)")
        .execute(&env.db.pool)
        .await
        .unwrap();
    let mut s = session("s1", "r1", T1);
    s["events"] = events([1, 1000]);
    let r = env.post(&batch(vec![session("s0", "r1", T1), s])).await;
    assert_eq!((r.status, r.code()), (500, Some("ingestion_failed")));
    assert!(
        !r.body.to_string().contains("test_seq_cap"),
        "no internal detail in the answer"
    );
    assert_eq!(env.written().await, (0, 0));
}

#[tokio::test]
async fn the_schema_keeps_bad_ingest_states_out() {
    let env = env().await;
    let pool = &env.db.pool;
    let other_org = shared::accounts::provision::create_org(
        pool,
        &NewOrg {
            name: "other",
            sync_policy: None,
            feature_gate: true,
            frustration_opt_in: false,
        },
    )
    .await
    .unwrap();
    let user: i64 = sqlx::query_scalar("SELECT id FROM users LIMIT 1")
        .fetch_one(pool)
        .await
        .unwrap();
    assert!(
        sqlx::query("INSERT INTO compute_targets (id, user_id, org_id) VALUES ('x', $1, $2)")
            .bind(user)
            .bind(other_org)
            .execute(pool)
            .await
            .is_err(),
        "a target's user belongs to the target's org"
    );
    assert!(
        sqlx::query("INSERT INTO device_tokens (token_hash, user_id, org_id) SELECT 'short', id, org_id FROM users")
            .execute(pool)
            .await
            .is_err(),
        "only 32-byte hashes are stored"
    );
    assert_eq!(
        env.post(&batch(vec![{
            let mut s = session("s1", "r1", T1);
            s["events"] = events([1]);
            s
        }]))
        .await
        .status,
        200
    );
    sqlx::query("DELETE FROM orgs").execute(pool).await.unwrap();
    assert_eq!(
        env.written().await,
        (0, 0),
        "deleting an org cascades to its sessions and events"
    );
}

/// Events carry no per-row foreign key (migration 0004): the cascade is a statement trigger.
#[tokio::test]
async fn deleting_a_session_or_its_target_deletes_its_events() {
    let env = env().await;
    let pool = &env.db.pool;
    let with_events = |id: &str, seqs: std::ops::Range<u64>| {
        let mut s = session(id, "r1", T1);
        s["events"] = events(seqs);
        s
    };
    let doc = batch(vec![with_events("s1", 0..3), with_events("s2", 0..4)]);
    assert_eq!(env.post(&doc).await.status, 200);
    assert_eq!(env.written().await, (2, 7));
    sqlx::query("DELETE FROM agent_sessions WHERE session_id = 's1'")
        .execute(pool)
        .await
        .unwrap();
    assert_eq!(env.written().await, (1, 4), "only s1's events went");
    assert_eq!(env.event_seqs("s2").await, vec![0, 1, 2, 3]);
    sqlx::query("DELETE FROM compute_targets")
        .execute(pool)
        .await
        .unwrap();
    assert_eq!(
        env.written().await,
        (0, 0),
        "a target takes its sessions' events"
    );
    // A session recreated later starts with no stale events.
    provision::create_compute_target(pool, env.user, TARGET)
        .await
        .unwrap();
    assert_eq!(
        env.post(&batch(vec![session("s2", "r1", T1)])).await.status,
        200
    );
    assert_eq!(env.written().await, (1, 0));
    assert_eq!(env.session_row("s2").await["event_count"], 0);
    sqlx::query("TRUNCATE agent_sessions")
        .execute(pool)
        .await
        .unwrap();
    assert_eq!(env.written().await, (0, 0));
}

/// A new session's events go in by binary COPY, a stored one's are compared with bound values:
/// both must store the same thing, or a resend would rewrite rows it should leave alone.
#[tokio::test]
async fn events_are_stored_exactly_as_sent_and_a_resend_compares_equal() {
    let env = env().await;
    let mut s = session("s1", "r1", T1);
    s["events"] = json!([
        {"seq": 0, "ts": "2026-01-01T10:00:00.123456789+02:00", "kind": "tool_call",
         "toolName": "édit\t\n\\x", "durationMs": 9007199254740991u64, "inputTokens": 0,
         "outputTokens": 7, "isError": true},
        {"seq": 9007199254740991u64, "ts": "0001-01-01T00:00:00Z", "kind": "k"},
    ]);
    let doc = batch(vec![s.clone()]);
    assert_eq!(env.post(&doc).await.status, 200);
    let rows: Vec<Value> = sqlx::query_scalar(
        "SELECT to_jsonb(e) - 'session_pk' FROM agent_session_events e ORDER BY seq",
    )
    .fetch_all(&env.db.pool)
    .await
    .unwrap();
    assert_eq!(
        rows,
        vec![
            json!({"seq": 0, "ts": "2026-01-01T08:00:00.123456+00:00", "kind": "tool_call",
                   "tool_name": "édit\t\n\\x", "duration_ms": 9007199254740991u64,
                   "input_tokens": 0, "output_tokens": 7, "is_error": true}),
            json!({"seq": 9007199254740991u64, "ts": "0001-01-01T00:00:00+00:00", "kind": "k",
                   "tool_name": null, "duration_ms": null, "input_tokens": null,
                   "output_tokens": null, "is_error": null}),
        ]
    );
    let first = xmins(&env).await;
    assert_eq!(env.post(&doc).await.status, 200);
    assert_eq!(xmins(&env).await, first, "a resend rewrites no event row");
}

/// A replay (chunk 0 of the committed revision) upserts by seq: it rewrites the rows whose
/// metadata changed, adds new seqs, and leaves the rest alone.
#[tokio::test]
async fn a_replay_rewrites_only_changed_events_and_adds_new_ones() {
    let env = env().await;
    let mut s = session("s1", "r1", T1);
    s["events"] = events(0..4);
    assert_eq!(env.post(&batch(vec![s.clone()])).await.status, 200);
    let version = |env: &Env, seq: i64| {
        let pool = env.db.pool.clone();
        async move {
            sqlx::query_scalar::<_, String>(
                "SELECT xmin::text FROM agent_session_events WHERE seq = $1",
            )
            .bind(seq)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let before: Vec<String> = futures::future::join_all((0..4).map(|q| version(&env, q))).await;
    let mut changed = events(0..6);
    changed[2]["toolName"] = json!("grep");
    changed[3]["isError"] = json!(null);
    s["events"] = changed;
    assert_eq!(env.post(&batch(vec![s])).await.status, 200);
    let after: Vec<String> = futures::future::join_all((0..4).map(|q| version(&env, q))).await;
    assert_eq!(after[..2], before[..2], "unchanged rows are not rewritten");
    assert_ne!(after[2], before[2]);
    assert_ne!(after[3], before[3]);
    let tool: Vec<(Option<String>, Option<bool>)> = sqlx::query_as(
        "SELECT tool_name, is_error FROM agent_session_events WHERE seq IN (2, 3) ORDER BY seq",
    )
    .fetch_all(&env.db.pool)
    .await
    .unwrap();
    assert_eq!(
        tool,
        vec![
            (Some("grep".into()), Some(false)),
            (Some("bash".into()), None)
        ]
    );
    assert_eq!(env.event_seqs("s1").await, (0..6).collect::<Vec<i64>>());
    assert_eq!(env.session_row("s1").await["event_count"], 6);
}

/// The promoted `event_count` is worked out from what the batch did (a replacing revision holds
/// exactly its events; any other batch adds the seqs it appended), never by counting rows: after
/// every kind of write it still equals the stored rows, and a grown revision leaves its earlier
/// rows untouched.
#[tokio::test]
async fn the_event_count_follows_every_kind_of_write() {
    let env = env().await;
    // (revision, events: None omits them, what the step is, the count it leaves)
    let steps: [(&str, Option<Value>, &str, i32); 6] = [
        ("r1", Some(events(0..10)), "new", 10),
        ("r2", Some(events(0..15)), "grown revision", 15),
        ("r3", Some(events(3..8)), "shrunk revision", 5),
        (
            "r3",
            Some(events(6..12)),
            "replay of the committed revision adds seqs",
            9,
        ),
        ("r4", None, "events omitted", 9),
        ("r5", Some(json!([])), "an empty list clears", 0),
    ];
    let mut versions = Vec::new();
    for (i, (rev, evs, step, expected)) in steps.into_iter().enumerate() {
        let mut s = session("s1", rev, if i == 0 { T1 } else { T2 });
        match evs {
            Some(e) => s["events"] = e,
            None => {
                s.as_object_mut().unwrap().remove("events");
            }
        }
        assert_eq!(env.post(&batch(vec![s])).await.status, 200, "{step}");
        let (count, rows): (i32, i64) = sqlx::query_as(
            "SELECT s.event_count,
                    (SELECT count(*) FROM agent_session_events e WHERE e.session_pk = s.id)
               FROM agent_sessions s WHERE s.session_id = 's1'",
        )
        .fetch_one(&env.db.pool)
        .await
        .unwrap();
        assert_eq!((count, i64::from(count)), (expected, rows), "{step}");
        if i < 2 {
            versions.push(first_event_version(&env).await);
        }
    }
    assert_eq!(
        versions[0], versions[1],
        "a grown revision does not rewrite its earlier events"
    );
}

/// The row version (xmin) of the stored event seq 0.
async fn first_event_version(env: &Env) -> String {
    sqlx::query_scalar("SELECT xmin::text FROM agent_session_events WHERE seq = 0")
        .fetch_one(&env.db.pool)
        .await
        .unwrap()
}
