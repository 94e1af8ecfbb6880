//! Breaker settings: the const [`Config`] the attribute emits and the validating
//! [`Builder`].

use std::time::Duration;

use failfast_rules::{self as rules, Violation};

use crate::core::error::ConfigError;
use crate::core::name::Name;

// The limits and defaults are the rules crate's, which the attribute
// checks its values against too.

/// Default number of consecutive counted failures that trips a breaker.
pub(crate) const DEFAULT_THRESHOLD: u32 = rules::DEFAULT_THRESHOLD;
/// Default time a breaker stays open before it admits a trial call.
pub(crate) const DEFAULT_RECOVERY: Duration = rules::DEFAULT_RECOVERY;
/// Default size of a failure-rate window, in calls.
pub(crate) const DEFAULT_WINDOW_CALLS: u32 = rules::DEFAULT_WINDOW_CALLS;
/// Default number of calls a window must hold before a rate can trip the breaker.
pub(crate) const DEFAULT_MIN_CALLS: u32 = rules::DEFAULT_MIN_CALLS;
/// Largest `trial_calls` and `success_threshold` a breaker accepts.
pub(crate) const MAX_TRIALS: u32 = rules::MAX_TRIALS;
/// Largest consecutive-failure `threshold` a breaker accepts (the state
/// word holds them: `core::word` checks it).
pub(crate) const MAX_THRESHOLD: u32 = rules::MAX_THRESHOLD;
/// Shortest default trial lease; see [`Builder::trial_lease`].
pub(crate) const MIN_DEFAULT_LEASE: Duration = rules::MIN_DEFAULT_LEASE;
/// Number of buckets a time window is divided into.
pub(crate) const TIME_BUCKETS: u32 = rules::TIME_BUCKETS;

/// How a breaker runs: by its trip rules, or controlled by hand (see
/// [`Breaker::set_mode`](crate::Breaker::set_mode)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Mode {
    /// The trip rules decide.
    Normal,
    /// Every call is rejected until another mode ([`Breaker::set_mode`](crate::Breaker::set_mode)).
    ForcedOpen,
    /// Every call passes and no outcome is recorded until another mode ([`Breaker::set_mode`](crate::Breaker::set_mode)).
    ForcedClosed,
    /// Observe-only: every call passes; outcomes are still recorded and the
    /// state still moves, so events, [`Breaker::snapshot`](crate::Breaker::snapshot) and metrics show
    /// what the breaker would have done. A call it would have refused is
    /// counted in [`Snapshot::would_reject`](crate::Snapshot::would_reject) (and in the `metrics` feature's
    /// `failfast_calls_total{outcome="would_reject"}`) and let through: its
    /// outcome is counted like any call's (successes, failures, neutral) but
    /// moves nothing, as the breaker never admitted it. Set by
    /// [`Breaker::set_mode`](crate::Breaker::set_mode).
    ObserveOnly,
}

mod builder;
mod patch;

pub use builder::Builder;
#[cfg(feature = "serde")]
pub(crate) use patch::concurrency;
pub(crate) use patch::{FAMILY_ONLY, FIXED, Patch, set_from_text};

/// The sliding window of a rate rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Window {
    /// The last N calls.
    Calls(u32),
    /// The calls of the last T nanoseconds.
    Time(u64),
}

/// A breaker's settings, constructible in `const` context.
///
/// This is what `#[circuit_breaker]` emits (after checking every value at compile
/// time); values are not re-checked. Use [`Breaker::builder`](crate::Breaker::builder) for settings chosen
/// at run time; [`Breaker::config`](crate::Breaker::config) shows a breaker's settings.
///
/// With the `serde` feature a `Config` is `Serialize` and `Deserialize`:
/// durations are written as strings (`"30s"`, `"1m 30s"`, `"250ms"`), only
/// the settings of the rules in use appear, and deserializing checks every
/// value as [`Builder::build`] does. Build a breaker from it with
/// `Breaker::try_from(config)`:
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use failfast_runtime::{Breaker, Config};
///
/// let config: Config = serde_json::from_str(
///     r#"{ "name": "payments", "threshold": 3, "recovery": "10s" }"#,
/// ).unwrap();
/// let breaker = Breaker::try_from(config).unwrap();
/// assert_eq!(breaker.name(), "payments");
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) name: Name,
    pub(crate) threshold: u32,
    pub(crate) recovery: u64,
    pub(crate) max_recovery: u64,
    pub(crate) jitter: f64,
    pub(crate) trial_calls: u32,
    pub(crate) success_threshold: u32,
    pub(crate) failure_rate: f64,
    pub(crate) window: Window,
    pub(crate) min_calls: u32,
    pub(crate) slow: u64,
    pub(crate) slow_rate: f64,
    /// How long a trial permit may stay unresolved before it is presumed lost;
    /// 0 for the default.
    pub(crate) lease: u64,
    /// `threshold` counts the failures within `window` (`threshold` and
    /// `window` set together), not consecutive ones.
    pub(crate) within: bool,
    /// Graded shedding's multiplier (`shed`); 0 without it. An `f32`, so
    /// that a published `Config` stays within 144 bytes.
    pub(crate) shed: f32,
    /// Graded shedding's window (`shed_window`), in milliseconds (a `u32`,
    /// as `shed` is an `f32`: 49 days at most); 0 for the default,
    /// [`DEFAULT_SHED_WINDOW`](rules::DEFAULT_SHED_WINDOW).
    pub(crate) shed_window: u32,
    /// An adaptive concurrency limit: its least and most places, as
    /// `min << 16 | max`; 0 without one.
    pub(crate) adaptive: u32,
    /// A fixed concurrency limit (`max_concurrent = N`): the places of the
    /// bulkhead in front of the breaker, which is told them whenever the
    /// settings change (`Breaker::bound_by`); 0 without one.
    pub(crate) bulkhead: u32,
    /// How long a call waits for a place in that bulkhead (`max_wait`), in
    /// microseconds (a `u32`, as `shed_window`: 71 minutes at most); 0:
    /// calls do not wait.
    pub(crate) max_wait: u32,
    /// The time limit of an async call (`timeout`), in nanoseconds; 0
    /// without one. A breaker keeps the limit in force where a call reads
    /// it with one load (`Breaker::time_limit`).
    pub(crate) timeout: u64,
    /// Graded shedding or an adaptive limit: a closed call asks them
    /// before it is admitted.
    pub(crate) guarded: bool,
    /// The slow-call rule or an adaptive limit: a permit holds the time
    /// its call started.
    pub(crate) timed: bool,
}

/// `d` in nanoseconds, as settings keep durations.
#[allow(clippy::cast_possible_truncation)] // durations beyond u64 nanoseconds (584 years) saturate below
pub(crate) const fn nanos(d: Duration) -> u64 {
    let n = d.as_nanos();
    if n > u64::MAX as u128 {
        u64::MAX
    } else {
        n as u64
    }
}

impl Config {
    /// Defaults: consecutive-failure rule with threshold 5, 30 s recovery, one trial.
    #[must_use]
    pub(crate) const fn new(name: &'static str) -> Self {
        Self {
            name: Name::new_static(name),
            threshold: DEFAULT_THRESHOLD,
            recovery: nanos(DEFAULT_RECOVERY),
            max_recovery: 0,
            jitter: 0.0,
            trial_calls: rules::DEFAULT_TRIAL_CALLS,
            success_threshold: rules::DEFAULT_SUCCESS_THRESHOLD,
            failure_rate: 0.0,
            window: Window::Calls(DEFAULT_WINDOW_CALLS),
            min_calls: DEFAULT_MIN_CALLS,
            slow: 0,
            slow_rate: 0.0,
            lease: 0,
            within: false,
            shed: 0.0,
            shed_window: 0,
            adaptive: 0,
            bulkhead: 0,
            max_wait: 0,
            timeout: 0,
            guarded: false,
            timed: false,
        }
    }

    /// Consecutive counted failures that trip the breaker.
    #[must_use]
    pub(crate) const fn with_threshold(mut self, n: u32) -> Self {
        self.threshold = n;
        self
    }

    /// Open time before a trial (the first one, when it grows).
    #[must_use]
    pub(crate) const fn with_recovery(mut self, d: Duration) -> Self {
        self.recovery = nanos(d);
        self
    }

    /// Cap of a growing open time; enables doubling on consecutive reopens.
    #[must_use]
    pub(crate) const fn with_max_recovery(mut self, d: Duration) -> Self {
        self.max_recovery = nanos(d);
        self
    }

    /// Random spread of each open period, as a fraction in `[0, 1)`.
    #[must_use]
    pub(crate) const fn with_jitter(mut self, j: f64) -> Self {
        self.jitter = j;
        self
    }

    /// Trial calls admitted at once in half-open.
    #[must_use]
    pub(crate) const fn with_trial_calls(mut self, n: u32) -> Self {
        self.trial_calls = n;
        self
    }

    /// Successful trials needed to close.
    #[must_use]
    pub(crate) const fn with_success_threshold(mut self, n: u32) -> Self {
        self.success_threshold = n;
        self
    }

    /// Share of failed calls in the window that trips the breaker; replaces the
    /// consecutive rule.
    #[must_use]
    pub(crate) const fn with_failure_rate(mut self, rate: f64) -> Self {
        self.failure_rate = rate;
        self
    }

    /// A window of the last `n` calls.
    #[must_use]
    pub(crate) const fn with_window_calls(mut self, n: u32) -> Self {
        self.window = Window::Calls(n);
        self
    }

    /// A window of the calls that ended in the last `d`.
    #[must_use]
    pub(crate) const fn with_window_time(mut self, d: Duration) -> Self {
        self.window = Window::Time(nanos(d));
        self
    }

    /// `threshold` counts the failures within the window.
    #[must_use]
    pub(crate) const fn with_failures_within(mut self) -> Self {
        self.within = true;
        self
    }

    /// Graded shedding with multiplier `k`, over the window.
    #[must_use]
    #[allow(clippy::cast_possible_truncation)] // from 1 to 10: an f32 is exact enough
    pub(crate) const fn with_shed(mut self, k: f64) -> Self {
        self.shed = k as f32;
        self.guarded = true;
        self
    }

    /// A time limit on each async call.
    #[must_use]
    pub(crate) const fn with_timeout(mut self, d: Duration) -> Self {
        self.timeout = nanos(d);
        self
    }

    /// An adaptive concurrency limit between `min` and `max` places (both
    /// at most 65535).
    #[must_use]
    pub(crate) const fn with_adaptive_concurrency(mut self, min: u32, max: u32) -> Self {
        self.adaptive = (min & 0xFFFF) << 16 | (max & 0xFFFF);
        self.guarded = true;
        self.timed = true;
        self
    }

    /// A fixed concurrency limit of `n` places, held by a bulkhead in front
    /// of the breaker (`max_concurrent = N`).
    #[must_use]
    pub(crate) const fn with_bulkhead(mut self, n: u32) -> Self {
        self.bulkhead = n;
        self
    }

    /// Calls wait `d` at most for a place in the bulkhead (`max_wait`),
    /// kept to the microsecond: a shorter one is 1 µs, a longer one than 71
    /// minutes 71 minutes. (A zero `d` is refused where it is given.)
    #[must_use]
    #[allow(clippy::cast_possible_truncation)] // clamped to u32 first
    pub(crate) const fn with_max_wait(mut self, d: Duration) -> Self {
        let micros = d.as_nanos().div_ceil(1_000);
        self.max_wait = if micros > u32::MAX as u128 {
            u32::MAX
        } else {
            micros as u32
        };
        self
    }

    /// How long a call waits for a place in the bulkhead (zero: not at
    /// all).
    pub(crate) const fn max_wait(&self) -> Duration {
        Duration::from_micros(self.max_wait as u64)
    }

    /// The adaptive limit's least and most places, if it has one.
    pub(crate) const fn adaptive_range(&self) -> Option<(u32, u32)> {
        if self.adaptive == 0 {
            None
        } else {
            Some((self.adaptive >> 16, self.adaptive & 0xFFFF))
        }
    }

    /// Graded shedding over a window of `d` (`shed_window`), kept to the
    /// millisecond: a shorter one is 1 ms, a longer one than 49 days 49
    /// days. (A zero `d` is refused where it is given.)
    #[must_use]
    #[allow(clippy::cast_possible_truncation)] // clamped to u32 first
    pub(crate) const fn with_shed_window(mut self, d: Duration) -> Self {
        let millis = d.as_nanos().div_ceil(1_000_000);
        self.shed_window = if millis == 0 {
            0
        } else if millis > u32::MAX as u128 {
            u32::MAX
        } else {
            millis as u32
        };
        self
    }

    /// Graded shedding's window, in nanoseconds: as set, or the default.
    pub(crate) const fn shed_window(&self) -> u64 {
        if self.shed_window == 0 {
            nanos(rules::DEFAULT_SHED_WINDOW)
        } else {
            self.shed_window as u64 * 1_000_000
        }
    }

    /// Graded shedding's multiplier, 0 without it.
    pub(crate) fn shed(&self) -> f64 {
        // Through the shortest text that reads back as the same `f32`, so
        // that 1.1 given is 1.1 shown.
        self.shed
            .to_string()
            .parse()
            .unwrap_or(f64::from(self.shed))
    }

    /// No `threshold`: graded shedding without a trip rule of its own.
    #[must_use]
    pub(crate) const fn without_threshold(mut self) -> Self {
        self.threshold = 0;
        self
    }

    /// Calls the window must hold before a rate can trip the breaker.
    #[must_use]
    pub(crate) const fn with_min_calls(mut self, n: u32) -> Self {
        self.min_calls = n;
        self
    }

    /// Calls slower than this are slow calls.
    #[must_use]
    pub(crate) const fn with_slow(mut self, d: Duration) -> Self {
        self.slow = nanos(d);
        self.timed = self.slow != 0 || self.adaptive != 0;
        if self.slow_rate == 0.0 {
            self.slow_rate = 1.0;
        }
        self
    }

    /// Share of slow calls in the window that trips the breaker.
    #[must_use]
    pub(crate) const fn with_slow_rate(mut self, rate: f64) -> Self {
        self.slow_rate = rate;
        self
    }

    /// Unresolved trial permits are presumed lost after this long.
    #[must_use]
    pub(crate) const fn with_trial_lease(mut self, d: Duration) -> Self {
        self.lease = nanos(d);
        self
    }

    /// The trial lease in force: as set, or ten times `recovery` and at least
    /// [`MIN_DEFAULT_LEASE`].
    pub(crate) const fn lease(&self) -> u64 {
        if self.lease != 0 {
            return self.lease;
        }
        let tenfold = self.recovery.saturating_mul(10);
        let floor = nanos(MIN_DEFAULT_LEASE);
        if tenfold > floor { tenfold } else { floor }
    }

    /// The consecutive-failure rule: `threshold` without `window`.
    pub(crate) const fn uses_consecutive(&self) -> bool {
        self.failure_rate == 0.0 && !self.within && self.threshold != 0
    }

    /// Graded shedding (`shed`).
    pub(crate) const fn sheds(&self) -> bool {
        self.shed != 0.0
    }

    /// A trip rule measured over the window: failures within it, a failure
    /// rate or a slow-call rate.
    pub(crate) const fn uses_window(&self) -> bool {
        self.failure_rate > 0.0 || self.slow > 0 || self.within
    }

    /// A rate rule measured over the window, which `min_calls` applies to:
    /// a failure rate or a slow-call rate.
    pub(crate) const fn rate_window(&self) -> bool {
        self.failure_rate > 0.0 || self.slow > 0
    }

    /// The failure-rate rule, whose successes can bring a verdict.
    pub(crate) const fn uses_failure_rate(&self) -> bool {
        self.failure_rate > 0.0
    }

    /// A rate rule (failures or slow calls) or graded shedding, which
    /// `min_calls` applies to.
    pub(crate) const fn uses_rate(&self) -> bool {
        self.failure_rate > 0.0 || self.slow > 0 || self.sheds()
    }

    /// A `threshold`: consecutive failures, or failures within the window.
    pub(crate) const fn uses_threshold(&self) -> bool {
        self.failure_rate == 0.0 && self.threshold != 0
    }

    /// Checks each value with the rules the attribute checks its values
    /// with (`failfast_rules`); 0 stands for a rule or a cap not in use.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let nanos = Duration::from_nanos;
        // No `threshold` only beside graded shedding.
        if self.threshold != 0 || !self.sheds() {
            rules::threshold(self.threshold).map_err(broken)?;
        }
        if let Some((min, max)) = self.adaptive_range() {
            rules::adaptive_concurrency(min, max).map_err(broken)?;
        }
        if self.bulkhead != 0 {
            rules::max_concurrent(self.bulkhead).map_err(broken)?;
        }
        if self.max_wait != 0 {
            rules::max_wait_needs_max_concurrent(self.bulkhead != 0).map_err(broken)?;
        }
        if self.sheds() {
            rules::shed(f64::from(self.shed)).map_err(broken)?;
            rules::shed_window(nanos(self.shed_window())).map_err(broken)?;
        }
        rules::trial_calls(self.trial_calls).map_err(broken)?;
        rules::success_threshold(self.success_threshold).map_err(broken)?;
        rules::min_calls(self.min_calls).map_err(broken)?;
        rules::recovery(nanos(self.recovery)).map_err(broken)?;
        if self.max_recovery != 0 {
            rules::max_recovery(nanos(self.recovery), nanos(self.max_recovery)).map_err(broken)?;
        }
        rules::jitter(self.jitter).map_err(broken)?;
        // A time limit: the slow-call rule and graded shedding's window
        // are held to it by the rules the attribute checks them with.
        if self.timeout != 0 {
            let timeout = nanos(self.timeout);
            if self.slow != 0 {
                rules::slow_under_timeout(nanos(self.slow), timeout).map_err(broken)?;
            }
            if self.sheds() {
                rules::shed_window_covers_timeout(nanos(self.shed_window()), timeout)
                    .map_err(broken)?;
            }
        }
        if self.failure_rate != 0.0 {
            rules::failure_rate(self.failure_rate).map_err(broken)?;
        }
        if self.slow_rate != 0.0 {
            rules::slow(nanos(self.slow)).map_err(broken)?;
        }
        if self.slow_rate != 0.0 || self.slow != 0 {
            rules::slow_rate(self.slow_rate).map_err(broken)?;
        }
        if let (true, Window::Calls(n)) = (self.within, self.window) {
            rules::threshold_within(self.threshold, Some(n)).map_err(broken)?;
        }
        match self.window {
            Window::Calls(n) => rules::window_calls(n).map(drop),
            Window::Time(t) => rules::window_time(nanos(t)).map(drop),
        }
        .map_err(broken)
    }
}

/// The same settings: what a [`Snapshot`](crate::Snapshot), which holds
/// them, is compared by.
impl PartialEq for Config {
    fn eq(&self, other: &Config) -> bool {
        same(self, other)
    }
}

/// Whether `a` and `b` hold the same settings.
fn same(a: &Config, b: &Config) -> bool {
    let Config {
        name,
        threshold,
        recovery,
        max_recovery,
        jitter,
        trial_calls,
        success_threshold,
        failure_rate,
        window,
        min_calls,
        slow,
        slow_rate,
        lease,
        within,
        shed,
        shed_window,
        adaptive,
        bulkhead,
        max_wait,
        timeout,
        guarded,
        timed,
    } = a;
    *name == b.name
        && (
            *threshold,
            *recovery,
            *max_recovery,
            *trial_calls,
            *success_threshold,
        ) == (
            b.threshold,
            b.recovery,
            b.max_recovery,
            b.trial_calls,
            b.success_threshold,
        )
        && (
            jitter.to_bits(),
            failure_rate.to_bits(),
            slow_rate.to_bits(),
            shed.to_bits(),
        ) == (
            b.jitter.to_bits(),
            b.failure_rate.to_bits(),
            b.slow_rate.to_bits(),
            b.shed.to_bits(),
        )
        && (
            *window,
            *min_calls,
            *slow,
            *lease,
            *within,
            *shed_window,
            *adaptive,
            (*bulkhead, *max_wait),
            *timeout,
            *guarded,
            *timed,
        ) == (
            b.window,
            b.min_calls,
            b.slow,
            b.lease,
            b.within,
            b.shed_window,
            b.adaptive,
            (b.bulkhead, b.max_wait),
            b.timeout,
            b.guarded,
            b.timed,
        )
}

/// A setting that breaks its rule, as a [`ConfigError`].
pub(crate) fn broken(violation: Violation) -> ConfigError {
    ConfigError::new(violation.key().name(), violation.problem())
}

impl Config {
    /// Consecutive counted failures that trip (consecutive rule).
    #[must_use]
    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    /// Open time before a trial (the first one, when it grows).
    #[must_use]
    pub fn recovery(&self) -> Duration {
        Duration::from_nanos(self.recovery)
    }
}

impl Config {
    /// The settings that decide when a breaker opens and how it recovers,
    /// hashed (see [`integration::fingerprint`](crate::integration::fingerprint)).
    pub(crate) fn fingerprint(&self) -> u64 {
        /// Precedes the time limit in the hashed words.
        const TIMEOUT_MARK: u64 = u64::from_le_bytes(*b"timeout\0");
        // FNV-1a over the settings' bits: defined here, so it never changes
        // with the standard library's hasher.
        let (shape, size) = match self.window {
            Window::Calls(n) => (1, u64::from(n)),
            Window::Time(t) => (2, t),
        };
        [
            u64::from(self.threshold),
            self.recovery,
            self.max_recovery,
            u64::from(self.trial_calls),
            u64::from(self.success_threshold),
            self.failure_rate.to_bits(),
            shape,
            size,
            u64::from(self.min_calls),
            self.slow,
            self.slow_rate.to_bits(),
        ]
        .into_iter()
        // Added only when set, so that the other rules hash as they did.
        .chain(self.within.then_some(1))
        .chain(self.sheds().then_some(u64::from(self.shed.to_bits())))
        .chain((self.sheds() && self.shed_window != 0).then_some(u64::from(self.shed_window)))
        // The time limit, after a mark of its own, so that it never hashes
        // as one of the settings before it would.
        .chain(
            (self.timeout != 0)
                .then_some([TIMEOUT_MARK, self.timeout])
                .into_iter()
                .flatten(),
        )
        .flat_map(u64::to_le_bytes)
        .fold(0xcbf2_9ce4_8422_2325, |hash: u64, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::breaker::Breaker;
    use failfast_rules::MAX_WINDOW_CALLS;

    /// Two settings are the same when every setting is: what a replaced
    /// configuration and a `Snapshot` are compared by. One setting
    /// changed, whichever, makes them differ.
    #[test]
    fn settings_are_the_same_when_every_setting_is() {
        let base = Config::new("equal").with_jitter(0.25);
        assert_eq!(base, base.clone());
        assert_eq!(base, Config::new("equal").with_jitter(0.25));
        let changed = [
            Config::new("other").with_jitter(0.25),
            base.clone().with_threshold(3),
            base.clone().with_jitter(0.5),
            base.clone().with_failure_rate(0.5),
            base.clone().with_window_calls(7),
            base.clone().with_timeout(Duration::from_secs(1)),
        ];
        for other in &changed {
            assert_ne!(&base, other);
        }
    }

    /// A bulkhead's wait is kept to the microsecond, rounded up, and at
    /// most `u32::MAX` µs (71 minutes): a longer one is that, never what
    /// is left of it past 2^32 µs.
    #[test]
    fn a_wait_is_kept_to_the_microsecond_and_71_minutes_at_most() {
        let wait = |d: Duration| Config::new("wait").with_max_wait(d).max_wait();
        let most = Duration::from_micros(u64::from(u32::MAX));
        assert_eq!(wait(Duration::from_nanos(1)), Duration::from_micros(1));
        assert_eq!(wait(Duration::from_nanos(2_001)), Duration::from_micros(3));
        assert_eq!(wait(most), most);
        for longer in [1, 5, 1 << 32] {
            let d = most + Duration::from_micros(longer);
            assert_eq!(wait(d), most, "{d:?}");
        }
        assert_eq!(wait(Duration::from_secs(2 * 3_600)), most);
    }

    /// A fingerprint is stable across processes, platforms and releases
    /// (instances of a fleet, of mixed versions, compare theirs): these
    /// settings hash to the numbers they hashed to when this test was
    /// written, among them a setting that is added only when set (graded
    /// shedding's own window).
    #[test]
    fn fingerprints_are_the_numbers_they_were() {
        let second = Duration::from_secs(1);
        let fingerprints = [
            Breaker::builder(),
            Breaker::builder().failure_rate(0.5).window_calls(50),
            Breaker::builder().shed(2.0),
            Breaker::builder().shed(2.0).shed_window(10 * second),
            Breaker::builder().slow(second).timeout(2 * second),
        ]
        .map(|builder| builder.checked().unwrap().fingerprint());
        assert_eq!(
            fingerprints,
            [
                14_004_745_945_460_312_066,
                12_961_900_089_375_035_289,
                4_278_064_031_397_783_055,
                2_267_540_467_492_850_702,
                6_564_256_301_782_633_423
            ]
        );
    }

    #[test]
    fn failures_within_a_window_fingerprint_apart_from_consecutive_ones() {
        let consecutive = Breaker::builder().threshold(5).checked().unwrap();
        // The default window, written: the same numbers, another rule.
        let within = Breaker::builder()
            .threshold(5)
            .window_calls(DEFAULT_WINDOW_CALLS)
            .checked()
            .unwrap();
        assert!(within.within && !consecutive.within);
        assert!(within.uses_window() && !within.uses_consecutive() && within.uses_threshold());
        assert!(!within.uses_rate() && !within.uses_failure_rate());
        assert_ne!(within.fingerprint(), consecutive.fingerprint());
        // A rate rule is never failures within.
        let rate = Breaker::builder()
            .failure_rate(0.5)
            .window_calls(DEFAULT_WINDOW_CALLS)
            .checked()
            .unwrap();
        assert!(!rate.within && !rate.uses_threshold());
    }

    /// The builder gives `failfast_rules::resolution` every setting as it
    /// was given, and refuses with the resolution's first violation: over
    /// every combination of the trip rules' settings, as the attribute
    /// refuses the same keys (`macros/src/check/tests.rs`).
    #[test]
    fn the_builder_refuses_what_the_rules_resolution_refuses() {
        use failfast_rules::{Setting, Window};
        type Set = fn(Builder) -> Builder;
        let second = Duration::from_secs(1);
        let settings: [Set; 11] = [
            |b| b.threshold(5),
            |b| b.failure_rate(0.5),
            |b| b.window_calls(100),
            |b| b.window_calls(5),
            |b| b.min_calls(10),
            |b| b.slow(Duration::from_secs(1)),
            |b| b.slow_rate(0.5),
            |b| b.shed(2.0),
            |b| b.window_time(Duration::from_secs(10)),
            |b| b.shed_window(Duration::from_secs(60)),
            // Not above `slow`: the two cannot work together.
            |b| b.timeout(Duration::from_secs(1)),
        ];
        for mask in 0u32..(1 << settings.len()) {
            if (mask & 0b01_0000_1100).count_ones() > 1 {
                continue;
            }
            let builder = (0..settings.len())
                .filter(|i| mask & (1 << i) != 0)
                .fold(Breaker::builder(), |b, i| settings[i](b));
            let expected = rules::resolve(&builder.written)
                .err()
                .map(|v| (v.key().name(), v.problem()));
            let built = builder
                .checked()
                .err()
                .map(|e| (e.static_key(), e.reason().to_owned()));
            assert_eq!(built, expected, "{mask:#b}");
        }
        // Each setter writes down its setting as given.
        let all = settings[..9]
            .iter()
            .fold(Breaker::builder(), |b, set| set(b))
            .recovery(second)
            .max_recovery(second)
            .adaptive_concurrency(1, 8)
            .trial_lease(second);
        let w = all.written;
        assert_eq!(
            (
                w.threshold,
                w.failure_rate,
                w.min_calls,
                w.slow,
                w.slow_rate
            ),
            (
                Setting::Set(5),
                Setting::Set(0.5),
                Setting::Set(10),
                Setting::Set(second),
                Setting::Set(0.5)
            )
        );
        assert_eq!(w.window, Setting::Set(Window::Time(10 * second)));
        assert_eq!((w.shed, w.shed_window), (Setting::Set(2.0), Setting::Unset));
        assert_eq!(
            (w.recovery, w.max_recovery, w.trial_lease),
            (
                Setting::Set(second),
                Setting::Set(second),
                Setting::Set(second)
            )
        );
        assert!(w.max_concurrent.is_written());
        // A growing recovery, an adaptive limit and a lease: as given.
        for (builder, key) in [
            (
                Breaker::builder().max_recovery(second),
                Some("max_recovery"),
            ),
            (
                Breaker::builder().recovery(second).max_recovery(second),
                None,
            ),
            (
                Breaker::builder().adaptive_concurrency(0, 8),
                Some("max_concurrent"),
            ),
            (
                Breaker::builder().trial_lease(Duration::ZERO),
                Some("trial_lease"),
            ),
            (Breaker::builder().threshold(0).shed(2.0), Some("threshold")),
        ] {
            assert_eq!(builder.checked().err().map(|e| e.static_key()), key);
        }
    }

    /// A shedding window is kept in whole milliseconds in a `u32`: rounded
    /// up, and one past 49 days clamped to the longest, not wrapped.
    #[test]
    fn a_shed_window_is_rounded_up_to_a_millisecond_and_clamped_at_49_days() {
        let base = Breaker::builder().threshold(5).checked().unwrap();
        let window = |d: Duration| base.clone().with_shed_window(d).shed_window();
        assert_eq!(window(Duration::from_nanos(1)), 1_000_000);
        assert_eq!(window(Duration::from_millis(1500)), 1_500_000_000);
        let longest = u64::from(u32::MAX) * 1_000_000;
        assert_eq!(window(Duration::from_millis(u64::from(u32::MAX))), longest);
        assert_eq!(window(Duration::from_secs(60 * 86_400)), longest);
    }

    /// `validate` alone (what `TryFrom<Config>` runs; the builder and a
    /// patch check a written threshold before it) leaves a threshold out
    /// only beside graded shedding, and holds one there to its rule too.
    #[test]
    fn validate_lets_only_shedding_go_without_a_threshold() {
        let key = |config: Config| config.validate().err().map(|e| e.static_key());
        let shedding = Breaker::builder().threshold(5).shed(2.0).checked().unwrap();
        assert_eq!(key(shedding.clone().with_threshold(0)), None);
        assert_eq!(
            key(shedding.with_threshold(MAX_THRESHOLD + 1)),
            Some("threshold")
        );
        let plain = Breaker::builder().threshold(5).checked().unwrap();
        assert_eq!(key(plain.clone().with_threshold(0)), Some("threshold"));
        assert_eq!(key(plain.with_threshold(MAX_THRESHOLD)), None);
    }

    /// The builder and a run-time patch hold each value to its rule in
    /// `failfast_rules`, as the attribute does with a literal and const
    /// evaluation with a constant: at every edge, a value is accepted
    /// exactly when the rule accepts it.
    #[test]
    fn the_builder_and_a_patch_accept_exactly_what_each_rule_accepts() {
        let built = |b: Builder| b.checked().is_ok();
        let patched = |base: Builder, patch: Builder| {
            let breaker = base.build().expect("a valid base");
            breaker.reconfigure(&patch).is_ok()
        };
        let rate = || Breaker::builder().failure_rate(0.5);
        let counts = [
            0,
            1,
            2,
            100,
            255,
            256,
            MAX_WINDOW_CALLS,
            MAX_WINDOW_CALLS + 1,
            MAX_THRESHOLD,
            MAX_THRESHOLD + 1,
            u32::MAX,
        ];
        for n in counts {
            let threshold = rules::threshold(n).is_ok();
            assert_eq!(built(Breaker::builder().threshold(n)), threshold, "{n}");
            let patch = Breaker::builder().threshold(n);
            assert_eq!(patched(Breaker::builder(), patch), threshold, "{n}");
            let trials = rules::trial_calls(n).is_ok();
            assert_eq!(built(Breaker::builder().trial_calls(n)), trials, "{n}");
            assert_eq!(
                built(Breaker::builder().success_threshold(n)),
                trials,
                "{n}"
            );
            let patch = Breaker::builder().trial_calls(n);
            assert_eq!(patched(Breaker::builder(), patch), trials, "{n}");
            let window = rules::window_calls(n).is_ok();
            assert_eq!(built(rate().min_calls(1).window_calls(n)), window, "{n}");
            let patch = Breaker::builder().window_calls(n);
            assert_eq!(patched(rate().min_calls(1), patch), window, "{n}");
            let over_time = rate().window_time(Duration::from_secs(60));
            let min_calls = rules::min_calls(n).is_ok();
            assert_eq!(built(over_time.clone().min_calls(n)), min_calls, "{n}");
            let patch = Breaker::builder().min_calls(n);
            assert_eq!(patched(over_time, patch), min_calls, "{n}");
        }
        for value in [
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            0.5,
            0.999,
            1.0,
            1.000_000_1,
            2.0,
            10.0,
            10.01,
            -1.0,
            f64::NAN,
            f64::INFINITY,
        ] {
            let share = rules::failure_rate(value).is_ok();
            assert_eq!(built(Breaker::builder().failure_rate(value)), share);
            let patch = Breaker::builder().failure_rate(value);
            assert_eq!(patched(rate(), patch), share, "{value}");
            let slow = Breaker::builder().slow(Duration::from_secs(1));
            assert_eq!(built(slow.clone().slow_rate(value)), share, "{value}");
            assert_eq!(patched(slow, Breaker::builder().slow_rate(value)), share);
            let jitter = rules::jitter(value).is_ok();
            assert_eq!(built(Breaker::builder().jitter(value)), jitter, "{value}");
            let patch = Breaker::builder().jitter(value);
            assert_eq!(patched(Breaker::builder(), patch), jitter, "{value}");
            let shed = rules::shed(value).is_ok();
            assert_eq!(built(Breaker::builder().shed(value)), shed, "{value}");
            let patch = Breaker::builder().shed(value);
            assert_eq!(patched(Breaker::builder().shed(2.0), patch), shed);
        }
        let second = Duration::from_secs(1);
        for nanos in [0, 1, 1_000_000_000, u64::MAX] {
            let d = Duration::from_nanos(nanos);
            let positive = rules::recovery(d).is_ok();
            assert_eq!(built(Breaker::builder().recovery(d)), positive, "{nanos}");
            let patch = Breaker::builder().recovery(d);
            assert_eq!(patched(Breaker::builder(), patch), positive, "{nanos}");
            assert_eq!(built(Breaker::builder().slow(d)), positive, "{nanos}");
            assert_eq!(built(rate().window_time(d)), positive, "{nanos}");
            let shed = Breaker::builder().shed(2.0);
            assert_eq!(built(shed.clone().shed_window(d)), positive, "{nanos}");
            let patch = Breaker::builder().shed_window(d);
            assert_eq!(patched(shed, patch), positive, "{nanos}");
            assert_eq!(built(Breaker::builder().trial_lease(d)), positive);
            let timed = || Breaker::builder().timeout(second);
            let patch = Breaker::builder().timeout(d);
            assert_eq!(built(patch.clone()), positive, "{nanos}");
            assert_eq!(patched(timed(), patch), positive, "{nanos}");
        }
        // Between values: a growing recovery, `min_calls` within a count
        // window (the default one included), `threshold` within one.
        for (start, max) in [(second, second), (second, second / 2), (second, 2 * second)] {
            let growing = Breaker::builder().recovery(start).max_recovery(max);
            let fits = rules::max_recovery(start, max).is_ok();
            assert_eq!(built(growing.clone()), fits);
            assert_eq!(patched(Breaker::builder(), growing), fits);
        }
        for (min_calls, window) in [(5, Some(5)), (6, Some(5)), (100, None), (101, None)] {
            let base = window.map_or_else(rate, |n| rate().window_calls(n));
            let fits = rules::min_calls_within(min_calls, window).is_ok();
            assert_eq!(built(base.clone().min_calls(min_calls)), fits);
            let patch = Breaker::builder().min_calls(min_calls);
            assert_eq!(patched(base, patch), fits, "{min_calls}");
        }
        for (threshold, window) in [(5, 5), (6, 5), (1, 1)] {
            let within = Breaker::builder().window_calls(window);
            let fits = rules::threshold_within(threshold, Some(window)).is_ok();
            assert_eq!(built(within.clone().threshold(threshold)), fits);
            let patch = Breaker::builder().threshold(threshold);
            assert_eq!(patched(within.threshold(1), patch), fits);
        }
    }

    /// A time limit changes whole with the rules held to it (`slow` under
    /// it, graded shedding's window over it), by the rules' own checks:
    /// refused, nothing changes; accepted, the next call reads the new
    /// limit. A breaker without one refuses one.
    #[test]
    fn a_time_limit_changes_whole_or_not_at_all() {
        let second = Duration::from_secs(1);
        let slow = Breaker::builder()
            .threshold(5)
            .slow(second)
            .timeout(2 * second)
            .build()
            .unwrap();
        assert_eq!(slow.time_limit(), nanos(2 * second));
        for (limit, fits) in [(second, false), (second / 2, false), (3 * second, true)] {
            let patch = Breaker::builder().threshold(7).timeout(limit);
            let expected = rules::slow_under_timeout(second, limit).map_err(|v| v.problem());
            let got = slow.reconfigure(&patch).map_err(|e| e.reason().to_owned());
            assert_eq!(got.is_ok(), fits, "{limit:?}");
            assert_eq!(got.err(), expected.err());
            let (threshold, time_limit) = if fits { (7, limit) } else { (5, 2 * second) };
            assert_eq!(slow.config().threshold(), threshold);
            assert_eq!(slow.time_limit(), nanos(time_limit));
            slow.reconfigure(&Breaker::builder().threshold(5).timeout(2 * second))
                .unwrap();
        }
        // Graded shedding measures over 10 s unless told: a longer limit
        // is refused, unless the same patch lengthens the window.
        let shed = Breaker::builder()
            .shed(2.0)
            .timeout(second)
            .build()
            .unwrap();
        let longer = Breaker::builder().timeout(11 * second);
        assert_eq!(shed.reconfigure(&longer).unwrap_err().key(), "shed_window");
        assert_eq!(shed.time_limit(), nanos(second));
        shed.reconfigure(&longer.shed_window(20 * second)).unwrap();
        assert_eq!(shed.time_limit(), nanos(11 * second));
        let shorter = Breaker::builder().shed_window(10 * second);
        assert_eq!(shed.reconfigure(&shorter).unwrap_err().key(), "shed_window");
        // Without a limit, none is taken on.
        let plain = Breaker::builder().build().unwrap();
        let refused = plain.reconfigure(&Breaker::builder().timeout(second));
        assert_eq!(refused.unwrap_err().key(), "timeout");
        assert_eq!(plain.time_limit(), 0);
        // Put back whole with the declared settings.
        slow.reconfigure(&Breaker::builder().timeout(3 * second))
            .unwrap();
        assert_eq!(slow.time_limit(), nanos(3 * second));
        slow.replace(
            slow.declared().clone(),
            crate::core::breaker::Origins::DECLARED,
        );
        assert_eq!(slow.time_limit(), nanos(2 * second));
    }

    #[test]
    fn a_config_keeps_its_name() {
        let b = Breaker::builder().name("payments::charge").build().unwrap();
        assert_eq!(&*b.config().name, "payments::charge");
    }

    #[test]
    fn durations_past_u64_nanoseconds_saturate_instead_of_wrapping() {
        assert_eq!(nanos(Duration::MAX), u64::MAX);
        // 2^64 ns + 1 ns would wrap to 1 ns.
        let past = Duration::from_nanos(u64::MAX) + Duration::from_nanos(2);
        assert_eq!(nanos(past), u64::MAX);
        assert_eq!(nanos(Duration::from_nanos(u64::MAX)), u64::MAX);
        assert_eq!(nanos(Duration::from_secs(3)), 3_000_000_000);
    }

    #[test]
    fn the_largest_values_are_accepted_and_one_more_is_refused() {
        let largest = || {
            Breaker::builder()
                .threshold(MAX_THRESHOLD)
                .trial_calls(MAX_TRIALS)
                .success_threshold(MAX_TRIALS)
        };
        assert!(largest().build().is_ok());
        let rate = || Breaker::builder().failure_rate(0.5).min_calls(1);
        assert!(rate().window_calls(MAX_WINDOW_CALLS).build().is_ok());
        let key = |b: Builder| b.build().unwrap_err().key().to_owned();
        assert_eq!(key(largest().trial_calls(MAX_TRIALS + 1)), "trial_calls");
        assert_eq!(
            key(largest().success_threshold(MAX_TRIALS + 1)),
            "success_threshold"
        );
        assert_eq!(key(largest().threshold(MAX_THRESHOLD + 1)), "threshold");
        assert_eq!(key(rate().window_calls(MAX_WINDOW_CALLS + 1)), "window");
    }
}
