//! Contract step 5, the schema parse: every violation is 400 with no code and nothing written.

use serde_json::{Value, json};

use super::support::*;

const T: &str = "2026-01-01T00:00:00Z";

fn with_session(f: impl FnOnce(&mut Value)) -> Value {
    let mut s = session("s1", "r1", T);
    f(&mut s);
    batch(vec![s])
}

#[tokio::test]
async fn schema_version_must_be_exactly_the_number_2() {
    let env = env().await;
    for v in [json!(1), json!(3), json!("2"), json!(null), json!(2.5)] {
        let mut doc = batch(vec![session("s1", "r1", T)]);
        doc["schemaVersion"] = v;
        assert_refused_400(&env, &doc).await;
    }
    let mut doc = batch(vec![session("s1", "r1", T)]);
    doc["schemaVersion"] = json!(2.0);
    assert_eq!(env.post(&doc).await.status, 200, "2.0 is the number 2");
}

#[tokio::test]
async fn session_count_must_equal_the_number_of_sessions() {
    let env = env().await;
    let mut doc = batch(vec![session("s1", "r1", T), session("s2", "r1", T)]);
    doc["sessionCount"] = json!(1);
    assert_refused_400(&env, &doc).await;
    doc["sessionCount"] = json!(3);
    assert_refused_400(&env, &doc).await;
}

#[tokio::test]
async fn a_batch_carries_1_to_200_sessions() {
    let env = env().await;
    assert_refused_400(&env, &batch(vec![])).await;
    let many: Vec<Value> = (0..201)
        .map(|i| session(&format!("s{i}"), "r", T))
        .collect();
    assert_refused_400(&env, &batch(many)).await;
    let max: Vec<Value> = (0..200)
        .map(|i| session(&format!("s{i}"), "r", T))
        .collect();
    assert_eq!(env.post(&batch(max)).await.status, 200);
    assert_eq!(env.written().await.0, 200);
}

#[tokio::test]
async fn missing_required_fields_are_400() {
    let env = env().await;
    for field in ["batchId", "mode", "sessionCount", "sessions"] {
        let mut doc = batch(vec![session("s1", "r1", T)]);
        doc.as_object_mut().unwrap().remove(field);
        assert_refused_400(&env, &doc).await;
    }
    for field in ["sessionId", "updatedAt", "dataRevision", "agent"] {
        let doc = with_session(|s| {
            s.as_object_mut().unwrap().remove(field);
        });
        assert_refused_400(&env, &doc).await;
    }
    for field in ["seq", "ts", "kind"] {
        let doc = with_session(|s| {
            let mut e = event(1);
            e.as_object_mut().unwrap().remove(field);
            s["events"] = json!([e]);
        });
        assert_refused_400(&env, &doc).await;
    }
}

#[tokio::test]
async fn a_missing_or_non_string_compute_target_id_is_400() {
    let env = env().await;
    let mut doc = batch(vec![session("s1", "r1", T)]);
    doc.as_object_mut().unwrap().remove("computeTargetId");
    assert_refused_400(&env, &doc).await;
    doc["computeTargetId"] = json!(42);
    assert_refused_400(&env, &doc).await;
    assert_refused_400(&env, &json!([1, 2])).await;
    assert_eq!(
        env.count("SELECT count(*) FROM ingest_rate_limits").await,
        0
    );
}

#[tokio::test]
async fn wrong_types_are_400() {
    let env = env().await;
    let cases: Vec<(&str, Value)> = vec![
        ("agent", json!(5)),
        ("updatedAt", json!("yesterday")),
        ("model", json!(["x"])),
        ("startedAt", json!(12)),
        ("repository", json!("git@x")),
        ("usage", json!({"inputTokens": "5"})),
        ("usage", json!({"costUsd": "1"})),
        ("events", json!({"seq": 1})),
        (
            "tokenEvents",
            json!([{"ts": T, "inputTokens": 1.5, "outputTokens": 1}]),
        ),
        ("artifactRefs", json!([{"kind": "file", "ref": 7}])),
        ("chunk", json!({"index": "0", "total": 1})),
        ("frustration", json!({"score": 2, "signals": []})),
    ];
    for (field, value) in cases {
        let doc = with_session(|s| s[field] = value);
        assert_refused_400(&env, &doc).await;
    }
    let mut doc = batch(vec![session("s1", "r1", T)]);
    doc["mode"] = json!("bulk");
    assert_refused_400(&env, &doc).await;
}

#[tokio::test]
async fn negative_numbers_are_400() {
    let env = env().await;
    let doc = with_session(|s| s["usage"] = json!({"inputTokens": -1}));
    assert_refused_400(&env, &doc).await;
    let doc = with_session(|s| s["usage"] = json!({"costUsd": -0.5}));
    assert_refused_400(&env, &doc).await;
    let doc = with_session(|s| s["events"] = json!([{"seq": -1, "ts": T, "kind": "k"}]));
    assert_refused_400(&env, &doc).await;
    let doc =
        with_session(|s| s["events"] = json!([{"seq": 9007199254740992u64, "ts": T, "kind": "k"}]));
    assert_refused_400(&env, &doc).await;
}

#[tokio::test]
async fn chunk_index_must_be_below_total_and_total_at_most_1000() {
    let env = env().await;
    for chunk in [
        json!({"index": 2, "total": 2}),
        json!({"index": 0, "total": 0}),
        json!({"index": 0, "total": 1001}),
    ] {
        let doc = with_session(|s| s["chunk"] = chunk);
        assert_refused_400(&env, &doc).await;
    }
}

#[tokio::test]
async fn event_seq_must_be_unique_within_a_session() {
    let env = env().await;
    let doc = with_session(|s| s["events"] = json!([event(1), event(1)]));
    assert_refused_400(&env, &doc).await;
}

#[tokio::test]
async fn the_same_session_and_chunk_index_twice_in_one_batch_is_400() {
    let env = env().await;
    let doc = batch(vec![session("s1", "r1", T), session("s1", "r1", T)]);
    assert_refused_400(&env, &doc).await;
}

#[tokio::test]
async fn over_long_strings_are_400_and_lengths_count_characters() {
    let env = env().await;
    let cases: Vec<(&str, Value)> = vec![
        ("sessionId", json!("s".repeat(201))),
        ("sessionId", json!("")),
        ("dataRevision", json!("r".repeat(129))),
        ("agent", json!("a".repeat(65))),
    ];
    for (field, value) in cases {
        let doc = with_session(|s| s[field] = value);
        assert_refused_400(&env, &doc).await;
    }
    let doc = with_session(|s| s["events"] = json!([{"seq": 1, "ts": T, "kind": "k".repeat(65)}]));
    assert_refused_400(&env, &doc).await;
    let mut doc = batch(vec![session("s1", "r1", T)]);
    doc["batchId"] = json!("b".repeat(129));
    assert_refused_400(&env, &doc).await;
    // 200 two-byte characters are 200 characters.
    let doc = with_session(|s| s["sessionId"] = json!("é".repeat(200)));
    assert_eq!(env.post(&doc).await.status, 200);
}

#[tokio::test]
async fn unknown_fields_anywhere_are_ignored() {
    let env = env().await;
    let mut doc = with_session(|s| {
        s["brandNew"] = json!({"nested": [1, 2]});
        s["events"] = json!([{"seq": 1, "ts": T, "kind": "k", "future": true}]);
        s["repository"] = json!({"remoteUrl": "u", "host": "gh"});
    });
    doc["extra"] = json!("x");
    let r = env.post(&doc).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

#[tokio::test]
async fn a_string_postgres_cannot_store_is_400_not_a_database_failure() {
    let env = env().await;
    // U+0000 fits JSON but no Postgres text or jsonb value.
    assert_refused_400(&env, &with_session(|s| s["title"] = json!("a\u{0}b"))).await;
    assert_refused_400(
        &env,
        &with_session(|s| {
            s["events"] = json!([{"seq": 1, "ts": T, "kind": "k", "toolName": "\u{0}"}])
        }),
    )
    .await;
    assert_refused_400(
        &env,
        &with_session(|s| s["artifactRefs"] = json!([{"kind": "pr", "ref": "\u{0}"}])),
    )
    .await;
}
