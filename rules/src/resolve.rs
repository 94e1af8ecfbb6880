//! What the settings written mean together: one resolution, from the
//! settings a user wrote ([`Written`]) to the rules in force
//! ([`Resolved`]), or the settings that cannot work together
//! ([`Violations`]).
//!
//! The attribute resolves what its keys wrote as it checks them, and
//! `Builder::build` what its setters were given, with the same
//! [`resolution`], so the two cannot read a combination differently:
//! `shed` alone has no trip rule, a `window` written beside `threshold`
//! makes it count the failures within it, `min_calls` is held to the rate
//! rule's count window, graded shedding measures over `shed_window`.
//!
//! ```
//! use failfast_rules::{FailureRule, Setting, Window, Written, resolve};
//!
//! let written = Written {
//!     threshold: Setting::Set(5),
//!     window: Setting::Set(Window::Calls(20)),
//!     ..Written::NOTHING
//! };
//! let rules = resolve(&written).unwrap();
//! assert_eq!(rules.failures, FailureRule::WithinWindow);
//!
//! let shed_alone = Written { shed: Setting::Set(2.0), ..Written::NOTHING };
//! assert_eq!(resolve(&shed_alone).unwrap().failures, FailureRule::Off);
//! ```

use std::time::Duration;

use crate::key::Key;
use crate::limits::{DEFAULT_MIN_CALLS, DEFAULT_SHED_WINDOW, DEFAULT_WINDOW_CALLS};
use crate::settings as rule;
use crate::violation::Violation;

/// One setting as written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Setting<T> {
    /// Not written: its default, if it has one, is in force.
    Unset,
    /// Written, with this value.
    Set(T),
    /// Written, with a value known only later: a constant, which the
    /// attribute's generated code checks by const evaluation, or a value
    /// already refused by its own rule (so that a bad value is not reported
    /// again as a missing key).
    Later,
}

impl<T: Copy> Setting<T> {
    /// Written, with a value or not.
    #[must_use]
    pub const fn is_written(&self) -> bool {
        !matches!(self, Setting::Unset)
    }

    /// The value written as `U` when `f` gives one, else written with a
    /// value known later.
    #[must_use]
    pub fn and_then<U>(self, f: impl FnOnce(T) -> Option<U>) -> Setting<U> {
        match self {
            Setting::Unset => Setting::Unset,
            Setting::Set(value) => f(value).map_or(Setting::Later, Setting::Set),
            Setting::Later => Setting::Later,
        }
    }

    /// The value written, when it is known.
    #[must_use]
    pub const fn value(&self) -> Option<T> {
        match *self {
            Setting::Set(value) => Some(value),
            Setting::Unset | Setting::Later => None,
        }
    }
}

/// The window of a trip rule: the last N calls, or the calls of the last T.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// `window = 100`: the last 100 calls.
    Calls(u32),
    /// `window = "1m"`: the calls that ended within the last minute.
    Time(Duration),
}

/// `max_concurrent = N`, a bulkhead of `N` places beside the breaker, or
/// `max_concurrent = MIN..=MAX`, an adaptive limit the breaker keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Concurrency {
    /// A fixed number of places.
    Fixed(u32),
    /// An adaptive limit between `min` and `max` places.
    Adaptive {
        /// The fewest places.
        min: u32,
        /// The most places, where it starts.
        max: u32,
    },
}

/// [`Written`], a field for each key of the table of the settings.
macro_rules! written {
    ({} $([$(#[$doc:meta])*] $variant:ident $name:ident ($ty:ty) $kind:tt $places:tt
        $constant:tt $setter:tt)*) => {
        /// The settings a user wrote, one [`Setting`] each: the attribute's
        /// keys, or the builder's setters.
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Written {
            $($(#[$doc])* pub $name: Setting<$ty>,)*
        }

        impl Written {
            /// Nothing written: every default in force.
            pub const NOTHING: Written = Written {
                $($name: Setting::Unset,)*
            };

            /// Writes down `key` as `setting`, a value of the key's own
            /// type ([`Value`]); a value of another type, which no key's
            /// reader gives, is written as known later.
            pub fn write(&mut self, key: Key, setting: Setting<Value>) {
                match key {
                    $(Key::$variant => self.$name = setting.and_then(FromValue::from_value),)*
                }
            }
        }
    };
}

crate::settings_table!(written {});

/// A value of a plain setting, whichever its type: what
/// [`Written::write`] writes down.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A count.
    Count(u32),
    /// A number: a share, a multiplier, a fraction.
    Number(f64),
    /// A duration.
    Duration(Duration),
}

/// A setting's type, read from a [`Value`]: shaped settings never are one.
trait FromValue: Sized {
    fn from_value(_: Value) -> Option<Self> {
        None
    }
}

/// [`FromValue`] for the type a [`Value`] variant holds.
macro_rules! from_value {
    ($($variant:ident: $ty:ty),*) => {
        $(impl FromValue for $ty {
            fn from_value(value: Value) -> Option<$ty> {
                match value {
                    Value::$variant(v) => Some(v),
                    _ => None,
                }
            }
        })*
    };
}

from_value!(Count: u32, Number: f64, Duration: Duration);
impl FromValue for Window {}
impl FromValue for Concurrency {}

impl Default for Written {
    fn default() -> Self {
        Written::NOTHING
    }
}

/// What counted failures trip the breaker on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureRule {
    /// `threshold` failures in a row (the default rule, 5 in a row).
    Consecutive,
    /// `threshold` failures within `window`, successes in between or not:
    /// `threshold` written with `window`.
    WithinWindow,
    /// A share of the window's calls: `failure_rate`.
    Rate,
    /// None: graded shedding (`shed`) written without `threshold` or
    /// `failure_rate` has no failure rule, not even the default one (a
    /// slow-call rule still trips it).
    Off,
}

/// The rules in force, resolved from what was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// What counted failures trip the breaker on.
    pub failures: FailureRule,
    /// A rate rule measures over the window: `failure_rate`, or the
    /// slow-call rule (`slow`, `slow_rate`).
    pub rate_rule: bool,
    /// The count window `min_calls` is held to: the rate rule's, the
    /// default one included; `None` without a rate rule, with a time
    /// window, or with a window whose value is known later.
    pub min_calls_window: Option<u32>,
    /// The `min_calls` implied when none is written: over a count window
    /// smaller than [`DEFAULT_MIN_CALLS`], the whole window (a verdict
    /// waits for a full window, as it could never have 10 calls); `None`
    /// where the default is in force, or `min_calls` was written.
    pub implied_min_calls: Option<u32>,
    /// Graded shedding (`shed`) is on.
    pub sheds: bool,
}

/// The largest number of violations one resolution finds: one per rule it
/// checks.
const MOST: usize = 24;

/// The violations a resolution found, in the order it checks its rules:
/// the builder reports the first, the attribute each at its key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Violations {
    found: [Option<Violation>; MOST],
    len: usize,
}

impl Violations {
    const NONE: Violations = Violations {
        found: [None; MOST],
        len: 0,
    };

    const fn push(&mut self, violation: Violation) {
        // `MOST` is at least the number of checks below.
        self.found[self.len] = Some(violation);
        self.len += 1;
    }

    /// The first violation found, if any.
    #[must_use]
    pub const fn first(&self) -> Option<Violation> {
        self.found[0]
    }

    /// No violation was found.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every violation found, in order.
    pub fn iter(&self) -> impl Iterator<Item = Violation> + '_ {
        self.found[..self.len].iter().flatten().copied()
    }
}

/// Adds the violation of a rule's result, if it has one, to those found
/// (a macro, as a `const fn` cannot drop a generic result).
macro_rules! check {
    ($found:ident, $result:expr) => {
        if let Err(violation) = $result {
            $found.push(violation);
        }
    };
}

/// A [`resolution`]: the rules in force, and what cannot work.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Resolution {
    /// The rules in force (meaningful when `violations` is empty).
    pub rules: Resolved,
    /// The settings that cannot work as written, in the order checked.
    pub violations: Violations,
}

/// The rules in force for what was written, or the first setting that
/// cannot work (see [`resolution`] for every one).
///
/// # Errors
///
/// The first [`Violation`] found.
pub const fn resolve(written: &Written) -> Result<Resolved, Violation> {
    let resolution = resolution(written);
    match resolution.violations.first() {
        Some(violation) => Err(violation),
        None => Ok(resolution.rules),
    }
}

/// What the settings written mean together, and every rule they break: of
/// a value the rule of its own that needs another setting's (a `threshold`
/// within its window, `slow` under `timeout`, …), and of the settings
/// together (one trip rule, a `window` a rule measures over, …). A value
/// known only later ([`Setting::Later`]) counts as written, and is checked
/// where it becomes known. Checked in this order, the first found being
/// what the builder reports.
#[must_use]
pub const fn resolution(w: &Written) -> Resolution {
    let mut found = Violations::NONE;

    let threshold = w.threshold.is_written();
    let failure_rate = w.failure_rate.is_written();
    let sheds = w.shed.is_written();
    let window = w.window.is_written();
    // A rate measured over the window: of failures, or of slow calls.
    let rate_rule = failure_rate || w.slow.is_written() || w.slow_rate.is_written();
    // `threshold` with `window`: that many failures within the window.
    let within = threshold && !failure_rate;

    check!(found, rule::one_trip_rule(threshold, failure_rate));
    // The values whose rule is their own, written through the builder
    // (the attribute checks its literals as it reads them).
    if let Setting::Set(rate) = w.failure_rate {
        check!(found, rule::failure_rate(rate));
    }
    match (w.recovery, w.max_recovery) {
        (Setting::Set(start), Setting::Set(max)) => check!(found, rule::max_recovery(start, max)),
        (Setting::Unset, Setting::Set(max)) => {
            check!(found, rule::max_recovery(crate::DEFAULT_RECOVERY, max));
        }
        _ => {}
    }
    if let Setting::Set(Concurrency::Adaptive { min, max }) = w.max_concurrent {
        check!(found, rule::adaptive_concurrency(min, max));
    }
    if let Setting::Set(n) = w.threshold {
        check!(found, rule::threshold(n));
    }
    // (`shed_window` without `shed` is refused as such, below.)
    if let (Setting::Set(d), true) = (w.shed_window, sheds) {
        check!(found, rule::shed_window(d));
    }
    if let Setting::Set(k) = w.shed {
        check!(found, rule::shed(k));
    }
    if let Setting::Set(d) = w.trial_lease {
        check!(found, rule::trial_lease(d));
    }
    if let Setting::Set(d) = w.timeout {
        check!(found, rule::timeout(d));
    }

    // The settings together. One key, one meaning: beside `shed`, a
    // `window` that is no trip rule's, or that would turn `threshold` into
    // failures within it unseen, is refused with the fix.
    if window {
        check!(
            found,
            if sheds {
                rule::window_beside_shed(within, rate_rule, w.shed_window.is_written())
            } else {
                rule::needs_rate_rule(Key::Window, rate_rule || within)
            }
        );
    }
    // Graded shedding counts from `min_calls` on, too.
    if w.min_calls.is_written() {
        check!(
            found,
            rule::needs_rate_rule(Key::MinCalls, rate_rule || sheds)
        );
    }
    if w.shed_window.is_written() {
        check!(found, rule::shed_window_needs_shed(sheds));
    }
    let count_window = match w.window {
        Setting::Set(Window::Calls(size)) => Some(size),
        _ => None,
    };
    if let (true, Setting::Set(n), Some(size)) = (within && window, w.threshold, count_window) {
        check!(found, rule::threshold_within(n, Some(size)));
    }
    // The rate rule's count window, the default one included; graded
    // shedding alone measures over a time, which holds any number of calls.
    // (A window of no calls is refused by its own rule.)
    let min_calls_window = match w.window {
        Setting::Set(Window::Calls(size @ 1..)) if rate_rule => Some(size),
        Setting::Unset if rate_rule => Some(DEFAULT_WINDOW_CALLS),
        _ => None,
    };
    if let (Setting::Set(n), Some(size)) = (w.min_calls, min_calls_window) {
        // Said of the default window as such.
        let written = if window { Some(size) } else { None };
        check!(found, rule::min_calls_within(n, written));
    }
    if w.max_wait.is_written() {
        check!(
            found,
            rule::max_wait_needs_max_concurrent(w.max_concurrent.is_written(),)
        );
        check!(
            found,
            rule::max_wait_needs_fixed_limit(matches!(
                w.max_concurrent,
                Setting::Set(Concurrency::Adaptive { .. })
            ))
        );
    }
    if let (Setting::Set(slow), Setting::Set(timeout)) = (w.slow, w.timeout) {
        check!(found, rule::slow_under_timeout(slow, timeout));
    }
    // Graded shedding's window, written or the default, holds the longest
    // call.
    if let (true, Setting::Set(timeout)) = (sheds, w.timeout) {
        let shed_window = match w.shed_window {
            Setting::Set(d) => Some(d),
            Setting::Unset => Some(DEFAULT_SHED_WINDOW),
            Setting::Later => None,
        };
        if let Some(shed_window) = shed_window {
            check!(
                found,
                rule::shed_window_covers_timeout(shed_window, timeout)
            );
        }
    }
    if w.slow_rate.is_written() {
        check!(found, rule::slow_rate_needs_slow(w.slow.is_written()));
    }

    let failures = if failure_rate {
        FailureRule::Rate
    } else if threshold && window {
        FailureRule::WithinWindow
    } else if threshold || !sheds {
        FailureRule::Consecutive
    } else {
        FailureRule::Off
    };
    let implied_min_calls = match (w.min_calls, count_window) {
        (Setting::Unset, Some(size @ 1..))
            if rule::default_min_calls(size) != DEFAULT_MIN_CALLS =>
        {
            Some(rule::default_min_calls(size))
        }
        _ => None,
    };
    Resolution {
        rules: Resolved {
            failures,
            rate_rule,
            min_calls_window,
            implied_min_calls,
            sheds,
        },
        violations: found,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    /// `Written::write` writes a key's field: its value, or written with a
    /// value known later when the value is not of its type.
    #[test]
    fn a_value_is_written_to_its_keys_field() {
        let mut written = Written::NOTHING;
        written.write(Key::Threshold, Setting::Set(Value::Count(3)));
        written.write(Key::SlowRate, Setting::Set(Value::Number(0.5)));
        written.write(Key::Timeout, Setting::Set(Value::Duration(SECOND)));
        written.write(Key::MinCalls, Setting::Later);
        written.write(Key::Slow, Setting::Set(Value::Count(3)));
        written.write(Key::Window, Setting::Set(Value::Count(3)));
        let expected = Written {
            threshold: Setting::Set(3),
            slow_rate: Setting::Set(0.5),
            timeout: Setting::Set(SECOND),
            min_calls: Setting::Later,
            slow: Setting::Later,
            window: Setting::Later,
            ..Written::NOTHING
        };
        assert_eq!(written, expected);
        written.write(Key::Threshold, Setting::Unset);
        assert_eq!(written.threshold, Setting::Unset);
    }

    fn keys(written: &Written) -> Vec<Key> {
        resolution(written)
            .violations
            .iter()
            .map(|v| v.key())
            .collect()
    }

    /// The rules between settings, as the docs state them, one by one: a
    /// reference for the resolution over every combination below.
    fn refused(w: &Written) -> Vec<Key> {
        let threshold = w.threshold.is_written();
        let rate = w.failure_rate.is_written();
        let slow = w.slow.is_written() || w.slow_rate.is_written();
        let sheds = w.shed.is_written();
        let window = w.window.is_written();
        let mut keys = Vec::new();
        if threshold && rate {
            keys.push(Key::Threshold);
        }
        // A window needs a rule to measure over it; beside `shed`, one
        // that would turn `threshold` into failures within it needs
        // `shed_window` written too.
        let no_rule = !(threshold || rate || slow);
        let window_refused =
            no_rule || (sheds && threshold && !rate && !w.shed_window.is_written());
        if window && window_refused {
            keys.push(Key::Window);
        }
        if w.min_calls.is_written() && !(rate || slow || sheds) {
            keys.push(Key::MinCalls);
        }
        if w.shed_window.is_written() && !sheds {
            keys.push(Key::ShedWindow);
        }
        if let (Setting::Set(n), Setting::Set(Window::Calls(size)), false) =
            (w.threshold, w.window, rate)
        {
            if n > size {
                keys.push(Key::Threshold);
            }
        }
        let held_to = match w.window {
            Setting::Set(Window::Calls(size)) => Some(size),
            Setting::Unset => Some(DEFAULT_WINDOW_CALLS),
            _ => None,
        };
        if let (Setting::Set(n), Some(size), true) = (w.min_calls, held_to, rate || slow) {
            if n > size {
                keys.push(Key::MinCalls);
            }
        }
        if w.slow_rate.is_written() && !w.slow.is_written() {
            keys.push(Key::SlowRate);
        }
        keys
    }

    /// Every combination of the rules' settings (one `window` at most, as
    /// a key is written once): the resolution refuses exactly what the
    /// rules say, in their order, and the builder and the attribute report
    /// it from there (the first, or each at its key).
    #[test]
    fn every_combination_of_the_trip_rules_settings_resolves_as_the_rules_say() {
        type Write = fn(&mut Written);
        let settings: [Write; 11] = [
            |w| w.threshold = Setting::Set(5),
            |w| w.failure_rate = Setting::Set(0.5),
            |w| w.window = Setting::Set(Window::Calls(100)),
            |w| w.window = Setting::Set(Window::Calls(5)),
            |w| w.min_calls = Setting::Set(10),
            |w| w.slow = Setting::Set(SECOND),
            |w| w.slow_rate = Setting::Set(0.5),
            |w| w.shed = Setting::Set(2.0),
            |w| w.window = Setting::Set(Window::Time(10 * SECOND)),
            |w| w.shed_window = Setting::Set(60 * SECOND),
            |w| w.threshold = Setting::Set(7),
        ];
        let windows = 0b001_0000_1100u32;
        let thresholds = 0b100_0000_0001u32;
        let (mut accepted, mut refused_cases) = (0, 0);
        for mask in 0u32..(1 << settings.len()) {
            if (mask & windows).count_ones() > 1 || (mask & thresholds).count_ones() > 1 {
                continue;
            }
            let mut written = Written::NOTHING;
            for (i, write) in settings.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    write(&mut written);
                }
            }
            let expected = refused(&written);
            assert_eq!(keys(&written), expected, "{written:?}");
            match resolve(&written) {
                Ok(_) => accepted += 1,
                Err(first) => {
                    assert_eq!(Some(first.key()), expected.first().copied());
                    refused_cases += 1;
                }
            }
        }
        assert!(
            accepted > 100 && refused_cases > 100,
            "{accepted}, {refused_cases}"
        );
    }

    /// A value known later counts as written (no missing-key error for a
    /// constant), and is held to nothing it cannot be known against.
    #[test]
    fn a_value_known_later_counts_as_written_and_is_checked_where_known() {
        let later = Written {
            threshold: Setting::Later,
            window: Setting::Set(Window::Calls(2)),
            ..Written::NOTHING
        };
        let rules = resolve(&later).unwrap();
        assert_eq!(rules.failures, FailureRule::WithinWindow);
        assert_eq!(rules.implied_min_calls, Some(2));
        let min_calls = Written {
            failure_rate: Setting::Later,
            window: Setting::Set(Window::Calls(20)),
            min_calls: Setting::Later,
            ..Written::NOTHING
        };
        let rules = resolve(&min_calls).unwrap();
        assert_eq!(rules.min_calls_window, Some(20));
        assert_eq!(rules.implied_min_calls, None);
        // A window refused by its own rule is not measured against.
        let bad_window = Written {
            failure_rate: Setting::Set(0.5),
            window: Setting::Later,
            min_calls: Setting::Set(1000),
            ..Written::NOTHING
        };
        assert_eq!(resolve(&bad_window).unwrap().min_calls_window, None);
    }

    #[test]
    fn what_the_settings_mean_together() {
        let of = |w: Written| resolve(&w).unwrap();
        let nothing = of(Written::NOTHING);
        assert_eq!(nothing.failures, FailureRule::Consecutive);
        assert!(!nothing.rate_rule && !nothing.sheds);
        assert_eq!(nothing.min_calls_window, None);
        // `shed` alone: no failure rule, not even the default; with a
        // `threshold` or a `failure_rate`, that rule.
        let shed = Written {
            shed: Setting::Set(2.0),
            ..Written::NOTHING
        };
        assert_eq!(of(shed).failures, FailureRule::Off);
        let slow_shed = Written {
            slow: Setting::Set(SECOND),
            ..shed
        };
        assert_eq!(of(slow_shed).failures, FailureRule::Off);
        assert!(of(slow_shed).rate_rule);
        let threshold = Written {
            threshold: Setting::Set(7),
            ..shed
        };
        assert_eq!(of(threshold).failures, FailureRule::Consecutive);
        let rate = Written {
            failure_rate: Setting::Later,
            ..shed
        };
        assert_eq!(of(rate).failures, FailureRule::Rate);
        assert_eq!(of(rate).min_calls_window, Some(DEFAULT_WINDOW_CALLS));
        // A written `window` turns `threshold` into failures within it.
        let within = Written {
            threshold: Setting::Set(5),
            window: Setting::Set(Window::Time(10 * SECOND)),
            ..Written::NOTHING
        };
        assert_eq!(of(within).failures, FailureRule::WithinWindow);
        assert_eq!(of(within).implied_min_calls, None);
        // A count window smaller than the default `min_calls` implies a
        // full window; a larger one, a time window or `min_calls` written,
        // nothing.
        for (window, min_calls, implied) in [
            (Window::Calls(5), Setting::Unset, Some(5)),
            (Window::Calls(50), Setting::Unset, None),
            (Window::Time(SECOND), Setting::Unset, None),
            (Window::Calls(5), Setting::Set(3), None),
        ] {
            let w = Written {
                failure_rate: Setting::Set(0.5),
                window: Setting::Set(window),
                min_calls,
                ..Written::NOTHING
            };
            assert_eq!(of(w).implied_min_calls, implied, "{window:?}");
        }
        // Beside a failure rate, graded shedding's `min_calls` is the rate
        // rule's; alone, its window is a time.
        let shed_min_calls = Written {
            min_calls: Setting::Set(5000),
            ..shed
        };
        assert_eq!(of(shed_min_calls).min_calls_window, None);
        let beside_rate = Written {
            failure_rate: Setting::Set(0.5),
            ..shed_min_calls
        };
        let refused = resolve(&beside_rate).unwrap_err();
        assert_eq!(refused.key(), Key::MinCalls);
        assert!(
            refused.to_string().contains("default `window`"),
            "{refused}"
        );
    }

    #[test]
    fn the_attributes_own_settings_are_held_to_each_other() {
        let keys_of = |w: Written| keys(&w);
        let wait = Written {
            max_wait: Setting::Set(SECOND),
            ..Written::NOTHING
        };
        assert_eq!(keys_of(wait), [Key::MaxWait]);
        let fixed = Written {
            max_concurrent: Setting::Set(Concurrency::Fixed(4)),
            ..wait
        };
        assert_eq!(keys_of(fixed), []);
        let adaptive = Written {
            max_concurrent: Setting::Set(Concurrency::Adaptive { min: 1, max: 8 }),
            ..wait
        };
        assert_eq!(keys_of(adaptive), [Key::MaxWait]);
        let slow = Written {
            slow: Setting::Set(2 * SECOND),
            timeout: Setting::Set(SECOND),
            ..Written::NOTHING
        };
        assert_eq!(keys_of(slow), [Key::Slow]);
        // The builder's `timeout`, by its own rule.
        let no_time = Written {
            timeout: Setting::Set(Duration::ZERO),
            ..Written::NOTHING
        };
        assert_eq!(keys_of(no_time), [Key::Timeout]);
        // Under `shed`, its window (10 s unless written) holds `timeout`.
        for (shed_window, timeout, refused) in [
            (Setting::Unset, 10 * SECOND, false),
            (Setting::Unset, 11 * SECOND, true),
            (Setting::Set(20 * SECOND), 11 * SECOND, false),
            (Setting::Set(SECOND), 2 * SECOND, true),
            (Setting::Later, 60 * SECOND, false),
        ] {
            let w = Written {
                shed: Setting::Set(2.0),
                shed_window,
                timeout: Setting::Set(timeout),
                ..Written::NOTHING
            };
            assert_eq!(keys_of(w) == [Key::ShedWindow], refused, "{w:?}");
        }
        // The builder's values: each by its own rule, the trip rules first.
        let values = Written {
            threshold: Setting::Set(0),
            failure_rate: Setting::Set(2.0),
            ..Written::NOTHING
        };
        assert_eq!(
            keys_of(values),
            [Key::Threshold, Key::FailureRate, Key::Threshold]
        );
        let growing = Written {
            max_recovery: Setting::Set(SECOND),
            ..Written::NOTHING
        };
        assert_eq!(keys_of(growing), [Key::MaxRecovery]);
        let lease = Written {
            trial_lease: Setting::Set(Duration::ZERO),
            ..Written::NOTHING
        };
        assert_eq!(keys_of(lease), [Key::TrialLease]);
    }

    #[test]
    fn the_resolution_works_in_const_context() {
        const RULES: Resolved = match resolve(&Written {
            shed: Setting::Set(2.0),
            ..Written::NOTHING
        }) {
            Ok(rules) => rules,
            Err(violation) => panic!("{}", violation.brief()),
        };
        assert_eq!(RULES.failures, FailureRule::Off);
    }
}
