//! The web console in a real browser (issue 22): headless Chromium through chromedriver
//! (`syncplane_tests::browser`) against the whole `syncplane serve` router on a loopback port, on
//! a seeded world: synced repositories (one failed), a hostile document, an organization with
//! sessions and an archived transcript. Sign-in with each token, search and paging, the failed
//! repository, inert document HTML, the sync button, sessions and insights, axe-core on every
//! page, screenshots to `syncplane_tests::browser::screens_dir`.
//!
//! Without Chromium and chromedriver these tests fail, saying to run
//! `bash scripts/tools.sh --browser`.

mod accessibility;
mod documents;
mod sessions;
mod signin;
mod transcripts;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use sha2::{Digest, Sha256};
use shared::accounts::provision::{self, NewOrg};
use shared::accounts::tokens;
use shared::archive::key::SegmentKey;
use shared::ingest::IngestState;
use shared::ingest::transcripts::TranscriptsState;
use syncplane_cli::serve::{Functions, router};
use syncplane_tests::browser::Browser;

use crate::engine::World;
use crate::functions::support::state;

pub use crate::functions::support::{READ_TOKEN, TOKEN};

/// The failed repository's stable code and message.
pub const FAILED_CODE: &str = "repository_not_found";
pub const FAILED_MESSAGE: &str = "GitHub answered 404 for acme/broken";
/// The session with an archived transcript, and its computer.
pub const SESSION: &str = "s-1";
pub const TARGET: &str = "laptop-1";
/// Lines in that transcript (the console pages by 100).
pub const TURNS: usize = 130;
/// Documents matching [`PAGED_WORD`] (the search pages by 20).
pub const PAGED: usize = 24;
pub const PAGED_WORD: &str = "kestrel";

pub const HOSTILE: &str = "---\ntitle: Hostile\n---\n# Hostile\n\n<script>window.ran = 1</script>\n\n<img src=\"https://evil.example/x.png\" onerror=\"window.ran = 1\">\n\n[click](javascript:window.ran=1) <a href=\"javascript:void(window.ran=1)\">raw</a>\n\n<iframe src=\"https://evil.example/\"></iframe>\n\n<div style=\"background:url(https://evil.example/y)\" onmouseover=\"window.ran=1\">hover</div>\n\n<svg onload=\"window.ran=1\"><script>window.ran=1</script></svg>\n\n<form action=\"https://evil.example/\"><button formaction=\"javascript:window.ran=1\">go</button></form>\n\n<link rel=\"stylesheet\" href=\"https://evil.example/s.css\">\n\n## Next step\n\nSee [the intro](intro.md) and [below](#next-step).\n\n![diagram](https://evil.example/d.png)\n";

pub const MDX: &str = "import Tabs from '@site/tabs'\n\n# Mdx page\n\n<Tabs onClick={() => window.ran = 1}>inside</Tabs>\n\nexport const x = () => { window.ran = 1 }\n\n<script>{`window.ran = 1`}</script>\n";

/// A document of images: two of the repository (a PNG, an SVG with a script), one missing, one
/// too large, one not an image, one on another origin, and a raw `<img>`.
pub const GALLERY: &str = "# Gallery\n\n![A diagram](img/diagram.png)\n\n![The logo](../assets/logo.svg)\n\n![Nothing here](img/none.png)\n\n![Too big](img/huge.png)\n\n![Not an image](img/fake.png)\n\n![Remote](https://evil.example/x.png)\n\n<img src=\"./img/diagram.png\" alt=\"raw diagram\" onerror=\"window.ran = 1\">\n";

const GUIDE: &str = "---\ntitle: Deploying the handbook\nowner: docs-team\ntags: [ops, deploy]\n---\n# Deploying the handbook\n\nHow to deploy the service to production safely.\n\n## Before you deploy\n\nCheck the **checklist** and the `release` notes.\n\n```sh\nbash scripts/deploy.sh\n```\n\n## Rolling back\n\n| step | what |\n|---|---|\n| 1 | revert |\n\n> Deploy on weekdays only.\n";

/// The world, the transcript store and the server on loopback.
pub struct Site {
    _w: World,
    pub base: String,
    pub org_token: String,
    _store: PathBuf,
}

impl Site {
    pub async fn new() -> Self {
        syncplane_tests::init_logging();
        let w = World::new().await;
        let mut files: Vec<(String, String)> = vec![
            (
                "README.md".into(),
                "# Handbook\n\nStart with [the guide](docs/guide.md).\n".into(),
            ),
            (
                ".github/CODEOWNERS".into(),
                "docs/ @acme/docs-team\n".into(),
            ),
            ("docs/guide.md".into(), GUIDE.into()),
            ("docs/hostile.md".into(), HOSTILE.into()),
            ("docs/page.mdx".into(), MDX.into()),
        ];
        for i in 0..PAGED {
            files.push((
                format!("docs/birds/b{i:02}.md"),
                format!("# Bird {i:02}\n\nA {PAGED_WORD} hovers, note {i}.\n"),
            ));
        }
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        w.repo("acme/handbook", &files);
        w.sync("acme/handbook").await.expect("sync acme/handbook");
        w.repo("acme/broken", &[("docs/a.md", "# A\n")]);
        w.sync("acme/broken").await.expect("sync acme/broken");
        let diagram = syncplane_tests::images::png(24, 16, [200, 30, 30]);
        let huge = syncplane_tests::images::oversized_png(5 * 1024 * 1024 + 1);
        w.repo_bytes(
            "acme/pictures",
            &[
                ("README.md", b"# Pictures\n\n![The logo](assets/logo.svg)\n"),
                ("docs/gallery.md", GALLERY.as_bytes()),
                ("docs/img/diagram.png", &diagram),
                ("docs/img/huge.png", &huge),
                ("docs/img/fake.png", b"not really a png\n"),
                (
                    "assets/logo.svg",
                    syncplane_tests::images::HOSTILE_SVG.as_bytes(),
                ),
            ],
        );
        w.sync("acme/pictures").await.expect("sync acme/pictures");
        let store = syncplane_tests::transcripts::temp_dir();
        let org_token = seed_org(&w, &store).await;
        let ingest = IngestState {
            pool: w.db.pool.clone(),
            rate_limit_per_minute: 1_000_000,
            admission: shared::ingest::Admission::unlimited(),
            transcripts: TranscriptsState::direct(store.clone()),
        };
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = router(Arc::new(Functions::new(state(&w), ingest)));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        finished_run(&base).await;
        // As the engine records a failure: status, stable code and message together.
        sqlx::query(
            "UPDATE repos SET sync_status = 'error', sync_error_code = $1, sync_error = $2
             WHERE owner = 'acme' AND name = 'broken'",
        )
        .bind(FAILED_CODE)
        .bind(FAILED_MESSAGE)
        .execute(&w.db.pool)
        .await
        .unwrap();

        Self {
            _w: w,
            base,
            org_token,
            _store: store,
        }
    }

    /// A browser on the console's sign-in page.
    pub async fn browser(&self) -> Browser {
        let b = Browser::start().await;
        b.open(&format!("{}/#/signin", self.base)).await;
        b.find("#sp-token").await;
        b
    }

    /// A browser signed in with `token` (and the org's token when `org`), on the search page.
    pub async fn signed_in(&self, token: &str, org: bool) -> Browser {
        let b = self.browser().await;
        sign_in(&b, token, if org { Some(&self.org_token) } else { None }).await;
        b.wait_js("document.querySelector('main').dataset.ready === 'search'")
            .await;
        b
    }
}

/// One manual sync run of every repository, through `POST /api/sync`, waited for: the Runs
/// page has a row.
async fn finished_run(base: &str) {
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{base}/api/sync"))
        .bearer_auth(TOKEN)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap_or_default());
    for _ in 0..200 {
        let runs: serde_json::Value = http
            .get(format!("{base}/api/sync/runs"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let runs = &runs["data"]["runs"];
        if runs
            .as_array()
            .is_some_and(|r| !r.is_empty() && r.iter().all(|r| !r["finishedAt"].is_null()))
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the manual run did not finish within 10 s");
}

/// Fill in the sign-in form and submit it.
pub async fn sign_in(b: &Browser, token: &str, org: Option<&str>) {
    b.type_into("#sp-token", token).await;
    if let Some(org) = org {
        b.type_into("#sp-org", org).await;
    }
    b.click("form.signin button[type=submit]").await;
}

/// Go to `hash` in the page (no reload) and wait until its page has rendered, loads included.
pub async fn go(b: &Browser, hash: &str) {
    let hash = serde_json::to_string(hash).unwrap();
    b.js(&format!(
        "document.querySelector('main').dataset.ready = ''; location.hash = {hash}; return true;"
    ))
    .await;
    b.wait_js("document.querySelector('main').dataset.ready")
        .await;
}

/// How many elements match `css`.
pub async fn count(b: &Browser, css: &str) -> usize {
    let css = serde_json::to_string(css).unwrap();
    b.js(&format!("return document.querySelectorAll({css}).length;"))
        .await
        .as_u64()
        .unwrap_or(0) as usize
}

/// Org "acme" (opted in to the frustration signal) with a user on [`TARGET`] and another on
/// "laptop-2", sessions over the last days, and [`SESSION`]'s transcript archived as one segment
/// of [`TURNS`] JSON lines. Returns the org's read token.
async fn seed_org(w: &World, store: &std::path::Path) -> String {
    let pool = &w.db.pool;
    let org = provision::create_org(
        pool,
        &NewOrg {
            name: "acme",
            sync_policy: Some(true),
            feature_gate: true,
            frustration_opt_in: true,
        },
    )
    .await
    .unwrap();
    for (user, target) in [("ada", TARGET), ("bob", "laptop-2")] {
        let user = provision::create_user(pool, org, user).await.unwrap();
        provision::create_compute_target(pool, user, target)
            .await
            .unwrap();
    }
    let sessions = [
        (
            TARGET,
            SESSION,
            "claude-opus-4",
            "Fix the deploy script",
            0,
            Some("git@github.com:acme/handbook.git"),
            None,
        ),
        (
            "laptop-2",
            "s-2",
            "gpt-5",
            "Write the rollback guide",
            1,
            Some("git@github.com:acme/handbook.git"),
            Some(json!({"score": 0.7, "signals": ["repeated_retry"]})),
        ),
        (
            TARGET,
            "s-3",
            "claude-opus-4",
            "Triage flaky test",
            3,
            Some("git@github.com:acme/api.git"),
            None,
        ),
        (
            "laptop-2",
            "s-4",
            "claude-sonnet-4",
            "Explain the sync engine",
            6,
            None,
            None,
        ),
    ];
    for (target, id, model, title, days_ago, repo, frustration) in sessions {
        sqlx::query(
            "INSERT INTO agent_sessions (org_id, compute_target_id, session_id, updated_at, agent,
                 model, title, started_at, input_tokens, output_tokens, repository_remote_url,
                 frustration, payload)
             VALUES ($1, $2, $3, now() - make_interval(days => $4), 'claude-code', $5, $6,
                     now() - make_interval(days => $4), $7, $8, $9, $10, '{}')",
        )
        .bind(org)
        .bind(target)
        .bind(id)
        .bind(days_ago)
        .bind(model)
        .bind(title)
        .bind(12_000 + 1_000 * days_ago as i64)
        .bind(3_000 + 500 * days_ago as i64)
        .bind(repo)
        .bind(frustration)
        .execute(pool)
        .await
        .unwrap();
    }
    archive_transcript(w, store, org).await;
    tokens::issue_read_token(pool, org, Some("console"))
        .await
        .unwrap()
        .token
}

/// The turn whose prompt is [`HOSTILE_PROMPT`].
pub const HOSTILE_TURN: usize = 3;
/// Markup, a `javascript:` link and bidi controls in a prompt: shown as text, never obeyed.
pub const HOSTILE_PROMPT: &str = "Turn 3: hostile deploy <script>window.ran=1</script> [x](javascript:window.ran=1) <a href=\"javascript:window.ran=1\">go</a> token [REDACTED:github-token] \u{202E}gnp.exe";

/// One transcript line per turn: user text, assistant text with a tool call, tool results.
pub fn transcript() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..TURNS {
        let line = match i % 3 {
            0 if i == HOSTILE_TURN => {
                json!({"type": "user", "message": {"role": "user", "content": HOSTILE_PROMPT}})
            }
            0 => {
                json!({"type": "user", "message": {"role": "user", "content": format!("Turn {i}: please deploy <b>now</b>")}})
            }
            1 => json!({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": format!("Turn {i}: running the deploy script")},
                {"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": "bash scripts/deploy.sh"}}
            ]}}),
            _ => json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("t{}", i - 1), "content": "deployed <img src=x onerror=window.ran=1>"}
            ]}}),
        };
        out.extend_from_slice(line.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// [`transcript`] archived as a verified complete leaves it: the file and segment rows, the
/// zstd object under its key in the direct store.
async fn archive_transcript(w: &World, store: &std::path::Path, org: i64) {
    let decoded = transcript();
    let file_id = "main.jsonl";
    let file_row: i64 = sqlx::query_scalar(
        "INSERT INTO transcript_files (org_id, compute_target_id, session_id, file_id,
                                       generation, acked_offset, decoded_bytes)
         VALUES ($1, $2, $3, $4, 1, $5, $5) RETURNING id",
    )
    .bind(org)
    .bind(TARGET)
    .bind(SESSION)
    .bind(file_id)
    .bind(decoded.len() as i64)
    .fetch_one(&w.db.pool)
    .await
    .unwrap();
    let compressed = zstd::encode_all(&decoded[..], 3).unwrap();
    let sha: [u8; 32] = Sha256::digest(&compressed).into();
    let key = SegmentKey {
        file: shared::archive::files::FileName {
            org_id: org,
            compute_target_id: TARGET,
            session_id: SESSION,
            file_id,
        },
        generation: 1,
        offset: 0,
        sha256: &sha,
    }
    .key();
    let path = store.join(&key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &compressed).unwrap();
    sqlx::query(
        "INSERT INTO transcript_segments (file_row, generation, start_offset, source_bytes,
                                          decoded_bytes, compressed_bytes, sha256, object_key)
         VALUES ($1, 1, 0, $2, $2, $3, $4, $5)",
    )
    .bind(file_row)
    .bind(decoded.len() as i64)
    .bind(compressed.len() as i64)
    .bind(sha.as_slice())
    .bind(&key)
    .execute(&w.db.pool)
    .await
    .unwrap();
    // Queued as a recording queues it, then indexed for search.
    sqlx::query(
        "INSERT INTO transcript_index_queue (file_row, generation, segment_offset, first_line)
         VALUES ($1, 1, 0, 1)",
    )
    .bind(file_row)
    .execute(&w.db.pool)
    .await
    .unwrap();
    let store = shared::archive::store::Store::Direct(shared::archive::store::fs::FsStore {
        root: store.to_path_buf(),
    });
    let done = shared::archive::search::index::drain(&w.db.pool, &store, 10)
        .await
        .unwrap();
    assert_eq!(done.segments, 1);
}
