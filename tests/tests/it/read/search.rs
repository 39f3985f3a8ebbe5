//! `GET /api/search` (issue 11 "Search"): ranking, hit fields, READMEs, query syntax, the language
//! setting, keyset pages, filters, safe snippets, and the GIN index.

use std::collections::BTreeSet;

use shared::api::read::search::{RANK_CANDIDATES, SNIPPET_WINDOW_CHARS, Tier};
use shared::config::SearchLanguage;

use super::{hit_paths, read, synced, with_language};

const CODEOWNERS: &str = "* @acme/everyone\n/docs/guides/ @acme/guides\n";

#[tokio::test]
async fn search_ranks_title_above_headings_above_body() {
    let (_w, st) = synced(&[(
        "acme/handbook",
        &[
            (
                "docs/a-body.md",
                "# Alpha\n\nThe zeppelin is mentioned in the body only.\n",
            ),
            (
                "docs/b-heading.md",
                "# Beta\n\n## Zeppelin care\n\nText about upkeep.\n",
            ),
            ("docs/c-title.md", "# Zeppelin\n\nText about flying.\n"),
        ],
    )])
    .await;
    let r = read(&st, "/api/search?q=zeppelin").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        hit_paths(&r),
        ["docs/c-title.md", "docs/b-heading.md", "docs/a-body.md"]
    );
    let ranks: Vec<f64> = r.data()["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["rank"].as_f64().unwrap())
        .collect();
    assert!(ranks[0] > ranks[1] && ranks[1] > ranks[2], "{ranks:?}");
}

#[tokio::test]
async fn a_hit_carries_repository_path_title_heading_snippet_rank_sha_sync_time_and_owners() {
    let (w, st) = synced(&[(
        "acme/handbook",
        &[
            (".github/CODEOWNERS", CODEOWNERS),
            (
                "docs/guides/install.md",
                "# Install guide\n\nIntro.\n\n## Installing on Linux\n\nUse the package manager to install it.\n",
            ),
        ],
    )])
    .await;
    let r = read(&st, "/api/search?q=linux").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let hit = &r.data()["hits"][0];
    assert_eq!(hit["kind"], "document");
    assert_eq!(hit["repository"], "acme/handbook");
    assert_eq!(hit["path"], "docs/guides/install.md");
    assert_eq!(hit["title"], "Install guide");
    assert_eq!(hit["heading"]["text"], "Installing on Linux");
    assert_eq!(hit["heading"]["anchor"], "installing-on-linux");
    assert!(
        hit["snippet"]
            .as_str()
            .unwrap()
            .contains("<mark>Linux</mark>"),
        "{hit}"
    );
    assert!(hit["rank"].as_f64().unwrap() > 0.0);
    let sha: String = sqlx::query_scalar("SELECT blob_sha FROM documents WHERE path = $1")
        .bind("docs/guides/install.md")
        .fetch_one(&w.db.pool)
        .await
        .unwrap();
    assert_eq!(hit["blobSha"], sha);
    assert!(hit["lastSyncedAt"].is_string());
    assert_eq!(hit["codeOwners"], serde_json::json!(["@acme/guides"]));
}

#[tokio::test]
async fn readmes_are_searched_and_marked_as_such() {
    let (_w, st) = synced(&[(
        "acme/handbook",
        &[
            (
                "README.md",
                "# Handbook\n\nStart with the onboarding checklist.\n",
            ),
            ("docs/intro.md", "# Intro\n\nNothing to see.\n"),
        ],
    )])
    .await;
    let r = read(&st, "/api/search?q=onboarding").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(hit_paths(&r), ["README.md"]);
    assert_eq!(r.data()["hits"][0]["kind"], "readme");
}

#[tokio::test]
async fn the_query_takes_websearch_syntax_phrases_exclusion_and_or() {
    let (_w, st) = synced(&[(
        "acme/handbook",
        &[
            ("docs/a.md", "# A\n\nred apple pie\n"),
            ("docs/b.md", "# B\n\napple red pie\n"),
            ("docs/c.md", "# C\n\nbanana split\n"),
        ],
    )])
    .await;
    let paths =
        |r: &crate::functions::support::Reply| hit_paths(r).into_iter().collect::<BTreeSet<_>>();
    let r = read(&st, "/api/search?q=%22red+apple%22").await;
    assert_eq!(
        paths(&r),
        BTreeSet::from(["docs/a.md".to_owned()]),
        "a phrase"
    );
    let r = read(&st, "/api/search?q=apple+-red").await;
    assert!(hit_paths(&r).is_empty(), "exclusion: {}", r.body);
    let r = read(&st, "/api/search?q=banana+or+apple").await;
    assert_eq!(paths(&r).len(), 3, "or");
}

/// Why `english` is the default: docs are prose, so inflections find each other and stop words
/// drop out; `simple` matches words exactly (identifiers) and has no stop words.
#[tokio::test]
async fn english_stems_and_drops_stop_words_while_simple_matches_words_as_written() {
    let (w, st) = synced(&[(
        "acme/handbook",
        &[("docs/setup.md", "# Setup\n\nHow to configure the proxy.\n")],
    )])
    .await;
    let r = read(&st, "/api/search?q=configuring").await;
    assert_eq!(hit_paths(&r), ["docs/setup.md"], "english stems");
    let r = read(&st, "/api/search?q=the+and+of").await;
    assert_eq!(
        (r.status, r.code()),
        (400, Some("empty_query")),
        "only stop words"
    );

    let simple = with_language(&w, SearchLanguage::Simple);
    let r = read(&simple, "/api/search?q=configuring").await;
    assert!(hit_paths(&r).is_empty(), "simple does not stem: {}", r.body);
    let r = read(&simple, "/api/search?q=configure").await;
    assert_eq!(hit_paths(&r), ["docs/setup.md"]);
    let r = read(&simple, "/api/search?q=the").await;
    assert_eq!(
        (r.status, hit_paths(&r)),
        (200, vec!["docs/setup.md".to_owned()])
    );
}

#[tokio::test]
async fn pages_follow_the_cursor_and_cover_every_hit_once_with_ties_in_a_stable_order() {
    // Seven documents that rank identically: only the tie-break orders them.
    let files: Vec<(String, String)> = (0..7)
        .map(|i| (format!("docs/p{i}.md"), format!("# P{i}\n\nquokka\n")))
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let (_w, st) = synced(&[("acme/handbook", &files[..])]).await;
    let all = read(&st, "/api/search?q=quokka&limit=50").await;
    let everything = hit_paths(&all);
    assert_eq!(everything.len(), 7);
    let mut seen = Vec::new();
    let mut url = "/api/search?q=quokka&limit=3".to_owned();
    loop {
        let r = read(&st, &url).await;
        assert_eq!(r.status, 200, "{}", r.body);
        seen.extend(hit_paths(&r));
        match r.data()["nextCursor"].as_str() {
            Some(c) => url = format!("/api/search?q=quokka&limit=3&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen, everything, "pages concatenate to the whole listing");
    let again = read(&st, "/api/search?q=quokka&limit=50").await;
    assert_eq!(hit_paths(&again), everything, "the same order every time");
}

#[tokio::test]
async fn repo_filters_repeat_and_the_path_prefix_is_literal() {
    let (_w, st) = synced(&[
        (
            "acme/handbook",
            &[
                ("docs/100%_off/a.md", "# A\n\nwombat\n"),
                ("docs/100ab_off/b.md", "# B\n\nwombat\n"),
                ("docs/other/c.md", "# C\n\nwombat\n"),
            ],
        ),
        ("acme/widgets", &[("docs/w.md", "# W\n\nwombat\n")]),
        ("acme/gadgets", &[("docs/g.md", "# G\n\nwombat\n")]),
    ])
    .await;
    let r = read(
        &st,
        "/api/search?q=wombat&repo=acme/widgets&repo=acme/gadgets",
    )
    .await;
    let mut paths = hit_paths(&r);
    paths.sort();
    assert_eq!(paths, ["docs/g.md", "docs/w.md"]);
    let r = read(
        &st,
        "/api/search?q=wombat&repo=ACME/Handbook&path=docs/100%25_",
    )
    .await;
    assert_eq!(hit_paths(&r), ["docs/100%_off/a.md"], "% and _ are literal");
    let r = read(&st, "/api/search?q=wombat&path=docs/other/").await;
    assert_eq!(hit_paths(&r), ["docs/other/c.md"]);
}

#[tokio::test]
async fn snippets_cannot_inject_html() {
    let (_w, st) = synced(&[(
        "acme/handbook",
        &[(
            "docs/x.md",
            "# X\n\nRules: if a < b && c > d then the narwhal wins over Tom & Jerry.\n",
        )],
    )])
    .await;
    let r = read(&st, "/api/search?q=narwhal").await;
    let snippet = r.data()["hits"][0]["snippet"].as_str().unwrap().to_owned();
    assert!(snippet.contains("<mark>narwhal</mark>"), "{snippet}");
    let without_marks = snippet.replace("<mark>", "").replace("</mark>", "");
    assert!(
        !without_marks.contains('<') && !without_marks.contains('>'),
        "{snippet}"
    );
    assert!(
        snippet.contains("a &lt; b &amp;&amp; c &gt; d"),
        "the text's markup characters are escaped: {snippet}"
    );
}

/// A snippet is cut around the first place a query word occurs, however far into the document,
/// in lower case or capitalised, and an inflected query finds its stem's other forms there
/// ("deploying" marks "deployed").
#[tokio::test]
async fn a_snippet_shows_the_match_even_far_into_a_long_document() {
    let filler = "Plain words about other matters fill this line of the page.\n".repeat(500);
    let body =
        format!("# Runbook\n\n{filler}\nAt the end the Narwhal was deployed to production.\n");
    assert!(body.len() > 20 * SNIPPET_WINDOW_CHARS);
    let (_w, st) = synced(&[("acme/handbook", &[("docs/long.md", body.as_str())])]).await;
    for (q, marked) in [("narwhal", "Narwhal"), ("deploying", "deployed")] {
        let r = read(&st, &format!("/api/search?q={q}")).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let snippet = r.data()["hits"][0]["snippet"].as_str().unwrap().to_owned();
        assert!(
            snippet.contains(&format!("<mark>{marked}</mark>")),
            "{q}: {snippet}"
        );
    }
    // A word absent from the text (here only in the title) gets the opening lines.
    let r = read(&st, "/api/search?q=runbook").await;
    let snippet = r.data()["hits"][0]["snippet"].as_str().unwrap().to_owned();
    assert!(
        snippet.contains("Runbook") || snippet.contains("Plain words"),
        "{snippet}"
    );
}

/// The search statements of both tiers can use the GIN indexes (the planner prefers a sequential
/// scan on tiny tables, so it is told not to here; `bench-read` shows the plan on 100,000
/// documents): the title-and-headings tier reads the small vector's index, the body tier the
/// whole vector's.
#[tokio::test]
async fn the_search_query_uses_the_gin_indexes() {
    let (w, _st) = synced(&[("acme/handbook", &[("docs/a.md", "# A\n\nkoala\n")])]).await;
    for language in [SearchLanguage::English, SearchLanguage::Simple] {
        let simple = if language == SearchLanguage::Simple {
            "_simple"
        } else {
            ""
        };
        for (tier, excludes, index) in [
            (Tier::Head, false, format!("head{simple}_idx")),
            (Tier::Head, true, format!("head{simple}_idx")),
            (Tier::Body, false, format!("search{simple}_idx")),
        ] {
            let mut conn = w.db.pool.acquire().await.unwrap();
            sqlx::query("SET enable_seqscan = off")
                .execute(&mut *conn)
                .await
                .unwrap();
            let plan = syncplane_tests::search_plan::explain_search(
                &mut *conn, "", language, tier, excludes, "koala",
            )
            .await
            .unwrap();
            let plan = plan.join("\n");
            for table in ["documents", "readmes"] {
                assert!(
                    plan.contains(&format!("Bitmap Index Scan on {table}_{index}")),
                    "{tier:?} excluding {excludes}: {plan}"
                );
            }
        }
    }
}

#[tokio::test]
async fn an_excluded_word_in_the_body_removes_a_title_match() {
    let (_w, st) = synced(&[(
        "acme/handbook",
        &[
            ("docs/a.md", "# Dingo guide\n\nAbout dingoes and quolls.\n"),
            ("docs/b.md", "# Dingo notes\n\nAbout dingoes only.\n"),
        ],
    )])
    .await;
    let r = read(&st, "/api/search?q=dingo+-quoll").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(hit_paths(&r), ["docs/b.md"]);
}

#[tokio::test]
async fn a_title_or_heading_match_ranks_above_any_body_only_match() {
    let body = format!("# Plain\n\n{}\n", "wombat ".repeat(40));
    let (_w, st) = synced(&[(
        "acme/handbook",
        &[
            ("docs/a-body.md", body.as_str()),
            ("docs/b-heading.md", "# Other\n\n## Wombat care\n\nText.\n"),
        ],
    )])
    .await;
    let r = read(&st, "/api/search?q=wombat").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(hit_paths(&r), ["docs/b-heading.md", "docs/a-body.md"]);
    let matched: Vec<&str> = r.data()["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["matched"].as_str().unwrap())
        .collect();
    assert_eq!(matched, ["heading", "body"]);
    assert_eq!(r.data()["truncated"], false);
}

#[tokio::test]
async fn pages_cross_from_heading_hits_to_body_hits_without_overlap_or_gap() {
    let mut files: Vec<(String, String)> = (0..4)
        .map(|i| (format!("docs/h{i}.md"), format!("# Numbat {i}\n\nText.\n")))
        .collect();
    files.extend((0..4).map(|i| {
        (
            format!("docs/b{i}.md"),
            format!("# Body {i}\n\n{}\n", "numbat ".repeat(i + 1)),
        )
    }));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let (_w, st) = synced(&[("acme/handbook", &files[..])]).await;
    let all = hit_paths(&read(&st, "/api/search?q=numbat&limit=50").await);
    assert_eq!(all.len(), 8);
    assert!(
        all[..4].iter().all(|p| p.starts_with("docs/h")),
        "heading hits first: {all:?}"
    );
    let mut seen = Vec::new();
    let mut url = "/api/search?q=numbat&limit=3".to_owned();
    loop {
        let r = read(&st, &url).await;
        assert_eq!(r.status, 200, "{}", r.body);
        seen.extend(hit_paths(&r));
        match r.data()["nextCursor"].as_str() {
            Some(c) => url = format!("/api/search?q=numbat&limit=3&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen, all, "pages concatenate to the whole listing");
}

/// A word in more documents than a tier ranks: the page is ranked among the first
/// RANK_CANDIDATES matches and says so.
#[tokio::test]
async fn a_query_matching_more_documents_than_a_tier_ranks_says_truncated() {
    let (w, st) = synced(&[("acme/handbook", &[("docs/a.md", "# A\n\nplatypus\n")])]).await;
    let many = RANK_CANDIDATES + 5;
    sqlx::query(
        "INSERT INTO documents (repo_id, path, blob_sha, size_bytes, title, headings, body)
         SELECT (SELECT id FROM repos LIMIT 1), 'docs/bulk/' || g || '.md', repeat('c', 40), 20,
                'Bulk ' || g, '[]'::jsonb, 'platypus ' || g
         FROM generate_series(1, $1) AS g",
    )
    .bind(many)
    .execute(&w.db.pool)
    .await
    .unwrap();
    let r = read(&st, "/api/search?q=platypus&limit=50").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.data()["truncated"], true, "{}", r.body);
    assert_eq!(r.data()["hits"].as_array().unwrap().len(), 50);
    let narrow = read(&st, "/api/search?q=platypus+7&limit=50").await;
    assert_eq!(narrow.data()["truncated"], false, "{}", narrow.body);
}
