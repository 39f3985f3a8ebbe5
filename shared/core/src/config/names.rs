//! Domain values configuration hands to the rest of the crate: a [`Secret`] that never reaches a
//! log line, a [`TenantId`], repository names and `exclude` patterns as GitHub spells them, and
//! the read API's [`SearchLanguage`].

use std::fmt;

use serde::Deserialize;

/// A value that must never reach a log line. `Debug` prints a placeholder.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// A tenant's name: lowercase letters, digits and dashes, 1 to 64 characters. It appears in
/// webhook paths and job payloads.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct TenantId(pub(super) String);

impl TenantId {
    pub fn parse(value: &str) -> Option<Self> {
        let ok = !value.is_empty()
            && value.len() <= 64
            && value
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        ok.then(|| Self(value.to_owned()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TenantId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        TenantId::parse(&raw)
            .ok_or_else(|| serde::de::Error::custom("a tenant id is 1 to 64 of a-z, 0-9 and '-'"))
    }
}

/// The text search configuration queries are parsed with; each has its own stored vector
/// (migrations/0009_read_api.sql), so a query always meets lexemes made the same way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SearchLanguage {
    /// The default: docs are English prose, so stemming finds "configure" for "configuring" and
    /// stop words drop out of queries ("how to install" searches "install").
    #[default]
    English,
    /// Every word as written: code identifiers, non-English docs.
    Simple,
}

impl SearchLanguage {
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "english" => Some(Self::English),
            "simple" => Some(Self::Simple),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::English => "english",
            Self::Simple => "simple",
        }
    }
}

/// `owner/name`, as GitHub spells it; compared case-insensitively like GitHub does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoName {
    pub owner: String,
    pub name: String,
}

impl RepoName {
    pub fn parse(value: &str) -> Option<Self> {
        let (owner, name) = value.split_once('/')?;
        (is_repo_name_part(owner) && is_repo_name_part(name)).then(|| Self {
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
    pub(crate) fn eq_ignore_case(&self, full_name: &str) -> bool {
        self.full_name().eq_ignore_ascii_case(full_name)
    }
}

/// An owner or repository name as GitHub allows them: 1 to 100 of letters, digits, `-`, `_`, `.`.
pub fn is_repo_name_part(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl fmt::Display for RepoName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// An `exclude` entry: `owner/name`, `owner/*` or `*/name`, case-insensitive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoPattern {
    owner: String,
    name: String,
}

impl RepoPattern {
    pub fn parse(value: &str) -> Option<Self> {
        let (owner, name) = value.split_once('/')?;
        let part_ok = |s: &str| s == "*" || RepoName::parse(&format!("{s}/x")).is_some();
        (part_ok(owner) && part_ok(name)).then(|| Self {
            owner: owner.to_ascii_lowercase(),
            name: name.to_ascii_lowercase(),
        })
    }
    pub fn matches(&self, full_name: &str) -> bool {
        let Some((owner, name)) = full_name.split_once('/') else {
            return false;
        };
        (self.owner == "*" || self.owner.eq_ignore_ascii_case(owner))
            && (self.name == "*" || self.name.eq_ignore_ascii_case(name))
    }
}
