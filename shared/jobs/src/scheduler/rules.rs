//! Schedule rules (spec "Scheduler"), as pure functions over the state kept per tenant:
//!
//! - a full sync every `sync.intervalMinutes` (default 60, 0 off, otherwise at least 5), with
//!   plus or minus 10 percent jitter, timed from the end of the previous run;
//! - after a failed run, a retry after 1 minute, doubling per consecutive failure up to 15
//!   minutes, never later than the normal interval;
//! - one full sync at start when `sync.onStartup` (serverless: the first tick after a deploy or
//!   a configuration change);
//! - the transcript archive's retention (issue 20 §7) hourly ([`retention_due`]).

use chrono::{DateTime, Duration, Utc};

use syncplane_runs::Trigger;

/// Jitter bound: plus or minus 10 percent of the interval.
pub(crate) const JITTER_FRACTION: f64 = 0.10;
/// First retry after a failed run.
pub(crate) const FIRST_RETRY: Duration = Duration::minutes(1);
/// Longest retry delay after failures.
pub(crate) const MAX_RETRY: Duration = Duration::minutes(15);

/// What the scheduler knows about a tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScheduleState {
    pub next_due_at: Option<DateTime<Utc>>,
    pub consecutive_failures: u32,
    pub last_run_finished_at: Option<DateTime<Utc>>,
    /// Fingerprint of the code version and settings the schedule was planned with.
    pub config_fingerprint: Option<String>,
}

/// The schedule settings of a tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleSettings {
    pub interval_minutes: u32,
    pub on_startup: bool,
}

/// A tick's decision for one tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Submit a full sync with this trigger now.
    pub run: Option<Trigger>,
    /// The next due time to store (`None`: nothing scheduled).
    pub next_due_at: Option<DateTime<Utc>>,
}

/// Delay before the retry after `consecutive_failures` failed runs (1 → 1 min, 2 → 2, 3 → 4,
/// 4 → 8, then 15), never longer than the interval.
pub(crate) fn retry_delay(consecutive_failures: u32, interval_minutes: u32) -> Duration {
    let doubling =
        FIRST_RETRY * 2i32.saturating_pow(consecutive_failures.saturating_sub(1).min(10));
    doubling
        .min(MAX_RETRY)
        .min(Duration::minutes(i64::from(interval_minutes)))
}

/// The interval with jitter; `jitter` in [-1, 1] scales the ±10 percent.
pub(crate) fn jittered_interval(interval_minutes: u32, jitter: f64) -> Duration {
    let base_ms = i64::from(interval_minutes) * 60_000;
    let factor = 1.0 + JITTER_FRACTION * jitter.clamp(-1.0, 1.0);
    Duration::milliseconds((base_ms as f64 * factor).round() as i64)
}

/// When the next full sync is due after a run that ended at `finished_at`.
/// `consecutive_failures` counts this run if it failed (0 after a success).
pub(crate) fn next_after_run(
    finished_at: DateTime<Utc>,
    consecutive_failures: u32,
    settings: ScheduleSettings,
    jitter: f64,
) -> Option<DateTime<Utc>> {
    if settings.interval_minutes == 0 {
        return None;
    }
    Some(if consecutive_failures > 0 {
        finished_at + retry_delay(consecutive_failures, settings.interval_minutes)
    } else {
        finished_at + jittered_interval(settings.interval_minutes, jitter)
    })
}

/// What a tick does for one tenant. `fingerprint` is the current code version and settings:
/// a different stored one means a fresh start (deploy or configuration change).
pub fn decide(
    now: DateTime<Utc>,
    state: &ScheduleState,
    settings: ScheduleSettings,
    fingerprint: &str,
    jitter: f64,
) -> Decision {
    let fresh_start = state.config_fingerprint.as_deref() != Some(fingerprint);
    if fresh_start {
        if settings.on_startup {
            return Decision {
                run: Some(Trigger::Startup),
                next_due_at: lease(now, settings),
            };
        }
        // Keep a pending retry or due time if there is one, else plan from now.
        let next = match (settings.interval_minutes, state.next_due_at) {
            (0, _) => None,
            (_, Some(due)) => {
                Some(due.min(now + jittered_interval(settings.interval_minutes, jitter)))
            }
            (_, None) => Some(now + jittered_interval(settings.interval_minutes, jitter)),
        };
        return decide_due(now, next, settings);
    }
    if settings.interval_minutes == 0 {
        return Decision {
            run: None,
            next_due_at: None,
        };
    }
    let next = state.next_due_at.or_else(|| {
        Some(match state.last_run_finished_at {
            Some(end) => end + jittered_interval(settings.interval_minutes, jitter),
            None => now + jittered_interval(settings.interval_minutes, jitter),
        })
    });
    decide_due(now, next, settings)
}

fn decide_due(
    now: DateTime<Utc>,
    next: Option<DateTime<Utc>>,
    settings: ScheduleSettings,
) -> Decision {
    match next {
        Some(due) if due <= now => Decision {
            run: Some(Trigger::Schedule),
            next_due_at: lease(now, settings),
        },
        other => Decision {
            run: None,
            next_due_at: other,
        },
    }
}

/// While a submitted run has not reported back, the next due time is a lease: if the job is
/// lost, the schedule resumes after one interval (or the longest retry when off).
fn lease(now: DateTime<Utc>, settings: ScheduleSettings) -> Option<DateTime<Utc>> {
    Some(now + Duration::minutes(i64::from(settings.interval_minutes.max(15))))
}

/// How often the tick submits `transcripts.expire` (issue 20 §7: retention with a deletion path).
pub(crate) const RETENTION_INTERVAL: Duration = Duration::hours(1);

/// Whether a tick at `now` submits `transcripts.expire`, given when this process last handed one
/// over (`None`: never). Due once [`RETENTION_INTERVAL`] has passed since the last one, counted
/// from that submission and not from the clock's hour: a tick that is missed, or whose
/// submission failed (nothing is recorded then), delays retention by a minute, never by an hour.
/// A new process (a cold start, a deploy, `syncplane serve` starting) submits at its first tick:
/// an extra run costs a few queries and deletes nothing twice. A clock that went back by more
/// than the interval counts as elapsed, so a wrong `last` cannot hold retention off.
pub fn retention_due(now: DateTime<Utc>, last: Option<DateTime<Utc>>) -> bool {
    last.is_none_or(|last| (now - last).abs() >= RETENTION_INTERVAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(min: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + min * 60, 0).unwrap()
    }
    const HOURLY: ScheduleSettings = ScheduleSettings {
        interval_minutes: 60,
        on_startup: false,
    };

    #[test]
    fn the_interval_is_timed_from_the_end_of_the_previous_run_with_ten_percent_jitter() {
        let end = at(0);
        assert_eq!(next_after_run(end, 0, HOURLY, 0.0), Some(at(60)));
        assert_eq!(next_after_run(end, 0, HOURLY, -1.0), Some(at(54)));
        assert_eq!(next_after_run(end, 0, HOURLY, 1.0), Some(at(66)));
        for j in [-3.0, -0.5, 0.3, 7.0] {
            let due = next_after_run(end, 0, HOURLY, j).unwrap();
            assert!(
                due >= at(54) && due <= at(66),
                "jitter {j} stays within ±10%"
            );
        }
    }

    #[test]
    fn retries_back_off_1_2_4_8_15_and_never_past_the_interval() {
        let seq: Vec<i64> = (1..=7).map(|n| retry_delay(n, 60).num_minutes()).collect();
        assert_eq!(seq, [1, 2, 4, 8, 15, 15, 15]);
        let capped: Vec<i64> = (1..=5).map(|n| retry_delay(n, 5).num_minutes()).collect();
        assert_eq!(capped, [1, 2, 4, 5, 5], "capped by a 5-minute interval");
        assert_eq!(
            next_after_run(at(0), 3, HOURLY, 1.0),
            Some(at(4)),
            "no jitter on retries"
        );
        assert_eq!(retry_delay(u32::MAX, 60).num_minutes(), 15, "no overflow");
    }

    #[test]
    fn an_interval_of_zero_turns_the_schedule_off() {
        let off = ScheduleSettings {
            interval_minutes: 0,
            on_startup: false,
        };
        assert_eq!(next_after_run(at(0), 0, off, 0.0), None);
        assert_eq!(
            next_after_run(at(0), 2, off, 0.0),
            None,
            "no retries either"
        );
        let state = ScheduleState {
            next_due_at: Some(at(-5)),
            config_fingerprint: Some("v1".into()),
            ..ScheduleState::default()
        };
        assert_eq!(
            decide(at(0), &state, off, "v1", 0.0),
            Decision {
                run: None,
                next_due_at: None
            }
        );
    }

    #[test]
    fn on_startup_runs_at_the_first_tick_after_a_deploy_or_config_change() {
        let startup = ScheduleSettings {
            interval_minutes: 60,
            on_startup: true,
        };
        let fresh = ScheduleState::default();
        assert_eq!(
            decide(at(0), &fresh, startup, "v1", 0.0).run,
            Some(Trigger::Startup)
        );
        let planned = ScheduleState {
            next_due_at: Some(at(30)),
            config_fingerprint: Some("v1".into()),
            ..ScheduleState::default()
        };
        assert_eq!(
            decide(at(0), &planned, startup, "v1", 0.0).run,
            None,
            "same version: no startup run"
        );
        assert_eq!(
            decide(at(0), &planned, startup, "v2", 0.0).run,
            Some(Trigger::Startup),
            "changed config"
        );
        let d = decide(at(0), &fresh, HOURLY, "v1", 0.0);
        assert_eq!(
            d,
            Decision {
                run: None,
                next_due_at: Some(at(60))
            },
            "without onStartup: one interval from now"
        );
    }

    #[test]
    fn a_due_schedule_runs_and_leases_the_next_slot() {
        let state = ScheduleState {
            next_due_at: Some(at(0)),
            config_fingerprint: Some("v1".into()),
            ..ScheduleState::default()
        };
        assert_eq!(decide(at(-1), &state, HOURLY, "v1", 0.0).run, None);
        let d = decide(at(0), &state, HOURLY, "v1", 0.0);
        assert_eq!(d.run, Some(Trigger::Schedule));
        assert_eq!(
            d.next_due_at,
            Some(at(60)),
            "a lost job resumes after one interval"
        );
    }

    #[test]
    fn retention_runs_at_the_first_tick_then_an_hour_after_the_last_submission() {
        assert!(retention_due(at(0), None), "a new process runs it at once");
        assert!(!retention_due(at(1), Some(at(0))));
        assert!(!retention_due(at(59), Some(at(0))));
        assert!(retention_due(at(60), Some(at(0))));
        // A tick missed at minute 60 delays it by a minute, not to the next hour.
        assert!(retention_due(at(61), Some(at(0))));
        assert!(retention_due(at(60 * 24), Some(at(0))));
        let just_after = at(60) + Duration::seconds(1);
        assert!(!retention_due(just_after, Some(at(60))));
    }

    #[test]
    fn a_clock_gone_back_by_more_than_the_interval_does_not_hold_retention_off() {
        assert!(!retention_due(at(-30), Some(at(0))));
        assert!(retention_due(at(-60), Some(at(0))));
        assert!(retention_due(at(-60 * 24 * 365), Some(at(0))));
    }
}
