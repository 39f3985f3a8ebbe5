//! §2: logs go to stderr (colours only on a terminal), results to stdout, no lock held across an
//! await: `syncplane sync --json` at every log level exits and prints valid JSON.

use serde_json::Value;
use syncplane_tests::fake_github::Fault;
use syncplane_tests::processes;

use super::Env;

const ESC: char = '\u{1b}';

#[tokio::test]
async fn sync_json_stays_valid_json_on_stdout_at_every_log_level() {
    let e = Env::new().await;
    // One repository's tree fails on every run, so every run logs a warning while it works.
    e.gh.fault_on_path("acme/widgets/git/trees", Fault::Status(500), None);
    for level in ["error", "warn", "info", "debug", "trace"] {
        let mut vars = e.vars();
        vars.push(("RUST_LOG".to_owned(), level.to_owned()));
        let out = processes::run("syncplane", &["sync", "--json"], &vars).await;
        let status = out
            .status
            .unwrap_or_else(|| panic!("RUST_LOG={level}: syncplane sync hung"));
        assert_eq!(
            status.code(),
            Some(i32::from(syncplane_cli::report::EXIT_PARTIAL)),
            "RUST_LOG={level}: {}",
            out.stderr
        );
        let json: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|err| {
            panic!(
                "RUST_LOG={level}: stdout is not JSON ({err}): {}",
                out.stdout
            )
        });
        assert_eq!(json[0]["result"], "run", "RUST_LOG={level}");
        assert_eq!(json[0]["report"]["status"], "partial", "RUST_LOG={level}");
        assert!(
            !out.stdout.contains(ESC),
            "RUST_LOG={level}: ANSI in stdout"
        );
        assert!(
            !out.stderr.contains(ESC),
            "RUST_LOG={level}: colours on a stderr that is not a terminal"
        );
        if level != "error" {
            assert!(
                out.stderr.contains("repository sync failed"),
                "RUST_LOG={level}: the warning is on stderr: {}",
                out.stderr
            );
        }
    }
}
