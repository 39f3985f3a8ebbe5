//! Bound and decode (contract step 2), before anything is parsed.
//!
//! The wire cap applies to the bytes the client sent (API Gateway's base64 is already undone by
//! lambda_http) and is checked before the encoding, so an oversized body with an unknown encoding
//! is 413. Gzip is chosen by `Content-Encoding` alone; the envelope's `encoding` field is opaque
//! until after decoding and is never consulted. Inflating stops at the decoded cap: the decoder
//! reads through a fixed buffer into an output whose capacity never exceeds the cap plus one
//! byte, so a gzip bomb costs at most that much memory and that much inflation work.

use std::io::Read;

use flate2::read::MultiGzDecoder;
use http::HeaderMap;

use syncplane_contract::header::{GZIP, IDENTITY, X_GZIP};
use syncplane_contract::{MAX_DECODED_BYTES, MAX_WIRE_BYTES};

use super::error::IngestError;

/// Inflate reads this much at a time.
const INFLATE_CHUNK: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ContentEncoding {
    Identity,
    Gzip,
}

/// Read `Content-Encoding`: none or `identity` is plain, `gzip`/`x-gzip` (any case) is gzip,
/// anything else (including a value that is not text, or gzip applied twice) is 415.
pub(crate) fn content_encoding(headers: &HeaderMap) -> Result<ContentEncoding, IngestError> {
    let mut gzip_layers = 0usize;
    for value in headers.get_all(http::header::CONTENT_ENCODING) {
        let text = value
            .to_str()
            .map_err(|_| IngestError::UnsupportedEncoding)?;
        for token in text.split(',').map(str::trim) {
            if token.is_empty() || token.eq_ignore_ascii_case(IDENTITY) {
                continue;
            }
            if token.eq_ignore_ascii_case(GZIP) || token.eq_ignore_ascii_case(X_GZIP) {
                gzip_layers += 1;
            } else {
                return Err(IngestError::UnsupportedEncoding);
            }
        }
    }
    match gzip_layers {
        0 => Ok(ContentEncoding::Identity),
        1 => Ok(ContentEncoding::Gzip),
        _ => Err(IngestError::UnsupportedEncoding),
    }
}

/// Apply the wire cap, then the encoding; returns the decoded JSON bytes (not yet parsed).
pub fn bound_and_decode(headers: &HeaderMap, wire: &[u8]) -> Result<Vec<u8>, IngestError> {
    if wire.len() > MAX_WIRE_BYTES {
        return Err(IngestError::PayloadTooLarge);
    }
    match content_encoding(headers)? {
        ContentEncoding::Identity => {
            // The wire cap is far below the decoded cap, so a plain body always fits.
            Ok(wire.to_vec())
        }
        ContentEncoding::Gzip => {
            let mut out = Vec::new();
            match inflate_bounded(wire, MAX_DECODED_BYTES, &mut out) {
                Ok(()) => Ok(out),
                Err(InflateError::TooLarge) => Err(IngestError::PayloadTooLarge),
                Err(InflateError::NotGzip) => Err(IngestError::bad_request(
                    "body sent with Content-Encoding gzip is not valid gzip",
                )),
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InflateError {
    /// The stream inflates past the limit; inflation stopped one byte after it.
    TooLarge,
    /// Not gzip, truncated or corrupt.
    NotGzip,
}

/// Inflate a (possibly multi-member) gzip stream into `out`, stopping as soon as more than
/// `limit` bytes have come out. `out`'s capacity never exceeds `limit + 1`, whatever the input.
pub fn inflate_bounded(input: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), InflateError> {
    out.clear();
    let ceiling = limit.saturating_add(1);
    let mut decoder = MultiGzDecoder::new(input);
    let mut buf = vec![0u8; INFLATE_CHUNK];
    loop {
        // Never ask for more than one byte past the limit: that byte proves "too large".
        let want = buf.len().min(ceiling - out.len());
        let n = match decoder.read(&mut buf[..want]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(InflateError::NotGzip),
        };
        if n == 0 {
            return Ok(());
        }
        reserve_within(out, n, ceiling);
        out.extend_from_slice(&buf[..n]);
        if out.len() > limit {
            return Err(InflateError::TooLarge);
        }
    }
}

/// Grow `out` geometrically for `extra` more bytes, but never past `ceiling` bytes of capacity.
fn reserve_within(out: &mut Vec<u8>, extra: usize, ceiling: usize) {
    let needed = out.len() + extra;
    if out.capacity() >= needed {
        return;
    }
    let target = (out.capacity() * 2)
        .max(needed)
        .max(INFLATE_CHUNK)
        .min(ceiling);
    out.reserve_exact(target - out.len());
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn headers(enc: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::CONTENT_ENCODING, enc.parse().unwrap());
        h
    }

    #[test]
    fn encodings_are_case_insensitive_and_x_gzip_is_gzip() {
        for e in ["gzip", "GZIP", "x-gzip", "X-Gzip", " gzip "] {
            assert_eq!(
                content_encoding(&headers(e)).unwrap(),
                ContentEncoding::Gzip
            );
        }
        assert_eq!(
            content_encoding(&headers("IDENTITY")).unwrap(),
            ContentEncoding::Identity
        );
        assert_eq!(
            content_encoding(&HeaderMap::new()).unwrap(),
            ContentEncoding::Identity
        );
        for e in ["br", "deflate", "gzip, gzip", "zstd"] {
            assert!(matches!(
                content_encoding(&headers(e)),
                Err(IngestError::UnsupportedEncoding)
            ));
        }
    }

    #[test]
    fn multi_member_gzip_is_one_stream() {
        let mut body = gz(b"{\"a\":");
        body.extend(gz(b"1}"));
        let out = bound_and_decode(&headers("gzip"), &body).unwrap();
        assert_eq!(out, b"{\"a\":1}");
    }

    #[test]
    fn inflation_stops_one_byte_past_the_limit_and_capacity_stays_bounded() {
        let data = vec![0u8; 1_000_000];
        let body = gz(&data);
        let mut out = Vec::new();
        assert_eq!(inflate_bounded(&body, 1_000_000, &mut out), Ok(()));
        assert_eq!(out.len(), 1_000_000);
        assert!(out.capacity() <= 1_000_001);
        let mut out = Vec::new();
        assert_eq!(
            inflate_bounded(&body, 999_999, &mut out),
            Err(InflateError::TooLarge)
        );
        assert_eq!(out.len(), 1_000_000, "stopped at limit + 1");
        assert!(out.capacity() <= 1_000_000);
    }

    #[test]
    fn garbage_and_truncation_are_not_gzip() {
        let mut out = Vec::new();
        assert_eq!(
            inflate_bounded(b"{\"not\":\"gzip\"}", 100, &mut out),
            Err(InflateError::NotGzip)
        );
        let body = gz(b"{\"hello\":\"world\"}");
        assert_eq!(
            inflate_bounded(&body[..body.len() - 6], 100, &mut out),
            Err(InflateError::NotGzip)
        );
    }
}
