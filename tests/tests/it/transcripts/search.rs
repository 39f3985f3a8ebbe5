//! Search over the transcript archive (issue 34; docs/transcript-search.md), through the real
//! ingest handler: segments recorded through the lane's routes (and through the worker's path)
//! are queued for the index and, once indexed (by `syncplane serve`'s indexer within a second,
//! by the worker after the S3 notification), found by words, phrases, exclusions, `or` and exact
//! code tokens; filters and
//! keyset pages; the index follows the archive (a new generation, retention); isolation between
//! orgs and token kinds; bad input answered 400 with a code; a rate limit per read token; and a
//! secret the client redacted is not findable. Every answer is checked against openapi.json.

use serde_json::{Value, json};
use shared::accounts::tokens;
use shared::archive::retention;
use shared::archive::search::query::{Term, parse};
use shared::archive::search::{index, lexer, matcher::Matcher, tokens::code_tokens};
use shared::ingest::handle;
use shared::worker::s3_events::{Archive, Completion, Uploads};
use syncplane_tests::apigw::{Reply, checked_reply, request};

use super::support::{Env, FILE, OTHER_TARGET, SESSION, TARGET, env, segment};

const SEARCH: &str = "/api/agent-sessions/transcripts/search";

/// A Claude Code session as the tool writes it: a prompt, a tool call, its result (a `Read`
/// listing with line numbers and a failing command's log), the assistant's answer.
fn session_lines(day: u32) -> String {
    let t = |h: u32| format!("2026-11-{day:02}T{h:02}:00:00.000Z");
    [
        json!({"type": "user", "uuid": "u-1", "sessionId": SESSION, "timestamp": t(9),
               "message": {"role": "user", "content": "Why does the TLS handshake fail against the staging database?"}}),
        json!({"type": "assistant", "uuid": "u-2", "timestamp": t(10),
               "message": {"role": "assistant", "model": "claude-opus-4", "content": [
                   {"type": "text", "text": "I'll run the integration tests."},
                   {"type": "tool_use", "id": "toolu_01ABC", "name": "Bash",
                    "input": {"command": "cargo test --locked -p db_client -- --nocapture"}}]}}),
        json!({"type": "user", "uuid": "u-3", "timestamp": t(11),
               "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01ABC",
                   "content": "thread 'main' panicked at src/main.rs:12:5:\nError: connect ECONNREFUSED 127.0.0.1:5432\n     1→fn snake_case_name() {}\n<script>alert(1)</script>"}]}}),
        json!({"type": "assistant", "uuid": "u-4", "timestamp": t(12),
               "message": {"role": "assistant", "content": [
                   {"type": "text", "text": "The connection was refused: Postgres is not listening. Start it, then rerun."}]}}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect()
}

/// A read token for `org`.
async fn read_token(e: &Env, org: i64) -> String {
    tokens::issue_read_token(&e.db.pool, org, Some("web"))
        .await
        .unwrap()
        .token
}

async fn other_org(e: &Env) -> i64 {
    e.count("SELECT id FROM orgs WHERE name = 'globex'").await
}

/// `GET /search?{query}` with `token`.
async fn search_as(e: &Env, token: &str, query: &[(&str, &str)]) -> Reply {
    let qs: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(query)
        .finish();
    let path = format!("{SEARCH}?{qs}");
    let auth = format!("Bearer {token}");
    let req = request("GET", &path, &[("authorization", auth.as_str())], None);
    checked_reply("GET", &path, handle(&e.state, req).await)
}

/// The hits of a search that must succeed.
async fn hits(e: &Env, token: &str, query: &[(&str, &str)]) -> Vec<Value> {
    let r = search_as(e, token, query).await;
    assert_eq!(r.status, 200, "{query:?}: {}", r.body);
    r.data()["hits"].as_array().unwrap().clone()
}

/// Upload `text` as the env's file (generation 1 at 0, or after what is there), then index what
/// is queued.
async fn record(e: &Env, generation: u32, offset: u64, text: &str) {
    let r = e
        .upload(generation, offset, &segment(text.as_bytes()))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    drain(e).await;
}

async fn drain(e: &Env) -> index::Drained {
    index::drain(&e.db.pool, &e.state.transcripts.store, 1_000)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_recorded_segment_waits_in_the_queue_and_the_local_indexer_takes_it_within_2_s() {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    let r = e.upload(1, 0, &segment(session_lines(2).as_bytes())).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        e.count("SELECT count(*) FROM transcript_index_queue").await,
        1,
        "queued with the segment"
    );
    assert!(
        hits(&e, &token, &[("q", "ECONNREFUSED")]).await.is_empty(),
        "not indexed yet"
    );

    let indexer =
        syncplane_cli::serve::spawn_indexer(e.db.pool.clone(), e.state.transcripts.store.clone());
    let second = segment(session_lines(3).as_bytes());
    let r = e.upload(1, session_lines(2).len() as u64, &second).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let completed = std::time::Instant::now();
    while hits(&e, &token, &[("q", "ECONNREFUSED")]).await.len() < 2 {
        assert!(
            completed.elapsed() < std::time::Duration::from_secs(2),
            "searchable within 2 s of its complete"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    indexer.abort();
    assert_eq!(
        e.count("SELECT count(*) FROM transcript_index_queue").await,
        0
    );
    let lines: Vec<i64> = hits(&e, &token, &[("q", "ECONNREFUSED")])
        .await
        .iter()
        .map(|h| h["line"].as_i64().unwrap())
        .collect();
    assert_eq!(
        lines,
        vec![7, 3],
        "the second segment's lines follow the first's, newest first"
    );
}

#[tokio::test]
async fn an_indexed_segment_is_found_by_words_phrases_exclusions_or_and_exact_code_tokens() {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    record(&e, 1, 0, &session_lines(2)).await;
    for q in [
        "handshake",
        "refusing",
        "\"connection was refused\"",
        "ECONNREFUSED",
        "econnrefused",
        "src/main.rs",
        "main.rs",
        "snake_case_name",
        "--nocapture",
        "db_client",
        "tls -docker",
        "kubernetes or postgres",
    ] {
        let found = hits(&e, &token, &[("q", q)]).await;
        assert!(!found.is_empty(), "{q} finds the session");
        for h in &found {
            assert_eq!(h["session"]["sessionId"], SESSION);
            assert_eq!(h["fileId"], FILE);
            assert!(
                h["snippet"].as_str().unwrap().contains("<mark>"),
                "{q}: {h}"
            );
        }
    }
    for q in [
        "kubernetes",
        "tls -handshake",
        "src/lib.rs",
        "toolu_01ABC",
        "u-3",
        "timestamp",
    ] {
        assert_eq!(
            hits(&e, &token, &[("q", q)]).await,
            Vec::<Value>::new(),
            "{q}: no hit (ids and keys are not text)"
        );
    }
}

#[tokio::test]
async fn each_hit_names_its_session_line_role_tool_and_time_with_an_escaped_snippet() {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    record(&e, 1, 0, &session_lines(2)).await;
    let found = hits(&e, &token, &[("q", "ECONNREFUSED")]).await;
    assert_eq!(found.len(), 1, "{found:?}");
    let h = &found[0];
    assert_eq!(h["line"], 3);
    assert_eq!(h["role"], "tool");
    assert_eq!(
        h["toolName"], "Bash",
        "a result is found by its call's tool"
    );
    assert_eq!(h["at"], "2026-11-02T11:00:00.000Z");
    let snippet = h["snippet"].as_str().unwrap();
    assert!(snippet.contains("<mark>ECONNREFUSED</mark>"), "{snippet}");
    assert!(
        snippet.contains("&lt;script&gt;") && !snippet.contains("<script"),
        "{snippet}"
    );
    // The link: the lines route's cursor opens its page at that line.
    let cursor = h["linesCursor"].as_str().unwrap();
    let path = format!(
        "/api/agent-sessions/transcripts/lines?computeTargetId={TARGET}&sessionId={SESSION}&fileId={FILE}&limit=1&cursor={cursor}"
    );
    let auth = format!("Bearer {token}");
    let r = checked_reply(
        "GET",
        &path,
        handle(
            &e.state,
            request("GET", &path, &[("authorization", auth.as_str())], None),
        )
        .await,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let line = r.data()["lines"][0].to_string();
    assert!(line.contains("ECONNREFUSED"), "{line}");
}

#[tokio::test]
async fn filters_narrow_by_target_session_time_role_and_tool() {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    record(&e, 1, 0, &session_lines(2)).await;
    let n = |v: Vec<Value>| v.len();
    assert_eq!(n(hits(&e, &token, &[("q", "postgres")]).await), 1);
    assert_eq!(
        n(hits(&e, &token, &[("q", "tls"), ("role", "user")]).await),
        1
    );
    assert_eq!(
        n(hits(&e, &token, &[("q", "tls"), ("role", "assistant")]).await),
        0
    );
    assert_eq!(
        n(hits(&e, &token, &[("q", "cargo"), ("tool", "Bash")]).await),
        1
    );
    assert_eq!(
        n(hits(&e, &token, &[("q", "cargo"), ("tool", "Read")]).await),
        0
    );
    assert_eq!(
        n(hits(&e, &token, &[("q", "tls"), ("computeTargetId", TARGET)]).await),
        1
    );
    assert_eq!(
        n(hits(
            &e,
            &token,
            &[("q", "tls"), ("computeTargetId", "elsewhere")]
        )
        .await),
        0
    );
    assert_eq!(
        n(hits(&e, &token, &[("q", "tls"), ("sessionId", "s-2")]).await),
        0
    );
    let day = [
        ("since", "2026-11-02T00:00:00Z"),
        ("until", "2026-11-03T00:00:00Z"),
    ];
    assert_eq!(
        n(hits(&e, &token, &[("q", "tls"), day[0], day[1]]).await),
        1
    );
    let later = [("q", "tls"), ("since", "2026-11-02T09:30:00Z")];
    assert_eq!(n(hits(&e, &token, &later).await), 0);
}

#[tokio::test]
async fn keyset_pages_cover_every_hit_once_newest_first() {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    let mut text = String::new();
    for day in 1..=7 {
        text.push_str(&session_lines(day));
    }
    record(&e, 1, 0, &text).await;
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let mut q = vec![("q", "postgres"), ("limit", "3")];
        if let Some(c) = &cursor {
            q.push(("cursor", c));
        }
        let r = search_as(&e, &token, &q).await;
        assert_eq!(r.status, 200, "{}", r.body);
        for h in r.data()["hits"].as_array().unwrap() {
            seen.push(h["at"].as_str().unwrap().to_owned());
        }
        cursor = r.data()["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen.len(), 7, "{seen:?}");
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    sorted.dedup();
    assert_eq!(seen, sorted, "newest first, none twice");
}

#[tokio::test]
async fn lines_indexed_in_one_group_are_matched_each_on_its_own() {
    // Migration 0018: a session's four lines are one row of the index, whose terms hold all their
    // words; a hit is still a line that matches the whole query.
    let e = env().await;
    let token = read_token(&e, e.org).await;
    record(&e, 1, 0, &session_lines(2)).await;
    assert_eq!(
        e.count("SELECT count(*) FROM transcript_line_groups").await,
        1,
        "one group"
    );
    let bodies: Vec<String> = sqlx::query_scalar("SELECT bodies FROM transcript_line_groups")
        .fetch_one(&e.db.pool)
        .await
        .unwrap();
    let vectors: Vec<String> = bodies
        .iter()
        .map(|b| lexer::vector(b, &code_tokens(b)))
        .collect();
    let same: bool = sqlx::query_scalar(
        "SELECT terms = array_to_tsvector(array(
                SELECT DISTINCT unnest(tsvector_to_array(v::tsvector)) FROM unnest($1::text[]) v))
           FROM transcript_line_groups",
    )
    .bind(&vectors)
    .fetch_one(&e.db.pool)
    .await
    .unwrap();
    assert!(
        same,
        "Postgres reads the group's terms as every lexeme of its lines, without positions"
    );
    let lines =
        |v: Vec<Value>| -> Vec<i64> { v.iter().map(|h| h["line"].as_i64().unwrap()).collect() };
    // `tls` is in the first line, `postgres` in the fourth.
    assert_eq!(
        lines(hits(&e, &token, &[("q", "tls postgres")]).await),
        Vec::<i64>::new(),
        "words of two lines"
    );
    assert_eq!(
        lines(hits(&e, &token, &[("q", "\"handshake postgres\"")]).await),
        Vec::<i64>::new(),
        "a phrase across lines"
    );
    assert_eq!(
        lines(hits(&e, &token, &[("q", "tls -postgres")]).await),
        vec![1],
        "excluded in another line only"
    );
    assert_eq!(
        lines(hits(&e, &token, &[("q", "tls -staging")]).await),
        Vec::<i64>::new(),
        "excluded in its own line"
    );
    assert_eq!(
        lines(hits(&e, &token, &[("q", "tls or postgres")]).await),
        vec![4, 1],
        "later lines first"
    );

    // Pages of one hit walk through the group's lines.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..5 {
        let mut q = vec![("q", "tls or cargo or postgres"), ("limit", "1")];
        if let Some(c) = &cursor {
            q.push(("cursor", c));
        }
        let r = search_as(&e, &token, &q).await;
        assert_eq!(r.status, 200, "{}", r.body);
        seen.extend(lines(r.data()["hits"].as_array().unwrap().clone()));
        cursor = r.data()["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(
        seen,
        vec![4, 2, 1],
        "each matching line once, in page order"
    );
}

/// The tsquery the search sent for each line before migration 0018: each leaf normalized by the
/// index's lexer (a phrase at its distances), code tokens quoted.
fn line_tsquery(q: &str) -> Option<String> {
    let q = parse(q).ok()?;
    let normalized: Vec<String> = q
        .leaves()
        .map(|t| match t {
            Term::Words(w) => lexer::plain_query(w),
            Term::Phrase(p) => lexer::phrase_query(p),
            Term::Code(_) | Term::All(_) => String::new(),
        })
        .collect();
    q.tsquery(&normalized)
}

#[tokio::test]
async fn a_line_matches_a_query_as_postgres_matched_its_own_vector() {
    // Postgres is the oracle: the line's vector (the indexer's lexer and code tokens) `@@` the
    // query's tsquery, against `Matcher` on the line's text, over generated Claude Code lines
    // and queries made of their own words, phrases, exclusions, alternatives and code tokens.
    use shared::archive::search::extract::Extractor;
    use syncplane_tests::redaction_corpus::Rng;
    use syncplane_tests::transcript_corpus::{CODE, WORDS, record};
    let e = env().await;
    let mut r = Rng(34);
    let mut x = Extractor::default();
    let mut texts: Vec<String> = (0..160)
        .map(|i| {
            x.line(
                record(&mut r, "s-1", i, "2026-11-02T09:00:00Z")
                    .to_string()
                    .as_bytes(),
            )
            .text
        })
        .filter(|t| !t.is_empty())
        .collect();
    texts.push(
        "the connection was refused: connect ECONNREFUSED 127.0.0.1:5432 at src/main.rs:12:5"
            .into(),
    );
    texts.push("     1→fn snake_case_name() {}\n     2→    let KEY=v4lue+x; --locked".into());
    let mut queries: Vec<String> = [
        "connection refused",
        "\"connection refused\"",
        "\"connection was refused\"",
        "\"refused connection\"",
        "ECONNREFUSED -postgres",
        "src/main.rs",
        "main.rs",
        "snake_case_name or HashMap",
        "KEY=v4lue+x",
        "--locked",
        "\"the was\" connect",
        "127.0.0.1:5432",
        "tls or connect -refused",
    ]
    .map(str::to_owned)
    .to_vec();
    for t in texts.iter().take(40) {
        let words: Vec<&str> = t
            .split_whitespace()
            .filter(|w| w.chars().all(char::is_alphabetic))
            .collect();
        if let [a, b, ..] = words.as_slice() {
            queries.push(format!("\"{a} {b}\""));
            queries.push(format!("\"{b} {a}\""));
            queries.push(format!("{a} -{b}"));
        }
    }
    for i in 0..40 {
        let w = |r: &mut Rng| WORDS[r.below(WORDS.len())];
        let (a, b, c) = (w(&mut r), w(&mut r), w(&mut r));
        queries.push(match i % 4 {
            0 => format!("{a} {b}"),
            1 => format!("{a} or {b} -{c}"),
            2 => format!("\"{a} {b}\" or {}", CODE[r.below(CODE.len())]),
            _ => CODE[r.below(CODE.len())].to_owned(),
        });
    }
    let (mut vectors, mut tsqueries, mut ours) = (Vec::new(), Vec::new(), Vec::new());
    let mut lexer = lexer::Lexer::default();
    for q in &queries {
        let (Some(tsquery), Some(matcher)) = (line_tsquery(q), Matcher::new(&parse(q).unwrap()))
        else {
            assert!(
                line_tsquery(q).is_none() && Matcher::new(&parse(q).unwrap()).is_none(),
                "{q}"
            );
            continue;
        };
        for t in &texts {
            vectors.push(lexer::vector(t, &code_tokens(t)));
            tsqueries.push(tsquery.clone());
            ours.push(matcher.matches(&mut lexer, t));
        }
    }
    let theirs: Vec<bool> = sqlx::query_scalar(
        "SELECT v::tsvector @@ q::tsquery FROM unnest($1::text[], $2::text[]) WITH ORDINALITY
            AS t(v, q, n) ORDER BY n",
    )
    .bind(&vectors)
    .bind(&tsqueries)
    .fetch_all(&e.db.pool)
    .await
    .unwrap();
    let matched = theirs.iter().filter(|m| **m).count();
    assert!(
        matched > 100 && matched < theirs.len() / 2,
        "{matched} of {} match: a test of both answers",
        theirs.len()
    );
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "{} on {:?}", tsqueries[i], vectors[i]);
    }
}

#[tokio::test]
async fn a_new_generation_replaces_the_old_lines_and_retention_removes_them() {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    record(&e, 1, 0, &session_lines(2)).await;
    assert_eq!(hits(&e, &token, &[("q", "ECONNREFUSED")]).await.len(), 1);
    let rewritten = session_lines(3).replace("ECONNREFUSED", "ETIMEDOUT");
    record(&e, 2, 0, &rewritten).await;
    assert!(
        hits(&e, &token, &[("q", "ECONNREFUSED")]).await.is_empty(),
        "the old generation is gone"
    );
    assert_eq!(hits(&e, &token, &[("q", "ETIMEDOUT")]).await.len(), 1);

    e.exec("UPDATE transcript_segments SET created_at = now() - interval '40 days'")
        .await;
    e.exec(&format!(
        "UPDATE orgs SET transcript_retention_days = 30 WHERE id = {}",
        e.org
    ))
    .await;
    let store = &e.state.transcripts.store;
    retention::expire(&e.db.pool, store, chrono::Utc::now(), 100)
        .await
        .unwrap();
    assert!(
        hits(&e, &token, &[("q", "ETIMEDOUT")]).await.is_empty(),
        "retention removed them"
    );
    assert_eq!(
        e.count("SELECT coalesce(sum(cardinality(line_nos)), 0) FROM transcript_line_groups")
            .await,
        0
    );
}

#[tokio::test]
async fn a_line_never_outlives_its_segment_when_its_org_or_compute_target_is_deleted() {
    // Migration 0016: the lines' foreign keys gave way to a trigger on the segments; the
    // cascades from an org or a compute target reach the segments, and the trigger their lines.
    let lines = "SELECT coalesce(sum(cardinality(line_nos)), 0) FROM transcript_line_groups";
    let e = env().await;
    record(&e, 1, 0, &session_lines(2)).await;
    let before = e.count(lines).await;
    assert!(before > 0);
    e.exec(&format!(
        "DELETE FROM orgs WHERE id = {}",
        other_org(&e).await
    ))
    .await;
    assert_eq!(
        e.count(lines).await,
        before,
        "another org's delete takes none"
    );
    e.exec(&format!("DELETE FROM orgs WHERE id = {}", e.org))
        .await;
    assert_eq!(e.count(lines).await, 0, "the org's lines went with it");

    let e = env().await;
    record(&e, 1, 0, &session_lines(2)).await;
    assert!(e.count(lines).await > 0);
    e.exec(&format!(
        "DELETE FROM compute_targets WHERE id = '{TARGET}'"
    ))
    .await;
    assert_eq!(
        e.count(lines).await,
        0,
        "the compute target's lines went with it"
    );

    let e = env().await;
    record(&e, 1, 0, &session_lines(2)).await;
    assert!(e.count(lines).await > 0);
    e.exec("TRUNCATE orgs CASCADE").await;
    assert_eq!(e.count(lines).await, 0, "emptied with the segments");
}

#[tokio::test]
async fn the_vector_sent_in_binary_is_the_vector_its_literal_reads_as() {
    // The indexer sends each group's terms in Postgres's binary form (and a line's vector in it
    // is what the search reads again); the literal (the form Postgres parses) is the oracle:
    // Postgres must read both as the same vector.
    use shared::archive::search::index::BinaryVector;
    let e = env().await;
    let many = "retry ".repeat(300);
    let texts = [
        "The connection was refused; refusing connections v2 TLS".to_owned(),
        "thread 'main' panicked at src/main.rs:12:5: connect ECONNREFUSED 127.0.0.1:5432"
            .to_owned(),
        r#"it's a 'quoted' \ back\slash "double" O'Brien's --no-verify FOO_BAR=1"#.to_owned(),
        "Ünïcödé İstanbul straße ΣΊΣΥΦΟΣ 東京 snake_case_name CamelCase Src/Main.RS".to_owned(),
        many,
        // Past Postgres's last position (16,383): the rest of the words share it.
        "word ".repeat(17_000),
        String::new(),
        "the of and".to_owned(),
    ];
    for text in &texts {
        let codes = code_tokens(text);
        let same: bool = sqlx::query_scalar("SELECT $1::text = $2::tsvector::text")
            .bind(BinaryVector(lexer::binary_vector(text, &codes)))
            .bind(lexer::vector(text, &codes))
            .fetch_one(&e.db.pool)
            .await
            .unwrap();
        assert!(same, "{text:?}: {}", lexer::vector(text, &codes));
    }
}

#[tokio::test]
async fn a_segment_the_worker_completes_from_the_s3_notification_is_searchable_too() {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    let seg = segment(session_lines(2).as_bytes());
    let id = e.intent_ok(1, 0, &seg).await;
    assert_eq!(e.put(&id, &seg.compressed).await.status, 200);
    assert!(
        hits(&e, &token, &[("q", "ECONNREFUSED")]).await.is_empty(),
        "not before it is recorded"
    );
    let archive = Archive {
        pool: e.db.pool.clone(),
        store: e.state.transcripts.store.clone(),
    };
    let done = archive.complete(id.parse().unwrap()).await;
    assert!(matches!(done, Completion::Done), "{done:?}");
    assert_eq!(hits(&e, &token, &[("q", "ECONNREFUSED")]).await.len(), 1);
}

#[tokio::test]
async fn another_orgs_read_token_finds_nothing_and_a_device_token_cannot_search() {
    let e = env().await;
    record(&e, 1, 0, &session_lines(2)).await;
    let other = read_token(&e, other_org(&e).await).await;
    assert!(hits(&e, &other, &[("q", "ECONNREFUSED")]).await.is_empty());
    let asked = [
        ("q", "tls"),
        ("computeTargetId", TARGET),
        ("sessionId", SESSION),
    ];
    assert!(
        hits(&e, &other, &asked).await.is_empty(),
        "naming the session does not help"
    );
    let r = search_as(&e, &e.token, &[("q", "tls")]).await;
    assert_eq!(
        r.status, 401,
        "a device token is not a read token: {}",
        r.body
    );
    let r = search_as(&e, "nope", &[("q", "tls")]).await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn bad_input_is_400_with_a_code() {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    record(&e, 1, 0, &session_lines(2)).await;
    let long = "a ".repeat(5 * 1024);
    let other_query_cursor = {
        let mut text = String::new();
        for day in 3..=5 {
            text.push_str(&session_lines(day));
        }
        record(&e, 1, session_lines(2).len() as u64, &text).await;
        let r = search_as(&e, &token, &[("q", "postgres"), ("limit", "1")]).await;
        r.data()["nextCursor"].as_str().unwrap().to_owned()
    };
    for (query, code) in [
        (vec![("q", long.as_str())], "invalid_query"),
        (vec![("q", "")], "invalid_query"),
        (vec![], "invalid_query"),
        (vec![("q", "-tls")], "invalid_query"),
        (vec![("q", "tls or -docker")], "invalid_query"),
        (vec![("q", "tls"), ("colour", "red")], "invalid_parameter"),
        (vec![("q", "tls"), ("role", "admin")], "invalid_parameter"),
        (
            vec![("q", "tls"), ("since", "yesterday")],
            "invalid_parameter",
        ),
        (vec![("q", "tls"), ("limit", "0")], "invalid_parameter"),
        (vec![("q", "tls"), ("limit", "101")], "invalid_parameter"),
        (vec![("q", "tls"), ("cursor", "forged")], "invalid_cursor"),
        (
            vec![("q", "tls"), ("cursor", other_query_cursor.as_str())],
            "invalid_cursor",
        ),
        (vec![("q", "tls"), ("q", "ssl")], "invalid_parameter"),
    ] {
        let r = search_as(&e, &token, &query).await;
        assert_eq!(
            (r.status, r.code()),
            (400, Some(code)),
            "{query:?}: {}",
            r.body
        );
    }
    let r = search_as(
        &e,
        &token,
        &[
            ("q", "postgres"),
            ("limit", "1"),
            ("cursor", &other_query_cursor),
        ],
    )
    .await;
    assert_eq!(
        r.status, 200,
        "the cursor works for its own query: {}",
        r.body
    );
}

#[tokio::test]
async fn search_is_rate_limited_per_read_token() {
    let mut e = env().await;
    e.state.transcripts.search_rate_limit_per_minute = 3;
    let token = read_token(&e, e.org).await;
    let second = read_token(&e, e.org).await;
    syncplane_tests::db::inside_one_minute_window(&e.db.pool, std::time::Duration::from_secs(20))
        .await;
    for _ in 0..3 {
        assert_eq!(search_as(&e, &token, &[("q", "tls")]).await.status, 200);
    }
    let r = search_as(&e, &token, &[("q", "tls")]).await;
    assert_eq!(
        (r.status, r.code()),
        (429, Some("rate_limited")),
        "{}",
        r.body
    );
    assert!(r.headers.contains_key("retry-after"));
    assert_eq!(
        search_as(&e, &second, &[("q", "tls")]).await.status,
        200,
        "per token"
    );
}

/// The longest run of a secret that is one code token, as a searcher would paste it.
fn searchable_piece(secret: &str) -> Option<String> {
    secret
        .split(|c: char| c.is_whitespace() || "\"'`=:,;()[]{}<>".contains(c))
        .filter(|p| p.len() >= 8 && p.len() <= 100)
        .max_by_key(|p| p.len())
        .map(str::to_owned)
}

#[tokio::test]
async fn a_secret_planted_in_a_local_transcript_is_not_findable_after_the_client_redacts_it() {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    let (planted, unknown) =
        syncplane_tests::redaction_corpus::planted(syncplane_agent::redact::rule_ids(), 34, 2);
    assert!(unknown.is_empty(), "{unknown:?}");
    let redactor = syncplane_agent::redact::Redactor::new();
    let redacted: String = planted
        .iter()
        .map(|p| format!("{}\n", redactor.redact_line(&p.line).text))
        .collect();
    record(&e, 1, 0, &redacted).await;
    // The same lines unredacted, in the other org: the search would find them if they were there.
    let other = other_org(&e).await;
    let other_token = read_token(&e, other).await;
    let raw: String = planted.iter().map(|p| format!("{}\n", p.line)).collect();
    let seg = segment(raw.as_bytes());
    let body = json!({"computeTargetId": OTHER_TARGET, "sessionId": SESSION, "fileId": FILE,
        "generation": 1, "offset": 0, "sourceBytes": seg.decoded.len(), "decodedBytes": seg.decoded.len(),
        "compressedBytes": seg.compressed.len(), "sha256": seg.sha256});
    let r = e.intent_as(&e.other_token, &body).await;
    let id = r.data()["uploadId"].as_str().unwrap().to_owned();
    assert_eq!(
        e.put_as(&e.other_token, &id, &seg.compressed).await.status,
        200
    );
    assert_eq!(e.complete_as(&e.other_token, &id).await.status, 200);
    drain(&e).await;

    let (mut searched, mut found_raw) = (0, 0);
    for p in &planted {
        let Some(piece) = searchable_piece(&p.secret) else {
            continue;
        };
        let q = format!("\"{}\"", piece.replace('"', ""));
        if q.len() > 512 {
            continue;
        }
        searched += 1;
        let leaked = hits(&e, &token, &[("q", q.as_str())]).await;
        assert!(
            leaked.is_empty(),
            "{} ({}) is findable: {leaked:?}",
            p.rule,
            piece
        );
        let raw = hits(&e, &other_token, &[("q", q.as_str())]).await;
        assert!(
            !raw.is_empty(),
            "the check can fail: {q} ({}) is found unredacted",
            p.rule
        );
        found_raw += 1;
    }
    assert!(searched >= 40, "{searched} secrets searched");
    assert_eq!(found_raw, searched);
    assert!(
        !hits(&e, &token, &[("q", "REDACTED")]).await.is_empty(),
        "the placeholders are there"
    );
}

#[tokio::test]
async fn segments_recorded_before_the_search_existed_are_indexed_by_reindex_with_their_lines_numbered()
 {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    let first = session_lines(2);
    for (offset, text) in [(0, first.clone()), (first.len() as u64, session_lines(3))] {
        let r = e.upload(1, offset, &segment(text.as_bytes())).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    // As an archive recorded before migration 0015 is: nothing queued, nothing counted.
    e.exec("DELETE FROM transcript_index_queue").await;
    e.exec("UPDATE transcript_files SET line_count = 0").await;
    let vars = vec![
        ("DATABASE_URL".to_owned(), e.db.url().expose().to_owned()),
        (
            "TRANSCRIPT_DATA_DIR".to_owned(),
            e.dir.display().to_string(),
        ),
    ];
    let (code, out) = syncplane_tests::cli::syncplane(&vars, &["transcripts", "reindex"]).await;
    assert_eq!(code, std::process::ExitCode::SUCCESS, "{out}");
    let said: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (
            said["files"].clone(),
            said["segments"].clone(),
            said["indexedSegments"].clone()
        ),
        (json!(1), json!(2), json!(2))
    );
    let lines: Vec<i64> = hits(&e, &token, &[("q", "ECONNREFUSED")])
        .await
        .iter()
        .map(|h| h["line"].as_i64().unwrap())
        .collect();
    assert_eq!(lines, vec![7, 3]);
    assert_eq!(e.count("SELECT line_count FROM transcript_files").await, 8);
    let (_, again) = syncplane_tests::cli::syncplane(&vars, &["transcripts", "reindex"]).await;
    let again: Value = serde_json::from_str(again.trim()).unwrap();
    assert_eq!(again["files"], 0, "nothing to do a second time");
}

#[tokio::test]
async fn a_tool_name_with_control_characters_is_indexed_cleaned_and_does_not_stop_the_queue() {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    let odd = json!({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "x\u{0}y\u{7}", "input": {"command": "uniqueword_one"}}]}});
    let first = format!("{odd}\n");
    record(&e, 1, 0, &first).await;
    record(&e, 1, first.len() as u64, &session_lines(2)).await;
    let found = hits(&e, &token, &[("q", "uniqueword_one")]).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["toolName"], "xy");
    assert_eq!(
        hits(&e, &token, &[("q", "ECONNREFUSED")]).await.len(),
        1,
        "the next segment too"
    );
}
