//! Opaque keyset cursors (issue 11): base64url of a small JSON record naming the listing it belongs
//! to and the last key handed out. Decoding is strict (bounded size, exact fields, the listing's own
//! kind and fingerprint), and every value reaches SQL as a bound parameter, so a forged cursor can
//! at worst start a page somewhere else in the same listing.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use super::super::error::ApiError;

/// Longest cursor accepted (a path key is at most 1 KB).
const MAX_CURSOR_CHARS: usize = 2048;

#[derive(Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<T> {
    /// Which listing: a search cursor is no documents cursor.
    k: String,
    /// Fingerprint of the request's other parameters (query, filters): a cursor only continues
    /// the listing it came from.
    f: String,
    v: T,
}

/// A short fingerprint of the parameters that shape a listing.
pub fn fingerprint(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    hex::encode(&h.finalize()[..8])
}

pub fn encode<T: Serialize>(kind: &str, fingerprint: &str, key: &T) -> String {
    let envelope = Envelope {
        k: kind.to_owned(),
        f: fingerprint.to_owned(),
        v: key,
    };
    // Serializing plain records to JSON cannot fail; an empty cursor would only restart the list.
    let json = serde_json::to_vec(&envelope).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(json)
}

pub fn decode<T: DeserializeOwned>(
    kind: &str,
    fingerprint: &str,
    raw: &str,
) -> Result<T, ApiError> {
    if raw.is_empty() || raw.len() > MAX_CURSOR_CHARS {
        return Err(ApiError::InvalidCursor);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(raw)
        .map_err(|_| ApiError::InvalidCursor)?;
    let envelope: Envelope<T> =
        serde_json::from_slice(&bytes).map_err(|_| ApiError::InvalidCursor)?;
    if envelope.k != kind || envelope.f != fingerprint {
        return Err(ApiError::InvalidCursor);
    }
    Ok(envelope.v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Key {
        path: String,
    }

    #[test]
    fn cursors_round_trip_and_refuse_other_listings_and_forgeries() {
        let f = fingerprint(&["acme/handbook"]);
        let c = encode(
            "documents",
            &f,
            &Key {
                path: "a.md".into(),
            },
        );
        assert_eq!(
            decode::<Key>("documents", &f, &c).unwrap(),
            Key {
                path: "a.md".into()
            }
        );
        assert!(decode::<Key>("search", &f, &c).is_err(), "another listing");
        assert!(decode::<Key>("documents", &fingerprint(&["x/y"]), &c).is_err());
        let forged =
            URL_SAFE_NO_PAD.encode(br#"{"k":"documents","f":"","v":{"path":"'; drop"}, "x":1}"#);
        assert!(decode::<Key>("documents", &f, &forged).is_err());
        for bad in ["", "!!!", "e30", &"A".repeat(5000)] {
            assert!(decode::<Key>("documents", &f, bad).is_err(), "{bad}");
        }
    }
}
