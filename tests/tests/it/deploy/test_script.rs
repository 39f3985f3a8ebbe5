//! Issue 21 point 7: `bash scripts/test.sh <filter>` is quiet and tidy. Its output filter
//! (scripts/test-output.awk) drops every test target that ran no test; `scripts/services.sh`
//! lists what it started (`SYNCPLANE_STARTED_FILE`, where the test harness adds the template
//! database it created) and `--stop` ends it: the template dropped, the AWS emulator stopped
//! unless another run still holds the runs' lock. A test cannot run test.sh itself (cargo's
//! build lock is held while tests run), so these run its parts; each on an emulator of its own,
//! on a port of its own, never the one the suite uses.

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection};
use syncplane_tests::db::admin_url;

use super::local_database::{services, tempdir};
use super::repo_file;

const SAMPLE: &str = "\
   Compiling shared v0.1.0 (/repo/shared)
     Running unittests src/lib.rs (target/debug/deps/shared-0a1b)

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 321 filtered out; finished in 0.00s

\u{1b}[1m\u{1b}[92m     Running\u{1b}[0m unittests src/main.rs (target/debug/deps/syncplane-2c3d)

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 4 filtered out; finished in 0.00s

     Running tests/it/main.rs (target/debug/deps/it-4e5f)

running 2 tests
test docs::links_resolve ... ok
test docs::settings_are_documented ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 900 filtered out; finished in 0.20s

   Doc-tests shared

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

";

fn filter(input: &str, words: &str) -> String {
    let mut child = Command::new("awk")
        .args([
            "-v",
            &format!("filter={words}"),
            "-f",
            "scripts/test-output.awk",
        ])
        .current_dir(repo_file(""))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("awk runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_filtered_test_run_prints_no_target_that_ran_no_test() {
    let out = filter(SAMPLE, "docs");
    assert!(!out.contains("running 0 tests"), "{out}");
    assert!(
        !out.contains("shared-0a1b") && !out.contains("syncplane-2c3d"),
        "{out}"
    );
    assert!(!out.contains("Doc-tests"), "{out}");
    // What ran is there, whole, and what cargo says besides.
    assert!(out.starts_with("Compiling shared v0.1.0"), "{out}");
    assert!(out.contains("     Running tests/it/main.rs"), "{out}");
    assert!(out.contains("test docs::links_resolve ... ok"), "{out}");
    assert!(out.contains("test result: ok. 2 passed"), "{out}");
    assert!(!out.contains("no test matched"), "{out}");

    // Nothing matched: one line says so, naming the filter.
    let none = filter(
        &SAMPLE.replace("running 2 tests", "running 0 tests"),
        "nope",
    );
    assert_eq!(
        none.trim(),
        "Compiling shared v0.1.0 (/repo/shared)\nno test matched: nope"
    );
}

fn answers(port: u16) -> bool {
    TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).is_ok()
}

fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the emulator the test started if an assertion fails before the script stops it.
struct Started(u32);

impl Drop for Started {
    fn drop(&mut self) {
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", self.0)).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("moto_server") {
            let _ = Command::new("kill").arg(self.0.to_string()).status();
        }
    }
}

async fn exec(sql: String) {
    let mut admin = PgConnection::connect(&admin_url()).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut admin)
        .await
        .unwrap();
    let _ = admin.close().await;
}

async fn exists(name: &str) -> bool {
    let mut admin = PgConnection::connect(&admin_url()).await.unwrap();
    let found: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(name)
        .fetch_optional(&mut admin)
        .await
        .unwrap();
    let _ = admin.close().await;
    found.is_some()
}

#[tokio::test]
async fn a_run_stops_the_emulator_it_started_and_drops_its_template_but_not_while_another_run_uses_them()
 {
    let dir = tempdir::Dir::new("services");
    let tmp = dir.path().display().to_string();
    let started = dir.path().join("started").display().to_string();
    std::fs::write(&started, "").unwrap();
    let port = closed_port();
    let port_text = port.to_string();
    let url = admin_url();
    let suite_emulator = answers(4566);
    let vars = [
        ("DATABASE_URL", url.as_str()),
        ("TMPDIR", tmp.as_str()),
        ("SYNCPLANE_STARTED_FILE", started.as_str()),
        ("SYNCPLANE_MOTO_PORT", port_text.as_str()),
    ];

    let up = services(&[], &vars);
    assert_eq!(up.code, Some(0), "{}{}", up.stdout, up.stderr);
    let listed = std::fs::read_to_string(&started).unwrap();
    let pid: u32 = listed
        .strip_prefix("moto_server ")
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or_else(|| panic!("services.sh lists the emulator it started: {listed:?}"));
    let _guard = Started(pid);
    assert!(answers(port));

    // The template database this run's tests created (the harness appends such a line).
    let template = format!("syncplane_template_{:016x}", rand::random::<u64>());
    exec(format!(r#"CREATE DATABASE "{template}""#)).await;
    std::fs::write(&started, format!("{listed}database {template}\n")).unwrap();

    // Another run holds the runs' lock: the emulator stays for it, the template goes.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("syncplane-services.lock"))
        .unwrap();
    lock.lock_shared().unwrap();
    let stop = services(&["--stop", &started], &vars);
    assert_eq!(stop.code, Some(0), "{}{}", stop.stdout, stop.stderr);
    assert!(
        stop.stdout.contains("left the AWS emulator running"),
        "{}",
        stop.stdout
    );
    assert!(answers(port), "the other run still has its emulator");
    assert!(
        !exists(&template).await,
        "the template is dropped: {}",
        stop.stdout
    );

    // That run ends (its own list is empty): the last run out stops the emulator.
    drop(lock);
    let empty = dir.path().join("empty").display().to_string();
    std::fs::write(&empty, "").unwrap();
    let last = services(&["--stop", &empty], &vars);
    assert!(
        last.stdout.contains("stopped the AWS emulator"),
        "{}",
        last.stdout
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while answers(port) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!answers(port), "the emulator this run started is stopped");
    assert_eq!(
        answers(4566),
        suite_emulator,
        "the suite's emulator is left alone"
    );
}
