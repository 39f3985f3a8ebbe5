//! Whether the device believes its connection is up, as the app's network monitor says.
//!
//! Spec, "Retries, backoff, and dead-lettering": "an abort taken while the device already knows
//! it has lost the connection defers with its budget untouched" ([`crate::outcome`]); the lane
//! reads this handle before it counts a timeout, and sends nothing while it is off.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the device believes its connection is up (the app's network monitor sets it).
#[derive(Debug, Clone)]
pub struct Network(Arc<AtomicBool>);

impl Default for Network {
    fn default() -> Self {
        Self(Arc::new(AtomicBool::new(true)))
    }
}

impl Network {
    pub fn set_online(&self, online: bool) {
        self.0.store(online, Ordering::SeqCst);
    }
    pub fn is_online(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
