//! The read API (issue 11) on the sync-api handler: search, repositories, documents, READMEs and
//! code owners over what a real sync stored (real Postgres, the fake GitHub); the read-only
//! token; bad input; and the OpenAPI document every answer here is checked against.

mod access;
mod bad_input;
mod documents;
mod images;
mod openapi;
mod owners;
mod search;

use shared::app::AppState;
use shared::config::SearchLanguage;

use crate::engine::World;
use crate::functions::support::{READ_TOKEN, Reply, apigw, checked_reply, state};

/// GET `path_and_query` with `token`, the answer checked against openapi.json.
pub async fn get(st: &AppState, path_and_query: &str, token: Option<&str>) -> Reply {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
    let req = apigw("GET", path_and_query, &headers, None);
    checked_reply("GET", path_and_query, shared::api::handle(st, req).await)
}

/// GET with the read-only token.
pub async fn read(st: &AppState, path_and_query: &str) -> Reply {
    get(st, path_and_query, Some(READ_TOKEN)).await
}

/// A world with `repos` synced (each `(full name, files)`), and the sync-api state over it.
pub async fn synced(repos: &[(&str, &[(&str, &str)])]) -> (World, AppState) {
    let w = World::new().await;
    for (name, files) in repos {
        w.repo(name, files);
        w.sync(name).await.expect("sync");
    }
    let st = state(&w);
    (w, st)
}

/// The same state with another search language.
pub fn with_language(w: &World, language: SearchLanguage) -> AppState {
    let mut tenant =
        crate::functions::support::tenant(w, "default", &[], w.installation, w.config.clone());
    tenant.read.search = language;
    crate::functions::support::state_of(w, vec![tenant])
}

/// The `path` of each hit, in order.
pub fn hit_paths(r: &Reply) -> Vec<String> {
    r.data()["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits in {}", r.body))
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_owned())
        .collect()
}
