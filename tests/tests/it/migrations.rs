use syncplane_tests::db::TestDb;

#[tokio::test]
async fn migrations_apply_to_an_empty_database_and_twice_is_a_no_op() {
    let db = TestDb::empty().await;
    shared::db::migrate(&db.pool)
        .await
        .expect("first run applies");
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(applied as usize, shared::db::MIGRATOR.iter().count());
    shared::db::migrate(&db.pool)
        .await
        .expect("second run is a no-op");
    let again: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(again, applied, "no migration ran twice");
    for table in [
        "repos",
        "documents",
        "readmes",
        "code_owners",
        "sync_runs",
        "scheduler_state",
    ] {
        let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
            .bind(table)
            .fetch_one(&db.pool)
            .await
            .unwrap();
        assert!(exists, "table {table} exists");
    }
}

#[tokio::test]
async fn schema_keeps_bad_states_out() {
    let db = TestDb::new().await;
    let repo_id: i64 = sqlx::query_scalar(
        "INSERT INTO repos (github_id, owner, name) VALUES (1, 'acme', 'docs') RETURNING id",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let doc = "INSERT INTO documents (repo_id, path, blob_sha, size_bytes, title, body)
               VALUES ($1, $2, repeat('a', 40), 1, 't', 'b')";
    sqlx::query(doc)
        .bind(repo_id)
        .bind("docs/a.md")
        .execute(&db.pool)
        .await
        .unwrap();
    assert!(
        sqlx::query(doc)
            .bind(repo_id)
            .bind("docs/a.md")
            .execute(&db.pool)
            .await
            .is_err(),
        "paths are unique per repository"
    );
    assert!(
        sqlx::query("UPDATE repos SET sync_status = 'broken'")
            .execute(&db.pool)
            .await
            .is_err(),
        "sync_status is a checked enum"
    );
    assert!(
        sqlx::query("UPDATE repos SET sync_status = 'error'")
            .execute(&db.pool)
            .await
            .is_err(),
        "an error always carries its fixed message"
    );
    assert!(
        sqlx::query("INSERT INTO sync_runs (trigger, lock_key) VALUES ('cron', 1)")
            .execute(&db.pool)
            .await
            .is_err(),
        "trigger is a checked enum"
    );
    sqlx::query("DELETE FROM repos WHERE id = $1")
        .bind(repo_id)
        .execute(&db.pool)
        .await
        .unwrap();
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM documents")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(left, 0, "deleting a repository cascades to its documents");
}

/// The migrations are embedded from a list (`shared::db::MIGRATIONS`, not sqlx's `migrate!`,
/// issue 32): every file of `migrations/` is in it, in order, with the version and description
/// its name gives, and nothing else is.
#[test]
fn every_file_of_the_migrations_folder_is_embedded_in_order() {
    let dir = syncplane_tests::redaction_corpus::repo_root().join("migrations");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sql"))
        .collect();
    files.sort();
    let listed: Vec<(i64, String, String)> = shared::db::MIGRATIONS
        .iter()
        .map(|(v, d, sql)| (*v, d.to_string(), sql.to_string()))
        .collect();
    let on_disk: Vec<(i64, String, String)> = files
        .iter()
        .map(|name| {
            let (version, rest) = name.split_once('_').unwrap();
            let description = rest.trim_end_matches(".sql").replace('_', " ");
            let sql = std::fs::read_to_string(dir.join(name)).unwrap();
            (version.parse().unwrap(), description, sql)
        })
        .collect();
    assert_eq!(listed, on_disk);
}

/// Migration 0018 groups the lines indexed before it in place (16 consecutive lines of a
/// segment a group, each line's number and text kept, the group's terms all their lexemes), so
/// nothing needs indexing again.
#[tokio::test]
async fn the_lines_indexed_before_migration_18_are_grouped_in_place() {
    let db = TestDb::empty().await;
    let sql = |version: i64| {
        shared::db::MIGRATIONS
            .iter()
            .find(|(v, _, _)| *v == version)
            .map(|(_, _, sql)| *sql)
            .unwrap()
    };
    for version in 1..=17 {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql(version)))
            .execute(&db.pool)
            .await
            .unwrap_or_else(|e| panic!("migration {version}: {e}"));
    }
    let text = |segment: i64, line: i64| {
        let words = format!("line {line} of segment {segment} word{line}");
        // The third segment's lines are 20 KiB each: groups are cut at 64 KiB of text too.
        if segment == 8192 {
            words.repeat(20 * 1024 / words.len())
        } else {
            words
        }
    };
    for (segment, lines) in [(0i64, 20i64), (4096, 3), (8192, 6)] {
        for i in 0..lines {
            let body = text(segment, i);
            let vector = shared::archive::search::lexer::vector(&body, &Default::default());
            sqlx::query(
                "INSERT INTO transcript_lines (org_id, file_row, generation, segment_offset,
                        segment_line, line_no, compute_target_id, session_id, role, at, body,
                        search_vector)
                 VALUES (1, 7, 1, $1, $2, $3, 'laptop', 's-1', 'user',
                         '2026-11-02T09:00:00Z'::timestamptz + make_interval(secs => $2),
                         $4, $5::tsvector)",
            )
            .bind(segment)
            .bind(i32::try_from(i).unwrap())
            .bind(i + 1 + [0, 20, 23][usize::try_from(segment / 4096).unwrap()])
            .bind(&body)
            .bind(&vector)
            .execute(&db.pool)
            .await
            .unwrap();
        }
    }
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql(18)))
        .execute(&db.pool)
        .await
        .expect("migration 18");
    let groups: Vec<(i64, Vec<i64>, Vec<String>, String)> = sqlx::query_as(
        "SELECT segment_offset, line_nos, bodies, extract(second from at - first_at)::text
           FROM transcript_line_groups ORDER BY segment_offset, line_nos[1]",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    let lines: Vec<(i64, Vec<i64>)> = groups.iter().map(|g| (g.0, g.1.clone())).collect();
    assert_eq!(
        lines,
        vec![
            (0, (1..=16).collect()),
            (0, (17..=20).collect()),
            (4096, (21..=23).collect()),
            (8192, (24..=27).collect()),
            (8192, (28..=29).collect())
        ]
    );
    assert_eq!(
        groups[1].2,
        (16..20).map(|i| text(0, i)).collect::<Vec<_>>()
    );
    assert_eq!(groups[0].3, "15.000000", "a group spans its lines' times");
    // The terms are every line's lexemes: `word17` (line 18) finds its group.
    let found: Vec<Vec<i64>> = sqlx::query_scalar(
        "SELECT line_nos FROM transcript_line_groups WHERE terms @@ 'word17 & segment'::tsquery",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(found, vec![(17..=20).collect::<Vec<i64>>()]);
    let stripped: bool =
        sqlx::query_scalar("SELECT bool_and(terms = strip(terms)) FROM transcript_line_groups")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert!(stripped, "terms have no positions");
    let old: bool = sqlx::query_scalar("SELECT to_regclass('transcript_lines') IS NULL")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(old, "the per-line table is gone");
}
