//! `X-Hub-Signature-256`: `sha256=<hex HMAC-SHA256 of the raw body>`, checked in constant time
//! against each of a tenant's secrets (several during a rotation).

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use syncplane_core::config::Secret;

const PREFIX: &str = "sha256=";

/// Why a delivery's signature was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureProblem {
    Missing,
    /// Malformed, or no configured secret produces it (including: no secret configured).
    Invalid,
}

/// Accept `header` if any of `secrets` signs `body` with it. A tenant with no secret refuses all.
pub fn verify(
    secrets: &[Secret],
    header: Option<&str>,
    body: &[u8],
) -> Result<(), SignatureProblem> {
    let header = header.map(str::trim).filter(|h| !h.is_empty());
    let Some(header) = header else {
        return Err(SignatureProblem::Missing);
    };
    let expected = header
        .strip_prefix(PREFIX)
        .and_then(|h| hex::decode(h).ok())
        .ok_or(SignatureProblem::Invalid)?;
    // Every secret is tried (no early exit on the first match) so timing does not tell which
    // secret of a rotation matched.
    let mut matched = false;
    for secret in secrets {
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes()) else {
            continue;
        };
        mac.update(body);
        // `verify_slice` compares in constant time.
        matched |= mac.verify_slice(&expected).is_ok();
    }
    if matched {
        Ok(())
    } else {
        Err(SignatureProblem::Invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &str, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(body);
        format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn a_signature_made_with_any_configured_secret_is_accepted() {
        let secrets = [Secret::new("new"), Secret::new("old")];
        assert_eq!(verify(&secrets, Some(&sign("new", b"{}")), b"{}"), Ok(()));
        assert_eq!(verify(&secrets, Some(&sign("old", b"{}")), b"{}"), Ok(()));
    }

    #[test]
    fn a_wrong_malformed_or_missing_signature_is_refused() {
        let secrets = [Secret::new("s")];
        let good = sign("s", b"{}");
        assert_eq!(
            verify(&secrets, Some(&good), b"{ }"),
            Err(SignatureProblem::Invalid),
            "the raw bytes are signed, not the JSON value"
        );
        assert_eq!(
            verify(&secrets, Some(&sign("t", b"{}")), b"{}"),
            Err(SignatureProblem::Invalid)
        );
        assert_eq!(
            verify(&secrets, Some(good.trim_start_matches("sha256=")), b"{}"),
            Err(SignatureProblem::Invalid)
        );
        assert_eq!(
            verify(&secrets, Some("sha256=zz"), b"{}"),
            Err(SignatureProblem::Invalid)
        );
        assert_eq!(
            verify(&secrets, None, b"{}"),
            Err(SignatureProblem::Missing)
        );
        assert_eq!(
            verify(&secrets, Some(""), b"{}"),
            Err(SignatureProblem::Missing)
        );
    }

    #[test]
    fn a_tenant_without_a_secret_refuses_every_delivery() {
        assert_eq!(
            verify(&[], Some(&sign("", b"{}")), b"{}"),
            Err(SignatureProblem::Invalid)
        );
    }
}
