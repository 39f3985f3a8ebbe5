//! The installation token cache: one exchange serves every call until the token nears expiry.
//!
//! The slot is a `tokio::sync::Mutex` held across the exchange, so concurrent callers that find
//! the token missing or stale wait for the one exchange in flight instead of starting their own
//! (single flight). If the exchanging call is dropped (aborted), the lock is released and the next
//! caller exchanges. With a shared store (`token_store`), the cache sits in front of it: the
//! store is asked only when the cache has no usable token.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use subtle::ConstantTimeEq;

use syncplane_core::config::Secret;

/// GitHub's default margin is generous: tokens live one hour, renewal starts five minutes early.
pub const DEFAULT_REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// A token as GitHub issued it (or as the shared store kept it).
#[derive(Debug, Clone)]
pub(crate) struct IssuedToken {
    pub value: Secret,
    pub expires_at: DateTime<Utc>,
}

impl IssuedToken {
    /// Renew when less than `margin` of the token's life remains.
    pub(crate) fn needs_renewal(&self, now: DateTime<Utc>, margin: Duration) -> bool {
        let margin = TimeDelta::from_std(margin).unwrap_or(TimeDelta::MAX);
        match self.expires_at.checked_sub_signed(margin) {
            Some(renew_at) => now >= renew_at,
            None => true,
        }
    }

    /// Whether this is the token GitHub refused (constant time: the values are secrets).
    pub fn is(&self, refused: &Secret) -> bool {
        self.value
            .expose()
            .as_bytes()
            .ct_eq(refused.expose().as_bytes())
            .into()
    }
}

#[derive(Debug, Clone)]
pub(crate) struct CachedToken {
    pub token: IssuedToken,
    /// Which acquisition produced it: a 401 forgets only the token that was refused, so several
    /// calls refused at once trigger one fresh acquisition, not one each.
    pub generation: u64,
}

#[derive(Debug, Default)]
pub(crate) struct SlotState {
    pub current: Option<CachedToken>,
    /// The token GitHub last refused: the shared store must not hand it out again.
    pub refused: Option<Secret>,
}

#[derive(Debug, Default)]
pub(crate) struct TokenSlot {
    pub slot: tokio::sync::Mutex<SlotState>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(expires_in_secs: i64, now: DateTime<Utc>) -> IssuedToken {
        IssuedToken {
            value: Secret::new("ghs_x"),
            expires_at: now + TimeDelta::seconds(expires_in_secs),
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
        let cached = CachedToken {
            token: token(10, Utc::now()),
            generation: 1,
        };
        let slot = SlotState {
            current: Some(cached.clone()),
            refused: Some(Secret::new("ghs_x")),
        };
        for shown in [format!("{cached:?}"), format!("{slot:?}")] {
            assert!(!shown.contains("ghs_x"), "{shown}");
        }
    }

    #[test]
    fn only_the_refused_token_is_recognised_as_refused() {
        let t = token(10, Utc::now());
        assert!(t.is(&Secret::new("ghs_x")));
        assert!(!t.is(&Secret::new("ghs_y")));
        assert!(!t.is(&Secret::new("ghs_")));
    }
}
