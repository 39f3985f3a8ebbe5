//! detect-secrets (Yelp's secret scanner, from PyPI, pinned in `scripts/tools.sh --scanners`) as
//! an oracle nobody on this team wrote, for the device's redaction (issue 31 point 1).
//!
//! The scanner reads files line by line and reports each distinct secret once per file, so every
//! transcript line is scanned as a file of its own (a PEM header shared by two lines is then seen
//! on both). It runs offline (`--no-verify`: no network call to check a token) with every default
//! plugin, and with two of its false-positive heuristics off, because they hide secrets that
//! tools print: `is_indirect_reference` drops any line shaped like `x = f(...)` (a client built
//! with its credentials, `Client("AC…", "…")`), and `is_likely_id_string` drops a value after a
//! name ending in `_id` or `id` (`account_sid: AC…`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use sha1::{Digest, Sha1};

/// The pinned version (`scripts/tools.sh --scanners` installs it).
pub const VERSION: &str = "1.5.0";

/// Where `scripts/tools.sh --scanners` installs it.
pub fn binary() -> PathBuf {
    crate::redaction_corpus::repo_root().join(".tools/detect-secrets/bin/detect-secrets")
}

/// One finding: the line (0-based index in what was scanned), the plugin's type and the SHA-1 of
/// the secret it saw (hex), as detect-secrets reports them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Finding {
    #[serde(skip)]
    pub line: usize,
    #[serde(rename = "type")]
    pub kind: String,
    pub hashed_secret: String,
}

#[derive(Deserialize)]
struct Report {
    results: std::collections::BTreeMap<String, Vec<Finding>>,
}

/// SHA-1 of `value`, hex: how detect-secrets names a secret it found.
pub fn hashed(value: &str) -> String {
    hex::encode(Sha1::digest(value.as_bytes()))
}

/// Scan `lines` (each as a file of its own, in a new directory under `dir`); the findings in line
/// order. Panics with what to run when the scanner is not installed.
pub fn scan(lines: &[String], dir: &Path) -> Vec<Finding> {
    let bin = binary();
    assert!(
        bin.exists(),
        "detect-secrets {VERSION} is missing: run `bash scripts/tools.sh --scanners` (CI installs it)"
    );
    let root = dir.join(format!("scan-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&root).expect("scan directory");
    for (i, line) in lines.iter().enumerate() {
        std::fs::write(root.join(format!("{i:06}.jsonl")), format!("{line}\n")).expect("write");
    }
    let out = Command::new(&bin)
        .args([
            "scan",
            "--no-verify",
            "--all-files",
            "--disable-filter",
            "detect_secrets.filters.heuristic.is_indirect_reference",
            "--disable-filter",
            "detect_secrets.filters.heuristic.is_likely_id_string",
        ])
        .arg(&root)
        .current_dir(&root)
        .output()
        .expect("run detect-secrets");
    assert!(
        out.status.success(),
        "detect-secrets failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&root);
    let report: Report = serde_json::from_slice(&out.stdout).expect("detect-secrets JSON");
    let mut findings = Vec::new();
    for (file, found) in report.results {
        let line = Path::new(&file)
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse::<usize>().ok())
            .expect("a file named by its line");
        findings.extend(found.into_iter().map(|f| Finding { line, ..f }));
    }
    findings.sort_by_key(|f| f.line);
    findings
}

/// A finding on the archive's output accepted as no secret, with why (the fixture file).
#[derive(Debug, Clone, Deserialize)]
pub struct Accepted {
    #[serde(rename = "type")]
    pub kind: String,
    /// The text the scanner took for a secret (none of it is one).
    pub value: String,
    pub why: String,
}

/// The accepted findings: `tests/fixtures/redaction/detect-secrets-accepted.json`.
pub fn accepted() -> Vec<Accepted> {
    let path = crate::redaction_corpus::repo_root()
        .join("tests/fixtures/redaction/detect-secrets-accepted.json");
    let text = std::fs::read_to_string(&path).expect("the accepted findings file");
    serde_json::from_str(&text).expect("the accepted findings are JSON")
}

/// The text in `line` the scanner named by `hashed_secret`, found again (for a report a person
/// reads): a run of token characters, or of anything between two quotes.
pub fn value_in(line: &str, hashed_secret: &str) -> Option<String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "+/=_-.:".contains(c);
    let mut candidates: Vec<&str> = line.split(|c: char| !token(c)).collect();
    candidates.extend(line.split(['"', '\'', '\\']));
    candidates
        .into_iter()
        .filter(|c| !c.is_empty())
        .flat_map(|c| {
            // A plugin may take part of a run: every sub-run that starts or ends at a separator.
            let pieces: Vec<&str> = c.split([':', '.', '=']).collect();
            std::iter::once(c).chain(pieces)
        })
        // It sometimes keeps the backslash of the escape that ends the run.
        .flat_map(|c| [c.to_owned(), format!("{c}\\")])
        .find(|c| hashed(c) == hashed_secret)
}
