//! Selection fingerprint (spec "One repository", step 2).
//!
//! The tree SHA alone cannot tell that the plan is unchanged: a config change (docs folder
//! override, file size cap, document cap) changes the selection without changing the tree. The
//! fingerprint hashes every setting that affects which files are picked, plus a rules version
//! that is bumped whenever the selection or parse rules in code change.

use sha2::{Digest, Sha256};

/// Bump when selection or parsing rules change, so every repository re-plans once.
pub(crate) const RULES_VERSION: u32 = 1;

/// The settings that decide a repository's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelectionSettings<'a> {
    pub docs_path: Option<&'a str>,
    pub max_file_bytes: u32,
    pub max_docs: u32,
}

/// The fingerprint a repository's plan gets under `config` (its docs folder override, caps).
pub fn for_repository(config: &syncplane_core::config::SyncConfig, full_name: &str) -> String {
    fingerprint(&SelectionSettings {
        docs_path: config.docs_path(full_name),
        max_file_bytes: config.max_file_bytes,
        max_docs: config.max_docs_per_repo,
    })
}

/// Hex SHA-256 over the rules version and every selection setting, each field tagged and
/// length-prefixed so no two settings can produce the same input.
pub fn fingerprint(settings: &SelectionSettings<'_>) -> String {
    let mut h = Sha256::new();
    h.update(b"syncplane-selection\0");
    h.update(RULES_VERSION.to_be_bytes());
    match settings.docs_path {
        Some(p) => {
            h.update(b"docs_path=some\0");
            h.update((p.len() as u64).to_be_bytes());
            h.update(p.as_bytes());
        }
        None => h.update(b"docs_path=none\0"),
    }
    h.update(b"max_file_bytes\0");
    h.update(settings.max_file_bytes.to_be_bytes());
    h.update(b"max_docs\0");
    h.update(settings.max_docs.to_be_bytes());
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: SelectionSettings<'static> = SelectionSettings {
        docs_path: None,
        max_file_bytes: 262_144,
        max_docs: 2000,
    };

    #[test]
    fn every_selection_setting_changes_the_fingerprint() {
        let base = fingerprint(&BASE);
        assert_eq!(base, fingerprint(&BASE), "stable for the same settings");
        assert_eq!(base.len(), 64);
        let variants = [
            SelectionSettings {
                docs_path: Some("docs"),
                ..BASE
            },
            SelectionSettings {
                docs_path: Some("handbook"),
                ..BASE
            },
            SelectionSettings {
                max_file_bytes: 1000,
                ..BASE
            },
            SelectionSettings {
                max_docs: 10,
                ..BASE
            },
        ];
        let mut seen = vec![base];
        for v in variants {
            let f = fingerprint(&v);
            assert!(!seen.contains(&f), "{v:?} must change the fingerprint");
            seen.push(f);
        }
    }
}
