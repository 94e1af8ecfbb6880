//! A setting that breaks its rule, and what each side says about it.

use std::fmt;
use std::time::Duration;

use crate::key::{Key, sentence};

/// A value, or a combination of settings, that cannot work: which key is at
/// fault, and which rule it breaks.
///
/// Shown three ways, one for each place a mistake is reported:
/// - [`Display`](fmt::Display): the attribute's compile error, a sentence
///   naming the key (`` `threshold` must be at least 1 ``);
/// - [`brief`](Self::brief): the same sentence without the values, for
///   const evaluation, where nothing can be formatted;
/// - [`problem`](Self::problem): what `ConfigError` says after the setting's
///   name (`must be at least 1`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Violation {
    key: Key,
    rule: Rule,
}

/// The rule a value breaks, with what the messages show of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Rule {
    /// A count of zero.
    AtLeastOne,
    /// A count above the largest the key takes.
    AtMost(u32),
    /// A rate outside (0, 1].
    Share(f64),
    /// A jitter outside [0, 1).
    Fraction(f64),
    /// A zero duration.
    LongerThanZero,
    /// `max_recovery` below `recovery`.
    NotBelowRecovery,
    /// `slow` not below `timeout`.
    ShorterThanTimeout { slow: Duration, timeout: Duration },
    /// `min_calls` above the calls a count window holds.
    WithinWindow {
        min_calls: u32,
        window: u32,
        /// The window is the default one, not written.
        default_window: bool,
    },
    /// `threshold` with `failure_rate`.
    TwoTripRules,
    /// `window` without a rule to measure over it, or `min_calls` without
    /// a rate rule.
    WithoutRate,
    /// `threshold` above the calls a count window holds: failures within
    /// the window could never reach it.
    ThresholdOverWindow { threshold: u32, window: u32 },
    /// `slow_rate` without `slow`.
    WithoutSlow,
    /// `max_wait` without `max_concurrent`.
    WithoutMaxConcurrent,
    /// A `shed` multiplier outside [`MIN_SHED`](crate::MIN_SHED),
    /// [`MAX_SHED`](crate::MAX_SHED).
    Multiplier(f64),
    /// `shed_window` without `shed`.
    WithoutShed,
    /// `window` beside `shed` with no rule to measure over it: the
    /// shedding window is `shed_window`.
    ShedHasItsWindow,
    /// `window` beside `shed` and `threshold`, without `shed_window`: it
    /// would turn consecutive failures into failures within it.
    WindowTurnsThreshold,
    /// `shed_window` shorter than `timeout`.
    ShedWindowUnderTimeout { window: Duration, timeout: Duration },
    /// An adaptive `max_concurrent` range that is empty, starts at 0 or
    /// ends past [`MAX_ADAPTIVE_CONCURRENCY`](crate::MAX_ADAPTIVE_CONCURRENCY).
    Range { min: u32, max: u32 },
    /// `max_wait` beside an adaptive `max_concurrent`.
    WaitOnAdaptive,
    /// A fixed `max_concurrent` given a range at run time: a bulkhead in
    /// front of the breaker does not become the breaker's adaptive limit.
    FixedToRange,
}

impl Violation {
    pub(crate) const fn new(key: Key, rule: Rule) -> Self {
        Self { key, rule }
    }

    /// The key at fault.
    #[must_use]
    pub const fn key(&self) -> Key {
        self.key
    }

    /// Whether the value written is at fault (a count, a rate or a
    /// duration, alone or measured against another setting's), rather than
    /// the key being written beside the others (two trip rules, a `window`
    /// with no rule over it, `max_wait` without `max_concurrent`, …): the
    /// attribute reports the first at the value, the second at the key.
    #[must_use]
    pub const fn at_value(&self) -> bool {
        match self.rule {
            Rule::AtLeastOne
            | Rule::AtMost(_)
            | Rule::Share(_)
            | Rule::Fraction(_)
            | Rule::LongerThanZero
            | Rule::NotBelowRecovery
            | Rule::ShorterThanTimeout { .. }
            | Rule::WithinWindow { .. }
            | Rule::ThresholdOverWindow { .. }
            | Rule::Multiplier(_)
            | Rule::ShedWindowUnderTimeout { .. }
            | Rule::Range { .. } => true,
            Rule::TwoTripRules
            | Rule::WithoutRate
            | Rule::WithoutSlow
            | Rule::WithoutMaxConcurrent
            | Rule::WithoutShed
            | Rule::ShedHasItsWindow
            | Rule::WindowTurnsThreshold
            | Rule::WaitOnAdaptive
            | Rule::FixedToRange => false,
        }
    }

    /// The attribute's message without the values it would show: what a
    /// constant that breaks the rule makes const evaluation panic with.
    #[must_use]
    pub const fn brief(&self) -> &'static str {
        match self.rule {
            Rule::AtLeastOne => sentence!(self.key, " must be at least 1"),
            Rule::AtMost(_) => match self.key {
                Key::Threshold => "`threshold` is too large; the largest value is 16777215",
                Key::TrialCalls => "`trial_calls` is too large; the largest value is 255",
                Key::SuccessThreshold => {
                    "`success_threshold` is too large; the largest value is 255"
                }
                Key::Window => "`window` is too large; the largest value is 1048576",
                Key::MaxEjectionPercent => {
                    "`max_ejection_percent` is too large; the largest value is 100"
                }
                other => sentence!(other, " is too large; the largest value is 4294967295"),
            },
            Rule::Share(_) => sentence!(
                self.key,
                " is a share of calls: greater than 0 and at most 1 (0.5 means half of the calls)"
            ),
            Rule::Fraction(_) => {
                "`jitter` is a fraction of the open time: at least 0 and less than 1 \
                 (0.2 spreads each open period by up to 20%)"
            }
            Rule::LongerThanZero => sentence!(self.key, " must be longer than zero"),
            Rule::NotBelowRecovery => "`max_recovery` must be at least as long as `recovery`",
            Rule::ShorterThanTimeout { .. } => {
                "`slow` must be shorter than `timeout`: a call is cut off at `timeout`, so a \
                 longer `slow` could never be seen; use a shorter `slow`, or drop it"
            }
            Rule::WithinWindow { .. } => match self.key {
                Key::Window => {
                    "`window` holds fewer calls than `min_calls`, so the rate rule could never \
                     trip; use a larger `window`, or a smaller `min_calls`"
                }
                _ => {
                    "`min_calls` is more than the calls the `window` holds, so the rate rule \
                     could never trip; use at most the window's size, or a larger `window`"
                }
            },
            Rule::TwoTripRules => {
                "`threshold` and `failure_rate` are two different trip rules; keep one: \
                 `threshold` trips on consecutive failures, `failure_rate` on a share of the \
                 calls in `window`"
            }
            Rule::WithoutRate => match self.key {
                Key::Window => {
                    "`window` needs a rule to measure over it: add `threshold = 5` (that many \
                     failures within the window), `failure_rate = 0.5` (a share of its calls) or \
                     `slow = \"2s\"` (a share of slow calls)"
                }
                _ => sentence!(
                    self.key,
                    " only applies to a rate rule (`failure_rate = 0.5`, or `slow = \"2s\"` for \
                     a slow-call rate): the calls a window must hold before a share means \
                     anything; a `threshold` counts failures and waits for none"
                ),
            },
            Rule::ThresholdOverWindow { .. } => {
                "`threshold` is more than the calls the `window` holds, so failures within it \
                 could never reach it; use a smaller `threshold`, or a larger `window`"
            }
            Rule::WithoutSlow => {
                "`slow_rate` needs `slow`, the duration above which a call counts as slow, e.g. \
                 `slow = \"2s\"`"
            }
            Rule::WithoutMaxConcurrent => {
                "`max_wait` needs `max_concurrent`: it is how long a call waits for one of its \
                 places, e.g. `max_concurrent = 16, max_wait = \"50ms\"`"
            }
            Rule::Multiplier(_) => {
                "`shed` is the `k` of `1 − k × accepted / sent`, the chance a call is refused: \
                 at least 1 and at most 10 (2 is the usual choice)"
            }
            Rule::WithoutShed => {
                "`shed_window` needs `shed`: it is the time graded shedding measures over, e.g. \
                 `shed = 2, shed_window = \"10s\"`"
            }
            Rule::ShedHasItsWindow => {
                "`window` is the window of a trip rule (`threshold`, `failure_rate`, `slow`), \
                 and there is none here: graded shedding's window is `shed_window`, e.g. \
                 `shed_window = \"10s\"`"
            }
            Rule::WindowTurnsThreshold => {
                "beside `shed`, `window` would make `threshold` count the failures within it \
                 instead of failures in a row: for the shedding window write \
                 `shed_window = \"10s\"` instead; to count the failures within `window`, \
                 write `shed_window` as well"
            }
            Rule::ShedWindowUnderTimeout { .. } => {
                "`shed_window` must be at least as long as `timeout`: a call still running when \
                 the window has moved on would be counted in no window"
            }
            Rule::Range { .. } => {
                "an adaptive `max_concurrent` is a range `MIN..=MAX` with 1 <= MIN <= MAX <= \
                 65535, e.g. `max_concurrent = 10..=200`"
            }
            Rule::WaitOnAdaptive => {
                "`max_wait` needs a fixed `max_concurrent = N`: an adaptive limit refuses at \
                 once, so that the calls it sheds never wait"
            }
            Rule::FixedToRange => {
                "a fixed `max_concurrent = N` stays a number while the breaker runs: it is the \
                 places of a bulkhead in front of the breaker, and an adaptive range \
                 `MIN..=MAX` is the breaker's own limit; declare the range to change to one"
            }
        }
    }

    /// What is wrong, as the runtime's `ConfigError` says it after the
    /// setting's name: `must be at least 1`, `1.5 is outside (0, 1]; …`.
    #[must_use]
    pub fn problem(&self) -> String {
        match (self.rule, self.key) {
            (Rule::AtLeastOne | Rule::AtMost(_), Key::MaxEjectionPercent) => {
                "must be from 1 to 100".to_owned()
            }
            (Rule::AtLeastOne, Key::Window) => "must hold at least 1 call".to_owned(),
            (Rule::AtLeastOne, _) => "must be at least 1".to_owned(),
            (Rule::AtMost(max), Key::Window) => format!("must hold at most {max} calls"),
            (Rule::AtMost(max), _) => format!("must be at most {max}"),
            (Rule::Share(rate), _) => {
                format!("is {rate}, outside (0, 1]; write a share like 0.5 for 50%")
            }
            (Rule::Fraction(jitter), _) => format!("is {jitter}, outside [0, 1)"),
            (Rule::LongerThanZero, _) => "must be longer than zero".to_owned(),
            (Rule::NotBelowRecovery, _) => "must be at least as long as `recovery`".to_owned(),
            (Rule::ShorterThanTimeout { timeout, .. }, _) => format!(
                "must be shorter than `timeout` ({timeout:?}): a call is cut off at `timeout`, \
                 so a longer `slow` could never be seen"
            ),
            (
                Rule::WithinWindow {
                    min_calls, window, ..
                },
                Key::Window,
            ) => format!(
                "of {window} calls holds fewer than `min_calls` ({min_calls}), so the rate rule \
                 could never trip; set `min_calls` to at most {window}"
            ),
            (
                Rule::WithinWindow {
                    min_calls, window, ..
                },
                _,
            ) => format!(
                "is {min_calls}, more than the {window} calls the window holds, so the rate rule \
                 could never trip; use at most {window}"
            ),
            (Rule::TwoTripRules, _) => "cannot be combined with `failure_rate`: choose \
                                       consecutive failures or a failure rate"
                .to_owned(),
            (Rule::WithoutRate, Key::Window) => {
                "needs a rule to measure over it: set `threshold`, `failure_rate` or `slow`"
                    .to_owned()
            }
            (Rule::ThresholdOverWindow { threshold, window }, _) => format!(
                "is {threshold}, more than the {window} calls the window holds, so failures \
                 within it could never reach it; use at most {window}"
            ),
            (Rule::WithoutRate, _) => {
                "only applies to a rate rule: set `failure_rate` or `slow`".to_owned()
            }
            (Rule::WithoutSlow, _) => {
                "needs `slow`, the duration above which a call is slow".to_owned()
            }
            (Rule::WithoutMaxConcurrent, _) => {
                "needs `max_concurrent`: it is how long a call waits for one of its places"
                    .to_owned()
            }
            (Rule::Multiplier(k), _) => format!("is {k}, outside [1, 10]; 2 is the usual choice"),
            (Rule::WithoutShed, _) => {
                "needs `shed`: it is the time graded shedding measures over".to_owned()
            }
            (Rule::ShedHasItsWindow, _) => {
                "is the window of a trip rule (`threshold`, `failure_rate`, `slow`), and there \
                 is none; graded shedding's window is `shed_window`"
                    .to_owned()
            }
            (Rule::WindowTurnsThreshold, _) => {
                "beside `shed` would make `threshold` count the failures within it instead of \
                 failures in a row: set `shed_window` for the shedding window, and `window` \
                 only beside it"
                    .to_owned()
            }
            (Rule::ShedWindowUnderTimeout { timeout, .. }, _) => {
                format!("must be at least as long as `timeout` ({timeout:?})")
            }
            (Rule::Range { min, max }, _) => {
                format!("is {min}..={max}, not a range with 1 <= min <= max <= 65535")
            }
            (Rule::WaitOnAdaptive, _) => {
                "needs a fixed `max_concurrent`, not an adaptive one".to_owned()
            }
            (Rule::FixedToRange, _) => {
                "cannot become an adaptive range at run time: the breaker was declared with a \
                 fixed `max_concurrent = N`, a bulkhead in front of it; give one number (the \
                 same as least and most), or declare the range to switch"
                    .to_owned()
            }
        }
    }
}

/// The attribute's message: a sentence naming the key, with the values at
/// fault where they help.
impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.key.name();
        match self.rule {
            Rule::AtMost(max) => write!(f, "`{key}` is too large; the largest value is {max}"),
            Rule::ShorterThanTimeout { slow, timeout } => write!(
                f,
                "`slow` must be shorter than `timeout`: a call is cut off at `timeout` \
                 ({timeout:?}), so a `slow` of {slow:?} could never be seen; use a shorter \
                 `slow`, or drop it (a timed-out call is already a failure)"
            ),
            Rule::WithinWindow {
                min_calls,
                window,
                default_window,
            } => match self.key {
                Key::Window => write!(
                    f,
                    "`window = {window}` holds fewer calls than `min_calls = {min_calls}`, so \
                     the rate rule could never trip; use a larger `window`, or at most {window} \
                     for `min_calls`"
                ),
                _ => write!(
                    f,
                    "`min_calls = {min_calls}` is more than the {window} calls {holds}, so the \
                     rate rule could never trip; use at most {window}, or a larger `window`",
                    holds = if default_window {
                        "the default `window` holds"
                    } else {
                        "the `window` holds"
                    }
                ),
            },
            Rule::ThresholdOverWindow { threshold, window } => write!(
                f,
                "`threshold = {threshold}` is more than the {window} calls `window = {window}` \
                 holds, so failures within it could never reach it; use at most {window}, or a \
                 larger `window`"
            ),
            Rule::Range { min, max } => write!(
                f,
                "`max_concurrent = {min}..={max}` is not an adaptive range: write `MIN..=MAX` \
                 with 1 <= MIN <= MAX <= 65535, e.g. `max_concurrent = 10..=200`"
            ),
            Rule::Multiplier(k) => write!(
                f,
                "`shed = {k}` is outside [1, 10]: it is the `k` of `1 − k × accepted / sent`, \
                 the chance a call is refused (2 is the usual choice)"
            ),
            Rule::ShedWindowUnderTimeout { window, timeout } => write!(
                f,
                "`shed_window` ({window:?}) is shorter than `timeout` ({timeout:?}): graded \
                 shedding's window must be at least as long as the longest call, or a call \
                 still running when the window has moved on is counted in no window"
            ),
            _ => f.write_str(self.brief()),
        }
    }
}

impl std::error::Error for Violation {}
