//! What came back from one request, as the transport read it: an [`Answer`], with the
//! `Retry-After` it carried ([`RetryAfter`]). The transport ([`crate::transport`]) produces
//! answers and the error taxonomy ([`crate::outcome`]) classifies them; both build on this
//! module, neither on the other.
//!
//! Spec, "Sync error codes": the client classifies on the status, and on the `code` where the
//! status alone is ambiguous (403). `Retry-After` (seconds or an HTTP date) says how long a 429 or
//! a 503 waits (`docs/ingest-wire-contract.md`, "Retry guidance").

use std::time::Duration;

/// What came back from one request, as the transport saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Http {
        status: u16,
        /// `error.code` of a failure envelope, when there is one.
        code: Option<String>,
        retry_after: Option<RetryAfter>,
        /// The body was exactly `{"success": true, "data": {"synced": true}}`.
        exact_success: bool,
    },
    /// The device abandoned the request at its own deadline.
    DeadlineExceeded,
    /// Connection refused, reset or dropped: thrown, not translated.
    ConnectionDropped,
    /// The transport was not ready to send (the device knows it is offline).
    NotReady,
    /// No session token to send with.
    NoToken,
    /// The payload could not be serialized on the device.
    Unserializable,
}

impl Answer {
    /// The `Retry-After` the server sent with it, if any.
    pub(crate) fn retry_after(&self) -> Option<RetryAfter> {
        match self {
            Self::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A `Retry-After` value: delta-seconds, or an HTTP-date (IMF-fixdate) turned into a delay
/// against the lane's clock ([`RetryAfter::delay_from`]), since the transport has no clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    Delay(Duration),
    /// Milliseconds since the Unix epoch.
    At(i64),
}

impl RetryAfter {
    /// `None` for anything else: the lane then waits its default deferral.
    pub fn parse(value: &str) -> Option<Self> {
        let v = value.trim();
        if let Ok(secs) = v.parse::<u64>() {
            return Some(Self::Delay(Duration::from_secs(secs)));
        }
        // RFC 2822 parsing covers IMF-fixdate ("Wed, 21 Oct 2015 07:28:00 GMT").
        chrono::DateTime::parse_from_rfc2822(v)
            .ok()
            .map(|t| Self::At(t.timestamp_millis()))
    }

    /// How long to wait from `now_ms`; a date in the past means no wait.
    pub fn delay_from(self, now_ms: i64) -> Duration {
        match self {
            Self::Delay(d) => d,
            Self::At(at) => Duration::from_millis(u64::try_from(at - now_ms).unwrap_or(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_read_as_delta_seconds_or_an_http_date_against_the_lanes_clock() {
        let now = chrono::DateTime::parse_from_rfc3339("2015-10-21T07:27:00Z")
            .unwrap()
            .timestamp_millis();
        let secs = RetryAfter::parse(" 120 ").unwrap();
        assert_eq!(secs, RetryAfter::Delay(Duration::from_secs(120)));
        assert_eq!(secs.delay_from(now), Duration::from_secs(120));
        let date = RetryAfter::parse("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(date.delay_from(now), Duration::from_secs(60));
        assert_eq!(
            date.delay_from(now + 61_000),
            Duration::ZERO,
            "a past date means no wait"
        );
        for junk in [
            "",
            "soon",
            "-5",
            "1.5",
            "21 Oct 2015",
            "Wed, 32 Oct 2015 07:28:00 GMT",
        ] {
            assert_eq!(RetryAfter::parse(junk), None, "{junk:?}");
        }
    }
}
