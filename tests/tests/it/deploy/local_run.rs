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
    let fake = std::fs::read_to_string(repo_file("tests/src/bin/fake-github.rs")).unwrap();
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
    assert!(local.contains("cargo lambda watch -A 127.0.0.1"));
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
    assert!(demo.contains("cargo lambda invoke -A 127.0.0.1 "), "{demo}");
    assert!(demo.contains("Bearer demo-sync-token"), "{demo}");
    assert!(!demo.contains("$SYNC_API_TOKEN"), "{demo}");
    assert!(demo.contains("App key (GITHUB_APP_PRIVATE_KEY_FILE): /tmp/fake/app.pem"));
    assert!(demo.contains(". /tmp/syncplane-local.env;"), "{demo}");
    assert!(demo.contains("http://127.0.0.1:9000/lambda-url/sync-api/api/repos"));

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
    assert!(out.contains("PostgreSQL ready"), "{out}");
    assert!(!out.contains("emulator"), "no AWS emulator: {out}");
    // Every system change is announced before it runs.
    let services = script("services.sh");
    for change in ["apt-get install", "sed -i"] {
        let at = services.find(change).unwrap();
        let announced = services[..at].rfind("system_change \"").unwrap();
        assert!(announced < at, "{change} is announced first");
    }
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
    let out = Command::new("shellcheck").args(&scripts).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
