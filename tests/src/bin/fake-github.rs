//! The fake GitHub as a standalone server for the local demo: two demo repositories, then
//! serves until killed. `FAKE_GITHUB_PORT` picks the port (default: any free one).

use std::net::SocketAddr;

use syncplane_tests::fake_github::{FakeGithub, app_key_path};

const GUIDE: &str = "---\ntitle: Getting started\n---\n# Getting started\n\nInstall, then run.\n\n## Next steps\n\nRead the API guide.\n";
const API: &str = "# API\n\nEvery endpoint answers JSON.\n\n## Authentication\n\nUse a token.\n";
const FAQ: &str = "# FAQ\n\n## Why?\n\nBecause.\n";

#[tokio::main]
async fn main() {
    let port = std::env::var("FAKE_GITHUB_PORT")
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or(0);
    let github = FakeGithub::start_on(SocketAddr::from(([127, 0, 0, 1], port))).await;
    let installation = github.add_installation("acme");
    github.add_repo(
        installation,
        "acme/handbook",
        &[
            ("README.md", b"# Handbook\n\nHow we work.\n"),
            ("docs/getting-started.md", GUIDE.as_bytes()),
            ("docs/api/reference.md", API.as_bytes()),
            ("docs/faq.mdx", FAQ.as_bytes()),
            (".github/CODEOWNERS", b"* @acme/core\ndocs/ @acme/writers\n"),
        ],
    );
    github.add_repo(
        installation,
        "acme/widgets",
        &[
            ("README.md", b"# Widgets\n"),
            ("documentation/usage.md", b"# Usage\n\nCall `widget()`.\n"),
            ("CODEOWNERS", b"* @acme/widgets\n"),
            ("src/lib.rs", b"pub fn widget() {}\n"),
        ],
    );
    println!("fake GitHub listening on {}", github.url());
    println!("GITHUB_API_URL={}", github.url());
    println!("GITHUB_APP_ID={}", github.app_id());
    println!("GITHUB_INSTALLATION_ID={installation}");
    println!("GITHUB_PRIVATE_KEY_PATH={}", app_key_path());
    // Serve until the process is killed.
    std::future::pending::<()>().await;
}
