//! A real browser for the web console's tests and bench-console (issue 22): chromedriver on a
//! free loopback port driving headless Chromium through WebDriver (fantoccini), with helpers for
//! screenshots (`target/console-screens/<name>.png`, or `SYNCPLANE_SCREENS_DIR`), axe-core (`.tools/axe-core/axe.min.js`, serious and
//! critical violations), Performance entries, and requests that left for another origin.
//!
//! Chromium and chromedriver are not optional: without them every browser test fails with one
//! line saying to run `bash scripts/tools.sh --browser` (CI installs them).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// What a missing browser says.
pub const INSTALL_HINT: &str =
    "Chromium or chromedriver is missing: run `bash scripts/tools.sh --browser` (CI installs them)";

/// The desktop window; [`MOBILE_WIDTH`] is the narrow one.
pub const DESKTOP: (u32, u32) = (1280, 900);
pub const MOBILE_WIDTH: u32 = 360;

/// At most this many browsers at once (each Chromium is a few processes; the machines have 2
/// cores). Tokio's semaphore works across the tests' runtimes.
static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// The workspace's root (the tests crate's parent).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Where screenshots go: `target/console-screens/` (a test run leaves the committed ones alone),
/// or `SYNCPLANE_SCREENS_DIR` (`SYNCPLANE_SCREENS_DIR=docs/screens bash scripts/test.sh
/// console_browser` refreshes the README's).
pub fn screens_dir() -> PathBuf {
    match std::env::var_os("SYNCPLANE_SCREENS_DIR") {
        Some(dir) => workspace_root().join(dir),
        None => workspace_root().join("target/console-screens"),
    }
}

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

fn chromedriver() -> PathBuf {
    std::env::var_os("CHROMEDRIVER")
        .map_or_else(|| PathBuf::from("/usr/bin/chromedriver"), PathBuf::from)
}

/// A serious or critical axe-core finding.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Violation {
    pub id: String,
    pub impact: String,
    pub help: String,
    pub nodes: Vec<String>,
}

/// Chromium under chromedriver; both stop when this is dropped (their process group is killed).
pub struct Browser {
    pub client: Client,
    driver: Child,
    _slot: tokio::sync::SemaphorePermit<'static>,
}

impl Browser {
    /// Start chromedriver on a free loopback port and open a headless Chromium session with the
    /// desktop window. Panics with [`INSTALL_HINT`] when either is missing.
    pub async fn start() -> Self {
        let (chrome, driver_bin) = (chromium(), chromedriver());
        assert!(chrome.exists() && driver_bin.exists(), "{INSTALL_HINT}");
        let slot = SLOTS
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("{INSTALL_HINT} ({}: {e})", driver_bin.display()));
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let started = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not listen on {addr} within 20 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chrome,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    format!("--window-size={},{}", DESKTOP.0, DESKTOP.1),
                    "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                    "--disable-background-networking", "--disable-sync", "--hide-scrollbars",
                    "--force-device-scale-factor=1", "--lang=en-US",
                ],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let mut browser = Self {
            client: loop {
                match ClientBuilder::new(connector.clone())
                    .capabilities(caps.clone())
                    .connect(&format!("http://{addr}"))
                    .await
                {
                    Ok(c) => break c,
                    Err(e) if started.elapsed() < Duration::from_secs(30) => {
                        tracing::debug!(error = %e, "no WebDriver session yet");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    Err(e) => panic!("no Chromium session from chromedriver: {e}"),
                }
            },
            driver,
            _slot: slot,
        };
        browser.resize(DESKTOP.0, DESKTOP.1).await;
        browser
    }

    /// Set the viewport's size (the window's inner size: Chromium adds no chrome headless).
    pub async fn resize(&mut self, width: u32, height: u32) {
        self.client
            .set_window_size(width, height)
            .await
            .expect("set_window_size");
    }

    /// Load `url` (callers wait for what they need with [`Self::wait_js`] or [`Self::find`]).
    pub async fn open(&self, url: &str) {
        self.client.goto(url).await.expect("goto");
    }

    /// Evaluate `script` (a function body: `return ...`) in the page.
    pub async fn js(&self, script: &str) -> Value {
        self.client
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Wait (up to 10 s) until the expression `condition` is truthy in the page.
    pub async fn wait_js(&self, condition: &str) {
        let script = format!("return !!({condition});");
        let started = Instant::now();
        loop {
            if let Ok(Value::Bool(true)) = self.client.execute(&script, vec![]).await {
                return;
            }
            if started.elapsed() > Duration::from_secs(10) {
                let text = self
                    .js("return document.querySelector('main')?.innerText ?? ''")
                    .await;
                panic!("timed out waiting for `{condition}`; the page says: {text}");
            }
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    }

    /// Wait for an element matching `css` and return it.
    pub async fn find(&self, css: &str) -> fantoccini::elements::Element {
        let escaped = serde_json::to_string(css).unwrap_or_default();
        self.wait_js(&format!("document.querySelector({escaped})"))
            .await;
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"))
    }

    /// The text of the first element matching `css` (waiting for it).
    pub async fn text(&self, css: &str) -> String {
        self.find(css)
            .await
            .text()
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"))
    }

    /// Type `text` into the element matching `css`.
    pub async fn type_into(&self, css: &str, text: &str) {
        self.find(css)
            .await
            .send_keys(text)
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"));
    }

    /// Click the element matching `css`.
    pub async fn click(&self, css: &str) {
        self.find(css)
            .await
            .click()
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"));
    }

    /// Press and release `key` (a character, or a WebDriver key code such as `'\u{e004}'`, Tab)
    /// wherever the focus is.
    pub async fn press(&self, key: char) {
        use fantoccini::actions::{InputSource, KeyAction, KeyActions};
        let keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key });
        self.client
            .perform_actions(keys)
            .await
            .expect("perform_actions");
    }

    /// A PNG of the viewport in [`screens_dir`]`/<name>.png`; its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("screenshot");
        let dir = screens_dir();
        std::fs::create_dir_all(&dir).expect("the screenshots' folder");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write the screenshot");
        path
    }

    /// axe-core's serious and critical violations on the page as it is now.
    pub async fn axe(&self) -> Vec<Violation> {
        let path = workspace_root().join(".tools/axe-core/axe.min.js");
        let source = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run `bash scripts/tools.sh --browser`",
                path.display()
            )
        });
        // WebDriver's scripts are not page scripts: the page's CSP does not apply to them.
        self.client
            .execute(&format!("{source}\n;return true;"), vec![])
            .await
            .expect("inject axe-core");
        let found = self
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 axe.run(document, { resultTypes: ['violations'] })
                   .then((r) => done(JSON.stringify(r.violations
                     .filter((v) => v.impact === 'serious' || v.impact === 'critical')
                     .map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                                    nodes: v.nodes.map((n) => n.target.join(' ')) })))))
                   .catch((e) => done(JSON.stringify({ error: String(e) })));",
                vec![],
            )
            .await
            .expect("axe.run");
        let text = found.as_str().unwrap_or("[]");
        serde_json::from_str(text).unwrap_or_else(|_| panic!("axe-core failed: {text}"))
    }

    /// The page's Performance entries of `kind` ("resource", "mark", "navigation", ...).
    pub async fn performance(&self, kind: &str) -> Vec<Value> {
        let kind = serde_json::to_string(kind).unwrap_or_default();
        match self
            .js(&format!(
                "return JSON.parse(JSON.stringify(performance.getEntriesByType({kind})));"
            ))
            .await
        {
            Value::Array(entries) => entries,
            _ => Vec::new(),
        }
    }

    /// Resource requests whose origin is not the page's (Resource Timing entries).
    pub async fn other_origin_requests(&self) -> Vec<String> {
        match self
            .js(
                "return performance.getEntriesByType('resource').map((e) => e.name)
                   .filter((n) => { try { return new URL(n).origin !== location.origin; }
                                    catch (_) { return true; } });",
            )
            .await
        {
            Value::Array(v) => v
                .into_iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Record the page's Content-Security-Policy violations from now on (`cspViolations()`).
    pub async fn watch_csp(&self) {
        self.js("window.__csp = [];
             document.addEventListener('securitypolicyviolation',
               (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
             return true;")
            .await;
    }

    /// The violations recorded since [`Self::watch_csp`].
    pub async fn csp_violations(&self) -> Vec<String> {
        match self.js("return window.__csp || [];").await {
            Value::Array(v) => v.into_iter().map(|x| x.to_string()).collect(),
            _ => Vec::new(),
        }
    }

    /// Whether the page is wider than its viewport (a horizontal scroll bar at this width).
    pub async fn overflows_horizontally(&self) -> bool {
        self.js("return document.documentElement.scrollWidth > window.innerWidth + 1;")
            .await
            .as_bool()
            .unwrap_or(true)
    }

    /// End the WebDriver session (then `Drop` stops chromedriver).
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // chromedriver and the Chromium it started share the group it leads.
        let pid = self.driver.id() as i32;
        // SAFETY: kill(2) on a process group this process started; no memory is touched.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.driver.wait();
    }
}
