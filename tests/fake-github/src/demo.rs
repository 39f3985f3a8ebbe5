//! The offline demo's GitHub (`scripts/local.sh` with no App configured; the `fake-github`
//! binary): installation `acme` with `acme/handbook` and `acme/widgets`, and the demo secrets the
//! local run sets. The samples of `events/` are made for exactly this (issue 13 point 9), and the
//! tests that run them use these values.

use super::FakeGithub;

/// The demo installation's id (fixed, so the samples' `installation.id` matches it).
pub const INSTALLATION_ID: u64 = 12_345_678;
/// `GITHUB_WEBHOOK_SECRET` of the local run (scripts/local.sh).
pub const WEBHOOK_SECRET: &str = "demo-webhook-secret";
/// `SYNC_API_TOKEN` of the local run (scripts/local.sh).
pub const SYNC_API_TOKEN: &str = "demo-sync-token";

const GUIDE: &str = "---\ntitle: Getting started\n---\n# Getting started\n\nInstall, then run.\n\n## Next steps\n\nRead the API guide.\n";
const API: &str = "# API\n\nEvery endpoint answers JSON.\n\n## Authentication\n\nUse a token.\n";
const FAQ: &str = "# FAQ\n\n## Why?\n\nBecause.\n";

/// One repository's files: path and content.
pub type Files = &'static [(&'static str, &'static [u8])];

/// The demo repositories, in creation order (`acme/handbook` gets the fake's first id,
/// 700000000).
pub const REPOS: &[(&str, Files)] = &[
    (
        "acme/handbook",
        &[
            ("README.md", b"# Handbook\n\nHow we work.\n"),
            ("docs/getting-started.md", GUIDE.as_bytes()),
            ("docs/api/reference.md", API.as_bytes()),
            ("docs/faq.mdx", FAQ.as_bytes()),
            (".github/CODEOWNERS", b"* @acme/core\ndocs/ @acme/writers\n"),
        ],
    ),
    (
        "acme/widgets",
        &[
            ("README.md", b"# Widgets\n"),
            ("documentation/usage.md", b"# Usage\n\nCall `widget()`.\n"),
            ("CODEOWNERS", b"* @acme/widgets\n"),
            ("src/lib.rs", b"pub fn widget() {}\n"),
        ],
    ),
];

/// Add the demo repositories to `installation`; returns their GitHub ids in [`REPOS`] order.
pub fn add_repos(github: &FakeGithub, installation: u64) -> Vec<u64> {
    REPOS
        .iter()
        .map(|(name, files)| github.add_repo(installation, name, files))
        .collect()
}

/// The demo installation with its repositories; returns the installation's id.
pub fn populate(github: &FakeGithub) -> u64 {
    let installation = github.add_installation_with_id("acme", INSTALLATION_ID);
    add_repos(github, installation);
    installation
}
