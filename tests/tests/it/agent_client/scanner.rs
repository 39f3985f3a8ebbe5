//! An oracle nobody on this team wrote, for the device's redaction (issue 31 point 1):
//! detect-secrets (`syncplane_tests::scanner`, installed by `bash scripts/tools.sh --scanners`)
//! over
//! (a) the raw secrets corpus, where it must flag every planted line (so this check can fail),
//! (b) what the archive returns for the same corpus after the transcript lane uploaded it to the
//!     real ingest handler, where it must find none of the planted secrets, and nothing but the
//!     findings accepted one by one in `tests/fixtures/redaction/detect-secrets-accepted.json`.
//!
//! The corpus is every shape a tool prints text in (`redaction_corpus::rendered`: numbered file
//! listings, escaped JSON, logs, code literals, tables, YAML, URL paths, query strings, basic
//! auth, env files) plus the plain placements, for the families the scanner has a plugin for.

use std::time::Duration;

use syncplane_agent::MemorySource;
use syncplane_tests::redaction_corpus::{Planted, pieces, planted, rendered};
use syncplane_tests::scanner::{self, Finding};

use super::support::*;

/// The families detect-secrets recognises by a plugin of its own (the issue names Twilio,
/// Telegram and private keys; its keyword and entropy plugins run over everything too).
const ORACLE_RULES: &[&str] = &[
    "twilio-key",
    "twilio-auth-token",
    "telegram-bot-token",
    "private-key",
    "aws-access-key-id",
    "github-token",
    "gitlab-token",
    "slack-token",
    "stripe-key",
    "sendgrid-api-key",
];

/// Three variants of the generator have no pattern in the scanner, so it could not be an oracle
/// for them: Stripe's webhook secrets (`whsec_`; its StripeDetector knows `sk_live_` and
/// `rk_live_`), GitHub's fine-grained tokens (`github_pat_`; its GitHubTokenDetector knows
/// `ghp_ gho_ ghu_ ghs_ ghr_`) and `BEGIN ENCRYPTED PRIVATE KEY` (not in its
/// PrivateKeyDetector's list). The project's own corpus tests cover all three.
fn scanner_has_a_pattern_for(p: &Planted) -> bool {
    !(p.secret.starts_with("whsec_")
        || p.secret.starts_with("github_pat_")
        || p.secret.contains("ENCRYPTED PRIVATE KEY"))
}

fn corpus() -> Vec<Planted> {
    let (mut all, unknown) = rendered(ORACLE_RULES.iter().copied(), 131, 2);
    assert!(unknown.is_empty(), "{unknown:?}");
    all.extend(planted(ORACLE_RULES.iter().copied(), 131, 6).0);
    all.retain(scanner_has_a_pattern_for);
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_independent_scanner_flags_every_planted_line_raw_and_no_planted_secret_in_the_archive()
{
    let env = env().await;
    let secrets = corpus();
    let raw: Vec<String> = secrets.iter().map(|p| p.line.clone()).collect();

    // (a) The raw corpus: every planted line flagged.
    let found = scanner::scan(&raw, &env.dir.0);
    let unflagged: Vec<String> = secrets
        .iter()
        .enumerate()
        .filter(|(i, _)| !found.iter().any(|f| f.line == *i))
        .map(|(_, p)| format!("{} as {}", p.rule, p.shape))
        .collect();
    assert!(
        unflagged.is_empty(),
        "the scanner does not see {} of {} planted lines: {unflagged:?}",
        unflagged.len(),
        secrets.len()
    );

    // (b) Through the lane and the archive, read back as the web app reads it.
    let src = MemorySource::default();
    src.put(
        "s-oracle",
        "oracle.jsonl",
        (raw.join("\n") + "\n").into_bytes(),
    );
    let (mut lane, clock) = transcript_lane(
        &env.dir.0,
        &env.token,
        &src,
        &env.server.url(),
        Duration::from_secs(8),
        64 * 1024,
    );
    for _ in 0..100 {
        lane.tick().await.unwrap();
        if lane.drained().unwrap() {
            break;
        }
        clock.advance(Duration::from_secs(1));
    }
    assert!(lane.drained().unwrap(), "{:?}", lane.figures());
    let archived = archived_lines(&env, &read_token(&env).await, "s-oracle", "oracle.jsonl").await;
    assert_eq!(archived.len(), raw.len(), "every line archived");

    let found = scanner::scan(&archived, &env.dir.0);
    let planted_hashes: Vec<String> = secrets
        .iter()
        .flat_map(|p| pieces(&p.secret))
        .map(scanner::hashed)
        .collect();
    let leaked: Vec<&Finding> = found
        .iter()
        .filter(|f| planted_hashes.contains(&f.hashed_secret))
        .collect();
    assert!(
        leaked.is_empty(),
        "planted secrets in the archive: {leaked:?}"
    );
    let accepted = scanner::accepted();
    let unexplained: Vec<String> = found
        .iter()
        .filter(|f| {
            !accepted
                .iter()
                .any(|a| a.kind == f.kind && scanner::hashed(&a.value) == f.hashed_secret)
        })
        .map(|f| {
            let value = scanner::value_in(&archived[f.line], &f.hashed_secret);
            format!(
                "line {}: {} {} ({value:?})",
                f.line, f.kind, f.hashed_secret
            )
        })
        .collect();
    assert!(
        unexplained.is_empty(),
        "findings in the archive nobody accepted (a secret that survived, or a false positive to \
         document in tests/fixtures/redaction/detect-secrets-accepted.json):\n{}",
        unexplained.join("\n")
    );
    println!(
        "detect-secrets {}: {} planted lines, all flagged raw; in the archive {} findings, 0 of a planted secret, all {} accepted one by one",
        scanner::VERSION,
        secrets.len(),
        found.len(),
        accepted.len()
    );
    // Every accepted finding is still found: the list stays the findings of today's corpus.
    for a in &accepted {
        assert!(
            found
                .iter()
                .any(|f| f.kind == a.kind && f.hashed_secret == scanner::hashed(&a.value)),
            "accepted but no longer found (remove it): {} {}",
            a.kind,
            a.value
        );
    }
}
