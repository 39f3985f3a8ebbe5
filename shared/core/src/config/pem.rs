//! The GitHub App key, checked at start (issue 13 §10) so that a key that cannot work is refused
//! naming its setting, not at the first sync: PEM armour, a base64 body, and inside it an RSA
//! private key's DER structure (PKCS#1 `RSA PRIVATE KEY` or PKCS#8 `PRIVATE KEY` with the
//! rsaEncryption algorithm). The structure is walked, not the key loaded: no RSA work at a cold
//! start. Whether GitHub trusts the key is learnt when it is used.

use super::error::ConfigError;
use super::names::Secret;

/// Refuse, naming `variable`, a key that is not an RSA private key in PEM.
pub(super) fn check_pem(variable: &str, pem: &Secret) -> Result<(), ConfigError> {
    pem_rsa_key(pem.expose()).map_err(|problem| ConfigError::new(variable, problem))
}

fn pem_rsa_key(text: &str) -> Result<(), String> {
    use base64::Engine as _;
    const SHAPE: &str = "is not a PEM private key (expected '-----BEGIN RSA PRIVATE KEY-----' or \
                         '-----BEGIN PRIVATE KEY-----'): use the .pem file GitHub generated for the App";
    let begin = text.find("-----BEGIN ").ok_or(SHAPE)?;
    let after = &text[begin + "-----BEGIN ".len()..];
    let label_end = after.find("-----").ok_or(SHAPE)?;
    let label = &after[..label_end];
    let body_and_end = &after[label_end + 5..];
    let end_marker = format!("-----END {label}-----");
    let body = &body_and_end[..body_and_end.find(&end_marker).ok_or(SHAPE)?];
    let pkcs8 = match label {
        "RSA PRIVATE KEY" => false,
        "PRIVATE KEY" => true,
        other => {
            return Err(format!(
                "holds a '{other}', not an RSA private key: GitHub App keys are RSA (the .pem file GitHub generated)"
            ));
        }
    };
    let compact: String = body.split_whitespace().collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .map_err(|_| {
            "has a PEM body that is not base64: the key is damaged or truncated".to_owned()
        })?;
    let ok = if pkcs8 {
        pkcs8_rsa(&der)
    } else {
        pkcs1_rsa(&der)
    };
    if ok {
        Ok(())
    } else {
        Err(
            "has a PEM body that is not an RSA private key: the key is damaged or truncated \
             (use the .pem file GitHub generated for the App)"
                .to_owned(),
        )
    }
}

/// One DER element: its tag, its contents and what follows it.
fn der_element(bytes: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = bytes.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

const DER_SEQUENCE: u8 = 0x30;
const DER_INTEGER: u8 = 0x02;
const DER_OCTET_STRING: u8 = 0x04;
const DER_OID: u8 = 0x06;
/// 1.2.840.113549.1.1.1, rsaEncryption.
const RSA_ENCRYPTION_OID: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

/// PKCS#1 `RSAPrivateKey`: one SEQUENCE of (at least) nine INTEGERs, nothing after it.
fn pkcs1_rsa(der: &[u8]) -> bool {
    let Some((DER_SEQUENCE, mut fields, [])) = der_element(der) else {
        return false;
    };
    for _ in 0..9 {
        match der_element(fields) {
            Some((DER_INTEGER, value, rest)) if !value.is_empty() => fields = rest,
            _ => return false,
        }
    }
    true
}

/// PKCS#8 `PrivateKeyInfo`: version, the rsaEncryption algorithm, then a PKCS#1 key.
fn pkcs8_rsa(der: &[u8]) -> bool {
    let Some((DER_SEQUENCE, fields, [])) = der_element(der) else {
        return false;
    };
    let Some((DER_INTEGER, _, fields)) = der_element(fields) else {
        return false;
    };
    let Some((DER_SEQUENCE, algorithm, fields)) = der_element(fields) else {
        return false;
    };
    let Some((DER_OID, oid, _)) = der_element(algorithm) else {
        return false;
    };
    let Some((DER_OCTET_STRING, key, _)) = der_element(fields) else {
        return false;
    };
    oid == RSA_ENCRYPTION_OID && pkcs1_rsa(key)
}
