//! The installation token cache: one exchange serves every call until the token nears expiry.
//!
//! The slot is a `tokio::sync::Mutex` held across the exchange, so concurrent callers that find
//! the token missing or stale wait for the one exchange in flight instead of starting their own
//! (single flight). If the exchanging call is dropped (aborted), the lock is released and the next
//! caller exchanges.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use crate::config::Secret;

/// GitHub's default margin is generous: tokens live one hour, renewal starts five minutes early.
pub const DEFAULT_REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

#[derive(Debug, Clone)]
pub(crate) struct CachedToken {
    pub value: Secret,
    pub expires_at: DateTime<Utc>,
    /// Which exchange produced it: a 401 forgets only the token that was refused, so several
    /// calls refused at once trigger one fresh exchange, not one each.
    pub generation: u64,
}

impl CachedToken {
    /// Renew when less than `margin` of the token's life remains.
    pub fn needs_renewal(&self, now: DateTime<Utc>, margin: Duration) -> bool {
        let margin = TimeDelta::from_std(margin).unwrap_or(TimeDelta::MAX);
        match self.expires_at.checked_sub_signed(margin) {
            Some(renew_at) => now >= renew_at,
            None => true,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct TokenSlot {
    pub slot: tokio::sync::Mutex<Option<CachedToken>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(expires_in_secs: i64, now: DateTime<Utc>) -> CachedToken {
        CachedToken {
            value: Secret::new("ghs_x"),
            expires_at: now + TimeDelta::seconds(expires_in_secs),
            generation: 1,
        }
    }

    #[test]
    fn a_token_is_renewed_before_it_expires() {
        let now = Utc::now();
        let margin = Duration::from_secs(300);
        assert!(!token(3600, now).needs_renewal(now, margin));
        assert!(!token(301, now).needs_renewal(now, margin));
        assert!(token(299, now).needs_renewal(now, margin));
        assert!(token(-1, now).needs_renewal(now, margin));
    }

    #[test]
    fn the_token_never_reaches_debug_output() {
        let shown = format!("{:?}", token(10, Utc::now()));
        assert!(!shown.contains("ghs_x"));
    }
}
