//! The rule of each setting, and the rules between settings.
//!
//! Each is a `const fn` giving back the value it accepts, so that the same
//! function checks a literal as the attribute expands, a constant by const
//! evaluation of the breaker's `static`, and a value given to the builder
//! or to a run-time override.

use std::time::Duration;

use crate::key::Key;
use crate::limits::{
    DEFAULT_MIN_CALLS, DEFAULT_WINDOW_CALLS, MAX_EJECTION_PERCENT, MAX_THRESHOLD, MAX_TRIALS,
    MAX_WINDOW_CALLS,
};
use crate::violation::{Rule, Violation};

/// How the attribute reads a key's value, and which rule holds it.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A whole number, `threshold = 5`, held to [`count`].
    Count,
    /// A number, `failure_rate = 0.5`: its rule, and a value to show in
    /// messages.
    Number(fn(f64) -> Result<f64, Violation>, &'static str),
    /// A duration, `slow = "2s"`, held to [`duration`].
    Duration,
    /// A value of a shape of its own, read its own way (`window` calls or
    /// a time, `max_concurrent` fixed or a range, a growing `recovery`),
    /// or a setting the attribute does not take.
    Shaped,
}

/// [`Key::kind`], from the table of the settings.
macro_rules! kinds {
    ({} $($docs:tt $variant:ident $name:ident $ty:tt {$kind:expr} $places:tt $constant:tt
        $setter:tt)*) => {
        impl Key {
            /// How the attribute reads the key's value, and which rule
            /// holds it.
            #[must_use]
            pub const fn kind(self) -> Kind {
                match self {
                    $(Key::$variant => $kind,)*
                }
            }
        }
    };
}

crate::settings_table!(kinds {});

/// The largest count `key` takes; `u32::MAX` for a key with no limit of
/// its own.
const fn largest(key: Key) -> u32 {
    match key {
        Key::Threshold => MAX_THRESHOLD,
        Key::TrialCalls | Key::SuccessThreshold => MAX_TRIALS,
        Key::Window => MAX_WINDOW_CALLS,
        Key::MaxEjectionPercent => MAX_EJECTION_PERCENT,
        _ => u32::MAX,
    }
}

/// The rule of any count (`threshold`, `window = N`, `max_keys`, …): at
/// least 1, and at most the largest the key takes (which is at most
/// `u32::MAX`). `n` is as wide as an integer literal can be.
///
/// # Errors
///
/// A [`Violation`] of `key` for 0 or a value above its largest.
pub const fn count(key: Key, n: u64) -> Result<u32, Violation> {
    let max = largest(key);
    if n == 0 {
        Err(Violation::new(key, Rule::AtLeastOne))
    } else if n > max as u64 {
        Err(Violation::new(key, Rule::AtMost(max)))
    } else {
        #[allow(clippy::cast_possible_truncation)] // n <= max <= u32::MAX
        Ok(n as u32)
    }
}

/// Defines the rule of a count key taking a `u32`.
macro_rules! counts {
    ($($(#[$doc:meta])* $name:ident => $key:ident;)*) => {
        $(
            $(#[$doc])*
            ///
            /// # Errors
            ///
            /// A [`Violation`] for 0 or a value above the largest.
            pub const fn $name(n: u32) -> Result<u32, Violation> {
                count(Key::$key, n as u64)
            }
        )*
    };
}

counts! {
    /// `threshold`: from 1 to [`MAX_THRESHOLD`].
    threshold => Threshold;
    /// `trial_calls`: from 1 to [`MAX_TRIALS`].
    trial_calls => TrialCalls;
    /// `success_threshold`: from 1 to [`MAX_TRIALS`].
    success_threshold => SuccessThreshold;
    /// `min_calls`: at least 1 (see also [`min_calls_within`]).
    min_calls => MinCalls;
    /// A count window, `window = N`: from 1 to [`MAX_WINDOW_CALLS`] calls.
    window_calls => Window;
    /// `max_concurrent`: at least 1.
    max_concurrent => MaxConcurrent;
    /// `max_ejection_percent`: from 1 to [`MAX_EJECTION_PERCENT`].
    max_ejection_percent => MaxEjectionPercent;
    /// `#[retry]`'s `attempts`: at least 1.
    attempts => Attempts;
}

/// `max_keys`: at least 1.
///
/// # Errors
///
/// A [`Violation`] for 0.
pub const fn max_keys(n: usize) -> Result<usize, Violation> {
    if n == 0 {
        Err(Violation::new(Key::MaxKeys, Rule::AtLeastOne))
    } else {
        Ok(n)
    }
}

/// A share of calls: greater than 0, at most 1.
const fn share(key: Key, rate: f64) -> Result<f64, Violation> {
    if rate > 0.0 && rate <= 1.0 {
        Ok(rate)
    } else {
        Err(Violation::new(key, Rule::Share(rate)))
    }
}

/// `failure_rate`: a share of calls, greater than 0 and at most 1.
///
/// # Errors
///
/// A [`Violation`] for a rate outside (0, 1], NaN included.
pub const fn failure_rate(rate: f64) -> Result<f64, Violation> {
    share(Key::FailureRate, rate)
}

/// `slow_rate`: a share of calls, greater than 0 and at most 1.
///
/// # Errors
///
/// A [`Violation`] for a rate outside (0, 1], NaN included.
pub const fn slow_rate(rate: f64) -> Result<f64, Violation> {
    share(Key::SlowRate, rate)
}

/// `jitter`: a fraction of the open time, at least 0 and less than 1.
///
/// # Errors
///
/// A [`Violation`] for a fraction outside [0, 1), NaN included.
pub const fn jitter(fraction: f64) -> Result<f64, Violation> {
    if fraction >= 0.0 && fraction < 1.0 {
        Ok(fraction)
    } else {
        Err(Violation::new(Key::Jitter, Rule::Fraction(fraction)))
    }
}

/// The rule of any duration setting: longer than zero.
///
/// # Errors
///
/// A [`Violation`] of `key` for a zero duration.
pub const fn duration(key: Key, d: Duration) -> Result<Duration, Violation> {
    if d.is_zero() {
        Err(Violation::new(key, Rule::LongerThanZero))
    } else {
        Ok(d)
    }
}

/// Defines the rule of a duration key.
macro_rules! durations {
    ($($(#[$doc:meta])* $name:ident => $key:ident;)*) => {
        $(
            $(#[$doc])*
            ///
            /// # Errors
            ///
            /// A [`Violation`] for a zero duration.
            pub const fn $name(d: Duration) -> Result<Duration, Violation> {
                duration(Key::$key, d)
            }
        )*
    };
}

durations! {
    /// `recovery`: longer than zero.
    recovery => Recovery;
    /// `slow`: longer than zero (see also [`slow_under_timeout`]).
    slow => Slow;
    /// `timeout`: longer than zero.
    timeout => Timeout;
    /// `max_wait`: longer than zero.
    max_wait => MaxWait;
    /// A time window, `window = "1m"`: longer than zero.
    window_time => Window;
    /// Graded shedding's window, `shed_window = "10s"`: longer than zero.
    shed_window => ShedWindow;
    /// `trial_lease`: longer than zero.
    trial_lease => TrialLease;
    /// `#[retry]`'s `backoff`: longer than zero.
    backoff => Backoff;
}

/// `max_recovery`, the cap of a growing open time: at least as long as
/// `recovery`, where it starts. (The attribute writes both as
/// `recovery = "30s..10m"`, and `#[retry]`'s `backoff` grows the same way.)
///
/// # Errors
///
/// A [`Violation`] of [`Key::MaxRecovery`] for a cap below the start.
pub const fn max_recovery(recovery: Duration, max: Duration) -> Result<Duration, Violation> {
    if max.as_nanos() < recovery.as_nanos() {
        Err(Violation::new(Key::MaxRecovery, Rule::NotBelowRecovery))
    } else {
        Ok(max)
    }
}

/// `slow` with a `timeout`: shorter than it, as a call is cut off at
/// `timeout` and a longer `slow` could never be seen.
///
/// # Errors
///
/// A [`Violation`] of [`Key::Slow`] for a `slow` of `timeout` or more.
pub const fn slow_under_timeout(slow: Duration, timeout: Duration) -> Result<Duration, Violation> {
    if slow.as_nanos() >= timeout.as_nanos() {
        Err(Violation::new(
            Key::Slow,
            Rule::ShorterThanTimeout { slow, timeout },
        ))
    } else {
        Ok(slow)
    }
}

/// `min_calls` with a count window of `window` calls (`None`: the default
/// window, [`DEFAULT_WINDOW_CALLS`]): no more than the window holds, or the
/// rate rule could never trip. A time window holds any number of calls.
///
/// # Errors
///
/// A [`Violation`] of [`Key::MinCalls`] for more calls than the window holds.
pub const fn min_calls_within(min_calls: u32, window: Option<u32>) -> Result<u32, Violation> {
    let (size, default_window) = match window {
        Some(size) => (size, false),
        None => (DEFAULT_WINDOW_CALLS, true),
    };
    if min_calls > size {
        Err(Violation::new(
            Key::MinCalls,
            Rule::WithinWindow {
                min_calls,
                window: size,
                default_window,
            },
        ))
    } else {
        Ok(min_calls)
    }
}

/// [`min_calls_within`] blaming the window: a new count window of `window`
/// calls holds at least the `min_calls` in force.
///
/// # Errors
///
/// A [`Violation`] of [`Key::Window`] for a window smaller than `min_calls`.
pub const fn window_holds_min_calls(window: u32, min_calls: u32) -> Result<u32, Violation> {
    if min_calls > window {
        Err(Violation::new(
            Key::Window,
            Rule::WithinWindow {
                min_calls,
                window,
                default_window: false,
            },
        ))
    } else {
        Ok(window)
    }
}

/// The `min_calls` of a count window of `window` calls when none is given:
/// [`DEFAULT_MIN_CALLS`], or the whole window when it holds fewer calls.
#[must_use]
pub const fn default_min_calls(window: u32) -> u32 {
    if window < DEFAULT_MIN_CALLS {
        window
    } else {
        DEFAULT_MIN_CALLS
    }
}

/// One trip rule: `threshold` (consecutive failures) and `failure_rate` (a
/// share of the window) are not set together.
///
/// # Errors
///
/// A [`Violation`] of [`Key::Threshold`] when both are set.
pub const fn one_trip_rule(threshold: bool, failure_rate: bool) -> Result<(), Violation> {
    if threshold && failure_rate {
        Err(Violation::new(Key::Threshold, Rule::TwoTripRules))
    } else {
        Ok(())
    }
}

/// `min_calls` only applies to a rate rule (a `failure_rate` or a `slow`
/// call rule), and `window` to a rule measured over it: a rate rule, or
/// `threshold` written with it (that many failures within the window).
/// `rule` says whether the settings have one.
///
/// # Errors
///
/// A [`Violation`] of `key` when there is no such rule.
pub const fn needs_rate_rule(key: Key, rule: bool) -> Result<(), Violation> {
    if rule {
        Ok(())
    } else {
        Err(Violation::new(key, Rule::WithoutRate))
    }
}

/// `threshold` counting failures within a count window of `window` calls
/// (`None` for a time window, which holds any number): at most the calls
/// the window holds.
///
/// # Errors
///
/// A [`Violation`] of [`Key::Threshold`] when the window holds fewer calls.
pub const fn threshold_within(threshold: u32, window: Option<u32>) -> Result<u32, Violation> {
    match window {
        Some(window) if threshold > window => Err(Violation::new(
            Key::Threshold,
            Rule::ThresholdOverWindow { threshold, window },
        )),
        _ => Ok(threshold),
    }
}

/// `max_wait` needs `max_concurrent`: the wait is for one of its places.
///
/// # Errors
///
/// A [`Violation`] of [`Key::MaxWait`] without `max_concurrent`.
pub const fn max_wait_needs_max_concurrent(max_concurrent: bool) -> Result<(), Violation> {
    if max_concurrent {
        Ok(())
    } else {
        Err(Violation::new(Key::MaxWait, Rule::WithoutMaxConcurrent))
    }
}

/// `shed`: how many times the calls the dependency accepted within the
/// window the breaker may admit, from [`MIN_SHED`](crate::MIN_SHED) to
/// [`MAX_SHED`](crate::MAX_SHED).
///
/// # Errors
///
/// A [`Violation`] of [`Key::Shed`] outside that range, NaN included.
pub const fn shed(k: f64) -> Result<f64, Violation> {
    if k >= crate::MIN_SHED && k <= crate::MAX_SHED {
        Ok(k)
    } else {
        Err(Violation::new(Key::Shed, Rule::Multiplier(k)))
    }
}

/// `shed_window` needs `shed`: it is graded shedding's window. `shed` says
/// whether the settings shed.
///
/// # Errors
///
/// A [`Violation`] of [`Key::ShedWindow`] without `shed`.
pub const fn shed_window_needs_shed(shed: bool) -> Result<(), Violation> {
    if shed {
        Ok(())
    } else {
        Err(Violation::new(Key::ShedWindow, Rule::WithoutShed))
    }
}

/// `window` written beside `shed`: one key, one meaning. `window` is the
/// window of a trip rule, and graded shedding's is `shed_window`, so a
/// `window` with no rule to measure over it is refused with the fix, and so
/// is a `window` that would turn `threshold` from consecutive failures into
/// failures within it (`threshold`: a `threshold` written without a
/// `failure_rate`) unless `shed_window` is written too. `rule` says whether
/// a rate rule (`failure_rate`, `slow`) measures over `window`.
///
/// # Errors
///
/// A [`Violation`] of [`Key::Window`] in either case.
pub const fn window_beside_shed(
    threshold: bool,
    rule: bool,
    shed_window: bool,
) -> Result<(), Violation> {
    if !threshold && !rule {
        Err(Violation::new(Key::Window, Rule::ShedHasItsWindow))
    } else if threshold && !shed_window {
        Err(Violation::new(Key::Window, Rule::WindowTurnsThreshold))
    } else {
        Ok(())
    }
}

/// `shed_window` must be at least as long as `timeout`: a call that is
/// still running when the window has moved past its start would be counted
/// in no window.
///
/// # Errors
///
/// A [`Violation`] of [`Key::ShedWindow`] when the window is shorter.
pub const fn shed_window_covers_timeout(
    window: Duration,
    timeout: Duration,
) -> Result<Duration, Violation> {
    if window.as_nanos() < timeout.as_nanos() {
        Err(Violation::new(
            Key::ShedWindow,
            Rule::ShedWindowUnderTimeout { window, timeout },
        ))
    } else {
        Ok(window)
    }
}

/// An adaptive `max_concurrent = MIN..=MAX`: `1 <= MIN <= MAX <=`
/// [`MAX_ADAPTIVE_CONCURRENCY`](crate::MAX_ADAPTIVE_CONCURRENCY).
///
/// # Errors
///
/// A [`Violation`] of [`Key::MaxConcurrent`] otherwise.
pub const fn adaptive_concurrency(min: u32, max: u32) -> Result<(u32, u32), Violation> {
    if min >= 1 && min <= max && max <= crate::MAX_ADAPTIVE_CONCURRENCY {
        Ok((min, max))
    } else {
        Err(Violation::new(Key::MaxConcurrent, Rule::Range { min, max }))
    }
}

/// `max_wait` needs a fixed `max_concurrent`: `adaptive` says whether it is
/// an adaptive range.
///
/// # Errors
///
/// A [`Violation`] of [`Key::MaxWait`] beside an adaptive limit.
pub const fn max_wait_needs_fixed_limit(adaptive: bool) -> Result<(), Violation> {
    if adaptive {
        Err(Violation::new(Key::MaxWait, Rule::WaitOnAdaptive))
    } else {
        Ok(())
    }
}

/// A fixed `max_concurrent = N` changed at run time stays one number: the
/// places of a bulkhead in front of the breaker. An adaptive range
/// `MIN..=MAX` is the breaker's own limit, and neither becomes the other
/// while the breaker runs (a range of one number is the fixed limit).
///
/// # Errors
///
/// A [`Violation`] of [`Key::MaxConcurrent`] when `min` and `max` differ.
pub const fn fixed_limit_stays_fixed(min: u32, max: u32) -> Result<u32, Violation> {
    if min == max {
        Ok(min)
    } else {
        Err(Violation::new(Key::MaxConcurrent, Rule::FixedToRange))
    }
}

/// `slow_rate` needs `slow`, the duration above which a call is slow.
///
/// # Errors
///
/// A [`Violation`] of [`Key::SlowRate`] without `slow`.
pub const fn slow_rate_needs_slow(slow: bool) -> Result<(), Violation> {
    if slow {
        Ok(())
    } else {
        Err(Violation::new(Key::SlowRate, Rule::WithoutSlow))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    /// Each key's kind reads with its own rule: a number's rule refuses
    /// in the key's name, a count and a duration by the key's name.
    #[test]
    fn each_kind_holds_the_value_to_the_keys_rule() {
        for &key in Key::ALL {
            match key.kind() {
                Kind::Number(rule, example) => {
                    assert_eq!(rule(f64::NAN).unwrap_err().key(), key);
                    let example: f64 = example.parse().unwrap();
                    assert_eq!(rule(example), Ok(example), "{key:?}");
                }
                Kind::Count => assert_eq!(count(key, 0).unwrap_err().key(), key),
                Kind::Duration => {
                    assert_eq!(duration(key, Duration::ZERO).unwrap_err().key(), key);
                }
                Kind::Shaped => {}
            }
        }
        assert!(matches!(Key::Shed.kind(), Kind::Number(_, "2")));
        assert!(matches!(Key::Threshold.kind(), Kind::Count));
        assert!(matches!(Key::Timeout.kind(), Kind::Duration));
        assert!(matches!(Key::Window.kind(), Kind::Shaped));
    }

    /// A key that takes a constant is one the attribute takes, and its
    /// constant is checked by the rule named as the key.
    #[test]
    fn a_key_taking_a_constant_is_the_attributes() {
        for &key in Key::ALL.iter().filter(|key| key.constant().is_some()) {
            assert!(key.written_in(crate::Place::Attribute), "{key:?}");
            assert!(key.in_config(), "{key:?}");
        }
        assert!(Key::Timeout.in_config() && Key::TrialLease.in_config());
        assert!(!Key::Window.in_config() && !Key::MaxKeys.in_config());
        assert_eq!(Key::Threshold.constant(), Some("a `u32`"));
        assert_eq!(Key::Timeout.constant(), None);
        assert!(!Key::Timeout.written_in(crate::Place::Declaration));
        assert!(Key::Attempts.written_in(crate::Place::Retry));
    }

    #[test]
    fn counts_run_from_one_to_their_largest() {
        for (key, max) in [
            (Key::Threshold, 16_777_215u64),
            (Key::TrialCalls, 255),
            (Key::SuccessThreshold, 255),
            (Key::Window, 1 << 20),
            (Key::MaxEjectionPercent, 100),
            (Key::MinCalls, u64::from(u32::MAX)),
            (Key::MaxConcurrent, u64::from(u32::MAX)),
            (Key::MaxKeys, u64::from(u32::MAX)),
            (Key::Attempts, u64::from(u32::MAX)),
        ] {
            assert_eq!(count(key, 1), Ok(1));
            assert_eq!(count(key, max).map(u64::from), Ok(max));
            for refused in [0, max + 1, u64::MAX] {
                let violation = count(key, refused).unwrap_err();
                assert_eq!(violation.key(), key);
                // Const evaluation shows the same sentence as the attribute.
                assert_eq!(violation.brief(), violation.to_string(), "{key:?}");
            }
        }
        assert_eq!(threshold(MAX_THRESHOLD), Ok(MAX_THRESHOLD));
        assert_eq!(max_keys(0).unwrap_err().problem(), "must be at least 1");
        assert_eq!(max_keys(usize::MAX), Ok(usize::MAX));
    }

    #[test]
    fn shed_takes_a_multiplier_from_one_to_ten_over_a_time_no_shorter_than_timeout() {
        assert_eq!(shed(1.0), Ok(1.0));
        assert_eq!(shed(10.0), Ok(10.0));
        for refused in [0.999_999, 10.000_001, 0.0, -2.0, f64::NAN, f64::INFINITY] {
            let violation = shed(refused).unwrap_err();
            assert_eq!(violation.key(), Key::Shed, "{refused}");
            assert!(
                violation.to_string().contains("outside [1, 10]"),
                "{violation}"
            );
        }
        assert_eq!(
            shed(0.5).unwrap_err().problem(),
            "is 0.5, outside [1, 10]; 2 is the usual choice"
        );
        assert_eq!(shed_window(SECOND), Ok(SECOND));
        assert_eq!(
            shed_window(Duration::ZERO).unwrap_err().key(),
            Key::ShedWindow
        );
        assert_eq!(shed_window_covers_timeout(SECOND, SECOND), Ok(SECOND));
        let short =
            shed_window_covers_timeout(SECOND - Duration::from_nanos(1), SECOND).unwrap_err();
        assert_eq!(short.key(), Key::ShedWindow);
        assert!(
            short.to_string().contains("shorter than `timeout` (1s)"),
            "{short}"
        );
        assert_eq!(
            short.problem(),
            "must be at least as long as `timeout` (1s)"
        );
    }

    #[test]
    fn shed_window_is_the_shedding_window_and_window_a_trip_rules() {
        assert_eq!(shed_window_needs_shed(true), Ok(()));
        let alone = shed_window_needs_shed(false).unwrap_err();
        assert_eq!(alone.key(), Key::ShedWindow);
        assert_eq!(alone.to_string(), alone.brief());
        assert!(alone.problem().starts_with("needs `shed`"), "{alone}");
        // (threshold, a rate rule, shed_window)
        for fine in [
            (false, true, false),
            (false, true, true),
            (true, true, true),
            (true, false, true),
        ] {
            assert_eq!(
                window_beside_shed(fine.0, fine.1, fine.2),
                Ok(()),
                "{fine:?}"
            );
        }
        for (threshold, rule, shed_window) in [(false, false, false), (false, false, true)] {
            let own = window_beside_shed(threshold, rule, shed_window).unwrap_err();
            assert_eq!(own.key(), Key::Window);
            assert!(own.to_string().contains("`shed_window = "), "{own}");
            assert_eq!(own.to_string(), own.brief());
        }
        for rule in [false, true] {
            let turned = window_beside_shed(true, rule, false).unwrap_err();
            assert_eq!(turned.key(), Key::Window);
            assert!(
                turned.to_string().contains("in a row")
                    && turned.to_string().contains("`shed_window = "),
                "{turned}"
            );
            assert_eq!(turned.to_string(), turned.brief());
        }
    }

    #[test]
    fn an_adaptive_limit_is_a_range_from_one_to_65535() {
        assert_eq!(adaptive_concurrency(1, 1), Ok((1, 1)));
        assert_eq!(adaptive_concurrency(10, 65_535), Ok((10, 65_535)));
        for (min, max) in [(0, 10), (11, 10), (1, 65_536), (0, 0)] {
            let refused = adaptive_concurrency(min, max).unwrap_err();
            assert_eq!(refused.key(), Key::MaxConcurrent);
            assert!(
                refused.to_string().contains(&format!("{min}..={max}")),
                "{refused}"
            );
        }
        assert_eq!(max_wait_needs_fixed_limit(false), Ok(()));
        assert_eq!(fixed_limit_stays_fixed(8, 8), Ok(8));
        let refused = fixed_limit_stays_fixed(2, 8).unwrap_err();
        assert_eq!(refused.key(), Key::MaxConcurrent);
        assert!(!refused.at_value());
        assert!(refused.problem().contains("fixed `max_concurrent = N`"));
        assert_eq!(
            max_wait_needs_fixed_limit(true).unwrap_err().key(),
            Key::MaxWait
        );
    }

    #[test]
    fn each_bound_is_where_the_rules_put_it() {
        assert_eq!(failure_rate(1.0), Ok(1.0));
        assert_eq!(slow_rate(f64::MIN_POSITIVE), Ok(f64::MIN_POSITIVE));
        for refused in [0.0, -0.0, -0.5, 1.000_000_1, f64::NAN, f64::INFINITY] {
            assert!(failure_rate(refused).is_err(), "{refused}");
        }
        assert_eq!(jitter(0.0), Ok(0.0));
        assert_eq!(jitter(0.999), Ok(0.999));
        for refused in [1.0, -0.01, f64::NAN, f64::NEG_INFINITY] {
            assert!(jitter(refused).is_err(), "{refused}");
        }
        assert!(recovery(Duration::ZERO).is_err());
        assert_eq!(slow(Duration::from_nanos(1)), Ok(Duration::from_nanos(1)));
        assert_eq!(max_recovery(SECOND, SECOND), Ok(SECOND));
        assert!(max_recovery(SECOND, SECOND / 2).is_err());
        assert!(slow_under_timeout(SECOND, SECOND).is_err());
        assert!(slow_under_timeout(SECOND - Duration::from_nanos(1), SECOND).is_ok());
        assert_eq!(min_calls_within(100, None), Ok(100));
        assert!(min_calls_within(101, None).is_err());
        assert_eq!(min_calls_within(5000, Some(5000)), Ok(5000));
        assert!(window_holds_min_calls(9, 10).is_err());
        assert_eq!(default_min_calls(5), 5);
        assert_eq!(default_min_calls(DEFAULT_WINDOW_CALLS), DEFAULT_MIN_CALLS);
        assert!(one_trip_rule(true, true).is_err());
        assert!(one_trip_rule(true, false).is_ok() && one_trip_rule(false, true).is_ok());
        assert!(needs_rate_rule(Key::Window, false).is_err());
        assert!(slow_rate_needs_slow(false).is_err());
    }

    #[test]
    fn the_rules_work_in_const_context() {
        const CHECKED: u32 = match threshold(7) {
            Ok(n) => n,
            Err(violation) => panic!("{}", violation.brief()),
        };
        assert_eq!(CHECKED, 7);
    }

    #[test]
    fn each_side_words_a_mistake_its_own_way() {
        let zero = threshold(0).unwrap_err();
        assert_eq!(zero.to_string(), "`threshold` must be at least 1");
        assert_eq!(zero.problem(), "must be at least 1");
        assert_eq!(
            window_calls(0).unwrap_err().problem(),
            "must hold at least 1 call"
        );
        assert_eq!(
            window_calls(MAX_WINDOW_CALLS + 1).unwrap_err().problem(),
            "must hold at most 1048576 calls"
        );
        assert_eq!(
            max_ejection_percent(101).unwrap_err().problem(),
            "must be from 1 to 100"
        );
        let rate = failure_rate(1.5).unwrap_err();
        assert_eq!(
            rate.to_string(),
            "`failure_rate` is a share of calls: greater than 0 and at most 1 (0.5 means half \
             of the calls)"
        );
        assert_eq!(
            rate.problem(),
            "is 1.5, outside (0, 1]; write a share like 0.5 for 50%"
        );
        assert_eq!(jitter(1.5).unwrap_err().problem(), "is 1.5, outside [0, 1)");
        let slow = slow_under_timeout(2 * SECOND, SECOND).unwrap_err();
        assert!(
            slow.to_string()
                .starts_with("`slow` must be shorter than `timeout`: a call is cut off at `timeout` (1s), so a `slow` of 2s"),
            "{slow}"
        );
        assert!(slow.brief().starts_with(
            "`slow` must be shorter than `timeout`: a call is cut off at `timeout`, so"
        ));
        assert_eq!(
            min_calls_within(200, None).unwrap_err().to_string(),
            "`min_calls = 200` is more than the 100 calls the default `window` holds, so the \
             rate rule could never trip; use at most 100, or a larger `window`"
        );
        assert!(
            min_calls_within(11, Some(10))
                .unwrap_err()
                .to_string()
                .contains("the 10 calls the `window` holds")
        );
        assert!(
            window_holds_min_calls(9, 10)
                .unwrap_err()
                .problem()
                .starts_with("of 9 calls holds fewer than `min_calls` (10)")
        );
        assert_eq!(
            needs_rate_rule(Key::MinCalls, false).unwrap_err().problem(),
            "only applies to a rate rule: set `failure_rate` or `slow`"
        );
        let window = needs_rate_rule(Key::Window, false).unwrap_err();
        assert!(
            window
                .to_string()
                .starts_with("`window` needs a rule to measure over it: add `threshold = 5`"),
            "{window}"
        );
        assert_eq!(window.brief(), window.to_string());
        assert_eq!(
            window.problem(),
            "needs a rule to measure over it: set `threshold`, `failure_rate` or `slow`"
        );
    }

    #[test]
    fn a_threshold_within_a_count_window_fits_in_it() {
        assert_eq!(threshold_within(5, Some(5)), Ok(5));
        assert_eq!(threshold_within(1, Some(1)), Ok(1));
        // A time window holds any number of calls.
        assert_eq!(threshold_within(MAX_THRESHOLD, None), Ok(MAX_THRESHOLD));
        let over = threshold_within(6, Some(5)).unwrap_err();
        assert_eq!(over.key(), Key::Threshold);
        assert_eq!(
            over.to_string(),
            "`threshold = 6` is more than the 5 calls `window = 5` holds, so failures within it \
             could never reach it; use at most 5, or a larger `window`"
        );
        assert_eq!(
            over.problem(),
            "is 6, more than the 5 calls the window holds, so failures within it could never \
             reach it; use at most 5"
        );
        assert!(
            over.brief()
                .starts_with("`threshold` is more than the calls")
        );
    }
}
