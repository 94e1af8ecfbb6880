//! What changes a running breaker's settings: a [`Patch`], and a setting
//! read from a variable's text.

use std::time::Duration;

use super::{Config, Mode, Window};

/// The settings a [`Builder`](crate::Builder) was given, each `None` until
/// set: what [`Breaker::reconfigure`](crate::Breaker::reconfigure) changes.
/// A configuration file's section is read into one by `core::serde`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Patch {
    pub(crate) threshold: Option<u32>,
    pub(crate) failure_rate: Option<f64>,
    pub(crate) min_calls: Option<u32>,
    pub(crate) window: Option<Window>,
    pub(crate) slow_rate: Option<f64>,
    pub(crate) recovery: Option<Duration>,
    pub(crate) max_recovery: Option<Duration>,
    pub(crate) jitter: Option<f64>,
    pub(crate) trial_calls: Option<u32>,
    pub(crate) success_threshold: Option<u32>,
    pub(crate) shed: Option<f64>,
    pub(crate) shed_window: Option<Duration>,
    pub(crate) timeout: Option<Duration>,
    /// The concurrency limit, as least and most places (the same for a
    /// fixed `max_concurrent = N`).
    pub(crate) max_concurrent: Option<(u32, u32)>,
    pub(crate) max_wait: Option<Duration>,
    pub(crate) mode: Option<Mode>,
    /// A keyed family's own settings, not its members': a breaker refuses
    /// them ([`applied_to`](Self::applied_to)), a family takes them beside
    /// its members' part ([`for_members`](Self::for_members)).
    pub(crate) max_keys: Option<usize>,
    pub(crate) max_ejection_percent: Option<u8>,
}

/// Why a breaker refuses a keyed family's own setting.
pub(crate) const FAMILY_ONLY: &str =
    "is a keyed family's setting, not a breaker's: change it by the family's name";

impl Patch {
    /// This patch without the keyed family's own settings: what a family
    /// applies to its members.
    #[must_use]
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn for_members(&self) -> Patch {
        Patch {
            max_keys: None,
            max_ejection_percent: None,
            ..self.clone()
        }
    }

    /// The first of the keyed family's own settings this patch sets.
    pub(crate) fn family_key(&self) -> Option<&'static str> {
        match (self.max_keys, self.max_ejection_percent) {
            (Some(_), _) => Some("max_keys"),
            (None, Some(_)) => Some("max_ejection_percent"),
            (None, None) => None,
        }
    }

    /// `config` with this patch applied, checked, or the first key at fault.
    pub(crate) fn applied_to(&self, config: &Config) -> Result<Config, (&'static str, String)> {
        if let Some(key) = self.family_key() {
            return Err((key, FAMILY_ONLY.to_owned()));
        }
        let broken =
            |violation: failfast_rules::Violation| (violation.key().name(), violation.problem());
        let mut next = config.clone();
        let rule = |key: &'static str, on: bool, rule: &str| {
            if on {
                Ok(())
            } else {
                Err((
                    key,
                    format!(
                        "cannot be changed: the breaker does not use {rule}; which rules a \
                         breaker uses is set where it is declared"
                    ),
                ))
            }
        };
        if let Some(n) = self.threshold {
            rule(
                "threshold",
                config.uses_threshold(),
                "the failure-count rule (`threshold`)",
            )?;
            next.threshold = failfast_rules::threshold(n).map_err(broken)?;
        }
        if let Some(r) = self.failure_rate {
            rule(
                "failure_rate",
                config.failure_rate > 0.0,
                "the failure-rate rule",
            )?;
            // `validate` takes a zero rate as "no failure-rate rule".
            next.failure_rate = failfast_rules::failure_rate(r).map_err(broken)?;
        }
        if let Some(n) = self.min_calls {
            rule("min_calls", config.uses_rate(), "a rate rule")?;
            next.min_calls = n;
        }
        if let Some(shape) = self.window {
            rule(
                "window",
                config.uses_window(),
                if config.sheds() {
                    "a rule measured over a window (graded shedding's is `shed_window`)"
                } else {
                    "a rule measured over a window"
                },
            )?;
            next.window = shape;
        }
        if let Some(r) = self.slow_rate {
            rule("slow_rate", config.slow != 0, "the slow-call rule")?;
            next.slow_rate = r;
        }
        if let Some(d) = self.recovery {
            next = next.with_recovery(d);
        }
        if let Some(d) = self.max_recovery {
            // Checked as given: zero would read as "not growing".
            failfast_rules::max_recovery(Duration::from_nanos(next.recovery), d).map_err(broken)?;
            next = next.with_max_recovery(d);
        }
        if let Some(j) = self.jitter {
            next.jitter = j;
        }
        if let Some(n) = self.trial_calls {
            next.trial_calls = n;
        }
        if let Some(n) = self.success_threshold {
            next.success_threshold = n;
        }
        if let Some(k) = self.shed {
            rule("shed", config.sheds(), "graded shedding (`shed`)")?;
            next = next.with_shed(failfast_rules::shed(k).map_err(broken)?);
        }
        if let Some(d) = self.shed_window {
            rule("shed_window", config.sheds(), "graded shedding (`shed`)")?;
            next = next.with_shed_window(failfast_rules::shed_window(d).map_err(broken)?);
        }
        if let Some(d) = self.timeout {
            rule("timeout", config.timeout != 0, "a time limit (`timeout`)")?;
            next = next.with_timeout(failfast_rules::timeout(d).map_err(broken)?);
        }
        if let Some((min, max)) = self.max_concurrent {
            // A fixed limit stays one number (a bulkhead's places); an
            // adaptive range stays a range.
            if config.bulkhead != 0 {
                let n = failfast_rules::fixed_limit_stays_fixed(min, max).map_err(broken)?;
                next = next.with_bulkhead(failfast_rules::max_concurrent(n).map_err(broken)?);
            } else {
                rule(
                    "max_concurrent",
                    config.adaptive_range().is_some(),
                    "a concurrency limit (`max_concurrent`)",
                )?;
                let (min, max) = failfast_rules::adaptive_concurrency(min, max).map_err(broken)?;
                next = next.with_adaptive_concurrency(min, max);
            }
        }
        if let Some(d) = self.max_wait {
            let adaptive = config.adaptive_range().is_some();
            failfast_rules::max_wait_needs_max_concurrent(config.bulkhead != 0 || adaptive)
                .map_err(broken)?;
            failfast_rules::max_wait_needs_fixed_limit(adaptive).map_err(broken)?;
            rule(
                "max_wait",
                config.max_wait != 0,
                "a wait for a place (`max_wait`)",
            )?;
            next = next.with_max_wait(failfast_rules::max_wait(d).map_err(broken)?);
        }
        next.validate()
            .map_err(|e| (e.static_key(), e.reason().to_owned()))?;
        // As when building: a count window never holds more than its size
        // (the rate rules' window: graded shedding's is a time).
        if let (true, Window::Calls(size)) = (next.rate_window(), next.window) {
            if self.min_calls.is_some() {
                failfast_rules::min_calls_within(next.min_calls, Some(size)).map_err(broken)?;
            } else if self.window.is_some() {
                failfast_rules::window_holds_min_calls(size, next.min_calls).map_err(broken)?;
            }
        }
        Ok(next)
    }
}

/// A concurrency limit as written: `16`, or an adaptive range `10..=200`;
/// least and most places.
pub(crate) fn concurrency(text: &str) -> Result<(u32, u32), String> {
    let number = |text: &str| text.trim().parse::<u32>().ok();
    match text.split_once("..=") {
        None => number(text).map(|n| (n, n)),
        Some((min, max)) => number(min).zip(number(max)),
    }
    .ok_or_else(|| {
        format!("is `{text}`, not a limit; write a number like `16`, or a range like `10..=200`")
    })
}

/// Why a setting fixed at build time cannot be changed on a running breaker.
pub(crate) const FIXED: &str =
    "is fixed once the breaker is built; it can change where the breaker is declared or built";

/// Sets `key` of `patch` from `text` (an environment variable's value), or
/// says why not, after the key's name: ``is `soon`, not a duration …``.
pub(crate) fn set_from_text(patch: &mut Patch, key: &str, text: &str) -> Result<(), String> {
    fn number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
        text.parse()
            .map_err(|_| format!("is `{text}`, not a number of the expected kind"))
    }
    let parse_duration = |text: &str| {
        failfast_rules::parse_duration(text).map_err(|e| {
            format!(
                "is `{text}`, not a duration ({e}); write it like \"30s\", \"250ms\" or \"1m 30s\""
            )
        })
    };
    match key {
        "threshold" => patch.threshold = Some(number(text)?),
        "failure_rate" => patch.failure_rate = Some(number(text)?),
        "min_calls" => patch.min_calls = Some(number(text)?),
        "window" => {
            patch.window = Some(match text.parse::<u32>() {
                Ok(n) => Window::Calls(n),
                Err(_) => Window::Time(
                    u64::try_from(parse_duration(text)?.as_nanos()).unwrap_or(u64::MAX),
                ),
            });
        }
        "slow_rate" => patch.slow_rate = Some(number(text)?),
        "recovery" => patch.recovery = Some(parse_duration(text)?),
        "max_recovery" => patch.max_recovery = Some(parse_duration(text)?),
        "jitter" => patch.jitter = Some(number(text)?),
        "trial_calls" => patch.trial_calls = Some(number(text)?),
        "success_threshold" => patch.success_threshold = Some(number(text)?),
        "shed" => patch.shed = Some(number(text)?),
        "shed_window" => patch.shed_window = Some(parse_duration(text)?),
        "timeout" => patch.timeout = Some(parse_duration(text)?),
        "max_concurrent" => patch.max_concurrent = Some(concurrency(text)?),
        "max_wait" => patch.max_wait = Some(parse_duration(text)?),
        "max_keys" => patch.max_keys = Some(number(text)?),
        "max_ejection_percent" => {
            // Out of a `u8`'s range, refused as out of 1 to 100.
            let percent: u32 = number(text)?;
            patch.max_ejection_percent = Some(u8::try_from(percent).unwrap_or(u8::MAX));
        }
        "mode" => {
            patch.mode = Some(match text {
                "normal" => Mode::Normal,
                "observe_only" => Mode::ObserveOnly,
                "forced_open" => Mode::ForcedOpen,
                "forced_closed" => Mode::ForcedClosed,
                _ => {
                    return Err(format!(
                        "is `{text}`, not a mode; write `normal`, `observe_only`, `forced_open` or `forced_closed`"
                    ));
                }
            });
        }
        _ => {
            return Err(
                "is not a key that can change at run time; expected one of `threshold`, \
                 `failure_rate`, `min_calls`, `window`, `slow_rate`, `recovery`, `max_recovery`, \
                 `jitter`, `trial_calls`, `success_threshold`, `shed`, `shed_window`, `timeout`, \
                 `max_concurrent`, `max_wait`, `mode`, and for a keyed family `max_keys`, \
                 `max_ejection_percent`"
                    .to_owned(),
            );
        }
    }
    Ok(())
}
