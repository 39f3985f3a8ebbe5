//! Export (issue 34 point 4; docs/transcript-search.md "Export"): an org's sessions as JSON Lines
//! or CSV and a session's transcript as its redacted JSON Lines, with the org's read token;
//! streamed by `syncplane serve` (real HTTP, chunked), sent to the bucket by multipart upload and
//! answered `303` to it by the deployed function (the S3 emulator), written to stdout by
//! `syncplane export`. Python's `csv` module reads the CSV (an oracle this code did not write).

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};
use shared::accounts::tokens;
use shared::ingest::handle;
use shared::ingest::transcripts::TranscriptsState;
use syncplane_cli::serve::{Functions, router};
use syncplane_tests::apigw::{checked_reply, request};

use super::support::{Env, FILE, OTHER_TARGET, SESSION, TARGET, env, lines, segment};
use crate::engine::World;
use crate::functions::support::state;

const SESSIONS_EXPORT: &str = "/api/agent-sessions/sessions/export";
const TRANSCRIPT_EXPORT: &str = "/api/agent-sessions/transcripts/export";

async fn read_token(e: &Env, org: i64) -> String {
    tokens::issue_read_token(&e.db.pool, org, Some("web"))
        .await
        .unwrap()
        .token
}

/// `n` sessions of `org` on `target`, updated a minute apart from 2026-11-01, titled `title i`.
async fn sessions(e: &Env, org: i64, target: &str, n: i64, title: &str) {
    sqlx::query(
        "INSERT INTO agent_sessions (org_id, compute_target_id, session_id, updated_at, agent,
                                     model, title, event_count, input_tokens, cost_usd, payload)
         SELECT $1, $2, $2 || '-s' || i, timestamptz '2026-11-01T00:00:00Z' + i * interval '1 minute',
                'claude-code', 'claude-opus-4', $4 || ' ' || i, i % 50, i * 10, 0.25, '{}'::jsonb
           FROM generate_series(1, $3) i",
    )
    .bind(org)
    .bind(target)
    .bind(n)
    .bind(title)
    .execute(&e.db.pool)
    .await
    .unwrap();
}

/// The `sessionId` of each line of a JSON Lines sessions export.
fn session_ids(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["sessionId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// `syncplane serve` on loopback for the env; its base URL, and the world that must outlive it.
async fn serve(e: &Env) -> (String, World) {
    let w = World::new().await;
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = router(Arc::new(Functions::new(state(&w), e.state.clone())));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, w)
}

async fn get(base: &str, path: &str, token: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{base}{path}"))
        .header("authorization", format!("Bearer {token}"))
        .send()
        .await
        .unwrap()
}

/// Rows of a CSV document, as Python's csv module reads them.
fn python_csv(text: &str) -> Vec<Vec<String>> {
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import csv, json, sys; print(json.dumps(list(csv.reader(sys.stdin.buffer.read().decode('utf-8').splitlines(True)))))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn the_orgs_sessions_stream_through_syncplane_serve_oldest_first_in_the_range_and_no_other_orgs()
 {
    let e = env().await;
    sessions(&e, e.org, TARGET, 2_500, "fix the build").await;
    let other = e.count("SELECT id FROM orgs WHERE name = 'globex'").await;
    sessions(&e, other, OTHER_TARGET, 10, "globex secret plans").await;
    let token = read_token(&e, e.org).await;
    let (base, _world) = serve(&e).await;

    let resp = get(&base, SESSIONS_EXPORT, &token).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/x-ndjson");
    assert_eq!(
        resp.headers()["content-disposition"],
        format!("attachment; filename=\"sessions-{}.jsonl\"", e.org)
    );
    assert_eq!(
        resp.headers()
            .get("transfer-encoding")
            .map(|v| v.to_str().unwrap()),
        Some("chunked"),
        "streamed as it is written, not gathered first"
    );
    let text = resp.text().await.unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        rows.len(),
        2_500,
        "every session, across keyset pages of 1,000"
    );
    assert_eq!(rows[0]["sessionId"], "laptop-1-s1");
    assert_eq!(rows[2_499]["sessionId"], "laptop-1-s2500");
    assert!(
        rows.windows(2)
            .all(|w| w[0]["updatedAt"].as_str() < w[1]["updatedAt"].as_str()),
        "oldest update first"
    );
    assert!(
        !text.contains("globex"),
        "another org's sessions are not in it"
    );
    let keys: Vec<&str> = rows[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for column in [
        "computeTargetId",
        "title",
        "agent",
        "model",
        "updatedAt",
        "eventCount",
        "costUsd",
    ] {
        assert!(keys.contains(&column), "{column} in {keys:?}");
    }

    // since inclusive, until exclusive, by the last update.
    let resp = get(
        &base,
        &format!(
            "{SESSIONS_EXPORT}?since=2026-11-01T00:10:00Z&until=2026-11-01T00:20:00Z&computeTargetId={TARGET}"
        ),
        &token,
    )
    .await;
    let text = resp.text().await.unwrap();
    let ids = session_ids(&text);
    assert_eq!(ids.len(), 10, "{ids:?}");
    assert_eq!(
        (ids[0].as_str(), ids[9].as_str()),
        ("laptop-1-s10", "laptop-1-s19")
    );
}

#[tokio::test]
async fn the_csv_export_reads_back_through_pythons_csv_module_with_hostile_titles_intact_and_formulas_defused()
 {
    let e = env().await;
    let hostile = [
        "a title, with a comma",
        "say \"hi\"",
        "two\nlines",
        "=HYPERLINK(\"http://evil.example\",\"click\")",
        "@SUM(A1:A9)",
        "ünïcödé — 日本語",
    ];
    for (i, title) in hostile.iter().enumerate() {
        sqlx::query(
            "INSERT INTO agent_sessions (org_id, compute_target_id, session_id, updated_at, agent,
                                         title, payload)
             VALUES ($1, $2, $3, timestamptz '2026-11-01T00:00:00Z' + $4 * interval '1 second',
                     'claude-code', $5, '{}'::jsonb)",
        )
        .bind(e.org)
        .bind(TARGET)
        .bind(format!("h-{i}"))
        .bind(i as i32)
        .bind(title)
        .execute(&e.db.pool)
        .await
        .unwrap();
    }
    let token = read_token(&e, e.org).await;
    let (base, _world) = serve(&e).await;
    let resp = get(&base, &format!("{SESSIONS_EXPORT}?format=csv"), &token).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/csv; charset=utf-8");
    let rows = python_csv(&resp.text().await.unwrap());
    assert_eq!(rows.len(), 1 + hostile.len(), "{rows:?}");
    assert_eq!(rows[0][0..3], ["computeTargetId", "sessionId", "title"]);
    let titles: Vec<&str> = rows[1..].iter().map(|r| r[2].as_str()).collect();
    assert_eq!(
        titles,
        [
            "a title, with a comma",
            "say \"hi\"",
            "two\nlines",
            "'=HYPERLINK(\"http://evil.example\",\"click\")",
            "'@SUM(A1:A9)",
            "ünïcödé — 日本語",
        ]
    );
    assert!(
        rows.iter().all(|r| r.len() == rows[0].len()),
        "every row has every column"
    );
}

#[tokio::test]
async fn a_sessions_transcript_exports_as_the_redacted_lines_uploaded_and_stays_in_its_org() {
    let e = env().await;
    let (a, b) = (lines(300, "first"), lines(200, "second"));
    let redacted =
        b"{\"type\":\"user\",\"message\":{\"content\":\"key [REDACTED:aws-access-key]\"}}\n";
    let b = [b.as_slice(), redacted].concat();
    assert_eq!(e.upload(1, 0, &segment(&a)).await.status, 200);
    assert_eq!(e.upload(1, a.len() as u64, &segment(&b)).await.status, 200);
    let token = read_token(&e, e.org).await;
    let (base, _world) = serve(&e).await;
    let path = format!("{TRANSCRIPT_EXPORT}?computeTargetId={TARGET}&sessionId={SESSION}");

    let resp = get(&base, &path, &token).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-disposition"],
        format!("attachment; filename=\"transcript-{SESSION}.jsonl\"")
    );
    let body = resp.bytes().await.unwrap();
    assert_eq!(
        body.as_ref(),
        [a.as_slice(), &b].concat(),
        "the file as uploaded, segment after segment"
    );
    let one = get(&base, &format!("{path}&fileId={FILE}"), &token).await;
    assert_eq!(
        one.bytes().await.unwrap(),
        body,
        "fileId names the one file"
    );

    // Another org's reader finds no such session; a device token is no read token.
    let other = e.count("SELECT id FROM orgs WHERE name = 'globex'").await;
    let theirs = read_token(&e, other).await;
    assert_eq!(get(&base, &path, &theirs).await.status(), 404);
    assert_eq!(get(&base, &path, &e.token).await.status(), 401);
    let missing = get(&base, &format!("{path}&fileId=nope.jsonl"), &token).await;
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn bad_export_requests_are_400_with_a_code_before_any_byte() {
    let e = env().await;
    let token = read_token(&e, e.org).await;
    let auth = format!("Bearer {token}");
    for (path, code) in [
        (format!("{SESSIONS_EXPORT}?format=xml"), "invalid_parameter"),
        (
            format!("{SESSIONS_EXPORT}?since=yesterday"),
            "invalid_parameter",
        ),
        (
            format!("{SESSIONS_EXPORT}?since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z"),
            "invalid_parameter",
        ),
        (format!("{SESSIONS_EXPORT}?limit=5"), "invalid_parameter"),
        (
            format!("{SESSIONS_EXPORT}?format=csv&format=jsonl"),
            "invalid_parameter",
        ),
        (
            format!("{TRANSCRIPT_EXPORT}?sessionId={SESSION}"),
            "invalid_parameter",
        ),
        (
            format!("{TRANSCRIPT_EXPORT}?computeTargetId={TARGET}&sessionId={SESSION}&fileId=../x"),
            "invalid_file_id",
        ),
        (
            format!(
                "{TRANSCRIPT_EXPORT}?computeTargetId={}&sessionId={SESSION}",
                "t".repeat(129)
            ),
            "invalid_compute_target_id",
        ),
    ] {
        let req = request("GET", &path, &[("authorization", auth.as_str())], None);
        let r = checked_reply("GET", &path, handle(&e.state, req).await);
        assert_eq!(
            (r.status, r.body["error"]["code"].as_str()),
            (400, Some(code)),
            "{path}: {}",
            r.body
        );
    }
    let req = request(
        "POST",
        SESSIONS_EXPORT,
        &[("authorization", auth.as_str())],
        None,
    );
    let r = checked_reply("POST", SESSIONS_EXPORT, handle(&e.state, req).await);
    assert_eq!(r.status, 405);
}

#[tokio::test]
async fn behind_api_gateway_the_export_goes_to_the_bucket_in_parts_and_the_answer_is_303_to_it() {
    let mut e = env().await;
    // About 18 MB: three parts, the first two at the part size.
    sessions(&e, e.org, TARGET, 30_000, &"a long title ".repeat(20)).await;
    let store = syncplane_tests::s3::bucket().await;
    e.state.transcripts = TranscriptsState {
        store: shared::archive::store::Store::S3(store.clone()),
        ..e.state.transcripts.clone()
    };
    let token = read_token(&e, e.org).await;
    let auth = format!("Bearer {token}");
    let req = request(
        "GET",
        SESSIONS_EXPORT,
        &[("authorization", auth.as_str())],
        None,
    );
    let r = checked_reply("GET", SESSIONS_EXPORT, handle(&e.state, req).await);
    assert_eq!(r.status, 303, "{}", r.body);
    let url = r.headers["location"].to_str().unwrap().to_owned();
    assert_eq!(r.data()["url"], json!(url));
    let got = reqwest::get(&url).await.unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(
        got.headers()["content-disposition"],
        format!("attachment; filename=\"sessions-{}.jsonl\"", e.org)
    );
    let body = got.bytes().await.unwrap();
    assert!(
        body.len() > shared::archive::store::s3::PART_BYTES,
        "{} bytes",
        body.len()
    );
    assert_eq!(r.data()["bytes"], json!(body.len()));
    assert_eq!(
        body.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        30_000
    );
    let key = url::Url::parse(&url).unwrap().path().to_owned();
    assert!(key.contains(&format!("/exports/{}/", e.org)), "{key}");
}

#[tokio::test]
async fn without_a_bucket_the_function_answers_an_export_whole_up_to_4_mib_and_413_past_it() {
    let e = env().await;
    sessions(&e, e.org, TARGET, 3, "small").await;
    let token = read_token(&e, e.org).await;
    let auth = format!("Bearer {token}");
    let req = request(
        "GET",
        SESSIONS_EXPORT,
        &[("authorization", auth.as_str())],
        None,
    );
    let resp = handle(&e.state, req).await;
    assert_eq!(resp.status(), 200);
    let lambda_http::Body::Binary(body) = resp.body() else {
        panic!("a binary body");
    };
    assert_eq!(
        body.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        3
    );

    sqlx::query(
        "INSERT INTO agent_sessions (org_id, compute_target_id, session_id, updated_at, agent, title, payload)
         SELECT $1, $2, 'big-' || i, now(), 'claude-code', repeat('x', 1000), '{}'::jsonb
           FROM generate_series(1, 6000) i",
    )
    .bind(e.org)
    .bind(TARGET)
    .execute(&e.db.pool)
    .await
    .unwrap();
    let req = request(
        "GET",
        SESSIONS_EXPORT,
        &[("authorization", auth.as_str())],
        None,
    );
    let r = checked_reply("GET", SESSIONS_EXPORT, handle(&e.state, req).await);
    assert_eq!(
        (r.status, r.body["error"]["code"].as_str()),
        (413, Some("export_too_large"))
    );
}

#[tokio::test]
async fn syncplane_export_writes_what_the_route_streams() {
    let e = env().await;
    sessions(&e, e.org, TARGET, 1_200, "cli").await;
    let a = lines(100, "cli");
    assert_eq!(e.upload(1, 0, &segment(&a)).await.status, 200);
    let token = read_token(&e, e.org).await;
    let (base, _world) = serve(&e).await;
    let vars = vec![
        ("DATABASE_URL".to_owned(), e.db.url().expose().to_owned()),
        (
            "TRANSCRIPT_DATA_DIR".to_owned(),
            e.dir.display().to_string(),
        ),
    ];
    let (code, csv) = syncplane_tests::cli::syncplane(
        &vars,
        &["export", "sessions", "--org", "acme", "--format", "csv"],
    )
    .await;
    assert_eq!(code, std::process::ExitCode::SUCCESS, "{csv}");
    let streamed = get(&base, &format!("{SESSIONS_EXPORT}?format=csv"), &token).await;
    assert_eq!(csv, streamed.text().await.unwrap());

    let (code, jsonl) = syncplane_tests::cli::syncplane(
        &vars,
        &[
            "export",
            "transcript",
            "--org",
            "acme",
            "--target",
            TARGET,
            "--session",
            SESSION,
        ],
    )
    .await;
    assert_eq!(code, std::process::ExitCode::SUCCESS, "{jsonl}");
    assert_eq!(jsonl.as_bytes(), a.as_slice());
    let (code, _) = syncplane_tests::cli::syncplane(
        &vars,
        &[
            "export",
            "transcript",
            "--org",
            "globex",
            "--target",
            TARGET,
            "--session",
            SESSION,
        ],
    )
    .await;
    assert_eq!(
        code,
        std::process::ExitCode::FAILURE,
        "another org has no such session"
    );
}

#[tokio::test]
async fn a_sessions_files_export_one_after_another_in_file_id_order_each_ending_with_a_line_break()
{
    let e = env().await;
    let main = lines(50, "main");
    assert_eq!(e.upload(1, 0, &segment(&main)).await.status, 200);
    // A subagent's file, sorting first, whose last line has no line break.
    let sub =
        b"{\"type\":\"assistant\",\"agent\":\"sub\"}\n{\"type\":\"user\",\"last\":true}".to_vec();
    let seg = segment(&sub);
    let intent = json!({"computeTargetId": TARGET, "sessionId": SESSION, "fileId": "s-1.agent-a.jsonl",
        "generation": 1, "offset": 0, "sourceBytes": sub.len(), "decodedBytes": sub.len(),
        "compressedBytes": seg.compressed.len(), "sha256": seg.sha256});
    let r = e.intent(&intent).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.data()["uploadId"].as_str().unwrap().to_owned();
    assert_eq!(e.put(&id, &seg.compressed).await.status, 200);
    assert_eq!(e.complete(&id).await.status, 200);
    let token = read_token(&e, e.org).await;
    let (base, _world) = serve(&e).await;
    let path = format!("{TRANSCRIPT_EXPORT}?computeTargetId={TARGET}&sessionId={SESSION}");

    let all = get(&base, &path, &token).await.bytes().await.unwrap();
    assert_eq!(
        all.as_ref(),
        [sub.as_slice(), b"\n", &main].concat(),
        "fileId order, a line break added"
    );
    let one = get(&base, &format!("{path}&fileId={FILE}"), &token).await;
    assert_eq!(
        one.bytes().await.unwrap().as_ref(),
        main.as_slice(),
        "fileId names one file"
    );
    let other = get(&base, &format!("{path}&fileId=s-1.agent-a.jsonl"), &token).await;
    assert_eq!(
        other.bytes().await.unwrap().as_ref(),
        [sub.as_slice(), b"\n"].concat()
    );
}

#[tokio::test]
async fn sessions_updated_at_the_same_instant_across_pages_are_each_exported_once() {
    let e = env().await;
    sqlx::query(
        "INSERT INTO agent_sessions (org_id, compute_target_id, session_id, updated_at, agent, payload)
         SELECT $1, $2, 'tie-' || i, timestamptz '2026-11-05T12:00:00Z', 'claude-code', '{}'::jsonb
           FROM generate_series(1, 2500) i",
    )
    .bind(e.org)
    .bind(TARGET)
    .execute(&e.db.pool)
    .await
    .unwrap();
    let token = read_token(&e, e.org).await;
    let (base, _world) = serve(&e).await;
    let text = get(&base, SESSIONS_EXPORT, &token)
        .await
        .text()
        .await
        .unwrap();
    let ids = session_ids(&text);
    let unique: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(
        (ids.len(), unique.len()),
        (2500, 2500),
        "every tied session once, across three pages"
    );
}

#[tokio::test]
async fn an_empty_export_to_the_bucket_is_an_empty_object() {
    let mut e = env().await;
    let store = syncplane_tests::s3::bucket().await;
    e.state.transcripts = TranscriptsState {
        store: shared::archive::store::Store::S3(store),
        ..e.state.transcripts.clone()
    };
    let token = read_token(&e, e.org).await;
    let auth = format!("Bearer {token}");
    let req = request(
        "GET",
        SESSIONS_EXPORT,
        &[
            ("authorization", auth.as_str()),
            ("accept", "application/json"),
        ],
        None,
    );
    let r = checked_reply("GET", SESSIONS_EXPORT, handle(&e.state, req).await);
    assert_eq!(
        r.status, 200,
        "asked for JSON: the link in the envelope, {}",
        r.body
    );
    assert_eq!(r.data()["bytes"], json!(0));
    let got = reqwest::get(r.data()["url"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
    assert!(got.bytes().await.unwrap().is_empty());
}

#[tokio::test]
async fn exports_are_rate_limited_per_read_token_apart_from_its_searches() {
    let mut e = env().await;
    e.state.transcripts.export_rate_limit_per_minute = 2;
    sessions(&e, e.org, TARGET, 3, "small").await;
    let token = read_token(&e, e.org).await;
    let other = read_token(&e, e.org).await;
    // The count is per calendar minute of the database's clock: all of it inside one.
    syncplane_tests::db::inside_one_minute_window(&e.db.pool, std::time::Duration::from_secs(20))
        .await;
    let ask = |path: &str, token: &str| {
        let auth = format!("Bearer {token}");
        request("GET", path, &[("authorization", auth.as_str())], None)
    };
    for _ in 0..2 {
        let resp = handle(&e.state, ask(SESSIONS_EXPORT, &token)).await;
        assert_eq!(resp.status(), 200);
    }
    // The third export of the minute, of either kind.
    let transcript = format!("{TRANSCRIPT_EXPORT}?computeTargetId={TARGET}&sessionId={SESSION}");
    for path in [SESSIONS_EXPORT, transcript.as_str()] {
        let resp = handle(&e.state, ask(path, &token)).await;
        assert!(resp.headers().contains_key("retry-after"), "{path}");
        let r = checked_reply("GET", path, resp);
        assert_eq!(
            (r.status, r.body["error"]["code"].as_str()),
            (429, Some("rate_limited")),
            "{path}: {}",
            r.body
        );
    }
    let resp = handle(&e.state, ask(SESSIONS_EXPORT, &other)).await;
    assert_eq!(resp.status(), 200, "per token");
    let search = "/api/agent-sessions/transcripts/search?q=tls";
    let resp = handle(&e.state, ask(search, &token)).await;
    assert_eq!(resp.status(), 200, "its searches are counted apart");
}
