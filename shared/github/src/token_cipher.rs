//! Installation tokens encrypted at rest (the shared token store keeps them in Postgres).
//!
//! AES-256-GCM with a random 96-bit nonce per write. The key is derived with HKDF-SHA256 from the
//! App's private key, so the database alone never holds what decrypts its tokens. The associated
//! data binds a sealed token to its GitHub host, App and installation: a row moved to another
//! installation or host does not open. Whitespace in the PEM does not change the key (a key read
//! from a file and the same key from an environment variable agree).

use aes_gcm::aead::{Aead, Nonce, Payload};
use aes_gcm::{Aes256Gcm, KeyInit};
use hkdf::Hkdf;
use rand::Rng;
use sha2::Sha256;

use syncplane_core::config::Secret;

/// GCM's standard nonce length.
pub(crate) const NONCE_LEN: usize = 12;

const SALT: &[u8] = b"syncplane github installation token v1";
const INFO: &[u8] = b"aes-256-gcm";

/// A token as stored: the nonce and the ciphertext with its tag.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Sealed {
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

/// Seals and opens one installation's tokens.
pub(crate) struct TokenCipher {
    aead: Aes256Gcm,
    aad: Vec<u8>,
}

impl std::fmt::Debug for TokenCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCipher").finish_non_exhaustive()
    }
}

impl TokenCipher {
    pub(crate) fn new(
        private_key_pem: &str,
        api_url: &str,
        app_id: u64,
        installation_id: u64,
    ) -> Self {
        let ikm: Vec<u8> = private_key_pem
            .bytes()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        let mut key = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's 8160-byte maximum: expand cannot fail.
        let _ = Hkdf::<Sha256>::new(Some(SALT), &ikm).expand(INFO, &mut key);
        let aad = format!("{api_url}\n{app_id}\n{installation_id}").into_bytes();
        Self {
            aead: Aes256Gcm::new(&key.into()),
            aad,
        }
    }

    pub(crate) fn seal(&self, token: &Secret) -> Sealed {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill(&mut nonce);
        let payload = Payload {
            msg: token.expose().as_bytes(),
            aad: &self.aad,
        };
        // Encryption fails only for messages beyond GCM's 64 GiB limit.
        let ciphertext = self
            .aead
            .encrypt(&Nonce::<Aes256Gcm>::from(nonce), payload)
            .unwrap_or_default();
        Sealed {
            nonce: nonce.to_vec(),
            ciphertext,
        }
    }

    /// `None` when the row was sealed with another key or for another installation, or altered.
    pub(crate) fn open(&self, sealed: &Sealed) -> Option<Secret> {
        let nonce: [u8; NONCE_LEN] = sealed.nonce.as_slice().try_into().ok()?;
        let payload = Payload {
            msg: &sealed.ciphertext,
            aad: &self.aad,
        };
        let plain = self
            .aead
            .decrypt(&Nonce::<Aes256Gcm>::from(nonce), payload)
            .ok()?;
        String::from_utf8(plain).ok().map(Secret::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = include_str!("../../../tests/fixtures/keys/app.pem");
    const OTHER_KEY: &str = include_str!("../../../tests/fixtures/keys/other.pem");
    const API: &str = "https://api.github.com";

    fn token() -> Secret {
        Secret::new("ghs_16C7e42F292c6912E7710c838347Ae178B4a")
    }

    #[test]
    fn a_sealed_token_opens_with_the_same_key_and_installation() {
        let cipher = TokenCipher::new(KEY, API, 1, 7);
        let sealed = cipher.seal(&token());
        assert_eq!(
            cipher.open(&sealed).map(|s| s.expose().to_owned()),
            Some(token().expose().to_owned())
        );
        let rewrapped = KEY.replace('\n', "\r\n");
        assert!(
            TokenCipher::new(&rewrapped, API, 1, 7)
                .open(&sealed)
                .is_some(),
            "line endings of the PEM do not change the key"
        );
    }

    #[test]
    fn the_stored_bytes_do_not_hold_the_token_and_every_write_has_its_own_nonce() {
        let cipher = TokenCipher::new(KEY, API, 1, 7);
        let (a, b) = (cipher.seal(&token()), cipher.seal(&token()));
        assert_ne!(a.nonce, b.nonce);
        assert_ne!(a.ciphertext, b.ciphertext);
        let needle = token().expose().as_bytes().to_vec();
        assert!(!a.ciphertext.windows(needle.len()).any(|w| w == needle));
        assert_eq!(a.ciphertext.len(), needle.len() + 16, "ciphertext and tag");
    }

    #[test]
    fn another_key_installation_host_or_app_cannot_open_it() {
        let sealed = TokenCipher::new(KEY, API, 1, 7).seal(&token());
        for other in [
            TokenCipher::new(OTHER_KEY, API, 1, 7),
            TokenCipher::new(KEY, API, 1, 8),
            TokenCipher::new(KEY, "https://ghe.example.com/api/v3", 1, 7),
            TokenCipher::new(KEY, API, 2, 7),
        ] {
            assert!(other.open(&sealed).is_none());
        }
    }

    #[test]
    fn an_altered_row_does_not_open() {
        let cipher = TokenCipher::new(KEY, API, 1, 7);
        let sealed = cipher.seal(&token());
        let mut flipped = sealed.clone();
        flipped.ciphertext[0] ^= 1;
        let mut short_nonce = sealed.clone();
        short_nonce.nonce.pop();
        let mut truncated = sealed;
        truncated.ciphertext.truncate(10);
        for bad in [flipped, short_nonce, truncated] {
            assert!(cipher.open(&bad).is_none());
        }
    }

    #[test]
    fn the_cipher_never_prints_its_key() {
        let shown = format!("{:?}", TokenCipher::new(KEY, API, 1, 7));
        assert_eq!(shown, "TokenCipher { .. }");
    }
}
