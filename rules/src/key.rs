//! The settings a rule is about, named as the attribute's keys.

/// A setting, named as the attribute's key (and the builder's method).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Key {
    /// `threshold`: consecutive counted failures that trip the breaker.
    Threshold,
    /// `failure_rate`: the share of failed calls that trips the breaker.
    FailureRate,
    /// `window`: the calls, or the time, a rate is measured over.
    Window,
    /// `min_calls`: calls the window must hold before a rate can trip.
    MinCalls,
    /// `slow`: the duration above which a call is slow.
    Slow,
    /// `slow_rate`: the share of slow calls that trips the breaker.
    SlowRate,
    /// `shed`: graded shedding's multiplier `k`: calls are refused with
    /// chance `1 − k × accepted / sent`.
    Shed,
    /// `shed_window`: the time graded shedding measures over.
    ShedWindow,
    /// `timeout`: the time limit of an async call.
    Timeout,
    /// `max_concurrent`: calls admitted at once.
    MaxConcurrent,
    /// `max_wait`: how long a call waits for a place under `max_concurrent`.
    MaxWait,
    /// `recovery`: the open time before a trial.
    Recovery,
    /// `max_recovery`: the cap of a growing open time.
    MaxRecovery,
    /// `jitter`: the random spread of each open period.
    Jitter,
    /// `trial_calls`: trial calls admitted at once in half-open.
    TrialCalls,
    /// `success_threshold`: successful trials needed to close.
    SuccessThreshold,
    /// `trial_lease`: how long a trial permit may stay unresolved.
    TrialLease,
    /// `max_keys`: the most breakers a keyed family holds.
    MaxKeys,
    /// `max_ejection_percent`: a keyed family's ejection budget.
    MaxEjectionPercent,
    /// `attempts`: how many times `#[retry]` tries a call.
    Attempts,
    /// `backoff`: `#[retry]`'s delay before a retry.
    Backoff,
}

impl Key {
    /// Every key, in the order the attribute's docs list them.
    pub const ALL: &'static [Key] = &[
        Key::Threshold,
        Key::FailureRate,
        Key::Window,
        Key::MinCalls,
        Key::Slow,
        Key::SlowRate,
        Key::Shed,
        Key::ShedWindow,
        Key::Timeout,
        Key::MaxConcurrent,
        Key::MaxWait,
        Key::Recovery,
        Key::MaxRecovery,
        Key::Jitter,
        Key::TrialCalls,
        Key::SuccessThreshold,
        Key::TrialLease,
        Key::MaxKeys,
        Key::MaxEjectionPercent,
        Key::Attempts,
        Key::Backoff,
    ];

    /// The key as written: `"threshold"`, `"failure_rate"`, …
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Key::Threshold => "threshold",
            Key::FailureRate => "failure_rate",
            Key::Window => "window",
            Key::MinCalls => "min_calls",
            Key::Slow => "slow",
            Key::SlowRate => "slow_rate",
            Key::Shed => "shed",
            Key::ShedWindow => "shed_window",
            Key::Timeout => "timeout",
            Key::MaxConcurrent => "max_concurrent",
            Key::MaxWait => "max_wait",
            Key::Recovery => "recovery",
            Key::MaxRecovery => "max_recovery",
            Key::Jitter => "jitter",
            Key::TrialCalls => "trial_calls",
            Key::SuccessThreshold => "success_threshold",
            Key::TrialLease => "trial_lease",
            Key::MaxKeys => "max_keys",
            Key::MaxEjectionPercent => "max_ejection_percent",
            Key::Attempts => "attempts",
            Key::Backoff => "backoff",
        }
    }

    /// The key written as `name`, if there is one.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Key> {
        Key::ALL.iter().copied().find(|key| key.name() == name)
    }
}

/// `` "`key`" `` followed by `rest`, as one `&'static str` for every key:
/// what const evaluation can show, where nothing can be formatted.
macro_rules! sentence {
    ($key:expr, $rest:literal) => {
        match $key {
            Key::Threshold => concat!("`threshold`", $rest),
            Key::FailureRate => concat!("`failure_rate`", $rest),
            Key::Window => concat!("`window`", $rest),
            Key::MinCalls => concat!("`min_calls`", $rest),
            Key::Slow => concat!("`slow`", $rest),
            Key::SlowRate => concat!("`slow_rate`", $rest),
            Key::Shed => concat!("`shed`", $rest),
            Key::ShedWindow => concat!("`shed_window`", $rest),
            Key::Timeout => concat!("`timeout`", $rest),
            Key::MaxConcurrent => concat!("`max_concurrent`", $rest),
            Key::MaxWait => concat!("`max_wait`", $rest),
            Key::Recovery => concat!("`recovery`", $rest),
            Key::MaxRecovery => concat!("`max_recovery`", $rest),
            Key::Jitter => concat!("`jitter`", $rest),
            Key::TrialCalls => concat!("`trial_calls`", $rest),
            Key::SuccessThreshold => concat!("`success_threshold`", $rest),
            Key::TrialLease => concat!("`trial_lease`", $rest),
            Key::MaxKeys => concat!("`max_keys`", $rest),
            Key::MaxEjectionPercent => concat!("`max_ejection_percent`", $rest),
            Key::Attempts => concat!("`attempts`", $rest),
            Key::Backoff => concat!("`backoff`", $rest),
        }
    };
}
pub(crate) use sentence;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_named_once_and_found_by_its_name() {
        for (i, key) in Key::ALL.iter().enumerate() {
            assert_eq!(Key::from_name(key.name()), Some(*key));
            assert!(!Key::ALL[..i].contains(key));
            assert_eq!(sentence!(*key, "!"), format!("`{}`!", key.name()));
        }
        assert_eq!(Key::from_name("treshold"), None);
    }
}
