//! What the lane tells the app as it runs: every outcome, every session set aside, and what it is
//! waiting for.
//!
//! Spec, "Retries, backoff, and dead-lettering": the lane may wait a long time by its rules (a
//! server that does not answer hello is asked again every 30 s; a compute target the token's
//! user does not own is never counted against a session, so it is asked again forever). Issue
//! 21, point 8: such a wait must not be silent. [`Waiting`] is the attempt that last failed, with
//! the URL, the outcome, how many consecutive attempts came to it and when the lane tries again;
//! the lane hands it to [`Observer::waiting`] at every failed attempt, keeps it for
//! [`crate::Lane::waiting`], and forgets it once the request it names succeeds.

use std::fmt;

use crate::clock::utc_text;
use crate::lane_core::dead_letter::Class;
use crate::outcome::Outcome;

/// Observability hooks: every outcome with the number of sessions it concerned, every dead letter,
/// every failed attempt the lane will repeat.
pub trait Observer: Send + Sync {
    fn outcome(&self, _outcome: Outcome, _sessions: usize) {}
    fn dead_lettered(&self, _session_id: &str, _class: Class) {}
    fn waiting(&self, _waiting: &Waiting) {}
}

/// Which of the lane's two requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `GET /api/agent-sessions/hello`
    Hello,
    /// `POST /api/agent-sessions/sync`
    Sync,
}

impl Request {
    pub fn method(self) -> &'static str {
        match self {
            Self::Hello => "GET",
            Self::Sync => "POST",
        }
    }
}

/// The attempt that last failed, and when the lane tries again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub request: Request,
    pub url: String,
    pub outcome: Outcome,
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// Consecutive attempts of this request that came to this outcome.
    pub attempts: u32,
    /// When the first of them failed (the lane's clock, ms).
    pub since_ms: i64,
    /// When the lane tries again (the lane's clock, ms).
    pub next_try_ms: i64,
}

/// One failed attempt, as the lane reports it to [`Waiting::after`].
#[derive(Debug, Clone, Copy)]
pub struct Failed<'a> {
    pub request: Request,
    pub url: &'a str,
    pub outcome: Outcome,
    pub status: Option<u16>,
    pub now_ms: i64,
    pub next_try_ms: i64,
}

impl Waiting {
    /// The wait after `failed`: attempts keep counting while the request and the outcome stay
    /// the same, and start again at 1 when either changes.
    pub fn after(previous: Option<&Waiting>, failed: Failed<'_>) -> Waiting {
        let same = previous.filter(|p| p.request == failed.request && p.outcome == failed.outcome);
        Waiting {
            request: failed.request,
            url: failed.url.to_owned(),
            outcome: failed.outcome,
            status: failed.status,
            attempts: same.map_or(1, |p| p.attempts.saturating_add(1)),
            since_ms: same.map_or(failed.now_ms, |p| p.since_ms),
            next_try_ms: failed.next_try_ms,
        }
    }

    /// How long it has been waiting at `now_ms`.
    pub fn waited_ms(&self, now_ms: i64) -> i64 {
        now_ms.saturating_sub(self.since_ms)
    }
}

/// `GET http://host/api/agent-sessions/hello: transport_error, attempt 2; next try at
/// 2026-03-01T10:00:30Z`
impl fmt::Display for Waiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.request.method(),
            self.url,
            self.outcome.name()
        )?;
        if let Some(status) = self.status {
            write!(f, " (HTTP {status})")?;
        }
        write!(
            f,
            ", attempt {}; next try at {}",
            self.attempts,
            utc_text(self.next_try_ms)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(outcome: Outcome, now_ms: i64) -> Failed<'static> {
        Failed {
            request: Request::Hello,
            url: "http://127.0.0.1:9/api/agent-sessions/hello",
            outcome,
            status: None,
            now_ms,
            next_try_ms: now_ms + 30_000,
        }
    }

    #[test]
    fn attempts_count_while_the_request_and_outcome_stay_the_same() {
        let first = Waiting::after(None, failed(Outcome::TransportError, 0));
        assert_eq!((first.attempts, first.since_ms), (1, 0));
        let second = Waiting::after(Some(&first), failed(Outcome::TransportError, 30_000));
        assert_eq!((second.attempts, second.since_ms), (2, 0));
        assert_eq!(second.waited_ms(45_000), 45_000);
        let other = Waiting::after(Some(&second), failed(Outcome::TransportTimeout, 60_000));
        assert_eq!((other.attempts, other.since_ms), (1, 60_000));
        assert_eq!(
            second.to_string(),
            "GET http://127.0.0.1:9/api/agent-sessions/hello: transport_error, attempt 2; \
             next try at 1970-01-01T00:01:00Z"
        );
    }
}
