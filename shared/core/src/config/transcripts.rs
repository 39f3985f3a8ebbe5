//! The transcript lane's settings (docs/transcript-wire-contract.md, docs/configuration.md):
//! where segments are stored (`TRANSCRIPT_BUCKET`, else a directory, `TRANSCRIPT_DATA_DIR`), how
//! long an upload intent lives (`TRANSCRIPT_UPLOAD_TTL_SECONDS`), the lane's own rate limit
//! (`TRANSCRIPT_RATE_LIMIT_PER_MINUTE`), searches and exports per read token
//! (`TRANSCRIPT_SEARCH_RATE_LIMIT_PER_MINUTE`, `TRANSCRIPT_EXPORT_RATE_LIMIT_PER_MINUTE`) and an S3
//! emulator's address (`AWS_ENDPOINT_URL_S3`).
//! Each error names its variable.

use std::path::PathBuf;
use std::time::Duration;

use url::Url;

use super::error::ConfigError;
use super::values::parse_count;

/// `TRANSCRIPT_DATA_DIR` unless set: the direct transport's store, relative to the working
/// directory (a local run's `.syncplane/`).
pub(crate) const DEFAULT_DATA_DIR: &str = ".syncplane/transcripts";
/// `TRANSCRIPT_UPLOAD_TTL_SECONDS` unless set (contract: intents live 300 s by default).
pub(crate) const DEFAULT_UPLOAD_TTL_SECS: u32 = 300;
/// An intent (and a presigned URL) lives at most an hour.
pub(crate) const MAX_UPLOAD_TTL_SECS: u32 = 3_600;
/// `TRANSCRIPT_RATE_LIMIT_PER_MINUTE` unless set (contract: 600 intents per minute per target).
pub(crate) const DEFAULT_RATE_LIMIT_PER_MINUTE: u32 = 600;
/// `TRANSCRIPT_SEARCH_RATE_LIMIT_PER_MINUTE` unless set: searches per minute per read token.
pub(crate) const DEFAULT_SEARCH_RATE_LIMIT_PER_MINUTE: u32 = 120;
/// `TRANSCRIPT_EXPORT_RATE_LIMIT_PER_MINUTE` unless set: exports per minute per read token (an
/// export reads an org's sessions or a whole transcript: a person asks for a few).
pub(crate) const DEFAULT_EXPORT_RATE_LIMIT_PER_MINUTE: u32 = 10;

/// The transcript lane's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptSettings {
    /// `TRANSCRIPT_BUCKET`: segments go to this S3 bucket through presigned PUTs; `None`: the
    /// direct transport into [`Self::data_dir`].
    pub bucket: Option<String>,
    /// `TRANSCRIPT_DATA_DIR`: the direct transport's store.
    pub data_dir: PathBuf,
    /// `TRANSCRIPT_UPLOAD_TTL_SECONDS`: how long an upload intent (and its URL) lives.
    pub upload_ttl: Duration,
    /// `TRANSCRIPT_RATE_LIMIT_PER_MINUTE`: intents per minute per compute target.
    pub rate_limit_per_minute: u32,
    /// `TRANSCRIPT_SEARCH_RATE_LIMIT_PER_MINUTE`: searches per minute per read token.
    pub search_rate_limit_per_minute: u32,
    /// `TRANSCRIPT_EXPORT_RATE_LIMIT_PER_MINUTE`: exports per minute per read token.
    pub export_rate_limit_per_minute: u32,
    /// `AWS_ENDPOINT_URL_S3`: an S3 emulator's address (moto); the SDK reads it too.
    pub s3_endpoint: Option<String>,
}

impl Default for TranscriptSettings {
    fn default() -> Self {
        Self {
            bucket: None,
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            upload_ttl: Duration::from_secs(u64::from(DEFAULT_UPLOAD_TTL_SECS)),
            rate_limit_per_minute: DEFAULT_RATE_LIMIT_PER_MINUTE,
            search_rate_limit_per_minute: DEFAULT_SEARCH_RATE_LIMIT_PER_MINUTE,
            export_rate_limit_per_minute: DEFAULT_EXPORT_RATE_LIMIT_PER_MINUTE,
            s3_endpoint: None,
        }
    }
}

impl TranscriptSettings {
    /// Read the settings through `get` (blank values are unset).
    pub fn from_lookup(get: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let bucket = get("TRANSCRIPT_BUCKET")
            .map(|b| b.trim().to_owned())
            .map(|b| valid_bucket(&b).then_some(b))
            .map(|b| {
                b.ok_or_else(|| {
                    ConfigError::new(
                        "TRANSCRIPT_BUCKET",
                        "must be an S3 bucket name: 3 to 63 of a-z 0-9 . -, starting and ending with a letter or digit",
                    )
                })
            })
            .transpose()?;
        let data_dir = get("TRANSCRIPT_DATA_DIR")
            .map(|d| PathBuf::from(d.trim()))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        if data_dir.to_str().is_some_and(|d| d.contains('\0')) {
            return Err(ConfigError::new(
                "TRANSCRIPT_DATA_DIR",
                "must be a directory path",
            ));
        }
        let ttl = match get("TRANSCRIPT_UPLOAD_TTL_SECONDS") {
            None => DEFAULT_UPLOAD_TTL_SECS,
            Some(v) => parse_count("TRANSCRIPT_UPLOAD_TTL_SECONDS", &v, MAX_UPLOAD_TTL_SECS)?,
        };
        let rate_limit_per_minute = match get("TRANSCRIPT_RATE_LIMIT_PER_MINUTE") {
            None => DEFAULT_RATE_LIMIT_PER_MINUTE,
            Some(v) => parse_count("TRANSCRIPT_RATE_LIMIT_PER_MINUTE", &v, 1_000_000)?,
        };
        let search_rate_limit_per_minute = match get("TRANSCRIPT_SEARCH_RATE_LIMIT_PER_MINUTE") {
            None => DEFAULT_SEARCH_RATE_LIMIT_PER_MINUTE,
            Some(v) => parse_count("TRANSCRIPT_SEARCH_RATE_LIMIT_PER_MINUTE", &v, 1_000_000)?,
        };
        let export_rate_limit_per_minute = match get("TRANSCRIPT_EXPORT_RATE_LIMIT_PER_MINUTE") {
            None => DEFAULT_EXPORT_RATE_LIMIT_PER_MINUTE,
            Some(v) => parse_count("TRANSCRIPT_EXPORT_RATE_LIMIT_PER_MINUTE", &v, 1_000_000)?,
        };
        let s3_endpoint = get("AWS_ENDPOINT_URL_S3")
            .map(|v| {
                let v = v.trim().to_owned();
                match Url::parse(&v) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(v),
                    _ => Err(ConfigError::new(
                        "AWS_ENDPOINT_URL_S3",
                        format!("must be an http(s) URL, got '{v}'"),
                    )),
                }
            })
            .transpose()?;
        Ok(Self {
            bucket,
            data_dir,
            upload_ttl: Duration::from_secs(u64::from(ttl)),
            rate_limit_per_minute,
            search_rate_limit_per_minute,
            export_rate_limit_per_minute,
            s3_endpoint,
        })
    }
}

/// An S3 bucket name (general purpose buckets): 3 to 63 of `a-z 0-9 . -`, starting and ending
/// with a letter or digit.
fn valid_bucket(b: &str) -> bool {
    let bytes = b.as_bytes();
    (3..=63).contains(&bytes.len())
        && bytes
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'.' | b'-'))
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<TranscriptSettings, ConfigError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TranscriptSettings::from_lookup(&|k: &str| {
            pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn defaults_are_the_contracts() {
        let s = settings(&[]).unwrap();
        assert_eq!(s, TranscriptSettings::default());
        assert_eq!(s.upload_ttl, Duration::from_secs(300));
        assert_eq!(s.rate_limit_per_minute, 600);
        assert_eq!(s.search_rate_limit_per_minute, 120);
        assert_eq!(s.export_rate_limit_per_minute, 10);
        assert_eq!(s.data_dir, PathBuf::from(".syncplane/transcripts"));
        assert_eq!(s.bucket, None);
    }

    #[test]
    fn each_bad_value_names_its_variable() {
        for (var, bad) in [
            ("TRANSCRIPT_BUCKET", "Bad_Bucket"),
            ("TRANSCRIPT_BUCKET", "ab"),
            ("TRANSCRIPT_UPLOAD_TTL_SECONDS", "0"),
            ("TRANSCRIPT_UPLOAD_TTL_SECONDS", "3601"),
            ("TRANSCRIPT_RATE_LIMIT_PER_MINUTE", "many"),
            ("TRANSCRIPT_SEARCH_RATE_LIMIT_PER_MINUTE", "0"),
            ("TRANSCRIPT_EXPORT_RATE_LIMIT_PER_MINUTE", "0"),
            ("TRANSCRIPT_EXPORT_RATE_LIMIT_PER_MINUTE", "1000001"),
            ("AWS_ENDPOINT_URL_S3", "ftp://x"),
        ] {
            let err = settings(&[(var, bad)]).unwrap_err();
            assert_eq!(err.variable, var, "{bad}");
        }
        let s = settings(&[
            ("TRANSCRIPT_BUCKET", "acme-transcripts.1"),
            ("TRANSCRIPT_DATA_DIR", "/var/lib/t"),
            ("TRANSCRIPT_UPLOAD_TTL_SECONDS", "60"),
            ("TRANSCRIPT_RATE_LIMIT_PER_MINUTE", "5"),
            ("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:5000"),
        ])
        .unwrap();
        assert_eq!(s.bucket.as_deref(), Some("acme-transcripts.1"));
        assert_eq!(s.data_dir, PathBuf::from("/var/lib/t"));
        assert_eq!(s.upload_ttl, Duration::from_secs(60));
        assert_eq!(s.rate_limit_per_minute, 5);
        assert_eq!(s.s3_endpoint.as_deref(), Some("http://127.0.0.1:5000"));
    }
}
