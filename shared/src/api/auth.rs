//! `Authorization: Bearer <SYNC_API_TOKEN>`, compared in constant time. Both sides are hashed
//! first, so neither the token's bytes nor its length leak through timing. A tenant without a
//! token refuses every request.

use http::HeaderMap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::error::ApiError;
use super::http::bearer_token;
use crate::config::Secret;

pub fn authenticate(headers: &HeaderMap, expected: Option<&Secret>) -> Result<(), ApiError> {
    let presented = bearer_token(headers).ok_or(ApiError::Unauthenticated)?;
    let Some(expected) = expected.filter(|s| !s.expose().is_empty()) else {
        tracing::warn!("SYNC_API_TOKEN is not configured: every sync API request is refused");
        return Err(ApiError::Unauthenticated);
    };
    let a = Sha256::digest(presented.as_bytes());
    let b = Sha256::digest(expected.expose().as_bytes());
    if bool::from(a.as_slice().ct_eq(b.as_slice())) {
        Ok(())
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
}
