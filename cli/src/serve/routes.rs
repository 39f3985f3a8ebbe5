//! Which function answers a path (issue 13 point 7). Two spellings reach the same handlers:
//!
//! - `/lambda-url/<function>/<path>`: the URLs of `cargo lambda watch`, so the README's curl
//!   lines, `scripts/demo.sh` and anything written against the emulator keep working;
//! - the deployed HTTP API's own paths (template.yaml's routes): `/github/webhook[/{tenant}]`,
//!   `/api/agent-sessions/...` and the other `/api/...` routes, so a desktop client or a GitHub
//!   App pointed at `http://127.0.0.1:9000` talks to it as to the deployment; and the web
//!   console's `/` and `/console/...`, so the local run opens in a browser.
//!
//! The function sees the path without the `/lambda-url/<function>` prefix, as under the emulator
//! and behind API Gateway.

/// The HTTP functions (tick, worker and migrate take events, not HTTP requests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Webhook,
    SyncApi,
    Ingest,
}

impl Function {
    /// The function's crate name, as in `/lambda-url/<function>`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Webhook => "webhook",
            Self::SyncApi => "sync-api",
            Self::Ingest => "ingest",
        }
    }

    fn named(name: &str) -> Option<Self> {
        [Self::Webhook, Self::SyncApi, Self::Ingest]
            .into_iter()
            .find(|f| f.name() == name)
    }

    /// The function the deployed API routes `path` to.
    fn by_route(path: &str) -> Option<Self> {
        if path.starts_with("/github/webhook") {
            Some(Self::Webhook)
        } else if path.starts_with("/api/agent-sessions/") {
            Some(Self::Ingest)
        } else if path.starts_with("/api/")
            || path == "/"
            || path == "/console"
            || path.starts_with("/console/")
        {
            // The web console's page and files are the sync API's (`shared::console`).
            Some(Self::SyncApi)
        } else {
            None
        }
    }
}

pub const LAMBDA_URL_PREFIX: &str = "/lambda-url/";

/// The function for `path` and the path it sees, or `None` (404).
pub fn resolve(path: &str) -> Option<(Function, &str)> {
    match path.strip_prefix(LAMBDA_URL_PREFIX) {
        Some(rest) => {
            let (name, tail) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
            Some((Function::named(name)?, tail))
        }
        None => Some((Function::by_route(path)?, path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emulator_urls_and_deployed_routes_reach_the_same_functions() {
        for (path, want) in [
            (
                "/lambda-url/sync-api/api/sync",
                Some((Function::SyncApi, "/api/sync")),
            ),
            (
                "/lambda-url/webhook/github/webhook",
                Some((Function::Webhook, "/github/webhook")),
            ),
            (
                "/lambda-url/ingest/api/agent-sessions/sync",
                Some((Function::Ingest, "/api/agent-sessions/sync")),
            ),
            ("/lambda-url/sync-api", Some((Function::SyncApi, "/"))),
            (
                "/api/sync/runs/3",
                Some((Function::SyncApi, "/api/sync/runs/3")),
            ),
            (
                "/api/agent-sessions/hello",
                Some((Function::Ingest, "/api/agent-sessions/hello")),
            ),
            (
                "/github/webhook/acme",
                Some((Function::Webhook, "/github/webhook/acme")),
            ),
            ("/lambda-url/tick/", None),
            ("/lambda-url/nope/api/sync", None),
            ("/", Some((Function::SyncApi, "/"))),
            (
                "/console/app.js",
                Some((Function::SyncApi, "/console/app.js")),
            ),
            ("/other", None),
        ] {
            assert_eq!(resolve(path), want, "{path}");
        }
    }
}
