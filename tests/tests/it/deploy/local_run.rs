//! The local-run scripts (issue 13 points 8 and 9): the demo credentials the events/ samples carry
//! are the ones `scripts/local.sh` sets; a local run starts Postgres only (no AWS emulator it does
//! not use) and says what it would change on the machine before changing it; the banner's invoke
//! line reaches `cargo lambda watch`; the scripts pass shellcheck where it is installed.

use std::process::Command;

use syncplane_tests::fake_github::demo;

use super::repo_file;

fn script(name: &str) -> String {
    std::fs::read_to_string(repo_file(&format!("scripts/{name}"))).unwrap()
}

fn bash(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let out = Command::new("bash")
        .args(args)
        .current_dir(repo_file(""))
        .envs(env.iter().copied())
        .output()
        .expect("bash runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_local_run_sets_the_demo_credentials_the_samples_carry() {
    let local = script("local.sh");
    for expected in [
        format!("GITHUB_WEBHOOK_SECRET:-{}", demo::WEBHOOK_SECRET),
        format!("SYNC_API_TOKEN:-{}", demo::SYNC_API_TOKEN),
    ] {
        assert!(local.contains(&expected), "local.sh sets {expected}");
    }
    let fake = std::fs::read_to_string(repo_file("tests/fake-github/src/main.rs")).unwrap();
    assert!(
        fake.contains("demo::populate"),
        "the demo installation has the samples' id"
    );
}

/// The banner `scripts/local.sh` prints, run on its own with only `vars` set.
fn banner(vars: &[(&str, &str)]) -> String {
    let out = Command::new("bash")
        .arg("scripts/local-banner.sh")
        .current_dir(repo_file(""))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(vars.iter().copied())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_banner_names_the_watch_address_the_key_and_no_unset_variable() {
    let local = script("local.sh");
    assert!(local.contains(r#"cargo lambda watch -A "$serve_host" -P "$serve_port""#));
    assert!(local.contains(r#"serve --addr "$serve_addr""#));
    assert!(local.contains(". scripts/local-banner.sh"));

    // The demo under cargo lambda watch: curl lines carry the demo token itself, the invoke
    // line the address watch listens on, the key path the CLI needs.
    let demo = banner(&[
        ("mode", "watch"),
        ("no_app", "1"),
        ("SYNC_API_TOKEN", "demo-sync-token"),
        ("GITHUB_APP_PRIVATE_KEY_FILE", "/tmp/fake/app.pem"),
        ("local_env", "/tmp/syncplane-local.env"),
    ]);
    assert!(
        demo.contains("cargo lambda invoke -A 127.0.0.1 -P 9000 "),
        "{demo}"
    );
    assert!(demo.contains("Bearer demo-sync-token"), "{demo}");
    assert!(!demo.contains("$SYNC_API_TOKEN"), "{demo}");
    assert!(demo.contains("App key (GITHUB_APP_PRIVATE_KEY_FILE): /tmp/fake/app.pem"));
    assert!(demo.contains(". /tmp/syncplane-local.env;"), "{demo}");
    assert!(demo.contains("http://127.0.0.1:9000/lambda-url/sync-api/api/repos"));
    // The web console under watch: the sync API's own prefix, with the slash its relative
    // script and style URLs need.
    assert!(
        demo.contains("Web console: http://127.0.0.1:9000/lambda-url/sync-api/\n"),
        "{demo}"
    );

    // A real App under serve on another address: the token is never printed, the line says
    // to export it; the addresses follow SYNCPLANE_SERVE_ADDR; an inline key is not printed
    // but the banner says the CLI needs it.
    let secret_key = "-----BEGIN RSA PRIVATE KEY-----\nMIIsecret\n-----END RSA PRIVATE KEY-----";
    let real = banner(&[
        ("mode", "serve"),
        ("serve_addr", "127.0.0.1:9100"),
        ("SYNC_API_TOKEN", "a-real-secret-token"),
        ("GITHUB_APP_PRIVATE_KEY", secret_key),
    ]);
    assert!(!real.contains("a-real-secret-token"), "{real}");
    assert!(!real.contains("MIIsecret"), "{real}");
    assert!(real.contains("Bearer $SYNC_API_TOKEN"), "{real}");
    assert!(real.contains("first: export SYNC_API_TOKEN"), "{real}");
    assert!(real.contains("http://127.0.0.1:9100/lambda-url/sync-api/api/sync"));
    assert!(
        real.contains("Web console: http://127.0.0.1:9100/\n"),
        "{real}"
    );
    assert!(
        real.contains("http://127.0.0.1:9100/github/webhook"),
        "{real}"
    );
    assert!(!real.contains(":9000"), "{real}");
    assert!(
        real.contains("App key: given inline (GITHUB_APP_PRIVATE_KEY)"),
        "{real}"
    );
}

#[test]
fn local_sh_offers_serve_and_refuses_unknown_arguments() {
    let (code, out, _) = bash(&["scripts/local.sh", "--help"], &[]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains("--serve") && out.contains("syncplane serve"),
        "{out}"
    );
    let (code, _, err) = bash(&["scripts/local.sh", "--nope"], &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--nope"), "{err}");
    assert!(script("local.sh").contains("bash scripts/services.sh --postgres-only"));
}

#[test]
fn a_local_run_starts_postgres_only_and_changes_nothing_unannounced() {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let (code, out, err) = bash(
        &["scripts/services.sh", "--postgres-only"],
        &[("DATABASE_URL", &url), ("SYNCPLANE_NO_SYSTEM_CHANGES", "1")],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("PostgreSQL listening on 127.0.0.1:"), "{out}");
    assert!(!out.contains("emulator"), "no AWS emulator: {out}");
    // Every system change is announced before it runs; pg_hba.conf is changed only when allowed
    // (a yes on the terminal, or SYNCPLANE_ALLOW_SYSTEM_CHANGES=1).
    let services = script("services.sh");
    let install = services.find("apt-get install -y").unwrap();
    assert!(services[..install].rfind("system_change \"").is_some());
    let edit = services.find("sed -i").unwrap();
    let asked = services[..edit].rfind("if ! allowed ").unwrap();
    let announced = services[..edit].rfind("echo \"about to $change\"").unwrap();
    assert!(asked < announced, "asked, then announced, then changed");
}

#[test]
fn the_scripts_pass_shellcheck() {
    let found = Command::new("shellcheck").arg("--version").output();
    if found.is_err() {
        eprintln!("shellcheck is not installed: skipped");
        return;
    }
    let scripts: Vec<String> = [
        "local.sh",
        "local-banner.sh",
        "services.sh",
        "tools.sh",
        "demo.sh",
        "test.sh",
    ]
    .iter()
    .map(|s| repo_file(&format!("scripts/{s}")).display().to_string())
    .collect();
    // From the repository root, where local.sh's `source=` directive names the banner.
    let out = Command::new("shellcheck")
        .args(&scripts)
        .current_dir(repo_file(""))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn one_setting_moves_the_watch_address_too_and_the_banner_follows() {
    // SYNCPLANE_SERVE_ADDR is read for both servers: local.sh splits it for watch's -A/-P.
    let local = script("local.sh");
    assert!(local.contains(r#"serve_addr="${SYNCPLANE_SERVE_ADDR:-127.0.0.1:9000}""#));
    let watch = banner(&[
        ("mode", "watch"),
        ("serve_addr", "127.0.0.1:9100"),
        ("no_app", "1"),
        ("SYNC_API_TOKEN", "demo-sync-token"),
    ]);
    assert!(
        watch.contains("http://127.0.0.1:9100/lambda-url/sync-api/api/repos"),
        "{watch}"
    );
    assert!(
        watch.contains("cargo lambda invoke -A 127.0.0.1 -P 9100 "),
        "{watch}"
    );
    assert!(!watch.contains(":9000"), "{watch}");
}

/// A stand-in for the local run's server: answers every request with `body`, and records each
/// request line.
fn stand_in(body: &'static str) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let mut length = 0usize;
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
                let lower = header.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut rest = vec![0u8; length];
            let _ = reader.read_exact(&mut rest);
            record.lock().unwrap().push(first.trim().to_owned());
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = reader.get_mut().write_all(answer.as_bytes());
        }
    });
    (port, seen)
}

#[test]
fn the_demo_calls_the_address_the_local_run_serves_at() {
    let (port, seen) =
        stand_in(r#"{"data":{"repositories":[{"githubId":42,"fullName":"acme/handbook"}]}}"#);
    let dir = super::local_database::tempdir::Dir::new("demo");
    // What local.sh writes for the CLI and the demo, served at another port.
    std::fs::write(
        dir.path().join("syncplane-local.env"),
        format!(
            "DATABASE_URL=postgres://x@127.0.0.1/x\nSYNCPLANE_SERVE_ADDR=127.0.0.1:{port}\n\
             GITHUB_INSTALLATION_ID=12345678\nGITHUB_WEBHOOK_SECRET=s\nSYNC_API_TOKEN=t\n"
        ),
    )
    .unwrap();
    let tmp = dir.path().display().to_string();
    let out = Command::new("bash")
        .arg("scripts/demo.sh")
        .current_dir(repo_file(""))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TMPDIR", &tmp)
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = seen.lock().unwrap().clone();
    for expected in [
        "POST /lambda-url/sync-api/api/sync HTTP/1.1",
        "GET /lambda-url/sync-api/api/repos HTTP/1.1",
        "POST /lambda-url/webhook/github/webhook HTTP/1.1",
        "GET /lambda-url/sync-api/api/sync/runs HTTP/1.1",
    ] {
        assert!(seen.iter().any(|l| l == expected), "{expected}: {seen:?}");
    }

    // Nothing there: one line naming the address, no traceback.
    drop(dir);
    let dir = super::local_database::tempdir::Dir::new("demo");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        dir.path().join("syncplane-local.env"),
        format!("SYNCPLANE_SERVE_ADDR=127.0.0.1:{closed}\nSYNC_API_TOKEN=t\n"),
    )
    .unwrap();
    let out = Command::new("bash")
        .arg("scripts/demo.sh")
        .current_dir(repo_file(""))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TMPDIR", dir.path())
        .output()
        .expect("bash runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains(&format!("nothing answers at http://127.0.0.1:{closed}")),
        "{stderr}"
    );
    assert!(!stderr.contains("Traceback"), "{stderr}");
}
