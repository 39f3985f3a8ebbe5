//! Issue 21 point 1: `scripts/services.sh` (what `scripts/local.sh` and `scripts/test.sh` run)
//! tells apart why `DATABASE_URL` cannot be used, through `syncplane db check`: a missing
//! database is created; a wrong port is "nothing listens"; a missing role is named; and only an
//! authentication failure leads to a `pg_hba.conf` change, never without a yes on a terminal or
//! `SYNCPLANE_ALLOW_SYSTEM_CHANGES=1`. The scripts run as processes with exactly the variables
//! given (no terminal); `SYNCPLANE_PG_HBA` points them at a file of the test's own, so the
//! machine's `pg_hba.conf` is never touched.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use sqlx::{Connection, PgConnection};
use syncplane_tests::db::admin_url;
use syncplane_tests::processes::workspace_bin;

use super::repo_file;

const HBA: &str = "# the test's own pg_hba.conf\nlocal all all peer\n";

pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// `bash scripts/services.sh args` with exactly `vars` (and PATH, HOME), no terminal.
pub fn services(args: &[&str], vars: &[(&str, &str)]) -> Ran {
    let out = Command::new("bash")
        .arg("scripts/services.sh")
        .args(args)
        .current_dir(repo_file(""))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", std::env::var("HOME").unwrap_or_default())
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("bash runs");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A `pg_hba.conf` of the test's own, in a fresh directory.
fn own_hba() -> (tempdir::Dir, String) {
    let dir = tempdir::Dir::new("hba");
    let path = dir.path().join("pg_hba.conf");
    std::fs::write(&path, HBA).unwrap();
    let path = path.display().to_string();
    (dir, path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// `DATABASE_URL`'s server, with another database, role or port.
fn url_with(user: Option<&str>, port: Option<u16>, database: &str) -> String {
    let mut url = url::Url::parse(&admin_url()).unwrap();
    if let Some(user) = user {
        url.set_username(user).unwrap();
    }
    if let Some(port) = port {
        url.set_port(Some(port)).unwrap();
    }
    url.set_path(&format!("/{database}"));
    url.to_string()
}

/// A local port nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn database_exists(name: &str) -> bool {
    let mut admin = PgConnection::connect(&admin_url()).await.unwrap();
    let found: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(name)
        .fetch_optional(&mut admin)
        .await
        .unwrap();
    let _ = admin.close().await;
    found.is_some()
}

async fn drop_database(name: &str) {
    let mut admin = PgConnection::connect(&admin_url()).await.unwrap();
    let sql = format!(r#"DROP DATABASE IF EXISTS "{name}" WITH (FORCE)"#);
    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut admin)
        .await;
    let _ = admin.close().await;
}

fn check(url: &str, hba: &str, extra: &[(&str, &str)]) -> Ran {
    let bin = workspace_bin("syncplane").display().to_string();
    let mut vars = vec![
        ("DATABASE_URL", url),
        ("SYNCPLANE_BIN", bin.as_str()),
        ("SYNCPLANE_PG_HBA", hba),
    ];
    vars.extend_from_slice(extra);
    services(&["--database"], &vars)
}

#[tokio::test]
async fn a_missing_database_is_created_and_nothing_on_the_system_changes() {
    let name = format!("syncplane_local_{}", rand::random::<u32>());
    let url = url_with(None, None, &name);
    let (_dir, hba) = own_hba();

    // Before the build: the server listens; a missing database is not its business.
    let listening = services(&["--postgres-only"], &[("DATABASE_URL", &url)]);
    assert_eq!(
        listening.code,
        Some(0),
        "{}{}",
        listening.stdout,
        listening.stderr
    );
    assert!(
        listening.stdout.contains("PostgreSQL listening on "),
        "{}",
        listening.stdout
    );

    let ran = check(&url, &hba, &[]);
    let created = database_exists(&name).await;
    drop_database(&name).await;
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout
            .contains(&format!("database \"{name}\" did not exist: created")),
        "{}",
        ran.stdout
    );
    assert!(created, "the database exists afterwards");
    assert_eq!(read(&hba), HBA, "pg_hba.conf untouched");
    for said in [&ran.stdout, &ran.stderr, &listening.stdout] {
        assert!(!said.contains("refuses"), "{said}");
        assert!(
            !said.contains("about to"),
            "no system change announced: {said}"
        );
    }
}

#[tokio::test]
async fn a_wrong_port_is_nothing_listening_there_exits_non_zero_and_changes_nothing() {
    let port = closed_port();
    let url = url_with(None, Some(port), "syncplane");
    let (_dir, hba) = own_hba();

    let before = services(&["--postgres-only"], &[("DATABASE_URL", &url)]);
    assert_eq!(before.code, Some(1), "{}{}", before.stdout, before.stderr);
    assert!(
        before.stderr.contains(&format!(
            "DATABASE_URL: nothing listens on 127.0.0.1:{port}"
        )),
        "{}",
        before.stderr
    );
    assert!(
        !before.stdout.contains("starting PostgreSQL"),
        "{}",
        before.stdout
    );

    let after = check(&url, &hba, &[("SYNCPLANE_ALLOW_SYSTEM_CHANGES", "1")]);
    assert_eq!(after.code, Some(3), "{}{}", after.stdout, after.stderr);
    assert!(
        after.stdout.contains(&format!(
            "DATABASE_URL: nothing listens on 127.0.0.1:{port}"
        )),
        "{}",
        after.stdout
    );
    assert_eq!(
        read(&hba),
        HBA,
        "not a cause pg_hba.conf can fix, even when allowed"
    );
    for said in [&before.stdout, &before.stderr, &after.stdout, &after.stderr] {
        assert!(
            !said.contains("refuses") && !said.contains("about to"),
            "{said}"
        );
    }
}

#[tokio::test]
async fn a_missing_role_is_named_and_nothing_changes() {
    let role = format!("syncplane_no_role_{}", rand::random::<u32>());
    let url = url_with(Some(&role), None, "postgres");
    let (_dir, hba) = own_hba();

    let ran = check(&url, &hba, &[("SYNCPLANE_ALLOW_SYSTEM_CHANGES", "1")]);
    assert_eq!(ran.code, Some(5), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout
            .contains(&format!("DATABASE_URL: role \"{role}\" does not exist")),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("createuser"),
        "what to do: {}",
        ran.stdout
    );
    assert_eq!(
        read(&hba),
        HBA,
        "not a cause pg_hba.conf can fix, even when allowed"
    );
    assert!(!ran.stderr.contains("about to"), "{}", ran.stderr);
}

#[tokio::test]
async fn an_authentication_failure_without_a_terminal_or_opt_in_says_what_it_would_change_and_changes_nothing()
 {
    let port = refusing_server();
    let url = format!("postgres://app:hunter2-secret@127.0.0.1:{port}/syncplane");
    let (_dir, hba) = own_hba();

    let ran = check(&url, &hba, &[]);
    assert_eq!(ran.code, Some(4), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout.contains(&format!(
            "DATABASE_URL: PostgreSQL at 127.0.0.1:{port} refuses the credentials of role \"app\""
        )),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stderr.contains(&format!(
            "this would add 'host all all 127.0.0.1/32 trust' and 'host all all ::1/128 trust' at the top of {hba}"
        )),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("SYNCPLANE_ALLOW_SYSTEM_CHANGES=1"),
        "{}",
        ran.stderr
    );
    assert_eq!(read(&hba), HBA, "no change without a yes or the opt-in");
    assert!(!format!("{}{}", ran.stdout, ran.stderr).contains("hunter2"));

    // SYNCPLANE_NO_SYSTEM_CHANGES wins over the opt-in.
    let refused = check(
        &url,
        &hba,
        &[
            ("SYNCPLANE_ALLOW_SYSTEM_CHANGES", "1"),
            ("SYNCPLANE_NO_SYSTEM_CHANGES", "1"),
        ],
    );
    assert_eq!(refused.code, Some(4));
    assert_eq!(read(&hba), HBA);

    // With the opt-in, the lines go at the top (this file is no cluster's: nothing reloaded),
    // once.
    let allowed = check(&url, &hba, &[("SYNCPLANE_ALLOW_SYSTEM_CHANGES", "1")]);
    assert!(
        allowed.stdout.contains("about to add"),
        "{}",
        allowed.stdout
    );
    assert!(
        allowed.stdout.contains("reload PostgreSQL yourself"),
        "{}",
        allowed.stdout
    );
    let expected = format!("host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n{HBA}");
    assert_eq!(read(&hba), expected);
    let again = check(&url, &hba, &[("SYNCPLANE_ALLOW_SYSTEM_CHANGES", "1")]);
    assert_eq!(again.code, Some(4));
    assert!(again.stderr.contains("already trusts"), "{}", again.stderr);
    assert_eq!(read(&hba), expected);
}

/// A server that answers every connection as PostgreSQL does when it refuses a password: no
/// TLS, then an ErrorResponse with SQLSTATE 28P01.
fn refusing_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || refuse(stream));
        }
    });
    port
}

fn refuse(mut stream: TcpStream) {
    const SSL_REQUEST: u32 = 80_877_103;
    const GSSENC_REQUEST: u32 = 80_877_104;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    loop {
        let mut length = [0u8; 4];
        if stream.read_exact(&mut length).is_err() {
            return;
        }
        let length = u32::from_be_bytes(length) as usize;
        let mut body = vec![0u8; length.saturating_sub(4)];
        if stream.read_exact(&mut body).is_err() || body.len() < 4 {
            return;
        }
        let code = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        if code == SSL_REQUEST || code == GSSENC_REQUEST {
            let _ = stream.write_all(b"N");
            continue;
        }
        let mut fields = Vec::new();
        for (tag, value) in [
            (b'S', "FATAL"),
            (b'V', "FATAL"),
            (b'C', "28P01"),
            (b'M', "password authentication failed for user \"app\""),
        ] {
            fields.push(tag);
            fields.extend_from_slice(value.as_bytes());
            fields.push(0);
        }
        fields.push(0);
        let mut message = vec![b'E'];
        message.extend_from_slice(&u32::try_from(fields.len() + 4).unwrap().to_be_bytes());
        message.extend_from_slice(&fields);
        let _ = stream.write_all(&message);
        return;
    }
}

/// A temporary directory, removed on drop.
pub mod tempdir {
    use super::Path;

    pub struct Dir(std::path::PathBuf);

    impl Dir {
        pub fn new(label: &str) -> Self {
            let path = std::env::temp_dir().join(format!(
                "syncplane-{label}-{}-{}",
                std::process::id(),
                rand::random::<u32>()
            ));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
