//! Object keys (contract "Segments"): content-addressed and immutable,
//! `transcripts/{orgId}/{targetKey}/{fileId}/{generation}/{offset:020}-{sha256}.zst`, where
//! `targetKey` is the first 32 hex digits of SHA-256 of `computeTargetId`, a NUL and `sessionId`
//! (so neither id, free text, ever becomes a path).

use sha2::{Digest, Sha256};

/// The key prefix of every segment.
pub const PREFIX: &str = "transcripts";

/// `targetKey`: the first 32 hex digits of SHA-256(`computeTargetId` NUL `sessionId`).
pub fn target_key(compute_target_id: &str, session_id: &str) -> String {
    let mut h = Sha256::new();
    h.update(compute_target_id.as_bytes());
    h.update([0u8]);
    h.update(session_id.as_bytes());
    let digest: [u8; 32] = h.finalize().into();
    hex::encode(&digest[..16])
}

/// A transcript file's name: org, compute target, session, file.
#[derive(Debug, Clone, Copy)]
pub struct FileName<'a> {
    pub org_id: i64,
    pub compute_target_id: &'a str,
    pub session_id: &'a str,
    pub file_id: &'a str,
}

/// Where one segment is stored. `file.file_id` must already be a valid `fileId`
/// (`syncplane_contract::transcripts::valid_file_id`).
pub struct SegmentKey<'a> {
    pub file: FileName<'a>,
    pub generation: u32,
    pub offset: u64,
    pub sha256: &'a [u8; 32],
}

impl SegmentKey<'_> {
    pub fn key(&self) -> String {
        format!(
            "{PREFIX}/{}/{}/{}/{}/{:020}-{}.zst",
            self.file.org_id,
            target_key(self.file.compute_target_id, self.file.session_id),
            self.file.file_id,
            self.generation,
            self.offset,
            hex::encode(self.sha256)
        )
    }
}

/// Whether `key` is safe as a relative path under a store's root: non-empty components of
/// `A-Z a-z 0-9 . _ -` separated by `/`, none starting with `.` (so no `..`, no hidden or
/// temporary name, no absolute path, no NUL, no backslash).
pub(crate) fn safe_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 1024
        && key.split('/').all(|c| {
            !c.is_empty()
                && !c.starts_with('.')
                && c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_contracts() {
        let sha = [0xabu8; 32];
        let k = SegmentKey {
            file: FileName {
                org_id: 7,
                compute_target_id: "laptop-1",
                session_id: "s-1",
                file_id: "s-1.jsonl",
            },
            generation: 2,
            offset: 5120,
            sha256: &sha,
        }
        .key();
        let tk = target_key("laptop-1", "s-1");
        assert_eq!(tk.len(), 32);
        assert_eq!(
            k,
            format!(
                "transcripts/7/{tk}/s-1.jsonl/2/00000000000000005120-{}.zst",
                "ab".repeat(32)
            )
        );
        assert!(safe_key(&k));
        // The NUL separates the two ids: moving a character across it changes the key.
        assert_ne!(target_key("a", "bc"), target_key("ab", "c"));
    }

    #[test]
    fn keys_never_escape_the_root() {
        for bad in [
            "",
            "/etc/passwd",
            "a//b",
            "../x",
            "a/../b",
            "a/./b",
            "a\\b",
            "a/.tmp",
            "a\0b",
            "a/",
        ] {
            assert!(!safe_key(bad), "{bad:?}");
        }
    }
}
