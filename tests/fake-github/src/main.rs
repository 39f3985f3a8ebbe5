//! The fake GitHub as a standalone server for the local demo: the demo installation and its two
//! repositories (`fake_github::demo`), then serves until killed. `FAKE_GITHUB_PORT` picks the
//! port (default: any free one).

use std::net::SocketAddr;

use syncplane_fake_github::{FakeGithub, app_key_path, demo};

#[tokio::main]
async fn main() {
    let port = std::env::var("FAKE_GITHUB_PORT")
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or(0);
    let github = FakeGithub::start_on(SocketAddr::from(([127, 0, 0, 1], port))).await;
    let installation = demo::populate(&github);
    println!("fake GitHub listening on {}", github.url());
    println!("GITHUB_API_URL={}", github.url());
    println!("GITHUB_APP_ID={}", github.app_id());
    println!("GITHUB_INSTALLATION_ID={installation}");
    println!("GITHUB_PRIVATE_KEY_PATH={}", app_key_path());
    // Serve until the process is killed.
    std::future::pending::<()>().await;
}
