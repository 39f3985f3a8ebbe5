//! Noticing a rewrite: whether the bytes the server acknowledged are still the file's.
//!
//! Contract, "Identity and offsets": "A file that shrank, or whose acknowledged bytes changed (a
//! transcript rewritten in place), starts a new generation at offset 0." Hashing the whole
//! acknowledged prefix at every flush would read a 50 MB transcript again for each appended line,
//! so the lane keeps two witnesses, each read in 1 MiB windows: the source bytes of the last
//! acknowledged segment (a rewrite of the tail) and the file's first 64 KiB (a rewrite from the
//! top, the usual way an editor or a tool rewrites a file).

use std::io;

use sha2::{Digest, Sha256};

use crate::transcripts::source::{TranscriptFile, TranscriptSource};
use crate::transcripts::state::Progress;

/// The head witness covers this much of the file at most.
pub const HEAD_BYTES: u64 = 64 * 1024;
/// After adopting the server's offset, the tail witness is this much before it at most.
pub const TAIL_BYTES: u64 = 64 * 1024;

/// Lowercase hex SHA-256 of `len` bytes of `file` from `offset` (`None`: the file holds fewer).
pub fn sha256_of(
    source: &dyn TranscriptSource,
    file: &TranscriptFile,
    offset: u64,
    len: u64,
) -> io::Result<Option<String>> {
    const WINDOW: u64 = 1 << 20;
    let mut h = Sha256::new();
    let mut at = offset;
    let end = offset.saturating_add(len);
    while at < end {
        let want = (end - at).min(WINDOW) as usize;
        let chunk = source.read_at(file, at, want)?;
        if chunk.len() < want {
            return Ok(None);
        }
        h.update(&chunk);
        at += want as u64;
    }
    Ok(Some(hex::encode(h.finalize())))
}

/// Whether the file shrank below its acknowledged offset or its witnesses changed.
pub fn rewritten(source: &dyn TranscriptSource, p: &Progress, len: u64) -> io::Result<bool> {
    if len < p.acked_offset {
        return Ok(true);
    }
    if p.acked_offset == 0 {
        return Ok(false);
    }
    let file = p.file();
    if let Some(sha) = &p.check_sha {
        let now = sha256_of(source, &file, p.check_start, p.check_end - p.check_start)?;
        if now.as_ref() != Some(sha) {
            return Ok(true);
        }
    }
    if let Some(sha) = &p.head_sha
        && sha256_of(source, &file, 0, p.head_len)?.as_ref() != Some(sha)
    {
        return Ok(true);
    }
    Ok(false)
}

/// The head witness for an acknowledged prefix of `acked` bytes: (length, SHA-256).
pub fn head(
    source: &dyn TranscriptSource,
    file: &TranscriptFile,
    acked: u64,
) -> io::Result<(u64, Option<String>)> {
    let len = acked.min(HEAD_BYTES);
    Ok((len, sha256_of(source, file, 0, len)?))
}

/// Both witnesses taken now at `p`'s offset (after adopting the server's state).
pub fn checks_at(source: &dyn TranscriptSource, p: &mut Progress) -> io::Result<()> {
    let file = p.file();
    let start = p.acked_offset - p.acked_offset.min(TAIL_BYTES);
    p.check_start = start;
    p.check_end = p.acked_offset;
    p.check_sha = sha256_of(source, &file, start, p.acked_offset - start)?;
    (p.head_len, p.head_sha) = head(source, &file, p.acked_offset)?;
    Ok(())
}

/// From offset 0 (of the same or a new generation): no witnesses.
pub fn reset(p: &mut Progress) {
    p.acked_offset = 0;
    p.check_start = 0;
    p.check_end = 0;
    p.check_sha = None;
    p.head_len = 0;
    p.head_sha = None;
}
