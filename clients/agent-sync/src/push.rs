//! A one-shot push: the lane ticked on its schedule until something ends it, and what did.
//!
//! An app runs the lane for as long as it runs ([`crate::Lane::run`]), and may wait by the
//! spec's rules for as long as they say. A one-shot push (the CLI's `push`) has to end, and say
//! why (issue 21, points 8, 9 and 12). It ends when
//!
//! - everything discovered was delivered ([`End::Delivered`]) or set aside ([`End::SetAside`]);
//! - the lane stopped: paused on a refused token ([`End::TokenRefused`]) or parked with the
//!   capability off ([`End::FeatureDisabled`]);
//! - hello has failed for the budget of its outcome (5 consecutive transport errors, timeouts or
//!   server failures: spec, "Retries, backoff, and dead-lettering") or for `wait`, whichever
//!   comes first ([`End::Unreachable`]): with no hello the lane sends nothing;
//! - the compute target has been refused as not the token's user's for `wait`
//!   ([`End::TargetNotOwned`]): the spec never counts that refusal against a session, so only a
//!   bound on the wait ends it;
//! - hello answered `404` and so did the sync route ([`End::NotIngest`]): a server older than
//!   hello still takes batches (the spec's skew rule keeps it working), so only the second `404`
//!   shows that the URL reaches no ingest function (`cargo lambda watch` serves it under
//!   `/lambda-url/ingest`).
//!
//! Every wait the push goes on through is said as it happens ([`run`]'s `said`, as
//! [`crate::Observer::waiting`] says it to an app); [`ended`] reads only the lane's state and its
//! clock, so a test on a fake clock decides it tick by tick.

use std::time::Duration;

use crate::lane::{Lane, LaneError, LaneStatus};
use crate::observe::{Request, Waiting};
use crate::outcome::Outcome;
use crate::store::SessionStore;

/// What ended a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Delivered,
    SetAside,
    TokenRefused,
    FeatureDisabled,
    Unreachable(Waiting),
    TargetNotOwned(Waiting),
    NotIngest(Waiting),
}

impl End {
    /// The name the CLI prints as the final `status`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::SetAside => "set_aside",
            Self::TokenRefused => "token_refused",
            Self::FeatureDisabled => "feature_disabled",
            Self::Unreachable(_) => "unreachable",
            Self::TargetNotOwned(_) => "target_not_owned",
            Self::NotIngest(_) => "not_ingest",
        }
    }

    /// The wait that ended it, for the ends that are waits.
    pub fn waiting(&self) -> Option<&Waiting> {
        match self {
            Self::Unreachable(w) | Self::TargetNotOwned(w) | Self::NotIngest(w) => Some(w),
            _ => None,
        }
    }
}

/// Whether a wait has spent its outcome's budget of consecutive attempts.
fn budget_spent(w: &Waiting) -> bool {
    w.outcome
        .effect(true)
        .budget
        .is_some_and(|b| w.attempts >= b.limit)
}

/// What ends the push now, if anything: the lane's status, what it waits for and since when
/// (against `wait`), whether it has drained.
pub fn ended<S: SessionStore>(lane: &Lane<S>, wait: Duration) -> Result<Option<End>, LaneError> {
    match lane.status() {
        LaneStatus::Paused => return Ok(Some(End::TokenRefused)),
        LaneStatus::Parked => return Ok(Some(End::FeatureDisabled)),
        LaneStatus::Running => {}
    }
    if let Some(w) = lane.waiting() {
        let waited =
            w.waited_ms(lane.now_ms()) >= i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
        let hello_404 = lane.hello().is_some_and(|h| !h.answered);
        match (w.request, w.outcome) {
            (Request::Sync, _) if hello_404 && w.status == Some(404) => {
                return Ok(Some(End::NotIngest(w.clone())));
            }
            (Request::Hello, _) if waited || budget_spent(w) => {
                return Ok(Some(End::Unreachable(w.clone())));
            }
            (Request::Sync, Outcome::TargetNotOwned) if waited => {
                return Ok(Some(End::TargetNotOwned(w.clone())));
            }
            _ => {}
        }
    }
    if !lane.drained()? {
        return Ok(None);
    }
    Ok(Some(if lane.state().dead_letters()?.is_empty() {
        End::Delivered
    } else {
        End::SetAside
    }))
}

/// Tick on the schedule until [`ended`] says the push is over; `said` hears every wait the push
/// goes on waiting through (each failed attempt once, not the one that ends it).
pub async fn run<S: SessionStore>(
    lane: &mut Lane<S>,
    wait: Duration,
    mut said: impl FnMut(&Waiting),
) -> Result<End, LaneError> {
    let mut last: Option<Waiting> = None;
    loop {
        let r = lane.tick().await?;
        if let Some(end) = ended(lane, wait)? {
            return Ok(end);
        }
        if let Some(w) = lane.waiting()
            && last.as_ref() != Some(w)
        {
            said(w);
            last = Some(w.clone());
        }
        if let Some(pause) = lane.pause_after(r) {
            tokio::time::sleep(pause).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::transport::{TokenHandle, Transport};
    use crate::{FakeClock, MemoryStore, Settings, State};

    /// An app spawns the lane, or a push, on a multi-threaded runtime.
    #[test]
    fn the_lane_and_a_push_can_be_spawned_on_any_thread() {
        fn send<T: Send>(_: &T) {}
        let transport = Transport::new(
            "http://127.0.0.1:9",
            TokenHandle::default(),
            Duration::from_secs(1),
        )
        .unwrap();
        let mut lane = Lane::new(
            MemoryStore::default(),
            State::in_memory("ada", "t").unwrap(),
            transport,
            Arc::new(FakeClock::at(0)),
            Settings::default(),
            "t",
        )
        .unwrap();
        let running = lane.run();
        send(&running);
        drop(running);
        let pushing = run(&mut lane, Duration::from_secs(1), |_| {});
        send(&pushing);
    }
}
