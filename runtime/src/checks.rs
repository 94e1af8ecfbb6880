//! The checks `#[circuit_breaker]` applies to a value given as a constant
//! (`threshold = limits::PAYMENTS_THRESHOLD`, `recovery = RECOVERY`): the
//! same rules as for a literal, applied by const evaluation of the breaker's
//! `static`, so a value that cannot work is a compile error naming the key.

use std::time::Duration;

use crate::core::config::{MAX_THRESHOLD, MAX_TRIALS};

/// A count: at least 1, and at most `max`.
macro_rules! count {
    ($key:ident, $max:expr, $max_text:literal) => {
        #[doc = concat!("`", stringify!($key), " = CONST`: at least 1, at most ", $max_text, ".")]
        #[must_use]
        pub const fn $key(n: u32) -> u32 {
            if n == 0 {
                panic!(concat!("`", stringify!($key), "` must be at least 1"));
            }
            if n > $max {
                panic!(concat!(
                    "`",
                    stringify!($key),
                    "` is too large; the largest value is ",
                    $max_text
                ));
            }
            n
        }
    };
}

count!(threshold, MAX_THRESHOLD, "16777215");
count!(trial_calls, MAX_TRIALS, "255");
count!(success_threshold, MAX_TRIALS, "255");
count!(min_calls, u32::MAX, "4294967295");

/// A share of calls: greater than 0, at most 1.
macro_rules! rate {
    ($key:ident) => {
        #[doc = concat!("`", stringify!($key), " = CONST`: greater than 0, at most 1.")]
        #[must_use]
        pub const fn $key(rate: f64) -> f64 {
            if !(rate > 0.0 && rate <= 1.0) {
                panic!(concat!(
                    "`",
                    stringify!($key),
                    "` is a share of calls: greater than 0 and at most 1 (0.5 means half of the calls)"
                ));
            }
            rate
        }
    };
}

rate!(failure_rate);
rate!(slow_rate);

/// `jitter = CONST`: at least 0, less than 1.
#[must_use]
pub const fn jitter(jitter: f64) -> f64 {
    if !(jitter >= 0.0 && jitter < 1.0) {
        panic!(
            "`jitter` is a fraction of the open time: at least 0 and less than 1 \
             (0.2 spreads each open period by up to 20%)"
        );
    }
    jitter
}

/// A duration longer than zero.
macro_rules! duration {
    ($key:ident) => {
        #[doc = concat!("`", stringify!($key), " = CONST`: a `Duration` longer than zero.")]
        #[must_use]
        pub const fn $key(d: Duration) -> Duration {
            if d.is_zero() {
                panic!(concat!("`", stringify!($key), "` must be longer than zero"));
            }
            d
        }
    };
}

duration!(recovery);
duration!(slow);

/// A constant `slow` with a `timeout`: shorter than it.
#[must_use]
pub const fn slow_under_timeout(slow: Duration, timeout: Duration) -> Duration {
    if slow.as_nanos() >= timeout.as_nanos() {
        panic!(
            "`slow` must be shorter than `timeout`: a call is cut off at `timeout`, so a longer \
             `slow` could never be seen; use a shorter `slow`, or drop it"
        );
    }
    slow
}

/// A constant `min_calls` with a count window of `window` calls: no more
/// than it holds.
#[must_use]
pub const fn min_calls_within(min_calls: u32, window: u32) -> u32 {
    if min_calls > window {
        panic!(
            "`min_calls` is more than the calls the `window` holds, so the rate rule could \
             never trip; use at most the window's size, or a larger `window`"
        );
    }
    min_calls
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_values_in_the_messages_are_the_runtimes() {
        assert_eq!(MAX_THRESHOLD, 16_777_215);
        assert_eq!(MAX_TRIALS, 255);
    }

    #[test]
    fn values_that_fit_pass_through_unchanged() {
        assert_eq!(threshold(MAX_THRESHOLD), MAX_THRESHOLD);
        assert_eq!(trial_calls(3), 3);
        assert_eq!(failure_rate(1.0), 1.0);
        assert_eq!(jitter(0.0), 0.0);
        assert_eq!(recovery(Duration::from_secs(1)), Duration::from_secs(1));
        assert_eq!(min_calls_within(10, 10), 10);
        assert_eq!(min_calls_within(3, 10), 3);
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
            e.downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
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
