//! Logging set-up shared by every binary.

use tracing_subscriber::EnvFilter;

/// JSON logs for Lambda (CloudWatch parses them), plain text on a terminal.
/// `RUST_LOG` filters; the default is `info`.
pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    // A second init (tests, warm invocations) is harmless: the first subscriber stays.
    let _ = if json {
        builder.json().without_time().try_init()
    } else {
        builder.try_init()
    };
}
