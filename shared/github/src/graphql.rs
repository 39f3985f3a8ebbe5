//! GitHub's GraphQL API: one POST per query, authenticated with the installation token (issue 10,
//! Build 2).
//!
//! The endpoint is derived from `GITHUB_API_URL` unless `GITHUB_GRAPHQL_URL` names it (see
//! `urls`).
//!
//! GraphQL has its own points budget. GitHub answers an exhausted one with HTTP 200 and an
//! `errors` entry of type `RATE_LIMITED` (newer answers: `RATE_LIMIT`); both are waited out or
//! failed exactly like a REST rate limit (spec "Failure handling"), so the run stops with
//! `rate_limited` and the installation-wide pause is recorded the same way. HTTP-level answers
//! (401, 403/429 rate limits, 5xx) go through the REST client's own rules.

use chrono::{TimeDelta, Utc};
use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use tracing::{debug, warn};

use super::client::GithubClient;
use super::error::GithubError;
use super::rate_limit::{self, RateLimitHit, SECONDARY_DEFAULT_WAIT};
use super::transport::{Call, Reply, Waits, expect_status};
use super::usage::RequestKind;

/// One entry of a GraphQL answer's `errors`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub(crate) struct GraphqlError {
    /// GitHub's error type (`NOT_FOUND`, `RATE_LIMITED`, `FORBIDDEN`, ...), when given.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub path: Vec<PathSegment>,
}

/// A step of an error's `path`: a field's response key or a list index.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub(crate) enum PathSegment {
    Index(u64),
    Key(String),
}

/// A GraphQL answer: `data` (absent or null when the whole query failed) and `errors`.
#[derive(Debug, Deserialize)]
pub(crate) struct GraphqlReply {
    #[serde(default)]
    pub data: Option<Value>,
    #[serde(default)]
    pub errors: Vec<GraphqlError>,
}

impl GraphqlReply {
    fn is_rate_limited(&self) -> bool {
        self.errors
            .iter()
            .any(|e| matches!(e.kind.as_deref(), Some("RATE_LIMITED") | Some("RATE_LIMIT")))
    }

    /// The points the query cost, from `rateLimit { cost }` (GitHub's minimum is 1).
    fn cost(&self) -> u64 {
        self.data
            .as_ref()
            .and_then(|d| d.get("rateLimit"))
            .and_then(|r| r.get("cost"))
            .and_then(Value::as_u64)
            .unwrap_or(1)
    }
}

impl GithubClient {
    /// Run one query. A GraphQL rate limit is waited out within the budget, else
    /// `RateLimited`; any other answer is returned as it came (the caller reads `errors`).
    pub(crate) async fn graphql(
        &self,
        query: &str,
        variables: Value,
    ) -> Result<GraphqlReply, GithubError> {
        let body = serde_json::to_vec(&serde_json::json!({
            "query": query,
            "variables": variables,
        }))
        .map_err(|_| GithubError::Decode)?;
        let call = Call {
            method: Method::POST,
            url: self.graphql_url().clone(),
            accept: "application/json",
            if_none_match: None,
            passthrough: &[],
            json_body: Some(body),
            kind: RequestKind::Graphql,
        };
        let mut waits = Waits::default();
        loop {
            let reply = self.abortable(self.installation_call(&call)).await?;
            expect_status(&reply, StatusCode::OK)?;
            let answer: GraphqlReply = serde_json::from_slice(&reply.body).map_err(|e| {
                debug!(error = %e, "GraphQL body not as documented");
                GithubError::Decode
            })?;
            if answer.is_rate_limited() {
                let hit = graphql_rate_limit_hit(&reply);
                self.wait_out(&hit, &mut waits).await?;
                continue;
            }
            self.charge_graphql(answer.cost());
            if !answer.errors.is_empty() {
                let kinds: Vec<&str> = answer
                    .errors
                    .iter()
                    .map(|e| e.kind.as_deref().unwrap_or("(none)"))
                    .collect();
                warn!(errors = %kinds.join(","), has_data = answer.data.is_some(), "GraphQL answer carries errors");
            }
            return Ok(answer);
        }
    }
}

/// When the points budget allows the next query: `retry-after`, else the reset when the
/// headers say the budget is spent, else a minute (GitHub does not always send either).
fn graphql_rate_limit_hit(reply: &Reply) -> RateLimitHit {
    let now = Utc::now();
    rate_limit::hit(&reply.headers, &reply.body, now).unwrap_or_else(|| {
        let wait = SECONDARY_DEFAULT_WAIT;
        RateLimitHit {
            retry_at: now + TimeDelta::seconds(wait.as_secs() as i64),
            wait,
            secondary: false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_rate_limit_error_types_count() {
        for body in [
            r#"{"data":null,"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for installation ID 7."}]}"#,
            r#"{"errors":[{"type":"RATE_LIMIT","code":"graphql_rate_limit","message":"API rate limit already exceeded for user ID 1."}]}"#,
        ] {
            let reply: GraphqlReply = serde_json::from_str(body).unwrap();
            assert!(reply.is_rate_limited(), "{body}");
        }
        let not_found: GraphqlReply = serde_json::from_str(
            r#"{"data":{"nodes":[null]},"errors":[{"type":"NOT_FOUND","path":["nodes",0],"locations":[{"line":1,"column":2}],"message":"Could not resolve to a node with the global id of 'x'."}]}"#,
        )
        .unwrap();
        assert!(!not_found.is_rate_limited());
        assert_eq!(
            not_found.errors[0].path,
            vec![PathSegment::Key("nodes".into()), PathSegment::Index(0)]
        );
    }

    #[test]
    fn the_cost_is_read_from_the_rate_limit_field() {
        let reply: GraphqlReply =
            serde_json::from_str(r#"{"data":{"rateLimit":{"cost":2,"remaining":4990}}}"#).unwrap();
        assert_eq!(reply.cost(), 2);
        let reply: GraphqlReply = serde_json::from_str(r#"{"data":{}}"#).unwrap();
        assert_eq!(reply.cost(), 1);
    }
}
