//! Checks of attribute values given as constants, applied by const
//! evaluation.
//!
//! The checks `#[circuit_breaker]` applies to a value given as a constant
//! (`threshold = limits::PAYMENTS_THRESHOLD`, `recovery = RECOVERY`): the
//! same rules as for a literal (`failfast_rules`), applied by const
//! evaluation of the breaker's `static`, so a value that cannot work is a
//! compile error naming the key.
//!
//! Every key that takes a constant has its check from the table of the
//! settings (`failfast_rules::settings_table!`), `KEY(value)` holding the
//! value to `failfast_rules::KEY`. The checks written out below take the
//! place of the table's for their keys (an item shadows a glob import), so
//! that the notes of a failed evaluation show one line of this file and no
//! macro; the compile-error suite pins them.

use std::time::Duration;

use failfast_rules::{self as rules, Violation};

#[allow(
    unused_imports,
    reason = "used by the keys whose check is not written out below, none today"
)]
pub use from_the_table::*;

/// The check of each key that takes a constant, from the table.
#[allow(
    dead_code,
    reason = "each check written out below takes the place of the table's"
)]
mod from_the_table {
    use super::{checked, rules};
    use std::time::Duration;

    macro_rules! checks {
        ({} $($docs:tt $variant:ident $name:ident ($ty:ty) $kind:tt $places:tt
            [$($constant:literal)?] $setter:tt)*) => {
            $($(
                #[doc = concat!("`", stringify!($name), " = CONST`, ", $constant, ".")]
                #[must_use]
                pub const fn $name(value: $ty) -> $ty {
                    checked(rules::$name(value))
                }
            )?)*
        };
    }

    failfast_rules::settings_table!(checks {});
}

/// The value the rule gave back; a value that breaks it panics (a compile
/// error under const evaluation) with the attribute's message.
const fn checked<T: Copy>(rule: Result<T, Violation>) -> T {
    match rule {
        Ok(value) => value,
        Err(violation) => panic!("{}", violation.brief()),
    }
}

/// `threshold = CONST`: at least 1, at most 16777215.
#[must_use]
pub const fn threshold(value: u32) -> u32 {
    checked(rules::threshold(value))
}

/// `trial_calls = CONST`: at least 1, at most 255.
#[must_use]
pub const fn trial_calls(value: u32) -> u32 {
    checked(rules::trial_calls(value))
}

/// `success_threshold = CONST`: at least 1, at most 255.
#[must_use]
pub const fn success_threshold(value: u32) -> u32 {
    checked(rules::success_threshold(value))
}

/// `min_calls = CONST`: at least 1.
#[must_use]
pub const fn min_calls(value: u32) -> u32 {
    checked(rules::min_calls(value))
}

/// `failure_rate = CONST`: greater than 0, at most 1.
#[must_use]
pub const fn failure_rate(value: f64) -> f64 {
    checked(rules::failure_rate(value))
}

/// `slow_rate = CONST`: greater than 0, at most 1.
#[must_use]
pub const fn slow_rate(value: f64) -> f64 {
    checked(rules::slow_rate(value))
}

/// `shed = CONST`: at least 1, at most 10.
#[must_use]
pub const fn shed(value: f64) -> f64 {
    checked(rules::shed(value))
}

/// `shed_window` with a `timeout`: at least as long as it.
#[must_use]
pub const fn shed_window_covers_timeout(window: Duration, timeout: Duration) -> Duration {
    checked(rules::shed_window_covers_timeout(window, timeout))
}

/// `jitter = CONST`: at least 0, less than 1.
#[must_use]
pub const fn jitter(value: f64) -> f64 {
    checked(rules::jitter(value))
}

/// `recovery = CONST`: a `Duration` longer than zero.
#[must_use]
pub const fn recovery(value: Duration) -> Duration {
    checked(rules::recovery(value))
}

/// `slow = CONST`: a `Duration` longer than zero.
#[must_use]
pub const fn slow(value: Duration) -> Duration {
    checked(rules::slow(value))
}

/// A constant `slow` with a `timeout`: shorter than it.
#[must_use]
pub const fn slow_under_timeout(slow: Duration, timeout: Duration) -> Duration {
    checked(rules::slow_under_timeout(slow, timeout))
}

/// A constant `min_calls` with a count window of `window` calls: no more
/// than it holds.
#[must_use]
pub const fn min_calls_within(min_calls: u32, window: u32) -> u32 {
    checked(rules::min_calls_within(min_calls, Some(window)))
}

/// `threshold = CONST` with a count `window`: at most the calls the
/// window holds.
#[must_use]
pub const fn threshold_within(threshold: u32, window: u32) -> u32 {
    checked(rules::threshold_within(threshold, Some(window)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::config::{MAX_THRESHOLD, MAX_TRIALS};

    #[test]
    fn the_largest_values_in_the_messages_are_the_runtimes() {
        assert_eq!(MAX_THRESHOLD, 16_777_215);
        assert_eq!(MAX_TRIALS, 255);
    }

    /// The table's checks, which a key whose check is not written out
    /// gets, hold each value to the same rule.
    #[test]
    fn the_tables_checks_are_the_rules() {
        use super::from_the_table as table;
        assert_eq!(table::threshold(MAX_THRESHOLD), MAX_THRESHOLD);
        assert_eq!(
            table::recovery(Duration::from_secs(1)),
            Duration::from_secs(1)
        );
        assert_eq!(table::shed(2.0), 2.0);
        let message = |f: fn()| {
            let e = std::panic::catch_unwind(f).unwrap_err();
            e.downcast_ref::<String>().cloned().unwrap_or_default()
        };
        let zero = message(|| {
            let _ = table::threshold(0);
        });
        assert!(zero.starts_with("`threshold` must be at least 1"), "{zero}");
        assert!(
            message(|| {
                let _ = table::jitter(1.0);
            })
            .starts_with("`jitter` is a fraction")
        );
        assert!(
            message(|| {
                let _ = table::success_threshold(MAX_TRIALS + 1);
            })
            .contains("largest value is 255")
        );
    }

    #[test]
    fn values_that_fit_pass_through_unchanged() {
        assert_eq!(threshold(MAX_THRESHOLD), MAX_THRESHOLD);
        assert_eq!(trial_calls(3), 3);
        assert_eq!(success_threshold(3), 3);
        assert_eq!(shed(2.5), 2.5);
        assert_eq!(failure_rate(1.0), 1.0);
        assert_eq!(jitter(0.0), 0.0);
        assert_eq!(recovery(Duration::from_secs(1)), Duration::from_secs(1));
        assert_eq!(min_calls_within(10, 10), 10);
        assert_eq!(min_calls_within(3, 10), 3);
        assert_eq!(threshold_within(10, 10), 10);
        assert_eq!(threshold_within(3, 10), 3);
        assert_eq!(jitter(0.25), 0.25);
        assert_eq!(jitter(0.999), 0.999);
        assert_eq!(slow_rate(0.01), 0.01);
    }

    #[test]
    fn each_bound_is_where_the_rules_put_it() {
        let refused = |f: fn()| std::panic::catch_unwind(f).is_err();
        assert!(refused(|| {
            let _ = jitter(1.0);
        }));
        assert!(refused(|| {
            let _ = jitter(-0.01);
        }));
        assert!(refused(|| {
            let _ = jitter(f64::NAN);
        }));
        assert!(refused(|| {
            let _ = min_calls_within(11, 10);
        }));
        assert!(refused(|| {
            let _ = threshold_within(11, 10);
        }));
        assert!(refused(|| {
            let _ = success_threshold(0);
        }));
        assert!(refused(|| {
            let _ = shed(0.5);
        }));
        assert!(refused(|| {
            let _ = failure_rate(0.0);
        }));
        assert!(refused(|| {
            let _ = slow_under_timeout(Duration::from_secs(1), Duration::from_secs(1));
        }));
        assert!(!refused(|| {
            let _ = slow_under_timeout(Duration::from_millis(999), Duration::from_secs(1));
        }));
    }

    #[test]
    fn values_that_cannot_work_panic_naming_the_key() {
        let message = |f: fn()| {
            let e = std::panic::catch_unwind(f).unwrap_err();
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default()
        };
        assert!(
            message(|| {
                let _ = threshold(0);
            })
            .starts_with("`threshold` must be at least 1")
        );
        assert!(
            message(|| {
                let _ = threshold(MAX_THRESHOLD + 1);
            })
            .contains("largest value is 16777215")
        );
        assert!(
            message(|| {
                let _ = failure_rate(1.5);
            })
            .starts_with("`failure_rate` is a share")
        );
        assert!(
            message(|| {
                let _ = slow(Duration::ZERO);
            })
            .starts_with("`slow` must be longer than zero")
        );
        assert!(
            message(|| {
                let _ = slow_under_timeout(Duration::from_secs(2), Duration::from_secs(1));
            })
            .starts_with("`slow` must be shorter than `timeout`")
        );
    }
}
