//! A claimed segment (contract "Segments"): its caps, and the verification of what was stored
//! against the claim: the length, the SHA-256 of the compressed bytes, and a bounded zstd decode
//! to exactly `decodedBytes`. A zstd bomb (a few bytes that inflate to gigabytes) is read only
//! one byte past the claim, through a fixed buffer, with the decoder's window capped at the
//! decoded cap: it costs at most [`MAX_SEGMENT_DECODED_BYTES`] of work and no more memory.

use std::io::Read;

use sha2::{Digest, Sha256};
use syncplane_contract::transcripts::{
    MAX_SEGMENT_BYTES, MAX_SEGMENT_DECODED_BYTES, MAX_SEGMENT_SOURCE_BYTES, Refusal,
};

/// The decoder's window at most: 2^24 bytes, the decoded cap (a frame that asks for more is
/// refused before any allocation for it).
const MAX_WINDOW_LOG: u32 = 24;
/// The read buffer of the bounded decode.
const DECODE_BUFFER: usize = 64 * 1024;

/// What a client says a segment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    pub source_bytes: u64,
    pub decoded_bytes: u64,
    pub compressed_bytes: u64,
    pub sha256: [u8; 32],
}

/// Which cap a claim is over (contract: `413`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OverCap {
    #[error("compressedBytes over {MAX_SEGMENT_BYTES}")]
    Compressed,
    #[error("decodedBytes over {MAX_SEGMENT_DECODED_BYTES}")]
    Decoded,
    #[error("sourceBytes over {MAX_SEGMENT_SOURCE_BYTES}")]
    Source,
}

/// Which check stored bytes failed (contract: `400`, the object deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("length is not compressedBytes")]
    Length,
    #[error("SHA-256 is not the claimed one")]
    Checksum,
    #[error("not a zstd frame")]
    NotZstd,
    #[error("does not decompress to exactly decodedBytes")]
    Decoded,
}

impl Mismatch {
    /// The lane's refusal for it (`400` with its code).
    pub fn refusal(self) -> Refusal {
        match self {
            Self::Length => Refusal::LengthMismatch,
            Self::Checksum => Refusal::ChecksumMismatch,
            Self::NotZstd => Refusal::SegmentNotZstd,
            Self::Decoded => Refusal::DecodedLengthMismatch,
        }
    }
}

impl Claim {
    /// The contract's caps.
    pub fn check_caps(&self) -> Result<(), OverCap> {
        if self.compressed_bytes > MAX_SEGMENT_BYTES {
            return Err(OverCap::Compressed);
        }
        if self.decoded_bytes > MAX_SEGMENT_DECODED_BYTES {
            return Err(OverCap::Decoded);
        }
        if self.source_bytes > MAX_SEGMENT_SOURCE_BYTES {
            return Err(OverCap::Source);
        }
        Ok(())
    }
}

/// The length and SHA-256 of `bytes` against the claim (what the direct PUT checks before it
/// stores anything).
pub fn check_digest(
    bytes: &[u8],
    compressed_bytes: u64,
    sha256: &[u8; 32],
) -> Result<(), Mismatch> {
    if bytes.len() as u64 != compressed_bytes {
        return Err(Mismatch::Length);
    }
    let digest: [u8; 32] = Sha256::digest(bytes).into();
    if &digest != sha256 {
        return Err(Mismatch::Checksum);
    }
    Ok(())
}

/// Verify stored `bytes` against `claim`: length, SHA-256, then a bounded decode to exactly
/// `decoded_bytes` (read at most one byte past it).
pub fn verify(bytes: &[u8], claim: &Claim) -> Result<(), Mismatch> {
    verify_into(bytes, claim, &mut |_| {})
}

/// [`verify`], answering the decoded bytes (at most the claim's `decodedBytes`, itself capped at
/// [`MAX_SEGMENT_DECODED_BYTES`]): what the search index reads ([`crate::search::index`]).
pub fn verify_decoded(bytes: &[u8], claim: &Claim) -> Result<Vec<u8>, Mismatch> {
    let cap = claim.decoded_bytes.min(MAX_SEGMENT_DECODED_BYTES);
    let mut out = Vec::with_capacity(usize::try_from(cap).unwrap_or(0));
    verify_into(bytes, claim, &mut |chunk| {
        if (out.len() + chunk.len()) as u64 <= cap {
            out.extend_from_slice(chunk);
        }
    })?;
    Ok(out)
}

/// [`verify`], answering the number of lines decoded (each ends with `\n`; a last line without
/// one counts): what the search queue numbers lines by.
pub fn verify_lines(bytes: &[u8], claim: &Claim) -> Result<i64, Mismatch> {
    let (mut newlines, mut last) = (0usize, b'\n');
    verify_into(bytes, claim, &mut |chunk| {
        newlines += chunk.iter().filter(|b| **b == b'\n').count();
        if let Some(b) = chunk.last() {
            last = *b;
        }
    })?;
    let lines = newlines + usize::from(last != b'\n');
    Ok(i64::try_from(lines).unwrap_or(i64::MAX))
}

/// A recorded segment's stored bytes inflated for reading: exactly `decoded_bytes` (its recorded
/// size, never past [`MAX_SEGMENT_DECODED_BYTES`]), decoded under the same bounds as [`verify`];
/// `None` when the bytes are not zstd or inflate to another size.
pub fn decode_exact(bytes: &[u8], decoded_bytes: u64) -> Option<Vec<u8>> {
    let limit = decoded_bytes.min(MAX_SEGMENT_DECODED_BYTES);
    let mut out = Vec::with_capacity(usize::try_from(limit).unwrap_or(0));
    let decoded = bounded_decode(bytes, limit, &mut |chunk| out.extend_from_slice(chunk)).ok()?;
    (decoded == decoded_bytes).then_some(out)
}

fn verify_into(bytes: &[u8], claim: &Claim, sink: &mut dyn FnMut(&[u8])) -> Result<(), Mismatch> {
    check_digest(bytes, claim.compressed_bytes, &claim.sha256)?;
    let limit = claim.decoded_bytes.min(MAX_SEGMENT_DECODED_BYTES);
    let decoded = bounded_decode(bytes, limit, sink)?;
    if decoded != claim.decoded_bytes {
        return Err(Mismatch::Decoded);
    }
    Ok(())
}

/// The decoded length of `bytes`, counted up to `limit + 1` at most (a longer frame stops
/// there). Errors: not zstd, or a window beyond [`MAX_WINDOW_LOG`].
#[cfg(test)]
fn bounded_decoded_len(bytes: &[u8], limit: u64) -> Result<u64, Mismatch> {
    bounded_decode(bytes, limit, &mut |_| {})
}

/// Decode `bytes` up to `limit + 1` bytes, each chunk handed to `sink`; the length decoded.
fn bounded_decode(bytes: &[u8], limit: u64, sink: &mut dyn FnMut(&[u8])) -> Result<u64, Mismatch> {
    let mut decoder = zstd::stream::read::Decoder::new(bytes).map_err(|_| Mismatch::NotZstd)?;
    decoder
        .window_log_max(MAX_WINDOW_LOG)
        .map_err(|_| Mismatch::NotZstd)?;
    let mut limited = decoder.take(limit + 1);
    let mut buf = vec![0u8; DECODE_BUFFER];
    let mut total = 0u64;
    loop {
        match limited.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => {
                total += n as u64;
                sink(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Mismatch::NotZstd),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zstd_bomb_stops_at_the_bound() {
        let big = vec![b'x'; 1 << 20];
        let z = zstd::encode_all(&big[..], 3).unwrap();
        assert_eq!(decode_exact(&z, 1 << 20).map(|v| v.len()), Some(1 << 20));
        assert_eq!(decode_exact(&z, 1000), None);
        assert_eq!(decode_exact(b"not zstd", 1000), None);
    }

    fn claim_of(decoded: &[u8], compressed: &[u8]) -> Claim {
        Claim {
            source_bytes: decoded.len() as u64,
            decoded_bytes: decoded.len() as u64,
            compressed_bytes: compressed.len() as u64,
            sha256: Sha256::digest(compressed).into(),
        }
    }

    #[test]
    fn a_true_claim_verifies_and_each_lie_is_named() {
        let text = b"{\"a\":1}\n".repeat(100);
        let z = zstd::encode_all(&text[..], 3).unwrap();
        let claim = claim_of(&text, &z);
        assert_eq!(verify(&z, &claim), Ok(()));
        assert_eq!(verify_decoded(&z, &claim).as_deref(), Ok(&text[..]));
        assert_eq!(verify_lines(&z, &claim), Ok(100));
        let mut c = claim;
        c.compressed_bytes += 1;
        assert_eq!(verify(&z, &c), Err(Mismatch::Length));
        let mut c = claim;
        c.sha256[0] ^= 1;
        assert_eq!(verify(&z, &c), Err(Mismatch::Checksum));
        let mut c = claim;
        c.decoded_bytes -= 1;
        assert_eq!(verify(&z, &c), Err(Mismatch::Decoded));
        let mut c = claim;
        c.decoded_bytes += 1;
        assert_eq!(verify(&z, &c), Err(Mismatch::Decoded));
        let junk = b"not zstd at all";
        assert_eq!(verify(junk, &claim_of(junk, junk)), Err(Mismatch::NotZstd));
    }

    #[test]
    fn a_zstd_bomb_stops_at_the_cap() {
        // 64 MiB of zeros compress to a few kilobytes.
        let zeros = vec![0u8; 64 << 20];
        let z = zstd::encode_all(&zeros[..], 3).unwrap();
        assert!(z.len() < 64 * 1024);
        let claim = Claim {
            source_bytes: 10,
            decoded_bytes: 10,
            compressed_bytes: z.len() as u64,
            sha256: Sha256::digest(&z).into(),
        };
        assert_eq!(verify(&z, &claim), Err(Mismatch::Decoded));
        assert_eq!(
            bounded_decoded_len(&z, MAX_SEGMENT_DECODED_BYTES),
            Ok(MAX_SEGMENT_DECODED_BYTES + 1),
            "read one byte past the cap, no further"
        );
    }

    #[test]
    fn caps_are_the_contracts() {
        let ok = Claim {
            source_bytes: MAX_SEGMENT_SOURCE_BYTES,
            decoded_bytes: MAX_SEGMENT_DECODED_BYTES,
            compressed_bytes: MAX_SEGMENT_BYTES,
            sha256: [0; 32],
        };
        assert_eq!(ok.check_caps(), Ok(()));
        let mut c = ok;
        c.compressed_bytes += 1;
        assert_eq!(c.check_caps(), Err(OverCap::Compressed));
        let mut c = ok;
        c.decoded_bytes += 1;
        assert_eq!(c.check_caps(), Err(OverCap::Decoded));
        let mut c = ok;
        c.source_bytes += 1;
        assert_eq!(c.check_caps(), Err(OverCap::Source));
    }
}
