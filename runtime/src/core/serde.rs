//! `serde` support (feature `serde`): `Config` both ways, durations as
//! strings.
//!
//! Durations are written as [`humantime`](https://docs.rs/humantime) strings
//! (`"30s"`, `"1m 30s"`, `"250ms"`), exact to the nanosecond, and read back
//! in the same form; times of day (`Snapshot::opened_at`) as RFC 3339
//! (`"2026-11-30T07:25:27.123456789Z"`).
//!
//! RFC 3339 writes the years 1970 to 9999 here, and serialising never
//! fails or panics on any clock reading: a time before 1970 (a system
//! clock set back, or a `ManualClock` advanced further than the system
//! clock's distance from 1970, making the moment a breaker opened fall
//! before it) is written as `"1970-01-01T00:00:00.000000000Z"`, and one
//! after 9999 as the last nanosecond of 9999.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ::serde::de::Error as _;
use ::serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::core::config::{
    Builder, Config, DEFAULT_THRESHOLD, DEFAULT_WINDOW_CALLS, Mode, Patch, Window,
};

/// A duration as a string.
pub(crate) fn duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_duration(*d))
}

/// An optional duration as a string, or none.
#[allow(clippy::ref_option)] // the signature serde's `serialize_with` calls
pub(crate) fn option_duration<S: Serializer>(
    d: &Option<Duration>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&humantime::format_duration(*d).to_string()),
        None => s.serialize_none(),
    }
}

/// An optional time of day, RFC 3339, brought within the years it can
/// write (see the module docs).
#[allow(clippy::ref_option)] // the signature serde's `serialize_with` calls
pub(crate) fn option_time<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => {
            s.serialize_some(&humantime::format_rfc3339_nanos(rfc3339_range(*t)).to_string())
        }
        None => s.serialize_none(),
    }
}

/// The last nanosecond of year 9999, after the epoch: the latest time RFC
/// 3339 (and `humantime`, which panics past either end) can write.
const LAST_RFC3339: Duration = Duration::new(253_402_300_799, 999_999_999);

/// `t` clamped to the epoch .. the end of year 9999.
fn rfc3339_range(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(since) => UNIX_EPOCH + since.min(LAST_RFC3339),
        Err(_) => UNIX_EPOCH,
    }
}

/// A duration read from a string such as `"30s"`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Span(Duration);

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        duration(&self.0, s)
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        failfast_rules::parse_duration(&text).map(Span).map_err(|e| {
            D::Error::custom(format_args!(
                "`{text}` is not a duration ({e}); write it like \"30s\", \"250ms\" or \"1m 30s\""
            ))
        })
    }
}

/// A window: a number of calls or a duration.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum WindowRepr {
    Calls(u32),
    Time(Span),
}

/// An optional window, as written in a `Builder`: a number of calls or
/// a duration string.
fn window_option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Window>, D::Error> {
    Ok(Option::<WindowRepr>::deserialize(d)?.map(|w| match w {
        WindowRepr::Calls(n) => Window::Calls(n),
        WindowRepr::Time(t) => Window::Time(u64::try_from(t.0.as_nanos()).unwrap_or(u64::MAX)),
    }))
}

/// A concurrency limit: a number of places, or an adaptive range as the
/// attribute writes it, `"10..=200"`.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum LimitRepr {
    Places(u32),
    Text(String),
}

impl LimitRepr {
    /// Its least and most places (the same for a number).
    fn range<E: ::serde::de::Error>(self) -> Result<(u32, u32), E> {
        match self {
            LimitRepr::Places(n) => Ok((n, n)),
            LimitRepr::Text(text) => crate::core::config::concurrency(&text)
                .map_err(|e| E::custom(format_args!("`max_concurrent` {e}"))),
        }
    }
}

/// An optional concurrency limit, as written in a `Builder`.
fn limit_option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(u32, u32)>, D::Error> {
    Option::<LimitRepr>::deserialize(d)?
        .map(LimitRepr::range)
        .transpose()
}

/// An optional duration, as written in a `Builder`: a duration string.
fn span_option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    Ok(Option::<Span>::deserialize(d)?.map(|s| s.0))
}

/// The settings of a `Builder` read from a configuration file's section:
/// the attribute's keys, durations as strings, read into a [`Patch`] (the
/// fields are `Patch`'s, one for one, and so is the name its errors give).
#[derive(Deserialize)]
#[serde(remote = "Patch", rename = "Patch", deny_unknown_fields)]
struct PatchRepr {
    threshold: Option<u32>,
    failure_rate: Option<f64>,
    min_calls: Option<u32>,
    #[serde(default, deserialize_with = "window_option")]
    window: Option<Window>,
    slow_rate: Option<f64>,
    #[serde(default, deserialize_with = "span_option")]
    recovery: Option<Duration>,
    #[serde(default, deserialize_with = "span_option")]
    max_recovery: Option<Duration>,
    jitter: Option<f64>,
    trial_calls: Option<u32>,
    success_threshold: Option<u32>,
    shed: Option<f64>,
    #[serde(default, deserialize_with = "span_option")]
    shed_window: Option<Duration>,
    #[serde(default, deserialize_with = "span_option")]
    timeout: Option<Duration>,
    #[serde(default, deserialize_with = "limit_option")]
    max_concurrent: Option<(u32, u32)>,
    #[serde(default, deserialize_with = "span_option")]
    max_wait: Option<Duration>,
    mode: Option<Mode>,
    /// A keyed family's own settings (its section only).
    max_keys: Option<usize>,
    max_ejection_percent: Option<u8>,
}

/// The serialized form: the attribute's keys, only those of the rules in use.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Repr {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    threshold: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failure_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    window: Option<WindowRepr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    min_calls: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slow: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slow_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shed: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shed_window: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout: Option<Span>,
    /// A fixed limit, `16`, or an adaptive one as the attribute writes it:
    /// `"10..=200"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_concurrent: Option<LimitRepr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_wait: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    recovery: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_recovery: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jitter: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trial_calls: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    success_threshold: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trial_lease: Option<Span>,
}

impl Serialize for Config {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let span = |nanos: u64| (nanos != 0).then(|| Span(Duration::from_nanos(nanos)));
        let windowed = self.uses_window();
        // `threshold` with `window` reads as failures within the window: the
        // consecutive rule beside a slow-call rule writes its window only
        // when it is not the default, and then leaves out a default
        // threshold (a threshold changed at run time on such a breaker
        // reads back as failures within the window).
        let default_window = matches!(self.window, Window::Calls(n) if n == DEFAULT_WINDOW_CALLS);
        // (Graded shedding's window is `shed_window`.)
        let write_window = windowed && !(self.uses_consecutive() && default_window);
        let write_threshold = self.uses_threshold()
            && !(self.uses_consecutive() && write_window && self.threshold == DEFAULT_THRESHOLD);
        Repr {
            name: self.name.to_string(),
            threshold: write_threshold.then_some(self.threshold),
            failure_rate: (self.failure_rate > 0.0).then_some(self.failure_rate),
            window: write_window.then_some(match self.window {
                Window::Calls(n) => WindowRepr::Calls(n),
                Window::Time(t) => WindowRepr::Time(Span(Duration::from_nanos(t))),
            }),
            min_calls: self.uses_rate().then_some(self.min_calls),
            slow: span(self.slow),
            slow_rate: (self.slow != 0).then_some(self.slow_rate),
            shed: self.sheds().then(|| self.shed()),
            shed_window: (self.sheds() && self.shed_window != 0)
                .then(|| Span(Duration::from_millis(u64::from(self.shed_window)))),
            timeout: span(self.timeout),
            max_concurrent: match (self.bulkhead, self.adaptive_range()) {
                (0, None) => None,
                (0, Some((min, max))) => Some(LimitRepr::Text(format!("{min}..={max}"))),
                (n, _) => Some(LimitRepr::Places(n)),
            },
            max_wait: (self.max_wait != 0).then(|| Span(self.max_wait())),
            recovery: span(self.recovery),
            max_recovery: span(self.max_recovery),
            jitter: (self.jitter > 0.0).then_some(self.jitter),
            trial_calls: Some(self.trial_calls),
            success_threshold: Some(self.success_threshold),
            trial_lease: span(self.lease),
        }
        .serialize(s)
    }
}

/// Checked as [`Builder::build`] checks settings: a configuration that
/// cannot work is an error naming the setting, never a `Config`.
impl<'de> Deserialize<'de> for Config {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = Repr::deserialize(d)?;
        let mut b = Builder::default().name(r.name);
        macro_rules! apply {
            ($($field:ident => $set:expr),* $(,)?) => {$(
                if let Some(v) = r.$field {
                    b = $set(b, v);
                }
            )*};
        }
        apply! {
            threshold => Builder::threshold,
            failure_rate => Builder::failure_rate,
            window => |b: Builder, w| match w {
                WindowRepr::Calls(n) => b.window_calls(n),
                WindowRepr::Time(t) => b.window_time(t.0),
            },
            min_calls => Builder::min_calls,
            slow => |b: Builder, s: Span| b.slow(s.0),
            slow_rate => Builder::slow_rate,
            shed => Builder::shed,
            shed_window => |b: Builder, s: Span| b.shed_window(s.0),
            timeout => |b: Builder, s: Span| b.timeout(s.0),
            recovery => |b: Builder, s: Span| b.recovery(s.0),
            max_recovery => |b: Builder, s: Span| b.max_recovery(s.0),
            jitter => Builder::jitter,
            trial_calls => Builder::trial_calls,
            success_threshold => Builder::success_threshold,
            trial_lease => |b: Builder, s: Span| b.trial_lease(s.0),
        }
        match r.max_concurrent {
            // A number is a bulkhead's places, a range the breaker's own.
            Some(LimitRepr::Places(n)) => b = b.bulkhead(n),
            Some(LimitRepr::Text(range)) => {
                let bounds = range.split_once("..=").and_then(|(min, max)| {
                    Some((min.trim().parse().ok()?, max.trim().parse().ok()?))
                });
                let Some((min, max)) = bounds else {
                    return Err(D::Error::custom(format!(
                        "`max_concurrent`: `{range}` is not an adaptive range; write it like \"10..=200\""
                    )));
                };
                b = b.adaptive_concurrency(min, max);
            }
            None => {}
        }
        if let Some(wait) = r.max_wait {
            b = b.max_wait(wait.0);
        }
        b.checked().map_err(D::Error::custom)
    }
}

/// The settings that can change at run time, with the attribute's key names
/// and durations as strings: a configuration file's override for one breaker
/// (see [`configure::apply`](crate::configure::apply)).
impl<'de> Deserialize<'de> for Builder {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        PatchRepr::deserialize(d).map(Builder::from_patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(t: SystemTime) -> String {
        let mut out = Vec::new();
        option_time(&Some(t), &mut serde_json::Serializer::new(&mut out)).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Times RFC 3339 cannot write are clamped to its range, never a panic.
    #[test]
    fn times_out_of_rfc3339_range_are_clamped() {
        let year = Duration::from_secs(365 * 86_400);
        assert_eq!(
            written(UNIX_EPOCH - year),
            r#""1970-01-01T00:00:00.000000000Z""#
        );
        assert_eq!(
            written(UNIX_EPOCH - Duration::from_nanos(1)),
            r#""1970-01-01T00:00:00.000000000Z""#
        );
        assert_eq!(
            written(UNIX_EPOCH + Duration::from_nanos(1)),
            r#""1970-01-01T00:00:00.000000001Z""#
        );
        assert_eq!(
            written(UNIX_EPOCH + LAST_RFC3339),
            r#""9999-12-31T23:59:59.999999999Z""#
        );
        if let Some(later) = (UNIX_EPOCH + LAST_RFC3339).checked_add(year) {
            assert_eq!(written(later), r#""9999-12-31T23:59:59.999999999Z""#);
        }
    }
}
