//! What a client spent on GitHub: requests by kind (REST, GraphQL) and rate-limit units (issue
//! 10, Build 5: `syncplane status` and `GET /api/sync/runs/{id}` report them per run).
//!
//! REST and GraphQL have separate budgets: a REST answer to an installation token costs one unit
//! of the core budget (a 304 costs none); a GraphQL query costs the points its
//! `rateLimit { cost }` reports.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Which GitHub API a request went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    Rest,
    Graphql,
}

/// A reading of the counters (or the difference of two readings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub rest_requests: u64,
    pub graphql_requests: u64,
    /// Units of the REST core budget spent by installation-token requests.
    pub rest_units: u64,
    /// Points of the GraphQL budget spent.
    pub graphql_points: u64,
}

impl Usage {
    /// What was spent between `earlier` and this reading.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            rest_requests: self.rest_requests.saturating_sub(earlier.rest_requests),
            graphql_requests: self
                .graphql_requests
                .saturating_sub(earlier.graphql_requests),
            rest_units: self.rest_units.saturating_sub(earlier.rest_units),
            graphql_points: self.graphql_points.saturating_sub(earlier.graphql_points),
        }
    }

    pub fn requests(&self) -> u64 {
        self.rest_requests + self.graphql_requests
    }
}

#[derive(Debug, Default)]
pub(crate) struct UsageCounters {
    rest_requests: AtomicU64,
    graphql_requests: AtomicU64,
    rest_units: AtomicU64,
    graphql_points: AtomicU64,
}

impl UsageCounters {
    pub(crate) fn count(&self, kind: RequestKind) {
        match kind {
            RequestKind::Rest => &self.rest_requests,
            RequestKind::Graphql => &self.graphql_requests,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn charge(&self, kind: RequestKind, units: u64) {
        match kind {
            RequestKind::Rest => &self.rest_units,
            RequestKind::Graphql => &self.graphql_points,
        }
        .fetch_add(units, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> Usage {
        Usage {
            rest_requests: self.rest_requests.load(Ordering::Relaxed),
            graphql_requests: self.graphql_requests.load(Ordering::Relaxed),
            rest_units: self.rest_units.load(Ordering::Relaxed),
            graphql_points: self.graphql_points.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_reports_the_difference_of_two_readings() {
        let counters = UsageCounters::default();
        counters.count(RequestKind::Rest);
        let before = counters.read();
        counters.count(RequestKind::Rest);
        counters.count(RequestKind::Graphql);
        counters.charge(RequestKind::Rest, 1);
        counters.charge(RequestKind::Graphql, 3);
        let spent = counters.read().since(&before);
        assert_eq!(
            spent,
            Usage {
                rest_requests: 1,
                graphql_requests: 1,
                rest_units: 1,
                graphql_points: 3
            }
        );
        assert_eq!(spent.requests(), 2);
    }
}
