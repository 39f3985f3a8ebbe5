//! The CLI's exit codes, from the real binary: 2 when sessions were set aside, 3 when the lane
//! paused (the token was refused), 4 when it parked (the org's sync policy is off), each with a
//! line on stderr saying what to do; 0 when everything was delivered. Issue 21: 5 when the
//! server does not answer, 6 when the target is refused for `--wait`, 7 when `--url` is not the
//! ingest function, 1 for a usage error; the final JSON line says what ended the push, what was
//! set aside and until when, and how many files were not sessions; `--retry-set-aside`; the
//! example store.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::json;
use shared::accounts::provision;

use super::support::*;

/// `syncplane-agent push` over `store` with `token`, waited for off the runtime (the server
/// answering it runs on this test's runtime).
async fn push(env: &Env, store: &Path, token: &str) -> (Option<i32>, serde_json::Value, String) {
    run(push_command(env, store, token, 50)).await
}

/// Run `cmd` to its end off the runtime: its exit code, its stdout as JSON, its stderr.
async fn run(cmd: Command) -> (Option<i32>, serde_json::Value, String) {
    let (code, stdout, stderr) = raw(cmd).await;
    (
        code,
        serde_json::from_str(&stdout).unwrap_or_default(),
        stderr,
    )
}

/// Run `cmd` to its end off the runtime: its exit code, stdout and stderr as text.
async fn raw(mut cmd: Command) -> (Option<i32>, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap();
    (
        status.code(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_exits_2_when_sessions_were_set_aside_3_when_paused_and_4_when_parked() {
    let env = env().await;

    // Set aside: a header over the plain-JSON wire cap cannot be chunked (deterministic).
    env.server.advertise_gzip(false);
    let mut big = session("big", 1, "r1", 0);
    big.title = Some("x".repeat(300_000));
    let aside = store_dir(&env, "aside", &[big, session("ok", 2, "r1", 2)]);
    let (code, summary, stderr) = push(&env, &aside, &env.token).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(summary["deadLetters"], 1, "{summary}");
    assert_eq!(summary["counts"]["synced"], 1, "{summary}");
    assert!(stderr.contains("set aside"), "{stderr}");
    assert_eq!(summary["status"], "set_aside", "{summary}");
    env.server.advertise_gzip(true);

    // Paused: the token is refused at hello.
    let paused = store_dir(&env, "paused", &[session("p1", 1, "r1", 1)]);
    let (code, summary, stderr) = push(&env, &paused, "spd_not-a-real-token").await;
    assert_eq!(code, Some(3), "{stderr}");
    assert_eq!(summary["status"], "token_refused", "{summary}");
    assert_eq!(
        summary["counts"],
        json!({}),
        "no session was concerned: {summary}"
    );
    assert!(stderr.contains("--token"), "{stderr}");

    // Parked: the org turned agent session sync off.
    provision::set_sync_policy(&env.db.pool, env.org, Some(false))
        .await
        .unwrap();
    let parked = store_dir(&env, "parked", &[session("q1", 1, "r1", 1)]);
    let (code, summary, stderr) = push(&env, &parked, &env.token).await;
    assert_eq!(code, Some(4), "{stderr}");
    assert_eq!(summary["status"], "feature_disabled", "{summary}");
    assert!(stderr.contains("feature_disabled"), "{stderr}");

    // Nothing set aside, nothing refused: 0.
    provision::set_sync_policy(&env.db.pool, env.org, Some(true))
        .await
        .unwrap();
    let fine = store_dir(&env, "fine", &[session("f1", 1, "r1", 1)]);
    let (code, summary, stderr) = push(&env, &fine, &env.token).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(summary["deadLetters"], 0, "{summary}");
    assert_eq!(summary["status"], "delivered", "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_final_line_says_what_ended_the_push_lists_the_set_aside_ids_and_counts_files_that_are_not_sessions()
 {
    let env = env().await;
    env.server.advertise_gzip(false);
    let mut big = session("big", 1, "r1", 0);
    big.title = Some("x".repeat(300_000));
    let store = store_dir(&env, "store", &[big, session("ok", 2, "r1", 2)]);
    std::fs::write(store.join("notes.json"), "{\"sessionId\": \"n1\",\n  oops").unwrap();
    std::fs::write(store.join("list.json"), "[1, 2]").unwrap();
    let (code, summary, stderr) = push(&env, &store, &env.token).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(summary["status"], "set_aside", "{summary}");
    assert_eq!(
        summary["setAside"],
        json!([{"sessionId": "big", "reason": "oversize", "retryAt": null}])
    );
    assert_eq!(summary["skippedFiles"], 2, "{summary}");
    assert_eq!(summary["counts"], json!({"oversize": 1, "synced": 1}));
    // Each file that is not a session is warned about once, with where its parse failed.
    for file in ["notes.json", "list.json"] {
        let lines: Vec<_> = stderr.lines().filter(|l| l.contains(file)).collect();
        assert_eq!(lines.len(), 1, "{file}: {stderr}");
        assert!(
            lines[0].contains("line "),
            "the parse position: {}",
            lines[0]
        );
    }
    assert!(lines_with(&stderr, "notes.json")[0].contains("line 2 column"));
    assert!(
        stderr.contains("big (oversize, retried by the next push)"),
        "{stderr}"
    );
}

fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_url_is_said_on_stderr_as_the_push_waits_and_ends_it_with_5_after_the_wait()
{
    let env = env().await;
    let store = store_dir(&env, "store", &[session("s1", 1, "r1", 1)]);
    let url = closed_url().await;
    let mut cmd = push_command_to(&store, &env.token, 50, &url, TARGET);
    cmd.args(["--wait", "1500ms"]).env("RUST_LOG", "info");
    let started = Instant::now();
    let (code, summary, stderr) = run(cmd).await;
    assert_eq!(code, Some(5), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "ended by --wait"
    );
    let hello = format!("{url}/api/agent-sessions/hello");
    let said = lines_with(&stderr, "syncplane-agent: waiting: ");
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains(&format!(
            "GET {hello}: transport_error, attempt 1; next try at "
        )),
        "the URL, the outcome, the attempt, the next try: {}",
        said[0]
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!("--url {url}")) && last.contains("transport_error"),
        "{last}"
    );
    assert_eq!(summary["status"], "unreachable", "{summary}");
    assert_eq!(summary["waitingFor"]["url"], hello.as_str());
    assert_eq!(summary["waitingFor"]["attempts"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_the_token_does_not_own_ends_the_push_with_6_after_the_wait() {
    let env = env().await;
    let other = provision::create_user(&env.db.pool, env.org, "grace")
        .await
        .unwrap();
    provision::create_compute_target(&env.db.pool, other, "their-laptop")
        .await
        .unwrap();
    let store = store_dir(&env, "store", &[session("s1", 1, "r1", 1)]);
    let mut cmd = push_command_to(&store, &env.token, 50, &env.server.url(), "their-laptop");
    cmd.args(["--wait", "1s"]);
    let started = Instant::now();
    let (code, summary, stderr) = run(cmd).await;
    assert_eq!(code, Some(6), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30));
    let said = lines_with(&stderr, "syncplane-agent: waiting: ");
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("POST ") && said[0].contains("target_not_owned (HTTP 403), attempt 1"),
        "{}",
        said[0]
    );
    assert!(stderr.contains("--target their-laptop"), "{stderr}");
    assert_eq!(summary["status"], "target_not_owned", "{summary}");
    assert!(summary["setAside"].as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_on_hello_and_sync_ends_the_push_with_7_and_one_line_naming_the_url_and_the_watch_layout()
 {
    let env = env().await;
    let (url, server) = not_found_server().await;
    let store = store_dir(&env, "store", &[session("s1", 1, "r1", 1)]);
    let (code, summary, stderr) = run(push_command_to(&store, &env.token, 50, &url, TARGET)).await;
    server.abort();
    assert_eq!(code, Some(7), "{stderr}");
    let lines: Vec<_> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].contains(&format!("--url {url} ")), "{stderr}");
    assert!(
        lines[0].contains("--url http://127.0.0.1:9000/lambda-url/ingest"),
        "{stderr}"
    );
    assert_eq!(summary["status"], "not_ingest", "{summary}");
}

#[tokio::test]
async fn a_usage_error_exits_1_and_help_lists_the_exit_codes_and_the_store_format() {
    for args in [
        &["push", "--bogus"][..],
        &["push"],
        &[
            "push", "--store", "x", "--url", "http://h", "--target", "t", "--token", "spd_x",
            "--wait", "soon",
        ],
        &["transcripts", "push", "--bogus"],
        &["nope"],
    ] {
        let mut cmd = agent_command();
        cmd.args(args);
        let (code, _, stderr) = raw(cmd).await;
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(!stderr.is_empty(), "{args:?}");
    }
    let mut cmd = agent_command();
    cmd.args(["push", "--help"]);
    let (code, help, _) = raw(cmd).await;
    assert_eq!(code, Some(0));
    for needle in [
        "Exit codes:",
        "2  sessions set aside",
        "5  the server did not answer hello",
        "7  --url is not the ingest function",
        "examples/sessions",
        "tokenSeries",
        "--retry-set-aside",
        "--wait",
    ] {
        assert!(
            help.contains(needle),
            "push --help names {needle:?}:\n{help}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_says_when_set_aside_sessions_come_back_and_retry_set_aside_sends_them_now() {
    use syncplane_agent::dead_letter::Class;
    use syncplane_agent::store::SessionStore;
    let env = env().await;
    let sessions = [session("s1", 1, "r1", 2)];
    let store = store_dir(&env, "store", &sessions);
    let state = env.dir.0.join("cli-state.db");
    // An earlier push set s1 aside for 5 minutes (the transient window).
    let retry_at = chrono::Utc::now().timestamp_millis() + 5 * 60 * 1000;
    {
        let mut s = syncplane_agent::State::open(&state, "default", TARGET).unwrap();
        let listed = syncplane_agent::JsonDirStore::new(&store)
            .listing(None)
            .unwrap();
        s.seed(&listed.sessions, true).unwrap();
        let due = s.due(0, 10, true).unwrap();
        s.dead_letter(&due[0], Class::Transient, "validation", 0, Some(retry_at))
            .unwrap();
    }
    let with_state = |extra: &[&str]| {
        let mut cmd = push_command(&env, &store, &env.token, 50);
        cmd.arg("--state").arg(&state).args(extra);
        cmd
    };
    let (code, summary, stderr) = run(with_state(&[])).await;
    assert_eq!(code, Some(2), "{stderr}");
    let when = syncplane_agent::clock::utc_text(retry_at);
    assert!(
        stderr.contains(&format!("s1 (validation, retried from {when})")),
        "says when: {stderr}"
    );
    assert!(stderr.contains("--retry-set-aside"), "{stderr}");
    assert_eq!(summary["setAside"][0]["retryAt"], when.as_str());
    assert!(
        env.server.posts().is_empty(),
        "nothing sent inside the window"
    );

    let (code, summary, stderr) = run(with_state(&["--retry-set-aside"])).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(summary["status"], "delivered", "{summary}");
    assert_arrived(&env, &sessions).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_store_arrives_whole_with_its_local_fields_stripped() {
    let env = env().await;
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions");
    let mut sessions: Vec<syncplane_agent::LocalSession> = Vec::new();
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            sessions.push(serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap());
        }
    }
    assert!(sessions.len() >= 2, "a small store");
    // The example carries what the lane must strip, so the test can fail.
    assert!(sessions.iter().any(|s| s.token_series.is_some()));
    let events = sessions.iter().flat_map(|s| s.events.iter().flatten());
    assert!(events.clone().any(|e| e.summary.is_some()));
    assert!(events.clone().any(|e| e.data.is_some()));

    let mut cmd = push_command(&env, &examples, &env.token, 50);
    cmd.arg("--state").arg(env.dir.0.join("examples.db"));
    let (code, summary, stderr) = run(cmd).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(summary["skippedFiles"], 0, "every *.json is a session");
    assert_arrived(&env, &sessions).await;
    let posts = env.server.posts();
    assert!(!posts.is_empty());
    for p in &posts {
        assert!(p.local_fields.is_empty(), "sent: {:?}", p.local_fields);
    }
}
