//! Noticing a rewrite: whether the bytes the server acknowledged are still the file's.
//!
//! Contract, "Identity and offsets": "A file that shrank, or whose acknowledged bytes changed (a
//! transcript rewritten in place), starts a new generation at offset 0." Hashing the whole
//! acknowledged prefix at every flush would read a 50 MB transcript again for each appended line,
//! so a file that grew is checked against two witnesses, each read in 1 MiB windows: the source
//! bytes of the last acknowledged segment (a rewrite of the tail) and the file's first 64 KiB (a
//! rewrite from the top, the usual way an editor or a tool rewrites a file). A file flushed
//! without having grown (a sweep saw its stamp change at the same length, or a hook named it) has
//! nothing to append, so nothing else to read: there the whole acknowledged prefix is hashed and
//! compared with the prefix's SHA-256 kept since the first byte ([`prefix_state`]), and any
//! rewrite that kept the length is noticed (issue 31).
//!
//! The witnesses are kept current here too: a segment acknowledged moves them past it
//! ([`advance`]), and the server's state adopted takes them at its offset ([`adopt`]).

use std::io;
use std::ops::Range;

use sha2::digest::common::hazmat::SerializableState;
use sha2::{Digest, Sha256};

use crate::transcripts::outcome::FileState;
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

/// The SHA-256 state of no bytes yet (a prefix at offset 0).
pub fn empty_prefix() -> Vec<u8> {
    Sha256::new().serialize().to_vec()
}

/// The SHA-256 state `prefix` followed by `bytes` (`None` when `prefix` is not a state).
pub fn extend_prefix(prefix: &[u8], bytes: &[u8]) -> Option<Vec<u8>> {
    let mut h = hasher(prefix)?;
    h.update(bytes);
    Some(h.serialize().to_vec())
}

fn hasher(state: &[u8]) -> Option<Sha256> {
    let array = state.try_into().ok()?;
    Sha256::deserialize(array).ok()
}

/// The SHA-256 state of the file's first `len` bytes, read in 1 MiB windows (`None`: the file
/// holds fewer).
pub fn prefix_state(
    source: &dyn TranscriptSource,
    file: &TranscriptFile,
    len: u64,
) -> io::Result<Option<Vec<u8>>> {
    const WINDOW: u64 = 1 << 20;
    let mut h = Sha256::new();
    let mut at = 0;
    while at < len {
        let want = (len - at).min(WINDOW) as usize;
        let chunk = source.read_at(file, at, want)?;
        if chunk.len() < want {
            return Ok(None);
        }
        h.update(&chunk);
        at += want as u64;
    }
    Ok(Some(h.serialize().to_vec()))
}

/// Whether the file shrank below its acknowledged offset or its witnesses changed; at the same
/// length as the acknowledged prefix, whether the prefix hashes otherwise than it did.
pub fn rewritten(source: &dyn TranscriptSource, p: &Progress, len: u64) -> io::Result<bool> {
    if len < p.acked_offset {
        return Ok(true);
    }
    if p.acked_offset == 0 {
        return Ok(false);
    }
    let file = p.file();
    if len == p.acked_offset
        && let Some(kept) = p.prefix_state.as_deref().and_then(hasher)
    {
        let now = prefix_state(source, &file, len)?.and_then(|s| hasher(&s));
        return Ok(now.map(Sha256::finalize) != Some(kept.finalize()));
    }
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

/// Both witnesses and the prefix's state taken now at `p`'s offset (after adopting the server's
/// state: the one time the whole prefix is read to learn it).
pub fn checks_at(source: &dyn TranscriptSource, p: &mut Progress) -> io::Result<()> {
    let file = p.file();
    let start = p.acked_offset - p.acked_offset.min(TAIL_BYTES);
    p.check_start = start;
    p.check_end = p.acked_offset;
    p.check_sha = sha256_of(source, &file, start, p.acked_offset - start)?;
    (p.head_len, p.head_sha) = head(source, &file, p.acked_offset)?;
    p.prefix_state = prefix_state(source, &file, p.acked_offset)?;
    Ok(())
}

/// A segment of the source bytes `bytes` acknowledged where it was sent: the offset moves past
/// it, its bytes (`sha`: their SHA-256) are the tail witness and `prefix` (the SHA-256 state of
/// the prefix it ends) the prefix's, and the head witness grows with the acknowledged prefix
/// until it is 64 KiB.
pub fn advance(
    source: &dyn TranscriptSource,
    p: &mut Progress,
    bytes: Range<u64>,
    sha: &str,
    prefix: Option<Vec<u8>>,
) {
    p.acked_offset = bytes.end;
    p.check_start = bytes.start;
    p.check_end = bytes.end;
    p.check_sha = Some(sha.to_owned());
    p.prefix_state = prefix;
    if p.head_len < HEAD_BYTES.min(p.acked_offset) {
        let (len, sha) = match head(source, &p.file(), p.acked_offset) {
            Ok(h) => h,
            Err(e) => {
                tracing::debug!(error = %e, "head hash not read; kept");
                (p.head_len, p.head_sha.clone())
            }
        };
        p.head_len = len;
        p.head_sha = sha;
    }
}

/// Take the server's state `st` for a file of `len` bytes (contract: the acknowledged offset is
/// the truth); the state is known from then on.
pub fn adopt(source: &dyn TranscriptSource, p: &mut Progress, st: FileState, len: u64) {
    let ours = (p.generation, p.acked_offset);
    if st.generation == 0 || st.generation < p.generation {
        // Unknown to the server, or our newer generation not committed yet: from 0 in ours.
        p.generation = p.generation.max(1);
        if p.acked_offset > 0 {
            reset(p);
        }
    } else if (st.generation, st.acked_offset) != ours {
        p.generation = st.generation;
        p.acked_offset = st.acked_offset;
        p.prefix_state = None;
        if st.acked_offset <= len
            && let Err(e) = checks_at(source, p)
        {
            tracing::debug!(error = %e, "checks not read at the adopted offset");
        }
    }
    p.known = true;
}

/// From offset 0 (of the same or a new generation): no witnesses, the prefix of no bytes.
pub fn reset(p: &mut Progress) {
    p.acked_offset = 0;
    p.check_start = 0;
    p.check_end = 0;
    p.check_sha = None;
    p.head_len = 0;
    p.head_sha = None;
    p.prefix_state = Some(empty_prefix());
}
