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
