//! Staging one segment: from the acknowledged offset to the end of the last complete line that
//! fits the caps, each line redacted, the whole compressed with zstd, named by its SHA-256.
//!
//! Contract, "Segments": a segment covers `[offset, offset + sourceBytes)` of the local file,
//! ends just after a `\n` and is never empty; `decodedBytes` (the redacted bytes) ≤ 16 MiB,
//! `sourceBytes` ≤ 16 MiB, `compressedBytes` (one zstd frame) ≤ 4 MiB, `sha256` the lowercase hex
//! digest of the compressed bytes. "A single line too long for one segment cannot be archived: the
//! client sets the file aside (deterministic) instead of sending it." Contract, "Client rules":
//! every line is redacted on the device before it is staged (spec: "the transcript lane stages
//! secret-redacted transcript bytes"; redaction removes secrets, not ordinary per-turn text).
//!
//! Memory: a segment is built from one read window of [`Caps::target_source`] bytes (4 MiB by
//! default), widened to the source cap (16 MiB) only when a single line is longer than the
//! window, so at most the window, its redacted copy and the compressed frame are resident,
//! whatever the file's size. When the compressed (or redacted) bytes exceed their cap, the
//! segment shrinks to the last newline in the first half, until it fits or one line remains.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io;

use sha2::{Digest, Sha256};
use syncplane_contract::transcripts::{
    MAX_SEGMENT_BYTES, MAX_SEGMENT_DECODED_BYTES, MAX_SEGMENT_SOURCE_BYTES,
};

use crate::redact::Redactor;
use crate::transcripts::source::{TranscriptFile, TranscriptSource};
use crate::transcripts::verify;

/// zstd's level for segments.
pub const ZSTD_LEVEL: i32 = 3;
/// The source bytes a segment aims at.
pub const DEFAULT_TARGET_SOURCE: usize = 4 * 1024 * 1024;

/// The caps a segment is built within: the contract's, or the server's tighter ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub target_source: usize,
    pub max_source: usize,
    pub max_decoded: usize,
    pub max_compressed: usize,
}

impl Caps {
    /// Segments of about `target_source` bytes of source, within the contract's caps or the
    /// server's tighter `(decoded, compressed)` ones (its hello).
    pub fn within(target_source: usize, server: Option<(u64, u64)>) -> Self {
        let contract = Self::default();
        Self {
            target_source,
            max_source: contract.max_source,
            max_decoded: server.map_or(contract.max_decoded, |s| s.0 as usize),
            max_compressed: server.map_or(contract.max_compressed, |s| s.1 as usize),
        }
    }
}

impl Default for Caps {
    fn default() -> Self {
        Self {
            target_source: DEFAULT_TARGET_SOURCE,
            max_source: MAX_SEGMENT_SOURCE_BYTES as usize,
            max_decoded: MAX_SEGMENT_DECODED_BYTES as usize,
            max_compressed: MAX_SEGMENT_BYTES as usize,
        }
    }
}

/// One staged segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub offset: u64,
    pub source_bytes: u64,
    pub decoded_bytes: u64,
    /// One zstd frame of the redacted bytes.
    pub compressed: Vec<u8>,
    /// Lowercase hex SHA-256 of `compressed`.
    pub sha256: String,
    /// Lowercase hex SHA-256 of the source bytes (the rewrite check).
    pub source_sha256: String,
    /// The SHA-256 state of the file's bytes up to the segment's end, when the state up to its
    /// start was given ([`stage_after`]).
    pub prefix_state: Option<Vec<u8>>,
    /// Secrets redacted, per rule.
    pub hits: BTreeMap<&'static str, usize>,
}

impl Segment {
    pub fn end(&self) -> u64 {
        self.offset + self.source_bytes
    }
}

/// Why nothing can be staged.
#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    /// A line longer than a segment can hold: the file is set aside (deterministic).
    #[error("a line at byte {offset} does not fit one segment")]
    LineTooLong { offset: u64 },
    #[error("reading the transcript: {0}")]
    Io(#[from] io::Error),
}

/// The redacted, compressed form of `source` (complete lines).
struct Staged {
    decoded: u64,
    compressed: Vec<u8>,
    hits: BTreeMap<&'static str, usize>,
}

/// Redact each line of `source` (which ends with `\n`); `None` when the redacted bytes exceed
/// `max_decoded`.
fn redact(source: &[u8], redactor: &Redactor, max_decoded: usize) -> Option<(Vec<u8>, Staged)> {
    let mut out = Vec::with_capacity(source.len() + source.len() / 16);
    let mut hits = BTreeMap::new();
    for line in source.split_inclusive(|b| *b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        // Not UTF-8: redacted as its lossy text (never sent unredacted).
        let text: Cow<'_, str> = String::from_utf8_lossy(body);
        let r = redactor.redact_line(&text);
        for (rule, n) in r.hits {
            *hits.entry(rule).or_insert(0) += n;
        }
        out.extend_from_slice(r.text.as_bytes());
        out.push(b'\n');
        if out.len() > max_decoded {
            return None;
        }
    }
    let decoded = out.len() as u64;
    Some((
        out,
        Staged {
            decoded,
            compressed: Vec::new(),
            hits,
        },
    ))
}

/// The end (exclusive) of the last complete line of `buf[..limit]`.
fn last_line_end(buf: &[u8], limit: usize) -> Option<usize> {
    buf[..limit.min(buf.len())]
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|i| i + 1)
}

/// Stage the segment of `file` starting at `offset`: `Ok(None)` when no complete line follows
/// (nothing new, or a line still being written).
pub fn stage(
    source: &dyn TranscriptSource,
    file: &TranscriptFile,
    offset: u64,
    caps: &Caps,
    redactor: &Redactor,
) -> Result<Option<Segment>, SegmentError> {
    stage_after(source, file, offset, caps, redactor, None)
}

/// [`stage`], carrying the SHA-256 state of the file's bytes before `offset` (`prefix`) over the
/// segment's source bytes while they are in memory.
pub fn stage_after(
    source: &dyn TranscriptSource,
    file: &TranscriptFile,
    offset: u64,
    caps: &Caps,
    redactor: &Redactor,
    prefix: Option<&[u8]>,
) -> Result<Option<Segment>, SegmentError> {
    let first = caps.target_source.min(caps.max_source).max(1);
    let mut window = source.read_at(file, offset, first)?;
    let mut end = last_line_end(&window, window.len());
    if end.is_none() && window.len() == first && first < caps.max_source {
        // One line longer than the window: widen it to the source cap, once.
        drop(window);
        window = source.read_at(file, offset, caps.max_source)?;
        end = last_line_end(&window, window.len());
    }
    let Some(mut end) = end else {
        if window.len() >= caps.max_source {
            return Err(SegmentError::LineTooLong { offset });
        }
        return Ok(None);
    };
    loop {
        if let Some(staged) = compress_within(&window[..end], caps, redactor)? {
            let source_sha256 = hex::encode(Sha256::digest(&window[..end]));
            let prefix_state = prefix.and_then(|p| verify::extend_prefix(p, &window[..end]));
            let sha256 = hex::encode(Sha256::digest(&staged.compressed));
            return Ok(Some(Segment {
                offset,
                source_bytes: end as u64,
                decoded_bytes: staged.decoded,
                compressed: staged.compressed,
                sha256,
                source_sha256,
                prefix_state,
                hits: staged.hits,
            }));
        }
        // Too large once redacted or compressed: the last line end in the first half.
        match last_line_end(&window, end / 2) {
            Some(e) if e < end => end = e,
            _ => return Err(SegmentError::LineTooLong { offset }),
        }
    }
}

fn compress_within(
    source: &[u8],
    caps: &Caps,
    redactor: &Redactor,
) -> Result<Option<Staged>, SegmentError> {
    let Some((decoded, mut staged)) = redact(source, redactor, caps.max_decoded) else {
        return Ok(None);
    };
    let compressed = zstd::bulk::compress(&decoded, ZSTD_LEVEL)?;
    if compressed.len() > caps.max_compressed {
        return Ok(None);
    }
    staged.compressed = compressed;
    Ok(Some(staged))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcripts::source::MemorySource;

    fn caps(target: usize, max_source: usize, max_compressed: usize) -> Caps {
        Caps {
            target_source: target,
            max_source,
            max_decoded: max_source * 2,
            max_compressed,
        }
    }

    fn decode(s: &Segment) -> Vec<u8> {
        zstd::bulk::decompress(&s.compressed, 1 << 26).unwrap()
    }

    #[test]
    fn a_segment_ends_just_after_a_newline_and_a_partial_line_waits() {
        let src = MemorySource::default();
        src.put("s", "f", &b"{\"a\":1}\n{\"b\":2}\n{\"c\":"[..]);
        let f = src.file("s", "f").unwrap();
        let r = Redactor::new();
        let seg = stage(&src, &f, 0, &Caps::default(), &r).unwrap().unwrap();
        assert_eq!(seg.source_bytes, 16);
        assert_eq!(decode(&seg), b"{\"a\":1}\n{\"b\":2}\n");
        assert_eq!(seg.sha256, hex::encode(Sha256::digest(&seg.compressed)));
        assert_eq!(seg.decoded_bytes, 16);
        assert!(
            stage(&src, &f, 16, &Caps::default(), &r).unwrap().is_none(),
            "partial line"
        );
        src.append("s", "f", b"3}\n");
        let f = src.file("s", "f").unwrap();
        let next = stage(&src, &f, 16, &Caps::default(), &r).unwrap().unwrap();
        assert_eq!((next.offset, next.source_bytes), (16, 8));
    }

    #[test]
    fn a_segment_stays_within_the_window_and_shrinks_until_it_compresses_under_the_cap() {
        let src = MemorySource::default();
        // Incompressible lines of 100 bytes.
        let mut bytes = Vec::new();
        let mut x: u64 = 7;
        for _ in 0..100 {
            for _ in 0..99 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                bytes.push(b'a' + (x >> 59) as u8);
            }
            bytes.push(b'\n');
        }
        src.put("s", "f", bytes);
        let f = src.file("s", "f").unwrap();
        let r = Redactor::new();
        let seg = stage(&src, &f, 0, &caps(2_000, 5_000, 1_000_000), &r)
            .unwrap()
            .unwrap();
        assert_eq!(seg.source_bytes, 2_000, "the target window");
        let seg = stage(&src, &f, 0, &caps(10_000, 10_000, 1_200), &r)
            .unwrap()
            .unwrap();
        assert!(seg.compressed.len() <= 1_200);
        assert!(seg.source_bytes.is_multiple_of(100) && seg.source_bytes > 0);
    }

    #[test]
    fn a_line_longer_than_the_source_cap_is_refused() {
        let src = MemorySource::default();
        let mut line = vec![b'x'; 3_000];
        line.push(b'\n');
        src.put("s", "f", line);
        let f = src.file("s", "f").unwrap();
        let r = Redactor::new();
        let e = stage(&src, &f, 0, &caps(1_000, 2_000, 1_000_000), &r).unwrap_err();
        assert!(matches!(e, SegmentError::LineTooLong { offset: 0 }), "{e}");
        // Within the source cap, a line longer than the window widens it.
        let seg = stage(&src, &f, 0, &caps(1_000, 4_000, 1_000_000), &r)
            .unwrap()
            .unwrap();
        assert_eq!(seg.source_bytes, 3_001);
    }
}
