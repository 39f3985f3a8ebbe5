//! `Authorization: Bearer <SYNC_API_TOKEN>`, compared in constant time. Both sides are hashed
//! first, so neither the token's bytes nor its length leak through timing. A tenant without a
//! token refuses every request. The read API also takes `SYNC_READ_TOKEN`, for GET routes only.

use http::HeaderMap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::error::ApiError;
use syncplane_core::config::Secret;
use syncplane_core::http::bearer_token;

pub fn authenticate(headers: &HeaderMap, expected: Option<&Secret>) -> Result<(), ApiError> {
    match authenticate_any(headers, expected, None)? {
        Access::Full => Ok(()),
        Access::ReadOnly => Err(ApiError::Unauthenticated),
    }
}

/// What a presented token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// The sync API token: every route.
    Full,
    /// `SYNC_READ_TOKEN`: the GET routes only.
    ReadOnly,
}

/// The sync API token or the read-only token. Both comparisons always run, over SHA-256 digests,
/// so timing says neither which token matched nor anything about their bytes or lengths.
pub(crate) fn authenticate_any(
    headers: &HeaderMap,
    sync: Option<&Secret>,
    read: Option<&Secret>,
) -> Result<Access, ApiError> {
    let presented = bearer_token(headers).ok_or(ApiError::Unauthenticated)?;
    let sync = sync.filter(|s| !s.expose().is_empty());
    let read = read.filter(|s| !s.expose().is_empty());
    if sync.is_none() && read.is_none() {
        // A setting, not an event: said once per process, not on every request.
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            tracing::warn!("SYNC_API_TOKEN is not configured: every sync API request is refused");
        });
        return Err(ApiError::Unauthenticated);
    }
    let digest = Sha256::digest(presented.as_bytes());
    let matches = |expected: Option<&Secret>| -> bool {
        expected.is_some_and(|e| {
            let e = Sha256::digest(e.expose().as_bytes());
            bool::from(digest.as_slice().ct_eq(e.as_slice()))
        })
    };
    let (full, read_only) = (matches(sync), matches(read));
    if full {
        Ok(Access::Full)
    } else if read_only {
        Ok(Access::ReadOnly)
    } else {
        Err(ApiError::Unauthenticated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn only_the_configured_bearer_token_is_accepted() {
        let token = Secret::new("t0ken");
        assert!(authenticate(&headers("Bearer t0ken"), Some(&token)).is_ok());
        assert!(authenticate(&headers("bearer t0ken"), Some(&token)).is_ok());
        assert!(authenticate(&headers("Bearer t0ke"), Some(&token)).is_err());
        assert!(authenticate(&headers("Basic t0ken"), Some(&token)).is_err());
        assert!(authenticate(&headers("t0ken"), Some(&token)).is_err());
        assert!(authenticate(&HeaderMap::new(), Some(&token)).is_err());
        assert!(
            authenticate(&headers("Bearer t0ken"), None).is_err(),
            "no token configured refuses all"
        );
    }

    #[test]
    fn the_read_token_is_read_only_and_never_the_sync_token() {
        let (sync, read) = (Secret::new("sync"), Secret::new("read"));
        let any = |h: &str| authenticate_any(&headers(h), Some(&sync), Some(&read));
        assert_eq!(any("Bearer sync").unwrap(), Access::Full);
        assert_eq!(any("Bearer read").unwrap(), Access::ReadOnly);
        assert!(any("Bearer other").is_err());
        assert_eq!(
            authenticate_any(&headers("Bearer read"), None, Some(&read)).unwrap(),
            Access::ReadOnly
        );
        assert!(authenticate(&headers("Bearer read"), Some(&read)).is_ok());
        assert!(authenticate_any(&headers("Bearer x"), None, None).is_err());
    }
}
