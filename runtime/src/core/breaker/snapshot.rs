//! A breaker's state and counters at one instant.

use super::*;
use crate::core::totals::Running;
use std::time::{SystemTime, UNIX_EPOCH};

impl Breaker {
    /// A snapshot of the breaker's state and counters.
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        let w = self.load();
        let now = self.clock.now();
        let state = self.state_of(w);
        let tally = self.window_tally(now);
        let (consecutive_failures, trials_in_flight, trial_successes) = match w.tag() {
            Tag::Closed => (self.consecutive_failures(w), 0, 0),
            Tag::HalfOpen => (0, w.in_flight(), w.successes()),
            _ => (0, 0, 0),
        };
        let retry_after = match (w.mode(), w.tag()) {
            (Mode::Normal | Mode::ObserveOnly, Tag::Open) => {
                Some(Duration::from_nanos(w.deadline().saturating_sub(now)))
            }
            _ => None,
        };
        let totals = self.running_totals(now);
        Snapshot {
            name: self.shared_name(),
            state,
            mode: self.mode(),
            consecutive_failures,
            window_calls: tally.calls,
            window_failures: tally.failures,
            window_slow: tally.slow,
            failure_rate: share(tally.failures, tally.calls),
            slow_rate: share(tally.slow, tally.calls),
            trials_in_flight,
            trial_successes,
            since_transition: Duration::from_nanos(
                now.saturating_sub(self.last_transition.load(Ordering::Relaxed)),
            ),
            retry_after,
            calls: totals.calls,
            successes: totals.successes,
            failures: totals.failures,
            neutral: totals.neutral,
            slow: totals.slow,
            rejected: totals.rejected,
            timeouts: totals.timeouts,
            would_reject: totals.would_reject,
            shed: totals.shed,
            timed_started: totals.timed_started,
            timed_ended: totals.timed_ended,
            shedding: self.shedding(),
            concurrency_limit: self.concurrency_limit(),
            transitions: totals.transitions,
            opened_at: totals.opened_at,
            settings: self.config(),
            origins: self.origins().changed(),
        }
    }
}

/// A breaker's state and counters at one moment; see [`Breaker::snapshot`].
///
/// With the `serde` feature it is `Serialize`: durations as strings
/// (`"1m 30s"`), `opened_at` as RFC 3339, `settings` as a
/// [`Config`](crate::Config) is, `origins` as a map from key to
/// [`Origin`](crate::configure::Origin) (`{"threshold": "file"}`): each row of
/// an admin page's listing of [`registry::all`](crate::registry::all).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Snapshot {
    /// The breaker's name.
    pub name: Name,
    /// The state, as [`Breaker::state`] reports it.
    pub state: State,
    /// Manual control in force.
    pub mode: Mode,
    /// Consecutive counted failures so far (Closed, consecutive rule).
    pub consecutive_failures: u32,
    /// Calls in the rate rule's window.
    pub window_calls: u64,
    /// Failed calls in the rate rule's window.
    pub window_failures: u64,
    /// Slow calls in the rate rule's window.
    pub window_slow: u64,
    /// Share of failed calls in the window (`window_failures / window_calls`),
    /// once it holds any call.
    pub failure_rate: Option<f64>,
    /// Share of slow calls in the window (`window_slow / window_calls`), once
    /// it holds any call.
    pub slow_rate: Option<f64>,
    /// Trial calls running now (HalfOpen).
    pub trials_in_flight: u32,
    /// Successful trials so far in this half-open round.
    pub trial_successes: u32,
    /// Time since the last state change.
    #[cfg_attr(
        feature = "serde",
        serde(serialize_with = "crate::core::serde::duration")
    )]
    pub since_transition: Duration,
    /// Time until the next trial is admitted (Open only).
    #[cfg_attr(
        feature = "serde",
        serde(serialize_with = "crate::core::serde::option_duration")
    )]
    pub retry_after: Option<Duration>,
    /// Calls since the breaker was built: those let through, once they ended
    /// (`successes + failures + neutral`), and those rejected. Calls let
    /// through while [`Mode::ForcedClosed`] are not counted.
    pub calls: u64,
    /// Calls that ended in [`Outcome::Success`].
    pub successes: u64,
    /// Calls that ended in [`Outcome::Failure`] (counted errors, panics).
    pub failures: u64,
    /// Calls that ended in [`Outcome::Neutral`] (errors not counted, dropped
    /// futures).
    pub neutral: u64,
    /// Calls slower than the `slow` setting (also counted as a success or
    /// failure); 0 without the slow-call rule.
    pub slow: u64,
    /// Calls refused without running (those [`shed`](Self::shed) included).
    pub rejected: u64,
    /// Calls cut off at their time limit (`timeout`); also counted in
    /// [`failures`](Self::failures).
    pub timeouts: u64,
    /// Calls an observe-only breaker ([`Mode::ObserveOnly`]) let through that
    /// it would have rejected: open, or half-open with its trials taken.
    /// Each is also counted by its outcome, in [`calls`](Self::calls), once
    /// it ended; 0 in any other mode.
    pub would_reject: u64,
    /// Calls refused by graded shedding (`shed`, [`Reason::Shed`](crate::Reason::Shed));
    /// also counted in [`rejected`](Self::rejected).
    pub shed: u64,
    /// Calls started under a time limit (`timeout`: the attribute's, or
    /// [`Builder::timeout`](crate::Builder::timeout)'s), counted as the limit starts: those still
    /// running are `timed_started − timed_ended`. Taken at two moments, the
    /// calls started by the first that are still running at the second are
    /// at least `timed_started` then less `timed_ended` now: how a fleet
    /// sees calls hanging before their limit ends them.
    pub timed_started: u64,
    /// Calls under a time limit that ended, whichever way: a result, the
    /// limit, or a future dropped.
    pub timed_ended: u64,
    /// The chance that graded shedding refuses a call now, from 0 to 0.9:
    /// 0 while it refuses none, and always 0 without `shed`.
    pub shedding: f64,
    /// The adaptive concurrency limit in force: at most that many closed
    /// calls at once (see
    /// [`Builder::adaptive_concurrency`](crate::Builder::adaptive_concurrency));
    /// `None` without one.
    pub concurrency_limit: Option<u32>,
    /// State transitions since the breaker was built, manual ones included.
    pub transitions: u64,
    /// When the breaker last opened on its own (trip rule or failed trial),
    /// as wall-clock time: the system time now less the time passed since, on
    /// the breaker's clock.
    #[cfg_attr(
        feature = "serde",
        serde(serialize_with = "crate::core::serde::option_time")
    )]
    pub opened_at: Option<std::time::SystemTime>,
    /// The settings in force, as [`Breaker::config`] reports them.
    pub settings: crate::core::config::Config,
    /// Where each setting changed since the breaker was declared came from
    /// (a configuration file, an environment variable, a change from code
    /// at run time), by the setting's key (`"threshold"`, `"recovery"`, …);
    /// every setting not listed is as declared. A keyed family's member
    /// shows its family's, with any change made to it by name
    /// (`family[key]`). Empty, and allocating nothing, for a breaker never
    /// reconfigured. Recorded as the settings change: a snapshot taken
    /// while they do may pair a setting's new source with its old value.
    pub origins: std::collections::BTreeMap<&'static str, crate::core::breaker::Origin>,
}

/// `part / whole`, once `whole` holds any call.
#[allow(clippy::cast_precision_loss)] // exact below 2^53 calls
fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

impl Breaker {
    /// A call under a time limit starts (`ended` false) or ends: counted
    /// by the time limit, never on the plain call path.
    pub(crate) fn count_timed(&self, ended: bool) {
        use crate::core::totals::{TIMED_ENDED, TIMED_STARTED};
        self.totals
            .add(if ended { TIMED_ENDED } else { TIMED_STARTED });
    }

    /// The running totals of a snapshot taken at `now`.
    pub(crate) fn running_totals(&self, now: u64) -> Running {
        let [
            successes,
            failures,
            neutral,
            slow,
            rejected,
            timeouts,
            would_reject,
            _admitted,
            shed,
            _withdrawn,
            timed_started,
            timed_ended,
        ] = self.totals.sums().counts;
        let opened = self.events.opened_at.load(Ordering::Relaxed);
        Running {
            calls: successes + failures + neutral + rejected + shed,
            successes,
            failures,
            neutral,
            slow,
            rejected: rejected + shed,
            timeouts,
            would_reject,
            shed,
            timed_started,
            timed_ended,
            transitions: self.events.transitions.load(Ordering::Relaxed),
            opened_at: (opened != 0).then(|| {
                let ago = Duration::from_nanos(now.saturating_sub(opened));
                SystemTime::now().checked_sub(ago).unwrap_or(UNIX_EPOCH)
            }),
        }
    }
}
