//! A patch: changes to a breaker's settings, checked whole and applied
//! whole ([`Breaker::reconfigure`](crate::Breaker::reconfigure), and by name
//! through [`configure`](crate::ops::configure)).

use std::fmt;
use std::time::Duration;

use crate::core::breaker::Mode;
use crate::core::config::{Config, Window};

/// Changes to a breaker's settings: only what is set changes.
///
/// With the `serde` feature it is `Deserialize`, with the attribute's key
/// names and durations as strings, so a configuration file can hold one per
/// breaker name (see [`configure::apply_all`](crate::configure::apply_all)):
///
/// ```toml
/// [failfast."payments::charge"]
/// threshold = 10
/// recovery = "1m"
/// mode = "observe_only"
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct ConfigPatch {
    threshold: Option<u32>,
    failure_rate: Option<f64>,
    min_calls: Option<u32>,
    #[cfg_attr(
        feature = "serde",
        serde(default, deserialize_with = "crate::core::serde::window_option")
    )]
    window: Option<Window>,
    slow_rate: Option<f64>,
    #[cfg_attr(feature = "serde", serde(default, with = "humantime_option"))]
    recovery: Option<Duration>,
    #[cfg_attr(feature = "serde", serde(default, with = "humantime_option"))]
    max_recovery: Option<Duration>,
    jitter: Option<f64>,
    trial_calls: Option<u32>,
    success_threshold: Option<u32>,
    mode: Option<Mode>,
}

#[cfg(feature = "serde")]
mod humantime_option {
    use serde::{Deserialize, Deserializer, de::Error as _};
    use std::time::Duration;

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let Some(text) = Option::<String>::deserialize(d)? else {
            return Ok(None);
        };
        super::parse_duration(&text)
            .map(Some)
            .map_err(D::Error::custom)
    }
}

macro_rules! setters {
    ($($key:ident: $ty:ty, $doc:literal;)*) => {
        impl ConfigPatch {
            $(
                #[doc = $doc]
                #[must_use]
                pub fn $key(mut self, value: $ty) -> Self {
                    self.$key = Some(value);
                    self
                }
            )*
        }
    };
}

setters! {
    threshold: u32, "Consecutive counted failures that trip (consecutive rule).";
    failure_rate: f64, "Share of failed calls that trips (failure-rate rule).";
    min_calls: u32, "Calls the window must hold before a rate trips.";
    slow_rate: f64, "Share of slow calls that trips (slow-call rule).";
    recovery: Duration, "Open time before a trial.";
    max_recovery: Duration, "Cap of a growing open time.";
    jitter: f64, "Random spread of each open period, in `[0, 1)`.";
    trial_calls: u32, "Trial calls admitted at once in half-open.";
    success_threshold: u32, "Successful trials needed to close.";
    mode: Mode, "The mode it runs in: normal, observe only, forced open or forced closed (as [`Breaker::reset`](crate::Breaker::reset), [`observe_only`](crate::Breaker::observe_only), [`force_open`](crate::Breaker::force_open), [`force_closed`](crate::Breaker::force_closed)).";
}

impl ConfigPatch {
    /// A patch that changes nothing.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A window of the last `n` calls (rate rules). A new shape starts a
    /// fresh, empty window: see [the module](mod@crate::ops::configure#the-windows-shape).
    #[must_use]
    pub fn window_calls(mut self, n: u32) -> Self {
        self.window = Some(Window::Calls(n));
        self
    }

    /// A window of the calls that ended in the last `d` (rate rules). A new
    /// shape starts a fresh, empty window: see
    /// [the module](mod@crate::ops::configure#the-windows-shape).
    #[must_use]
    pub fn window_time(mut self, d: Duration) -> Self {
        self.window = Some(Window::Time(
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
        ));
        self
    }

    /// The run mode this patch sets, if any.
    pub(crate) fn run_mode(&self) -> Option<Mode> {
        self.mode
    }

    /// `config` with this patch applied, checked, or the first key at fault.
    pub(crate) fn applied_to(&self, config: &Config) -> Result<Config, (&'static str, String)> {
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
                        "the breaker does not use the {rule}; which rules a breaker uses is \
                         set where it is declared"
                    ),
                ))
            }
        };
        if let Some(n) = self.threshold {
            rule(
                "threshold",
                config.uses_consecutive(),
                "consecutive-failure rule",
            )?;
            next.threshold = n;
        }
        if let Some(r) = self.failure_rate {
            rule(
                "failure_rate",
                config.failure_rate > 0.0,
                "failure-rate rule",
            )?;
            // `validate` takes a zero rate as "no failure-rate rule".
            next.failure_rate = failfast_rules::failure_rate(r).map_err(broken)?;
        }
        if let Some(n) = self.min_calls {
            rule("min_calls", config.uses_window(), "a rate rule")?;
            next.min_calls = n;
        }
        if let Some(shape) = self.window {
            rule("window", config.uses_window(), "a rate rule")?;
            next.window = shape;
        }
        if let Some(r) = self.slow_rate {
            rule("slow_rate", config.slow != 0, "slow-call rule")?;
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
        next.validate()
            .map_err(|e| (e.setting(), e.problem().to_owned()))?;
        // As when building: a count window never holds more than its size.
        if let Window::Calls(size) = next.window {
            if self.min_calls.is_some() {
                failfast_rules::min_calls_within(next.min_calls, Some(size)).map_err(broken)?;
            } else if self.window.is_some() {
                failfast_rules::window_holds_min_calls(size, next.min_calls).map_err(broken)?;
            }
        }
        Ok(next)
    }
}

/// An override refused: which breaker (or family), which key, why. Nothing
/// of its patch was applied; what else was depends on the entry point
/// ([`configure::apply_all`](crate::configure::apply_all) applies the other sections, [`configure::from_env`](crate::configure::from_env) nothing).
///
/// Its message names what is at fault: `` breaker `search`: `threshold` … ``
/// for a key, `` `inventory` matches no registered breaker or family `` for a
/// name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigureError {
    breaker: String,
    key: String,
    reason: String,
}

impl ConfigureError {
    pub(crate) fn new(breaker: &str, key: &str, reason: impl Into<String>) -> Self {
        Self {
            breaker: breaker.to_owned(),
            key: key.to_owned(),
            reason: reason.into(),
        }
    }

    /// The breaker's or family's name (as written in the override).
    #[must_use]
    pub fn breaker(&self) -> &str {
        &self.breaker
    }

    /// The key at fault (`threshold`, `recovery`, …; `name` when the name
    /// is: it matches no breaker or family, or several in variables; empty
    /// for a variable that is not `FAILFAST__<BREAKER>__<KEY>`).
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Why it was refused.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for ConfigureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.key.as_str() {
            // The name is at fault, not a key: `inventory` matches no …
            "name" => write!(f, "`{}` {}", self.breaker, self.reason),
            "" => write!(f, "breaker `{}`: {}", self.breaker, self.reason),
            key => write!(f, "breaker `{}`: `{key}` {}", self.breaker, self.reason),
        }
    }
}

impl std::error::Error for ConfigureError {}

/// A duration as the attribute reads it (`failfast_rules::parse_duration`).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    failfast_rules::parse_duration(text).map_err(|e| {
        format!("`{text}` is not a duration ({e}); write it like \"30s\", \"250ms\" or \"1m 30s\"")
    })
}

pub(crate) fn set_from_text(patch: &mut ConfigPatch, key: &str, text: &str) -> Result<(), String> {
    fn number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
        text.parse()
            .map_err(|_| format!("`{text}` is not a number of the expected kind"))
    }
    match key {
        "threshold" => patch.threshold = Some(number(text)?),
        "failure_rate" => patch.failure_rate = Some(number(text)?),
        "min_calls" => patch.min_calls = Some(number(text)?),
        "window" => {
            *patch = match text.parse::<u32>() {
                Ok(n) => std::mem::take(patch).window_calls(n),
                Err(_) => std::mem::take(patch).window_time(parse_duration(text)?),
            };
        }
        "slow_rate" => patch.slow_rate = Some(number(text)?),
        "recovery" => patch.recovery = Some(parse_duration(text)?),
        "max_recovery" => patch.max_recovery = Some(parse_duration(text)?),
        "jitter" => patch.jitter = Some(number(text)?),
        "trial_calls" => patch.trial_calls = Some(number(text)?),
        "success_threshold" => patch.success_threshold = Some(number(text)?),
        "mode" => {
            patch.mode = Some(match text {
                "normal" => Mode::Normal,
                "observe_only" => Mode::ObserveOnly,
                "forced_open" => Mode::ForcedOpen,
                "forced_closed" => Mode::ForcedClosed,
                _ => {
                    return Err(format!(
                        "`{text}` is not a mode; write `normal`, `observe_only`, `forced_open` or `forced_closed`"
                    ));
                }
            });
        }
        _ => {
            return Err(
                "is not a key that can change at run time; expected one of `threshold`, \
                 `failure_rate`, `min_calls`, `window`, `slow_rate`, `recovery`, `max_recovery`, \
                 `jitter`, `trial_calls`, `success_threshold`, `mode`"
                    .to_owned(),
            );
        }
    }
    Ok(())
}
