//! How `syncplane serve` stops (issue 21 point 5): on SIGINT (Ctrl-C) or SIGTERM, gracefully.
//!
//! The handlers are installed before the address is printed, so a signal sent as soon as the
//! server says it listens is caught. They are installed whatever the process inherited: a shell
//! starts a background job with SIGINT ignored, and a process that keeps an ignored disposition
//! (as the default action did, by never installing a handler) cannot be stopped with Ctrl-C or
//! `kill -INT` from a script; the handler replaces the inherited disposition.
//!
//! Then the server stops taking connections and waits for the requests in flight (inline jobs
//! included) at most [`GRACE`]; a second signal stops it at once.

use std::time::Duration;

/// How long the requests in flight may take to finish after the first signal.
pub const GRACE: Duration = Duration::from_secs(10);

/// The stop signals, listened to from creation on.
pub struct StopSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Install the handlers now (a signal that arrives before [`StopSignals::next`] is kept).
    pub fn install() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// The next stop signal's name.
    pub async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => "SIGINT",
                _ = self.terminate.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}
