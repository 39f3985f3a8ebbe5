//! GitHub App authentication: the App JWT on /app/* and installation tokens everywhere else.

use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use http::HeaderMap;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use rand::Rng;
use rand::distr::Alphanumeric;

use super::state::{IssuedToken, State};

/// The App's key pair (committed test keys; the fake trusts only `app.pem`).
pub(crate) const APP_PRIVATE_KEY: &str = include_str!("../../fixtures/keys/app.pem");
const APP_PUBLIC_KEY: &str = include_str!("../../fixtures/keys/app.pub.pem");
/// A well-formed key the fake does not trust.
pub(crate) const OTHER_PRIVATE_KEY: &str = include_str!("../../fixtures/keys/other.pem");

/// GitHub tolerates a little clock drift on `iat`.
const IAT_SKEW_SECS: i64 = 30;
/// GitHub refuses an App JWT that lives longer than 10 minutes.
const MAX_JWT_LIFETIME_SECS: i64 = 600;

const UNDECODABLE: &str = "A JSON web token could not be decoded";

fn decoding_key() -> &'static DecodingKey {
    static KEY: OnceLock<DecodingKey> = OnceLock::new();
    KEY.get_or_init(|| {
        DecodingKey::from_rsa_pem(APP_PUBLIC_KEY.as_bytes()).expect("committed public key parses")
    })
}

/// The credential of an `Authorization: Bearer|token <credential>` header.
pub(crate) fn credentials(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, credential) = value.trim().split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token"))
        .then(|| credential.trim())
}

/// Checks the App JWT like GitHub does; `Err` carries GitHub's 401 message.
pub(crate) fn verify_app_jwt(headers: &HeaderMap, app_id: u64, now: i64) -> Result<(), String> {
    let token = credentials(headers).ok_or(UNDECODABLE)?;
    let mut validation = Validation::new(Algorithm::RS256);
    // exp, iat and iss are checked below with GitHub's rules (iss may be a number).
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let data = jsonwebtoken::decode::<serde_json::Value>(token, decoding_key(), &validation)
        .map_err(|_| UNDECODABLE)?;
    let claims = data.claims;
    let iat = claims["iat"].as_i64().ok_or(
        "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
    )?;
    if iat > now + IAT_SKEW_SECS {
        return Err(
            "'Issued at' claim ('iat') must be an Integer representing a time in the past".into(),
        );
    }
    let exp = claims["exp"].as_i64().filter(|exp| *exp > now).ok_or(
        "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
    )?;
    if exp - iat > MAX_JWT_LIFETIME_SECS {
        return Err("'Expiration time' claim ('exp') is too far in the future".into());
    }
    let issuer = match &claims["iss"] {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.parse::<u64>().ok(),
        _ => None,
    };
    if issuer != Some(app_id) {
        return Err("Integration not found".into());
    }
    Ok(())
}

/// A fresh opaque installation token (`ghs_` + 36 characters, like GitHub's) and its expiry.
pub(crate) fn mint_token(
    state: &mut State,
    installation_id: u64,
    now: DateTime<Utc>,
) -> (String, DateTime<Utc>) {
    let secret: String = rand::rng()
        .sample_iter(&Alphanumeric)
        .take(36)
        .map(char::from)
        .collect();
    let token = format!("ghs_{secret}");
    let ttl = chrono::Duration::from_std(state.token_ttl).unwrap_or(chrono::Duration::hours(1));
    let expires_at = now + ttl;
    state.tokens.insert(
        token.clone(),
        IssuedToken {
            installation_id,
            expires_at,
        },
    );
    (token, expires_at)
}

/// Why an installation-token request is refused.
pub(crate) enum Refusal {
    /// 401 Bad credentials (unknown, expired or revoked token).
    BadCredentials,
    /// 403: the token's installation is suspended.
    Suspended,
}

/// The installation behind the request's token.
pub(crate) fn installation_of(
    state: &State,
    headers: &HeaderMap,
    now: DateTime<Utc>,
) -> Result<u64, Refusal> {
    let token = credentials(headers).ok_or(Refusal::BadCredentials)?;
    let issued = state.tokens.get(token).ok_or(Refusal::BadCredentials)?;
    if issued.expires_at <= now {
        return Err(Refusal::BadCredentials);
    }
    match state.installations.get(&issued.installation_id) {
        Some(inst) if inst.deleted => Err(Refusal::BadCredentials),
        Some(inst) if inst.suspended_at.is_some() => Err(Refusal::Suspended),
        Some(inst) => Ok(inst.id),
        None => Err(Refusal::BadCredentials),
    }
}

/// The installation a token belongs to, whatever its state (for rate-limit messages).
pub(crate) fn token_installation(state: &State, headers: &HeaderMap) -> Option<u64> {
    let token = credentials(headers)?;
    state.tokens.get(token).map(|t| t.installation_id)
}
