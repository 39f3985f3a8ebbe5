//! Logging set-up shared by every binary (issue 12 §2, §3).
//!
//! - Logs go to standard error, never standard output: a command's result (`syncplane sync
//!   --json`) owns stdout, and no logging thread ever contends for the stdout lock.
//! - Colours only when standard error is a terminal; JSON (Lambda, CloudWatch) never has them.
//! - One span field per JSON line (`span`, not also `spans`: issue 13 §11).
//! - Metrics (`metrics`) are the one thing written to standard output by a function.
//! - No filter setting can expose a secret: the Lambda runtime's raw-event targets are capped
//!   below `trace` by a filter `RUST_LOG` cannot override, and every formatted line passes
//!   through [`redact`] (bearer tokens, webhook signatures, GitHub and device tokens, passwords
//!   in connection URLs) before it is written.

use std::io::{IsTerminal, Write};

use tracing::{Level, Metadata};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Targets that log whole invocation events or response preludes at `trace` (lambda_runtime
/// 1.x: `api_response` logs "raw JSON event received from Lambda", headers included).
pub(crate) const RAW_EVENT_TARGETS: &[&str] = &[
    "lambda_runtime::layers::api_response",
    "lambda_runtime::requests",
];

/// JSON logs for Lambda (CloudWatch parses them), plain text for the CLI, both on stderr.
/// `RUST_LOG` filters; the default is `info`.
pub fn init(json: bool) {
    let env = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let layer = tracing_subscriber::fmt::layer()
        .with_target(false)
        .with_writer(RedactingStderr);
    let layer = if json {
        // One span field per line: the current span only, not also the list of every span
        // (the runtime's invoke span would appear twice, with its request id each time).
        layer
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .without_time()
            .with_ansi(false)
            .boxed()
    } else {
        layer.with_ansi(std::io::stderr().is_terminal()).boxed()
    };
    // Global filters, not one per-layer `EnvFilter::and(filter_fn)`: combined per layer, the
    // callsite interest they cached dropped `info` events at `RUST_LOG=info` (a run's start and
    // finish lines never appeared at the default level). A second init (tests, warm
    // invocations) is harmless: the first subscriber stays.
    let _ = tracing_subscriber::registry()
        .with(env)
        .with(filter_fn(|meta| !is_raw_event(meta)))
        .with(layer)
        .try_init();
}

/// Whether an event is one of the runtime's raw-event dumps, whatever `RUST_LOG` says.
pub(crate) fn is_raw_event(meta: &Metadata<'_>) -> bool {
    *meta.level() == Level::TRACE
        && RAW_EVENT_TARGETS
            .iter()
            .any(|t| meta.target().starts_with(t))
}

/// Writes each formatted line to stderr with secrets replaced (the formatter hands over one
/// whole line per write).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RedactingStderr;

impl<'a> MakeWriter<'a> for RedactingStderr {
    type Writer = Redacting<std::io::Stderr>;
    fn make_writer(&'a self) -> Self::Writer {
        Redacting(std::io::stderr())
    }
}

/// A writer that redacts what passes through it.
#[derive(Debug)]
pub(crate) struct Redacting<W>(pub W);

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Markers after which the rest of a token is a secret (matched case-insensitively). The
/// marker itself stays so the line still says what was there.
const SECRET_AFTER: &[&str] = &[
    "bearer ",     // Authorization: Bearer <token>
    "bearer%20",   // the same, URL-encoded
    "sha256=",     // X-Hub-Signature-256
    "sha1=",       // X-Hub-Signature
    "ghs_",        // GitHub installation token
    "ghp_",        // GitHub personal token
    "gho_",        // GitHub OAuth token
    "ghu_",        // GitHub user-to-server token
    "github_pat_", // GitHub fine-grained token
    "spd_",        // ingest device token
];

/// Whether `b` can be part of a token (stops at whitespace, quotes, escapes and separators).
fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
}

/// Replace every secret in `text`: the token after each [`SECRET_AFTER`] marker, and the
/// password of a `scheme://user:password@host` URL.
pub fn redact(text: &str) -> std::borrow::Cow<'_, str> {
    let lower = text.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    for marker in SECRET_AFTER {
        let mut from = 0;
        while let Some(at) = lower[from..].find(marker) {
            let start = from + at + marker.len();
            let end = start
                + bytes[start..]
                    .iter()
                    .take_while(|b| token_byte(**b))
                    .count();
            if end > start {
                cuts.push((start, end));
            }
            from = end.max(start);
        }
    }
    cuts.extend(url_passwords(text));
    if cuts.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    cuts.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in cuts {
        if end <= at {
            continue;
        }
        out.push_str(&text[at..start.max(at)]);
        out.push_str(REDACTED);
        at = end;
    }
    out.push_str(&text[at..]);
    std::borrow::Cow::Owned(out)
}

/// Byte ranges of the passwords in `scheme://user:password@host` URLs.
fn url_passwords(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("://") {
        let start = from + at + 3;
        let authority = bytes[start..]
            .iter()
            .take_while(|b| !matches!(b, b'/' | b' ' | b'"' | b'\\' | b'\n' | b'?' | b'#'))
            .count();
        let auth = &text[start..start + authority];
        if let (Some(colon), Some(at_sign)) = (auth.find(':'), auth.rfind('@'))
            && colon < at_sign
        {
            found.push((start + colon + 1, start + at_sign));
        }
        from = start;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_and_signatures_are_redacted() {
        let line = r#"{"headers":{"authorization":"Bearer s3cr3t-T0ken","x-hub-signature-256":"sha256=abcdef0123"}}"#;
        let out = redact(line);
        assert!(!out.contains("s3cr3t-T0ken"), "{out}");
        assert!(!out.contains("abcdef0123"), "{out}");
        assert!(out.contains("Bearer [redacted]"), "{out}");
        assert!(out.contains("sha256=[redacted]"), "{out}");
    }

    #[test]
    fn tokens_by_prefix_and_url_passwords_are_redacted() {
        let out = redact("token ghs_abc123 device spd_00ff url postgres://app:pw0rd@db:5432/x");
        assert_eq!(
            out,
            "token ghs_[redacted] device spd_[redacted] url postgres://app:[redacted]@db:5432/x"
        );
    }

    #[test]
    fn a_line_without_secrets_is_untouched() {
        let line = "job done kind=sync.repo tenant=default";
        assert!(matches!(redact(line), std::borrow::Cow::Borrowed(_)));
        assert_eq!(redact("BEARER lowercase-marker"), "BEARER [redacted]");
    }
}
