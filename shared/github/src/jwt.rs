//! The GitHub App JWT (RS256): what the App signs to ask for installation tokens.
//!
//! GitHub refuses a JWT whose `exp - iat` exceeds 10 minutes, one already expired, and one issued
//! in the future; `iat` is set 60 s in the past so a clock a little ahead of GitHub's still works.

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use super::error::GithubError;

/// How far in the past `iat` is set (GitHub's recommendation for clock drift).
pub(crate) const IAT_BACKDATE_SECS: i64 = 60;
/// `exp - iat`: nine minutes, under GitHub's ten-minute maximum.
pub(crate) const LIFETIME_SECS: i64 = 540;

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct AppClaims {
    pub iat: i64,
    pub exp: i64,
    pub iss: String,
}

/// Signs App JWTs. Holds the parsed key; never prints it.
pub(crate) struct AppSigner {
    app_id: u64,
    key: EncodingKey,
}

impl std::fmt::Debug for AppSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppSigner")
            .field("app_id", &self.app_id)
            .finish_non_exhaustive()
    }
}

impl AppSigner {
    /// Parse the PEM and prove it can sign: a key that parses but cannot sign (garbage inside
    /// valid armour, a non-RSA key) is refused here, at construction, not at the first call.
    pub(crate) fn new(app_id: u64, private_key_pem: &str) -> Result<Self, GithubError> {
        let key = EncodingKey::from_rsa_pem(private_key_pem.as_bytes())
            .map_err(|_| GithubError::InvalidPrivateKey)?;
        let signer = Self { app_id, key };
        signer
            .sign_at(Utc::now())
            .map_err(|_| GithubError::InvalidPrivateKey)?;
        Ok(signer)
    }

    pub(crate) fn sign(&self) -> Result<String, GithubError> {
        self.sign_at(Utc::now())
    }

    pub(crate) fn claims_at(&self, now: DateTime<Utc>) -> AppClaims {
        let iat = now.timestamp() - IAT_BACKDATE_SECS;
        AppClaims {
            iat,
            exp: iat + LIFETIME_SECS,
            iss: self.app_id.to_string(),
        }
    }

    fn sign_at(&self, now: DateTime<Utc>) -> Result<String, GithubError> {
        jsonwebtoken::encode(
            &Header::new(Algorithm::RS256),
            &self.claims_at(now),
            &self.key,
        )
        .map_err(|_| GithubError::InvalidPrivateKey)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation};

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/keys");

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()
    }

    #[test]
    fn the_app_jwt_is_rs256_backdated_short_lived_and_issued_by_the_app() {
        let signer = AppSigner::new(4242, &fixture("app.pem")).unwrap();
        let jwt = signer.sign().unwrap();
        let now = Utc::now().timestamp();

        let key = DecodingKey::from_rsa_pem(fixture("app.pub.pem").as_bytes()).unwrap();
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_required_spec_claims(&["exp", "iat", "iss"]);
        validation.set_issuer(&["4242"]);
        let data = jsonwebtoken::decode::<AppClaims>(&jwt, &key, &validation).unwrap();

        assert_eq!(data.header.alg, Algorithm::RS256);
        let claims = data.claims;
        assert!(
            (claims.iat - (now - 60)).abs() <= 2,
            "iat is 60 s in the past: iat={} now={now}",
            claims.iat
        );
        assert!(claims.exp - claims.iat < 600, "under GitHub's 10 minutes");
        assert!(claims.exp > now, "not already expired");
        assert_eq!(claims.iss, "4242");
    }

    #[test]
    fn a_jwt_signed_with_the_app_key_does_not_verify_with_another_key() {
        let signer = AppSigner::new(1, &fixture("app.pem")).unwrap();
        let jwt = signer.sign().unwrap();
        let other = DecodingKey::from_rsa_pem(fixture("other.pub.pem").as_bytes()).unwrap();
        let validation = Validation::new(Algorithm::RS256);
        assert!(jsonwebtoken::decode::<AppClaims>(&jwt, &other, &validation).is_err());
    }

    #[test]
    fn an_unusable_pem_is_refused_at_construction() {
        for pem in [
            "",
            "not a key",
            "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
            "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
        ] {
            assert_eq!(
                AppSigner::new(1, pem).unwrap_err(),
                GithubError::InvalidPrivateKey,
                "{pem:?}"
            );
        }
        // A public key is well-formed PEM but cannot sign.
        assert_eq!(
            AppSigner::new(1, &fixture("app.pub.pem")).unwrap_err(),
            GithubError::InvalidPrivateKey
        );
    }

    #[test]
    fn the_signer_never_prints_its_key() {
        let signer = AppSigner::new(9, &fixture("app.pem")).unwrap();
        let shown = format!("{signer:?}");
        assert!(!shown.contains("PRIVATE"));
        assert!(shown.contains('9'));
    }
}
