//! Reading the transcript archive (docs/transcript-wire-contract.md "Reading"), read tokens and
//! the org's retention, with real Postgres and the direct transport's store in a temp dir. The
//! archive is filled here the way a verified complete leaves it: rows in `transcript_files` and
//! `transcript_segments`, zstd objects under the contract's key, written at `<root>/<key>`.
//!
//! Every JSON answer is checked against openapi.json.

use std::path::PathBuf;
use std::process::ExitCode;

use base64::Engine;
use lambda_http::{Body, Request, Response};
use serde_json::Value;
use sha2::{Digest, Sha256};
use shared::accounts::provision::{self, NewOrg};
use shared::accounts::tokens::{self, TokenKind};
use shared::archive::retention;
use shared::archive::store::Store;
use shared::archive::store::fs::FsStore;
use shared::http::result_response;
use shared::ingest::transcripts::read::{self, Reading};
use syncplane_contract::transcripts::{MAX_LINES_FILE_BYTES, MAX_LINES_PAGE_BYTES, path};
use syncplane_tests::apigw::{Reply, checked_reply, request};
use syncplane_tests::db::TestDb;

const TARGET: &str = "laptop-1";
const OTHER_TARGET: &str = "laptop-2";
const SESSION: &str = "s-1";

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let p = std::env::temp_dir().join(format!("transcripts-read-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Two orgs, each with a user and a target; a read token for the first.
struct Archive {
    db: TestDb,
    root: TempDir,
    store: Store,
    org: i64,
    other_org: i64,
    token: String,
    token_id: i64,
}

fn org(name: &str) -> NewOrg<'_> {
    NewOrg {
        name,
        sync_policy: Some(true),
        feature_gate: true,
        frustration_opt_in: false,
    }
}

/// What one segment is: its decoded (redacted) bytes, as the client staged them.
struct Stored {
    offset: i64,
    decoded: Vec<u8>,
    sha256: String,
    key: String,
}

impl Archive {
    async fn new() -> Self {
        let db = TestDb::new().await;
        let org_id = provision::create_org(&db.pool, &org("acme")).await.unwrap();
        let other_org = provision::create_org(&db.pool, &org("globex"))
            .await
            .unwrap();
        for (o, target) in [(org_id, TARGET), (other_org, OTHER_TARGET)] {
            let user = provision::create_user(&db.pool, o, "ada").await.unwrap();
            provision::create_compute_target(&db.pool, user, target)
                .await
                .unwrap();
        }
        let issued = tokens::issue_read_token(&db.pool, org_id, Some("web"))
            .await
            .unwrap();
        let root = TempDir::new();
        let store = Store::Direct(FsStore {
            root: root.0.clone(),
        });
        Self {
            db,
            root,
            store,
            org: org_id,
            other_org,
            token: issued.token,
            token_id: issued.id,
        }
    }

    fn reading(&self) -> Reading<'_> {
        Reading {
            pool: &self.db.pool,
            store: &self.store,
            url_ttl: std::time::Duration::from_secs(300),
        }
    }

    /// A file of `org`'s session at `generation`, its segments (each a run of whole lines)
    /// archived: objects under their keys, rows as a verified complete records them. Returns the
    /// segments of this generation.
    async fn archive(
        &self,
        org: i64,
        target: &str,
        file_id: &str,
        generation: i32,
        segments: &[Vec<u8>],
    ) -> Vec<Stored> {
        let total: usize = segments.iter().map(Vec::len).sum();
        let file_row: i64 = sqlx::query_scalar(
            "INSERT INTO transcript_files (org_id, compute_target_id, session_id, file_id,
                                           generation, acked_offset, decoded_bytes)
             VALUES ($1, $2, $3, $4, $5, $6, $6)
             ON CONFLICT (compute_target_id, session_id, file_id) DO UPDATE
                SET generation = EXCLUDED.generation, acked_offset = EXCLUDED.acked_offset,
                    decoded_bytes = EXCLUDED.decoded_bytes
             RETURNING id",
        )
        .bind(org)
        .bind(target)
        .bind(SESSION)
        .bind(file_id)
        .bind(generation)
        .bind(total as i64)
        .fetch_one(&self.db.pool)
        .await
        .unwrap();
        let mut offset = 0i64;
        let mut stored = Vec::new();
        for decoded in segments {
            let s = self
                .segment(org, target, file_row, file_id, generation, offset, decoded)
                .await;
            offset += decoded.len() as i64;
            stored.push(s);
        }
        stored
    }

    #[allow(clippy::too_many_arguments)]
    async fn segment(
        &self,
        org: i64,
        target: &str,
        file_row: i64,
        file_id: &str,
        generation: i32,
        offset: i64,
        decoded: &[u8],
    ) -> Stored {
        let compressed = zstd::encode_all(decoded, 3).unwrap();
        let sha: [u8; 32] = Sha256::digest(&compressed).into();
        let sha256 = hex::encode(sha);
        let key = object_key(org, target, file_id, generation, offset, &sha256);
        let path = self.root.0.join(&key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &compressed).unwrap();
        sqlx::query(
            "INSERT INTO transcript_segments (file_row, generation, start_offset, source_bytes,
                                              decoded_bytes, compressed_bytes, sha256, object_key)
             VALUES ($1, $2, $3, $4, $4, $5, $6, $7)",
        )
        .bind(file_row)
        .bind(generation)
        .bind(offset)
        .bind(decoded.len() as i64)
        .bind(compressed.len() as i64)
        .bind(sha.as_slice())
        .bind(&key)
        .execute(&self.db.pool)
        .await
        .unwrap();
        Stored {
            offset,
            decoded: decoded.to_vec(),
            sha256,
            key,
        }
    }

    fn object_exists(&self, key: &str) -> bool {
        self.root.0.join(key).exists()
    }

    async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(&self.db.pool)
            .await
            .unwrap()
    }

    fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// `GET path_and_query` with `auth` on a read route; the answer, checked against openapi.json
    /// (the segment route's bytes: status and body as they are).
    async fn get_with(&self, auth: Option<&str>, path_and_query: &str) -> Reply {
        let resp = self.raw(auth, path_and_query).await;
        checked_reply("GET", path_and_query, resp)
    }

    async fn get(&self, path_and_query: &str) -> Reply {
        let auth = self.bearer();
        self.get_with(Some(&auth), path_and_query).await
    }

    async fn raw(&self, auth: Option<&str>, path_and_query: &str) -> Response<Body> {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
        let req = request("GET", path_and_query, &headers, None);
        self.route(req).await
    }

    /// The read routes as the ingest function routes them (by the path without a stage).
    async fn route(&self, req: Request) -> Response<Body> {
        let r = self.reading();
        let route = shared::http::route_path(&req).to_owned();
        match route.as_str() {
            path::FILES => result_response(&read::files_in(&r, &req).await),
            path::LINES => result_response(&read::lines_in(&r, &req).await),
            path::SEGMENT => match read::segment_in(&r, &req).await {
                Ok(resp) => resp,
                Err(e) => shared::http::error_response(&e),
            },
            other => panic!("not a read route: {other}"),
        }
    }
}

/// The contract's key: `transcripts/{orgId}/{targetKey}/{fileId}/{generation}/{offset:020}-{sha256}.zst`.
fn object_key(
    org: i64,
    target: &str,
    file_id: &str,
    generation: i32,
    offset: i64,
    sha: &str,
) -> String {
    let mut h = Sha256::new();
    h.update(target.as_bytes());
    h.update([0u8]);
    h.update(SESSION.as_bytes());
    let target_key = &hex::encode(h.finalize())[..32];
    format!("transcripts/{org}/{target_key}/{file_id}/{generation}/{offset:020}-{sha}.zst")
}

/// `n` JSON Lines, numbered from `from`, each `pad` bytes of text or more.
fn jsonl(from: usize, n: usize, pad: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in from..from + n {
        let line = serde_json::json!({"seq": i, "text": "x".repeat(pad)});
        out.extend_from_slice(line.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn lines_of(bytes: &[u8]) -> Vec<String> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn files_url(target: &str) -> String {
    format!(
        "{}?computeTargetId={target}&sessionId={SESSION}",
        path::FILES
    )
}

fn lines_url(file_id: &str, extra: &str) -> String {
    format!(
        "{}?computeTargetId={TARGET}&sessionId={SESSION}&fileId={file_id}{extra}",
        path::LINES
    )
}

fn segment_url(file_id: &str, generation: i32, offset: i64) -> String {
    format!(
        "{}?computeTargetId={TARGET}&sessionId={SESSION}&fileId={file_id}&generation={generation}&offset={offset}",
        path::SEGMENT
    )
}

// ---- Read tokens ---------------------------------------------------------------------------

/// The CLI with only the database configured.
async fn syncplane(db: &TestDb, args: &[&str]) -> (ExitCode, String) {
    let vars = vec![("DATABASE_URL".to_owned(), db.url().expose().to_owned())];
    syncplane_tests::cli::syncplane(&vars, args).await
}

#[tokio::test]
async fn read_tokens_are_issued_per_org_by_an_operator_shown_once_and_stored_as_sha256_only() {
    let a = Archive::new().await;
    a.archive(a.org, TARGET, "s-1.jsonl", 1, &[jsonl(0, 2, 4)])
        .await;
    let org = a.org.to_string();
    let (code, out) = syncplane(&a.db, &["ingest", "issue-read-token", "--org", &org]).await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert!(
        out.ends_with('\n') && out.lines().count() == 1,
        "the token alone: {out:?}"
    );
    let token = out.trim_end();
    let hex = token.strip_prefix("spr_").expect("spr_ and 64 hex digits");
    assert!(
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    let (hashed, anywhere, id): (i64, i64, Option<i64>) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE token_hash = sha256(convert_to($1, 'UTF8'))),
                count(*) FILTER (WHERE strpos(t::text, $1) > 0 OR strpos(t::text, $2) > 0),
                max(id) FILTER (WHERE token_hash = sha256(convert_to($1, 'UTF8')))
           FROM read_tokens t",
    )
    .bind(token)
    .bind(hex)
    .fetch_one(&a.db.pool)
    .await
    .unwrap();
    assert_eq!(
        (hashed, anywhere),
        (1, 0),
        "only the token's SHA-256 is stored"
    );

    let auth = format!("Bearer {token}");
    let r = a.get_with(Some(&auth), &files_url(TARGET)).await;
    assert_eq!(
        r.status, 200,
        "the new token reads its org's archive: {}",
        r.body
    );

    let id = id.unwrap().to_string();
    let (code, _) = syncplane(&a.db, &["ingest", "revoke-read-token", &id]).await;
    assert_eq!(code, ExitCode::SUCCESS);
    let r = a.get_with(Some(&auth), &files_url(TARGET)).await;
    assert_eq!((r.status, r.code()), (401, Some("unauthenticated")));
    let (code, _) = syncplane(&a.db, &["ingest", "revoke-read-token", &id]).await;
    assert_eq!(code, ExitCode::FAILURE, "revoking twice is an error");
    let (code, _) = syncplane(&a.db, &["ingest", "issue-read-token", "--org", "999999"]).await;
    assert_eq!(code, ExitCode::FAILURE, "an unknown org gets no token");
}

#[tokio::test]
async fn a_missing_wrong_or_revoked_read_token_is_401_on_every_read_route() {
    let a = Archive::new().await;
    let stored = a
        .archive(a.org, TARGET, "s-1.jsonl", 1, &[jsonl(0, 2, 4)])
        .await;
    // A device token is no read token.
    let user = provision::create_user(&a.db.pool, a.org, "bob")
        .await
        .unwrap();
    let device = tokens::issue_device_token(&a.db.pool, user, None)
        .await
        .unwrap();
    let revoked = tokens::issue_read_token(&a.db.pool, a.org, None)
        .await
        .unwrap();
    assert!(
        tokens::revoke(&a.db.pool, TokenKind::Read, revoked.id)
            .await
            .unwrap()
    );
    let wrong = format!("Bearer spr_{}", "0".repeat(64));
    let device = format!("Bearer {}", device.token);
    let revoked = format!("Bearer {}", revoked.token);
    let basic = format!("Basic {}", a.token);
    let urls = [
        files_url(TARGET),
        lines_url("s-1.jsonl", ""),
        segment_url("s-1.jsonl", 1, stored[0].offset),
    ];
    for url in &urls {
        for auth in [
            None,
            Some(wrong.as_str()),
            Some(&device),
            Some(&revoked),
            Some(&basic),
        ] {
            let r = a.get_with(auth, url).await;
            assert_eq!(
                (r.status, r.code()),
                (401, Some("unauthenticated")),
                "{url} with {auth:?}"
            );
        }
    }
    // The issuing org's valid token reads.
    assert_eq!(a.get(&files_url(TARGET)).await.status, 200);
    assert!(
        tokens::revoke(&a.db.pool, TokenKind::Read, a.token_id)
            .await
            .unwrap()
    );
    assert_eq!(a.get(&files_url(TARGET)).await.status, 401);
}

#[tokio::test]
async fn a_session_of_another_org_or_one_without_transcripts_is_404_not_found() {
    let a = Archive::new().await;
    let theirs = a
        .archive(a.other_org, OTHER_TARGET, "s-1.jsonl", 1, &[jsonl(0, 2, 4)])
        .await;
    let other = format!("computeTargetId={OTHER_TARGET}&sessionId={SESSION}&fileId=s-1.jsonl");
    for url in [
        files_url(OTHER_TARGET),
        format!("{}?{other}", path::LINES),
        format!(
            "{}?{other}&generation=1&offset={}",
            path::SEGMENT,
            theirs[0].offset
        ),
        // A session with no transcript at all.
        files_url(TARGET),
        lines_url("s-1.jsonl", ""),
        segment_url("s-1.jsonl", 1, 0),
    ] {
        let r = a.get(&url).await;
        assert_eq!((r.status, r.code()), (404, Some("not_found")), "{url}");
    }
    // Their own token reads it.
    let token = tokens::issue_read_token(&a.db.pool, a.other_org, None)
        .await
        .unwrap();
    let r = a
        .get_with(
            Some(&format!("Bearer {}", token.token)),
            &files_url(OTHER_TARGET),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

// ---- The listing ---------------------------------------------------------------------------

#[tokio::test]
async fn the_sessions_files_are_listed_in_file_id_order_at_their_current_generation_with_segments_in_offset_order()
 {
    let a = Archive::new().await;
    // `b` first: the listing orders by fileId, not by arrival. `a` was rewritten: generation 1's
    // segments are still stored, generation 2 is current.
    let b = a
        .archive(
            a.org,
            TARGET,
            "b.jsonl",
            1,
            &[jsonl(0, 3, 10), jsonl(3, 2, 10)],
        )
        .await;
    a.archive(a.org, TARGET, "a.jsonl", 1, &[jsonl(0, 5, 10)])
        .await;
    let a2 = a
        .archive(a.org, TARGET, "a.jsonl", 2, &[jsonl(100, 1, 10)])
        .await;
    let r = a.get(&files_url(TARGET)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let files = r.data()["files"].as_array().unwrap();
    let ids: Vec<&str> = files
        .iter()
        .map(|f| f["fileId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a.jsonl", "b.jsonl"]);
    let fa = &files[0];
    assert_eq!(fa["generation"], 2, "the current generation only");
    assert_eq!(fa["ackedOffset"], a2[0].decoded.len());
    assert_eq!(fa["segments"].as_array().unwrap().len(), 1);
    assert_eq!(fa["segments"][0]["sha256"], a2[0].sha256.as_str());
    let fb = &files[1];
    let total: usize = b.iter().map(|s| s.decoded.len()).sum();
    assert_eq!(
        (fb["generation"].as_i64(), fb["decodedBytes"].as_u64()),
        (Some(1), Some(total as u64))
    );
    let segs = fb["segments"].as_array().unwrap();
    let offsets: Vec<i64> = segs.iter().map(|s| s["offset"].as_i64().unwrap()).collect();
    assert_eq!(offsets, [b[0].offset, b[1].offset], "offset order");
    for (seg, stored) in segs.iter().zip(&b) {
        assert_eq!(seg["sha256"], stored.sha256.as_str());
        assert_eq!(seg["decodedBytes"], stored.decoded.len());
        assert_eq!(seg["sourceBytes"], stored.decoded.len());
        let compressed = std::fs::read(a.root.0.join(&stored.key)).unwrap();
        assert_eq!(seg["compressedBytes"], compressed.len());
        // Direct mode: the segment route, a path on this origin.
        assert_eq!(
            seg["url"],
            format!(
                "{}?computeTargetId={TARGET}&sessionId={SESSION}&fileId=b.jsonl&generation=1&offset={}",
                path::SEGMENT,
                stored.offset
            )
        );
    }
}

#[tokio::test]
async fn in_direct_mode_a_segments_url_keeps_the_stage_in_front_of_the_route() {
    let a = Archive::new().await;
    a.archive(a.org, TARGET, "s-1.jsonl", 1, &[jsonl(0, 1, 4)])
        .await;
    let auth = a.bearer();
    let mut event = syncplane_tests::apigw::event(
        "GET",
        &format!("/prod{}", files_url(TARGET)),
        &[("authorization", &auth)],
        None,
    );
    event["requestContext"]["stage"] = "prod".into();
    let resp = a.route(syncplane_tests::apigw::from_event(event)).await;
    let r = checked_reply("GET", &format!("/prod{}", path::FILES), resp);
    assert_eq!(r.status, 200, "{}", r.body);
    let url = r.data()["files"][0]["segments"][0]["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("/prod{}?", path::SEGMENT)),
        "{url}"
    );
}

// ---- One segment ---------------------------------------------------------------------------

#[tokio::test]
async fn the_segment_route_answers_the_stored_zstd_bytes_of_the_current_generation_only() {
    let a = Archive::new().await;
    let old = a
        .archive(a.org, TARGET, "s-1.jsonl", 1, &[jsonl(0, 3, 8)])
        .await;
    let cur = a
        .archive(
            a.org,
            TARGET,
            "s-1.jsonl",
            2,
            &[jsonl(0, 2, 8), jsonl(2, 2, 8)],
        )
        .await;
    let resp = a
        .raw(
            Some(&a.bearer()),
            &segment_url("s-1.jsonl", 2, cur[1].offset),
        )
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/zstd");
    let Body::Binary(bytes) = resp.body() else {
        panic!("binary bytes");
    };
    assert_eq!(
        *bytes,
        std::fs::read(a.root.0.join(&cur[1].key)).unwrap(),
        "the stored bytes"
    );
    assert_eq!(zstd::decode_all(&bytes[..]).unwrap(), cur[1].decoded);
    for url in [
        segment_url("s-1.jsonl", 1, old[0].offset),
        segment_url("s-1.jsonl", 2, 1),
        segment_url("nope.jsonl", 2, 0),
    ] {
        let r = a.get(&url).await;
        assert_eq!((r.status, r.code()), (404, Some("not_found")), "{url}");
    }
    for (bad, code) in [
        (segment_url("s-1.jsonl", 0, 0), "invalid_parameter"),
        (
            format!(
                "{}?computeTargetId={TARGET}&sessionId={SESSION}&fileId=s-1.jsonl&generation=2",
                path::SEGMENT
            ),
            "invalid_parameter",
        ),
        (segment_url("..", 2, 0), "invalid_file_id"),
        (segment_url("a%2Fb", 2, 0), "invalid_file_id"),
        (segment_url("s-1.jsonl", 2, -1), "invalid_parameter"),
    ] {
        let r = a.get(&bad).await;
        assert_eq!((r.status, r.code()), (400, Some(code)), "{bad}: {}", r.body);
    }
}

// ---- Lines ---------------------------------------------------------------------------------

/// Every page of `file_id` from the first, `limit` at a time (none: the default).
async fn all_pages(a: &Archive, file_id: &str, limit: Option<usize>) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut extra = limit.map(|l| format!("&limit={l}")).unwrap_or_default();
        if let Some(c) = &cursor {
            extra.push_str(&format!("&cursor={c}"));
        }
        let r = a.get(&lines_url(file_id, &extra)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let lines: Vec<String> = r.data()["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_owned())
            .collect();
        pages.push(lines);
        match r.data()["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return pages,
        }
        assert!(pages.len() < 10_000, "the pages end");
    }
}

#[tokio::test]
async fn lines_are_the_files_decompressed_json_lines_paged_by_limit_with_an_opaque_cursor() {
    let a = Archive::new().await;
    // 250 lines over segments of uneven sizes: pages cross segment boundaries.
    let segs = vec![
        jsonl(0, 7, 20),
        jsonl(7, 120, 20),
        jsonl(127, 1, 20),
        jsonl(128, 122, 20),
    ];
    let want: Vec<String> = segs.iter().flat_map(|s| lines_of(s)).collect();
    a.archive(a.org, TARGET, "s-1.jsonl", 1, &segs).await;

    let pages = all_pages(&a, "s-1.jsonl", None).await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        [100, 100, 50],
        "default 100"
    );
    assert_eq!(pages.concat(), want, "every line once, in order");

    let pages = all_pages(&a, "s-1.jsonl", Some(7)).await;
    assert!(pages.iter().all(|p| p.len() <= 7));
    assert_eq!(pages.len(), 250usize.div_ceil(7));
    assert_eq!(pages.concat(), want);

    let pages = all_pages(&a, "s-1.jsonl", Some(500)).await;
    assert_eq!(pages.len(), 1, "nextCursor absent on the last page");
    assert_eq!(pages.concat(), want);

    // Exactly at a segment's end: the next page starts at the next segment.
    let pages = all_pages(&a, "s-1.jsonl", Some(127)).await;
    assert_eq!(pages[0].len(), 127);
    assert_eq!(pages.concat(), want);

    for (bad, code) in [
        ("&limit=0", "invalid_parameter"),
        ("&limit=501", "invalid_parameter"),
        ("&limit=x", "invalid_parameter"),
        ("&cursor=nope", "invalid_cursor"),
        ("&cursor=", "invalid_cursor"),
        ("&page=2", "invalid_parameter"),
    ] {
        let r = a.get(&lines_url("s-1.jsonl", bad)).await;
        assert_eq!((r.status, r.code()), (400, Some(code)), "{bad}: {}", r.body);
    }
    let r = a.get(&lines_url("a%2F..", "")).await;
    assert_eq!(
        (r.status, r.code()),
        (400, Some("invalid_file_id")),
        "a fileId is never a path"
    );
}

#[tokio::test]
async fn a_page_holds_at_most_one_mebibyte_of_text() {
    let a = Archive::new().await;
    // 40 lines of about 100 KB: 10 fit a page of 1 MiB, whatever the limit.
    let seg = jsonl(0, 40, 100_000);
    let want = lines_of(&seg);
    a.archive(a.org, TARGET, "big.jsonl", 1, &[seg]).await;
    let pages = all_pages(&a, "big.jsonl", Some(500)).await;
    for p in &pages {
        let text: usize = p.iter().map(String::len).sum();
        assert!(text <= MAX_LINES_PAGE_BYTES, "{text} bytes on a page");
    }
    assert_eq!(pages[0].len(), MAX_LINES_PAGE_BYTES / want[0].len());
    assert_eq!(pages.concat(), want);

    // One line over 1 MiB alone cannot be a page: 413, read its segment.
    let huge = jsonl(0, 1, MAX_LINES_PAGE_BYTES + 1);
    a.archive(a.org, TARGET, "huge.jsonl", 1, &[huge]).await;
    let r = a.get(&lines_url("huge.jsonl", "")).await;
    assert_eq!((r.status, r.code()), (413, Some("line_too_large")));
}

#[tokio::test]
async fn a_file_over_64_mib_decoded_is_413_read_its_segments() {
    let a = Archive::new().await;
    a.archive(a.org, TARGET, "s-1.jsonl", 1, &[jsonl(0, 1, 4)])
        .await;
    sqlx::query("UPDATE transcript_files SET decoded_bytes = $1")
        .bind(MAX_LINES_FILE_BYTES as i64 + 1)
        .execute(&a.db.pool)
        .await
        .unwrap();
    let r = a.get(&lines_url("s-1.jsonl", "")).await;
    assert_eq!(
        (r.status, r.code()),
        (413, Some("file_too_large")),
        "{}",
        r.body
    );
    sqlx::query("UPDATE transcript_files SET decoded_bytes = $1")
        .bind(MAX_LINES_FILE_BYTES as i64)
        .execute(&a.db.pool)
        .await
        .unwrap();
    let r = a.get(&files_url(TARGET)).await;
    assert_eq!(r.status, 200, "its segments are listed");
}

#[tokio::test]
async fn a_cursor_of_an_older_generation_is_refused_after_a_rewrite() {
    let a = Archive::new().await;
    a.archive(a.org, TARGET, "s-1.jsonl", 1, &[jsonl(0, 3, 4)])
        .await;
    let r = a.get(&lines_url("s-1.jsonl", "&limit=1")).await;
    let cursor = r.data()["nextCursor"].as_str().unwrap().to_owned();
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&cursor)
        .unwrap();
    assert!(!decoded.is_empty());
    a.archive(a.org, TARGET, "s-1.jsonl", 2, &[jsonl(50, 2, 4)])
        .await;
    let r = a
        .get(&lines_url("s-1.jsonl", &format!("&cursor={cursor}")))
        .await;
    assert_eq!((r.status, r.code()), (400, Some("invalid_cursor")));
    let r = a.get(&lines_url("s-1.jsonl", "")).await;
    assert_eq!(
        r.data()["lines"].as_array().unwrap().len(),
        2,
        "generation 2 only"
    );
}

// ---- Retention -----------------------------------------------------------------------------

async fn age_segments(a: &Archive, days: i32) {
    sqlx::query(
        "UPDATE transcript_segments SET created_at = now() - make_interval(days => $1);
         ",
    )
    .bind(days)
    .execute(&a.db.pool)
    .await
    .unwrap();
}

#[tokio::test]
async fn set_org_sets_and_clears_the_transcript_retention() {
    let a = Archive::new().await;
    let org = a.org.to_string();
    let retention = || async {
        sqlx::query_scalar::<_, Option<i32>>(
            "SELECT transcript_retention_days FROM orgs WHERE id = $1",
        )
        .bind(a.org)
        .fetch_one(&a.db.pool)
        .await
        .unwrap()
    };
    assert_eq!(retention().await, None, "kept forever by default");
    let (code, out) = syncplane(
        &a.db,
        &[
            "ingest",
            "set-org",
            &org,
            "--transcript-retention-days",
            "30",
        ],
    )
    .await;
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert_eq!(retention().await, Some(30));
    let (code, _) = syncplane(
        &a.db,
        &[
            "ingest",
            "set-org",
            &org,
            "--transcript-retention-days",
            "off",
        ],
    )
    .await;
    assert_eq!(code, ExitCode::SUCCESS);
    assert_eq!(retention().await, None);
    for bad in ["0", "36501", "forever"] {
        let cli = <syncplane_cli::Cli as clap::Parser>::try_parse_from([
            "syncplane",
            "ingest",
            "set-org",
            &org,
            "--transcript-retention-days",
            bad,
        ]);
        assert!(cli.is_err(), "{bad} is refused");
    }
    assert!(
        !retention::set_retention(&a.db.pool, 999_999, Some(1))
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn segments_older_than_the_orgs_retention_are_deleted_objects_then_rows() {
    let a = Archive::new().await;
    // Org one keeps 30 days; org two keeps everything.
    retention::set_retention(&a.db.pool, a.org, Some(30))
        .await
        .unwrap();
    let old = a
        .archive(
            a.org,
            TARGET,
            "old.jsonl",
            1,
            &[jsonl(0, 2, 4), jsonl(2, 2, 4)],
        )
        .await;
    let theirs = a
        .archive(a.other_org, OTHER_TARGET, "old.jsonl", 1, &[jsonl(0, 2, 4)])
        .await;
    age_segments(&a, 40).await;
    sqlx::query("UPDATE transcript_files SET updated_at = now() - interval '40 days'")
        .execute(&a.db.pool)
        .await
        .unwrap();
    // A recent file of the same org, half old: only its old segment goes.
    let recent = a
        .archive(a.org, TARGET, "recent.jsonl", 1, &[jsonl(0, 2, 4)])
        .await;
    let file_row: i64 =
        sqlx::query_scalar("SELECT id FROM transcript_files WHERE file_id = 'recent.jsonl'")
            .fetch_one(&a.db.pool)
            .await
            .unwrap();
    let newer = a
        .segment(
            a.org,
            TARGET,
            file_row,
            "recent.jsonl",
            1,
            recent[0].decoded.len() as i64,
            &jsonl(2, 1, 4),
        )
        .await;
    sqlx::query("UPDATE transcript_files SET decoded_bytes = decoded_bytes + $1 WHERE id = $2")
        .bind(newer.decoded.len() as i64)
        .bind(file_row)
        .execute(&a.db.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE transcript_segments SET created_at = now() - interval '31 days' WHERE object_key = $1")
        .bind(&recent[0].key)
        .execute(&a.db.pool)
        .await
        .unwrap();

    let done = retention::expire(&a.db.pool, &a.store, chrono::Utc::now(), 1)
        .await
        .unwrap();
    assert_eq!(
        done,
        retention::Expired {
            segments: 3,
            files: 1,
            uploads: 0,
            objects: 3
        },
        "batches of one go on until nothing is due"
    );
    for s in old.iter().chain(&recent) {
        assert!(!a.object_exists(&s.key), "{} deleted", s.key);
    }
    assert!(a.object_exists(&newer.key) && a.object_exists(&theirs[0].key));
    assert_eq!(
        a.count("SELECT count(*) FROM transcript_files WHERE file_id = 'old.jsonl'")
            .await,
        1,
        "the file left with no segment is gone; the other org's stays"
    );
    let r = a.get(&files_url(TARGET)).await;
    let files = r.data()["files"].as_array().unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(
        files[0]["decodedBytes"],
        newer.decoded.len(),
        "the file's bytes follow"
    );
    let r = a.get(&lines_url("recent.jsonl", "")).await;
    assert_eq!(r.data()["lines"].as_array().unwrap().len(), 1);

    let again = retention::expire(&a.db.pool, &a.store, chrono::Utc::now(), 500)
        .await
        .unwrap();
    assert_eq!(again, retention::Expired::default(), "nothing left to do");
}

#[tokio::test]
async fn expired_never_completed_uploads_go_with_their_objects_unless_a_segment_names_the_key() {
    let a = Archive::new().await;
    let kept = a
        .archive(a.org, TARGET, "s-1.jsonl", 1, &[jsonl(0, 2, 4)])
        .await;
    let file_row: i64 = sqlx::query_scalar("SELECT id FROM transcript_files")
        .fetch_one(&a.db.pool)
        .await
        .unwrap();
    // An abandoned intent whose bytes were stored, one whose key a recorded segment holds (its
    // complete was lost, another intent of the same bytes completed), and one still in time.
    let abandoned_key = object_key(a.org, TARGET, "s-1.jsonl", 1, 99, &"ab".repeat(32));
    std::fs::write(a.root.0.join(&abandoned_key), b"zstd").unwrap();
    let intents = [
        (&abandoned_key, 99i64, "now() - interval '2 hours'"),
        (&kept[0].key, 0, "now() - interval '2 hours'"),
        (&abandoned_key, 99, "now() + interval '5 minutes'"),
    ];
    for (key, offset, expires) in intents {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO transcript_uploads (id, file_row, generation, start_offset, source_bytes,
                                             decoded_bytes, compressed_bytes, sha256, object_key,
                                             expires_at)
             VALUES ($1, $2, 1, $3, 1, 1, 1, $4, $5, {expires})"
        )))
        .bind(uuid::Uuid::new_v4())
        .bind(file_row)
        .bind(offset)
        .bind([0u8; 32].as_slice())
        .bind(key)
        .execute(&a.db.pool)
        .await
        .unwrap();
    }
    let done = retention::expire(&a.db.pool, &a.store, chrono::Utc::now(), 500)
        .await
        .unwrap();
    assert_eq!(
        (done.uploads, done.objects, done.segments),
        (2, 0, 0),
        "{done:?}"
    );
    assert!(
        a.object_exists(&kept[0].key),
        "a recorded segment's object stays"
    );
    assert!(
        a.object_exists(&abandoned_key),
        "a live intent names it still"
    );

    // Once the last intent naming it has expired too, the object goes.
    sqlx::query("UPDATE transcript_uploads SET expires_at = now() - interval '2 hours'")
        .execute(&a.db.pool)
        .await
        .unwrap();
    let done = retention::expire(&a.db.pool, &a.store, chrono::Utc::now(), 500)
        .await
        .unwrap();
    assert_eq!((done.uploads, done.objects), (1, 1));
    assert!(!a.object_exists(&abandoned_key));
    assert_eq!(a.count("SELECT count(*) FROM transcript_uploads").await, 0);
    assert_eq!(
        a.count("SELECT count(*) FROM transcript_segments").await,
        1,
        "no retention set"
    );
}

#[tokio::test]
async fn transcripts_expire_prints_one_json_line_of_counts_per_tenant() {
    let a = Archive::new().await;
    retention::set_retention(&a.db.pool, a.org, Some(1))
        .await
        .unwrap();
    let s = a
        .archive(a.org, TARGET, "s-1.jsonl", 1, &[jsonl(0, 2, 4)])
        .await;
    age_segments(&a, 2).await;
    let config = shared::config::from_lookup(|k| {
        (k == "DATABASE_URL").then(|| a.db.url().expose().to_owned())
    })
    .unwrap();
    let mut out = Vec::new();
    let code = syncplane_cli::transcripts::expire(&config, &a.store, None, 500, &mut out)
        .await
        .unwrap();
    assert_eq!(code, ExitCode::SUCCESS);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), config.tenants.len());
    assert_eq!(
        lines[0],
        serde_json::json!({"tenant": config.tenants[0].id.as_str(), "segments": 1, "files": 0,
                           "uploads": 0, "objects": 1})
    );
    assert!(!a.object_exists(&s[0].key));
    let mut out = Vec::new();
    let e =
        syncplane_cli::transcripts::expire(&config, &a.store, Some("nope"), 500, &mut out).await;
    assert!(e.is_err(), "an unknown tenant");
}

// ---- openapi.json --------------------------------------------------------------------------

/// The wire contract's examples validate against openapi.json's transcript schemas, and the
/// shapes it refuses do not (the answers of the read routes are checked in every test above).
#[test]
fn the_contracts_examples_validate_against_the_openapi_schemas_of_the_transcript_lane() {
    use serde_json::json;
    use syncplane_tests::openapi::is_valid;
    let sha = "ab".repeat(32);
    let hello = json!({"schemaVersion": 2,
        "capabilities": {"agentSessionSyncCompression": true, "agentTranscriptUpload": "direct"},
        "limits": {"maxSessionsPerBatch": 200, "maxWireBytes": 262144, "maxDecodedBytes": 4194304,
                   "maxSegmentBytes": 4194304, "maxSegmentDecodedBytes": 16777216}});
    assert!(is_valid("/components/schemas/Hello", &hello));
    let mut wrong = hello.clone();
    wrong["capabilities"]["agentTranscriptUpload"] = json!("ftp");
    assert!(!is_valid("/components/schemas/Hello", &wrong));

    let intent = json!({"computeTargetId": "laptop-1", "sessionId": "s-1", "fileId": "s-1.jsonl",
        "generation": 1, "offset": 0, "sourceBytes": 5120, "decodedBytes": 5120,
        "compressedBytes": 1400, "sha256": sha});
    assert!(is_valid("/components/schemas/TranscriptIntent", &intent));
    for (field, bad) in [
        ("fileId", json!("../x")),
        ("fileId", json!(".hidden")),
        ("fileId", json!("a".repeat(257))),
        ("generation", json!(0)),
        ("sourceBytes", json!(0)),
        ("compressedBytes", json!(4_194_305)),
        ("decodedBytes", json!(16_777_217)),
        ("sha256", json!("AB".repeat(32))),
    ] {
        let mut b = intent.clone();
        b[field] = bad;
        assert!(
            !is_valid("/components/schemas/TranscriptIntent", &b),
            "{field}"
        );
    }

    let mismatch = json!({"success": false,
        "error": {"message": "offset mismatch", "code": "offset_mismatch"},
        "data": {"generation": 3, "ackedOffset": 1048576}});
    assert!(is_valid(
        "/components/schemas/TranscriptOffsetMismatch",
        &mismatch
    ));
    let mut no_state = mismatch.clone();
    no_state.as_object_mut().unwrap().remove("data");
    assert!(!is_valid(
        "/components/schemas/TranscriptOffsetMismatch",
        &no_state
    ));

    let upload = json!({"uploadId": "5b0e6c1e-1d2c-4c5e-9a55-0e0e0e0e0e0e",
        "upload": {"method": "PUT", "url": "https://bucket.s3.amazonaws.com/k",
                   "headers": {"content-length": "1400"}, "expiresAt": "2026-12-01T10:05:00Z"},
        "objectKey": format!("transcripts/1/{}/s-1.jsonl/1/{:020}-{sha}.zst", "0".repeat(32), 0)});
    assert!(is_valid(
        "/components/schemas/TranscriptUploadIntent",
        &upload
    ));

    let files = json!({"files": [{"fileId": "s-1.jsonl", "generation": 1, "ackedOffset": 5120,
        "decodedBytes": 5120, "segments": [{"offset": 0, "sourceBytes": 5120,
        "decodedBytes": 5120, "compressedBytes": 1400, "sha256": sha, "url": "https://x"}]}]});
    assert!(is_valid("/components/schemas/TranscriptFiles", &files));
    assert!(is_valid(
        "/components/schemas/TranscriptLines",
        &json!({"lines": ["{}"], "nextCursor": "MTowOjE"})
    ));
    assert!(!is_valid(
        "/components/schemas/TranscriptLines",
        &json!({"nextCursor": "x"})
    ));
}

/// Issue 31 point 4: a session with more files than one listing answers is `413
/// listing_too_large` (the read route's refusals each carry a code, as the device routes' do).
#[tokio::test]
async fn a_session_of_more_files_than_one_listing_answers_is_413_listing_too_large() {
    let a = Archive::new().await;
    sqlx::query(
        "INSERT INTO transcript_files (org_id, compute_target_id, session_id, file_id, generation)
         SELECT $1, $2, $3, 'f-' || n || '.jsonl', 1 FROM generate_series(1, 1001) n",
    )
    .bind(a.org)
    .bind(TARGET)
    .bind(SESSION)
    .execute(&a.db.pool)
    .await
    .unwrap();
    let r = a.get(&files_url(TARGET)).await;
    assert_eq!(
        (r.status, r.code()),
        (413, Some("listing_too_large")),
        "{}",
        r.body
    );
}
