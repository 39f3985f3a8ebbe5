//! Per-test databases on the real Postgres at `DATABASE_URL`
//! (default `postgres://postgres@127.0.0.1:5432/postgres`).
//!
//! A template database is migrated once per schema version (its name carries a hash of the
//! migrations), then every test clones it with `CREATE DATABASE ... TEMPLATE`, which takes
//! milliseconds. Each test's database is dropped when its `TestDb` goes out of scope; the
//! template, when `scripts/test.sh` ends, if that run created it.

use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};

use shared::config::Secret;

const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The Postgres this test run uses, as given by `DATABASE_URL`.
pub fn admin_url() -> String {
    std::env::var("DATABASE_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_ADMIN_URL.to_owned())
}

/// One test's own database.
pub struct TestDb {
    pub pool: PgPool,
    pub name: String,
    url: String,
    /// Kept after the run (benchmarks that reuse a seeded database): never dropped.
    keep: bool,
}

impl TestDb {
    /// A fresh database holding the full schema.
    pub async fn new() -> Self {
        crate::init_logging();
        let template = ensure_template().await;
        Self::clone_of(Some(&template)).await
    }

    /// A fresh database with no schema at all (for migration tests).
    pub async fn empty() -> Self {
        crate::init_logging();
        Self::clone_of(None).await
    }

    async fn clone_of(template: Option<&str>) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "syncplane_test_{}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            rand::random::<u32>()
        );
        let mut admin = admin_conn().await;
        let sql = match template {
            Some(t) => format!(r#"CREATE DATABASE "{name}" TEMPLATE "{t}""#),
            None => format!(r#"CREATE DATABASE "{name}""#),
        };
        exec(&mut admin, sql).await.expect("create test database");
        let _ = admin.close().await;
        let url = db_url(&name);
        let options: PgConnectOptions = url.parse().expect("test database url");
        let pool = PgPoolOptions::new()
            .max_connections(20)
            .connect_with(options)
            .await
            .expect("connect to test database");
        Self {
            pool,
            name,
            url,
            keep: false,
        }
    }

    /// A database that outlives the process, for benchmarks that seed once and measure many
    /// times: `name` is opened if it exists, else created with the full schema. The flag says
    /// whether it already existed. Never dropped.
    pub async fn kept(name: &str) -> (Self, bool) {
        crate::init_logging();
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "a kept database name is lowercase letters, digits and _"
        );
        let mut admin = admin_conn().await;
        let exists: Option<i32> =
            sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
                .bind(name)
                .fetch_optional(&mut admin)
                .await
                .expect("look up the kept database");
        if exists.is_none() {
            let template = ensure_template().await;
            let sql = format!(r#"CREATE DATABASE "{name}" TEMPLATE "{template}""#);
            exec(&mut admin, sql).await.expect("create kept database");
        }
        let _ = admin.close().await;
        let url = db_url(name);
        let options: PgConnectOptions = url.parse().expect("kept database url");
        let pool = PgPoolOptions::new()
            .max_connections(20)
            .connect_with(options)
            .await
            .expect("connect to kept database");
        let db = Self {
            pool,
            name: name.to_owned(),
            url,
            keep: true,
        };
        (db, exists.is_some())
    }

    /// The database URL, for code that opens its own pool (functions, CLI).
    pub fn url(&self) -> Secret {
        Secret::new(self.url.clone())
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let name = self.name.clone();
        // Drop cannot await; a short-lived runtime on its own thread does the cleanup. The pool
        // is not closed here (its connections belong to the test's runtime, which is blocked on
        // this drop); `WITH (FORCE)` ends them.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                if let Ok(mut admin) = PgConnection::connect(&admin_url()).await {
                    let _ = exec(
                        &mut admin,
                        format!(r#"DROP DATABASE IF EXISTS "{name}" WITH (FORCE)"#),
                    )
                    .await;
                    let _ = admin.close().await;
                }
            });
        })
        .join();
    }
}

fn db_url(name: &str) -> String {
    let mut url = url::Url::parse(&admin_url()).expect("DATABASE_URL is a URL");
    url.set_path(&format!("/{name}"));
    url.to_string()
}

/// Run a statement built at run time (database names cannot be bound parameters; every name
/// here is generated by this module, never taken from input).
async fn exec(conn: &mut PgConnection, sql: String) -> Result<(), sqlx::Error> {
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(conn)
        .await
        .map(|_| ())
}

async fn admin_conn() -> PgConnection {
    PgConnection::connect(&admin_url())
        .await
        .unwrap_or_else(|e| {
            panic!(
                "cannot reach Postgres at DATABASE_URL ({}): {e}",
                admin_url()
            )
        })
}

/// A template this process created, appended to `SYNCPLANE_STARTED_FILE` when set:
/// `scripts/test.sh` drops it when the run ends (`scripts/services.sh --stop`), so a run leaves
/// no database behind (issue 21 point 7). `cargo test` run directly keeps it, for the next run.
fn record_created(template: &str) {
    use std::io::Write;
    let Some(path) = std::env::var_os("SYNCPLANE_STARTED_FILE") else {
        return;
    };
    let file = std::fs::OpenOptions::new().append(true).open(path);
    if let Ok(mut file) = file {
        let _ = writeln!(file, "database {template}");
    }
}

/// Name of the template for the current migrations; created (once, under an advisory lock shared
/// by parallel test processes) if missing.
async fn ensure_template() -> String {
    let mut hasher = Sha256::new();
    for m in shared::db::MIGRATOR.iter() {
        hasher.update(m.version.to_le_bytes());
        hasher.update(&*m.checksum);
    }
    let digest = hasher.finalize();
    let name = format!("syncplane_template_{}", &hex::encode(digest)[..16]);

    let mut admin = admin_conn().await;
    // Serialise template creation across concurrently starting test processes.
    sqlx::query("SELECT pg_advisory_lock(7263517253)")
        .execute(&mut admin)
        .await
        .expect("template lock");
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(&name)
            .fetch_one(&mut admin)
            .await
            .expect("look up template");
    if !exists {
        let building = format!("{name}_building");
        exec(
            &mut admin,
            format!(r#"DROP DATABASE IF EXISTS "{building}" WITH (FORCE)"#),
        )
        .await
        .expect("drop stale template");
        exec(&mut admin, format!(r#"CREATE DATABASE "{building}""#))
            .await
            .expect("create template");
        {
            let mut conn = PgConnection::connect(&db_url(&building))
                .await
                .expect("connect to template");
            shared::db::MIGRATOR
                .run(&mut conn)
                .await
                .expect("migrate template");
            let _ = conn.close().await;
        }
        // The rename makes the finished template appear atomically.
        exec(
            &mut admin,
            format!(r#"ALTER DATABASE "{building}" RENAME TO "{name}""#),
        )
        .await
        .expect("publish template");
        record_created(&name);
    }
    let _ = sqlx::query("SELECT pg_advisory_unlock(7263517253)")
        .execute(&mut admin)
        .await;
    let _ = admin.close().await;
    name
}

/// Wait, if need be, until the database's clock has at least `headroom` left in its current
/// minute. The ingest and transcript rate limits count per calendar minute of the database's
/// `now()` (the one clock every server instance shares, so the one their code uses); a test that
/// counts inside one window starts here and stays inside it however loaded the machine is, instead
/// of failing when the minute turns mid-test (issue 21 point 21). Most of each minute this returns
/// at once.
pub async fn inside_one_minute_window(pool: &PgPool, headroom: std::time::Duration) {
    let left: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM date_trunc('minute', clock_timestamp()) + interval '1 minute'
                                  - clock_timestamp())::float8",
    )
    .fetch_one(pool)
    .await
    .expect("read the database clock");
    if left < headroom.as_secs_f64() {
        tokio::time::sleep(std::time::Duration::from_secs_f64(left + 0.05)).await;
    }
}
