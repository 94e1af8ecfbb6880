//! The attribute and the runtime accept exactly the same values.
//!
//! For a sample of values of every setting (the edges of each range, 0, 1,
//! the largest and one more, NaN, negative numbers, zero and huge
//! durations, and a spread in between), each side that has the setting
//! must agree on whether the value is accepted:
//!
//! - the attribute, given a literal (`Args::parse`, `check::breaker`, the checks of the
//!   expansion);
//! - the attribute, given a constant (`__private::consts`, what const
//!   evaluation of the breaker's `static` runs);
//! - the builder (`Breaker::builder()`'s setters and `build()`, and
//!   `Family::builder` for a family's settings);
//! - a run-time override (`Breaker::reconfigure`, and
//!   `configure::from_env` for durations written as text).
//!
//! Every side calls `failfast_rules`; this test fails as soon as one of
//! them stops doing so, or adds a rule of its own.

use std::fmt::Debug;
use std::panic::{UnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use failfast_runtime::__private::consts;
use failfast_runtime::{Breaker, Builder, Family};

use crate::attr::{Args, Errors};

/// What each side said of one case: `None` for a side without it.
#[derive(Default)]
struct Verdicts {
    literal: Option<bool>,
    constant: Option<bool>,
    builder: Option<bool>,
    patch: Option<bool>,
}

/// The cases checked, and those on which the sides disagree.
#[derive(Default)]
struct Agreement {
    cases: usize,
    disagreements: Vec<String>,
}

impl Agreement {
    fn check(&mut self, case: impl Debug, verdicts: Verdicts) {
        let given: Vec<(&str, bool)> = [
            ("literal", verdicts.literal),
            ("constant", verdicts.constant),
            ("builder", verdicts.builder),
            ("patch", verdicts.patch),
        ]
        .into_iter()
        .filter_map(|(side, verdict)| Some((side, verdict?)))
        .collect();
        assert!(given.len() >= 2, "{case:?}: fewer than two sides");
        self.cases += 1;
        if given.iter().any(|(_, accepted)| *accepted != given[0].1) {
            self.disagreements.push(format!("{case:?}: {given:?}"));
        }
    }
}

/// Does the attribute accept `args`, written as literals?
fn literal(args: &str) -> bool {
    let mut errors = Errors::default();
    let args = Args::parse(args.parse().expect("tokens"), &mut errors);
    crate::check::breaker(args, &mut errors);
    errors.into_result().is_none()
}

/// Does const evaluation accept what `check` checks? (It panics where
/// const evaluation fails.)
fn constant(check: impl FnOnce() + UnwindSafe) -> bool {
    catch_unwind(check).is_ok()
}

fn builds(builder: Builder) -> bool {
    builder.build().is_ok()
}

/// Does a breaker built by `base` take `patch`?
fn patched(base: Builder, patch: Builder) -> bool {
    let breaker = base.build().expect("a valid base");
    breaker.reconfigure(&patch).is_ok()
}

/// A fixed sequence of pseudo-random numbers (xorshift64).
struct Sample(u64);

impl Sample {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Below 2^bits, for a random number of bits up to `max_bits`: as many
    /// small values as large ones.
    fn spread(&mut self, max_bits: u64) -> u64 {
        let bits = self.next() % (max_bits + 1);
        self.next() & ((1u128 << bits) - 1) as u64
    }
}

/// Counts: every range's edges, and a spread up to `u32::MAX`.
fn counts() -> Vec<u32> {
    let mut values = vec![
        0,
        1,
        2,
        5,
        9,
        10,
        11,
        99,
        100,
        101,
        254,
        255,
        256,
        (1 << 20) - 1,
        1 << 20,
        (1 << 20) + 1,
        (1 << 24) - 2,
        (1 << 24) - 1,
        1 << 24,
        u32::MAX - 1,
        u32::MAX,
    ];
    let mut sample = Sample(0x9E37_79B9_7F4A_7C15);
    values.extend((0..300).map(|_| u32::try_from(sample.spread(32)).unwrap()));
    values
}

/// Shares and fractions: the edges of (0, 1] and [0, 1), values beside
/// them, NaN and infinities, and a spread over [-0.5, 1.5].
fn fractions() -> Vec<f64> {
    let mut values = vec![
        0.0,
        -0.0,
        f64::MIN_POSITIVE,
        1e-300,
        0.001,
        0.2,
        0.5,
        0.999,
        0.999_999_999_999_999_9,
        1.0,
        1.000_000_1,
        1.000_000_000_000_000_2,
        1.5,
        2.0,
        -0.01,
        -0.5,
        -1.0,
        1e308,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    let mut sample = Sample(0x2545_F491_4F6C_DD1D);
    #[allow(clippy::cast_precision_loss)] // a spread, not exact values
    values.extend((0..200).map(|_| (sample.next() % 2_000_001) as f64 / 1_000_000.0 - 0.5));
    values
}

/// Multipliers: the edges of [1, 10], values beside them, NaN and
/// infinities, and a spread over [-1, 12].
fn multipliers() -> Vec<f64> {
    let mut values = vec![
        0.0,
        -0.0,
        0.5,
        0.99,
        0.999_999_999_999_999_9,
        1.0,
        1.000_000_000_000_000_2,
        1.000_001,
        2.0,
        2.5,
        9.99,
        9.999_999_999_999_998,
        10.0,
        10.000_000_000_000_002,
        10.01,
        11.0,
        100.0,
        -1.0,
        -10.0,
        1e308,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    let mut sample = Sample(0x5851_F42D_4C95_7F2D);
    #[allow(clippy::cast_precision_loss)] // a spread, not exact values
    values.extend((0..200).map(|_| (sample.next() % 13_000_001) as f64 / 1_000_000.0 - 1.0));
    values
}

/// Durations, in nanoseconds: 0, 1 ns, the ends of the `u64` range, and a
/// spread over it.
fn durations() -> Vec<u64> {
    let mut values = vec![
        0,
        1,
        2,
        999,
        1_000_000,
        999_999_999,
        1_000_000_000,
        30_000_000_000,
        3_600_000_000_000,
        u64::MAX - 1,
        u64::MAX,
    ];
    let mut sample = Sample(0xD1B5_4A32_D192_ED03);
    values.extend((0..150).map(|_| sample.spread(64)));
    values
}

/// The literal of `value` the attribute reads back exactly; `None` for
/// NaN and infinities, which no literal writes.
fn float_literal(value: f64) -> Option<String> {
    value.is_finite().then(|| format!("{value:?}"))
}

#[test]
fn the_attribute_and_the_runtime_accept_the_same_values() {
    let mut agreement = Agreement::default();
    let rate_rule = || Breaker::builder().failure_rate(0.5);
    let nanos = Duration::from_nanos;

    for n in counts() {
        let threshold = Verdicts {
            literal: Some(literal(&format!("threshold = {n}"))),
            constant: Some(constant(move || {
                let _ = consts::threshold(n);
            })),
            builder: Some(builds(Breaker::builder().threshold(n))),
            patch: Some(patched(Breaker::builder(), Breaker::builder().threshold(n))),
        };
        agreement.check(("threshold", n), threshold);
        let trial_calls = Verdicts {
            literal: Some(literal(&format!("trial_calls = {n}"))),
            constant: Some(constant(move || {
                let _ = consts::trial_calls(n);
            })),
            builder: Some(builds(Breaker::builder().trial_calls(n))),
            patch: Some(patched(
                Breaker::builder(),
                Breaker::builder().trial_calls(n),
            )),
        };
        agreement.check(("trial_calls", n), trial_calls);
        let success_threshold = Verdicts {
            literal: Some(literal(&format!("success_threshold = {n}"))),
            constant: Some(constant(move || {
                let _ = consts::success_threshold(n);
            })),
            builder: Some(builds(Breaker::builder().success_threshold(n))),
            patch: Some(patched(
                Breaker::builder(),
                Breaker::builder().success_threshold(n),
            )),
        };
        agreement.check(("success_threshold", n), success_threshold);
        // Over a time window, which holds any number of calls.
        let min_calls = Verdicts {
            literal: Some(literal(&format!(
                "failure_rate = 0.5, window = \"1m\", min_calls = {n}"
            ))),
            constant: Some(constant(move || {
                let _ = consts::min_calls(n);
            })),
            builder: Some(builds(
                rate_rule()
                    .window_time(Duration::from_secs(60))
                    .min_calls(n),
            )),
            patch: Some(patched(
                rate_rule().window_time(Duration::from_secs(60)),
                Breaker::builder().min_calls(n),
            )),
        };
        agreement.check(("min_calls", n), min_calls);
        let window = Verdicts {
            literal: Some(literal(&format!(
                "failure_rate = 0.5, min_calls = 1, window = {n}"
            ))),
            builder: Some(builds(rate_rule().min_calls(1).window_calls(n))),
            patch: Some(patched(
                rate_rule().min_calls(1),
                Breaker::builder().window_calls(n),
            )),
            ..Verdicts::default()
        };
        agreement.check(("window", n), window);
        let max_keys = Verdicts {
            literal: Some(literal(&format!("key = id, max_keys = {n}"))),
            builder: Some(
                Family::<u32>::builder(Breaker::builder())
                    .max_keys(usize::try_from(n).unwrap())
                    .build()
                    .is_ok(),
            ),
            ..Verdicts::default()
        };
        agreement.check(("max_keys", n), max_keys);
    }
    for percent in 0..=u8::MAX {
        let budget = Verdicts {
            literal: Some(literal(&format!(
                "key = id, max_ejection_percent = {percent}"
            ))),
            builder: Some(
                Family::<u32>::builder(Breaker::builder())
                    .max_ejection_percent(percent)
                    .build()
                    .is_ok(),
            ),
            ..Verdicts::default()
        };
        agreement.check(("max_ejection_percent", percent), budget);
    }

    for value in fractions() {
        let written = float_literal(value);
        let failure_rate = Verdicts {
            literal: written
                .as_ref()
                .map(|v| literal(&format!("failure_rate = {v}"))),
            constant: Some(constant(move || {
                let _ = consts::failure_rate(value);
            })),
            builder: Some(builds(Breaker::builder().failure_rate(value))),
            patch: Some(patched(rate_rule(), Breaker::builder().failure_rate(value))),
        };
        agreement.check(("failure_rate", value), failure_rate);
        let second = Duration::from_secs(1);
        let slow_rate = Verdicts {
            literal: written
                .as_ref()
                .map(|v| literal(&format!("slow = \"1s\", slow_rate = {v}"))),
            constant: Some(constant(move || {
                let _ = consts::slow_rate(value);
            })),
            builder: Some(builds(Breaker::builder().slow(second).slow_rate(value))),
            patch: Some(patched(
                Breaker::builder().slow(second),
                Breaker::builder().slow_rate(value),
            )),
        };
        agreement.check(("slow_rate", value), slow_rate);
        // The builder's setters in the other order.
        let slow_rate_first = Verdicts {
            literal: written
                .as_ref()
                .map(|v| literal(&format!("slow_rate = {v}, slow = \"1s\""))),
            constant: Some(constant(move || {
                let _ = consts::slow_rate(value);
            })),
            builder: Some(builds(Breaker::builder().slow_rate(value).slow(second))),
            ..Verdicts::default()
        };
        agreement.check(("slow_rate before slow", value), slow_rate_first);
        let jitter = Verdicts {
            literal: written.as_ref().map(|v| literal(&format!("jitter = {v}"))),
            constant: Some(constant(move || {
                let _ = consts::jitter(value);
            })),
            builder: Some(builds(Breaker::builder().jitter(value))),
            patch: Some(patched(
                Breaker::builder(),
                Breaker::builder().jitter(value),
            )),
        };
        agreement.check(("jitter", value), jitter);
    }

    for value in multipliers() {
        let shed = Verdicts {
            literal: float_literal(value).map(|v| literal(&format!("shed = {v}"))),
            constant: Some(constant(move || {
                let _ = consts::shed(value);
            })),
            builder: Some(builds(Breaker::builder().shed(value))),
            patch: Some(patched(
                Breaker::builder().shed(2.0),
                Breaker::builder().shed(value),
            )),
        };
        agreement.check(("shed", value), shed);
    }

    for n in durations() {
        let d = nanos(n);
        let recovery = Verdicts {
            literal: Some(literal(&format!("recovery = \"{n}ns\""))),
            constant: Some(constant(move || {
                let _ = consts::recovery(d);
            })),
            builder: Some(builds(Breaker::builder().recovery(d))),
            patch: Some(patched(Breaker::builder(), Breaker::builder().recovery(d))),
        };
        agreement.check(("recovery", n), recovery);
        let slow = Verdicts {
            literal: Some(literal(&format!("slow = \"{n}ns\""))),
            constant: Some(constant(move || {
                let _ = consts::slow(d);
            })),
            builder: Some(builds(Breaker::builder().slow(d))),
            ..Verdicts::default()
        };
        agreement.check(("slow", n), slow);
        let window = Verdicts {
            literal: Some(literal(&format!("failure_rate = 0.5, window = \"{n}ns\""))),
            builder: Some(builds(rate_rule().window_time(d))),
            patch: Some(patched(rate_rule(), Breaker::builder().window_time(d))),
            ..Verdicts::default()
        };
        agreement.check(("window", n), window);
        // Graded shedding's window is `shed_window`, a time longer than
        // zero, …
        let shed_window = Verdicts {
            literal: Some(literal(&format!("shed = 2, shed_window = \"{n}ns\""))),
            builder: Some(builds(Breaker::builder().shed(2.0).shed_window(d))),
            patch: Some(patched(
                Breaker::builder().shed(2.0),
                Breaker::builder().shed_window(d),
            )),
            ..Verdicts::default()
        };
        agreement.check(("shed, shed_window", n), shed_window);
        // … and `window` is a trip rule's: beside `shed` alone, refused.
        let window = Verdicts {
            literal: Some(literal(&format!("shed = 2, window = \"{n}ns\""))),
            builder: Some(builds(Breaker::builder().shed(2.0).window_time(d))),
            patch: Some(patched(
                Breaker::builder().shed(2.0),
                Breaker::builder().window_time(d),
            )),
            ..Verdicts::default()
        };
        agreement.check(("shed, window", n), window);
        // `shed_window` without `shed`.
        let alone = Verdicts {
            literal: Some(literal(&format!("shed_window = \"{n}ns\""))),
            builder: Some(builds(Breaker::builder().shed_window(d))),
            patch: Some(patched(
                Breaker::builder(),
                Breaker::builder().shed_window(d),
            )),
            ..Verdicts::default()
        };
        agreement.check(("shed_window alone", n), alone);
    }
    for n in counts() {
        let window_calls = Verdicts {
            literal: Some(literal(&format!("shed = 2, window = {n}"))),
            builder: Some(builds(Breaker::builder().shed(2.0).window_calls(n))),
            patch: Some(patched(
                Breaker::builder().shed(2.0),
                Breaker::builder().window_calls(n),
            )),
            ..Verdicts::default()
        };
        agreement.check(("shed, window calls", n), window_calls);
        // `min_calls` with `shed` alone: its window is a time (10 s), which
        // holds any number of calls; beside a failure rate, the rate rule's
        // window holds 100.
        let min_calls = Verdicts {
            literal: Some(literal(&format!("shed = 2, min_calls = {n}"))),
            constant: Some(constant(move || {
                let _ = consts::min_calls(n);
            })),
            builder: Some(builds(Breaker::builder().shed(2.0).min_calls(n))),
            patch: Some(patched(
                Breaker::builder().shed(2.0),
                Breaker::builder().min_calls(n),
            )),
        };
        agreement.check(("shed, min_calls", n), min_calls);
        let beside_rate = Verdicts {
            literal: Some(literal(&format!(
                "failure_rate = 0.5, shed = 2, min_calls = {n}"
            ))),
            constant: Some(constant(move || {
                let _ = consts::min_calls_within(consts::min_calls(n), 100);
            })),
            builder: Some(builds(rate_rule().shed(2.0).min_calls(n))),
            patch: Some(patched(
                rate_rule().shed(2.0),
                Breaker::builder().min_calls(n),
            )),
        };
        agreement.check(("failure_rate, shed, min_calls", n), beside_rate);
        let threshold = Verdicts {
            literal: Some(literal(&format!("shed = 2, threshold = {n}"))),
            constant: Some(constant(move || {
                let _ = consts::threshold(n);
            })),
            builder: Some(builds(Breaker::builder().shed(2.0).threshold(n))),
            patch: Some(patched(
                Breaker::builder().shed(2.0).threshold(5),
                Breaker::builder().threshold(n),
            )),
        };
        agreement.check(("shed, threshold", n), threshold);
    }

    // `shed`'s edges beside each rule, window and `min_calls`; a `window`
    // that is no trip rule's, or that would make `threshold` count the
    // failures within it without `shed_window`, is refused on every side
    // but the constant's (which checks `shed` alone, and is given only
    // where the window is a rule's).
    type Shape = (&'static str, fn(Builder) -> Builder);
    let shapes: [Shape; 15] = [
        ("", |b| b),
        ("window = 100", |b| b.window_calls(100)),
        ("window = \"1m\"", |b| {
            b.window_time(Duration::from_secs(60))
        }),
        ("threshold = 5", |b| b.threshold(5)),
        ("threshold = 5, window = 100", |b| {
            b.threshold(5).window_calls(100)
        }),
        ("threshold = 5, window = \"1m\"", |b| {
            b.threshold(5).window_time(Duration::from_secs(60))
        }),
        ("failure_rate = 0.5", |b| b.failure_rate(0.5)),
        ("failure_rate = 0.5, window = 100", |b| {
            b.failure_rate(0.5).window_calls(100)
        }),
        ("min_calls = 20", |b| b.min_calls(20)),
        ("window = \"1m\", min_calls = 20", |b| {
            b.window_time(Duration::from_secs(60)).min_calls(20)
        }),
        ("slow = \"1s\"", |b| b.slow(Duration::from_secs(1))),
        ("shed_window = \"1m\"", |b| {
            b.shed_window(Duration::from_secs(60))
        }),
        ("threshold = 5, window = 100, shed_window = \"1m\"", |b| {
            b.threshold(5)
                .window_calls(100)
                .shed_window(Duration::from_secs(60))
        }),
        ("failure_rate = 0.5, window = \"1m\"", |b| {
            b.failure_rate(0.5).window_time(Duration::from_secs(60))
        }),
        ("slow = \"1s\", window = 100", |b| {
            b.slow(Duration::from_secs(1)).window_calls(100)
        }),
    ];
    for k in [0.99, 1.0, 10.0, 10.01] {
        for (written, set) in shapes {
            let args = if written.is_empty() {
                format!("shed = {k:?}")
            } else {
                format!("shed = {k:?}, {written}")
            };
            let rule_window = !written.contains("window = ")
                || written.contains("rate")
                || written.contains("slow")
                || written.contains("shed_window");
            let edge = Verdicts {
                literal: Some(literal(&args)),
                constant: rule_window.then(|| {
                    constant(move || {
                        let _ = consts::shed(k);
                    })
                }),
                builder: Some(builds(set(Breaker::builder().shed(k)))),
                ..Verdicts::default()
            };
            agreement.check(args, edge);
        }
    }

    // Under `shed`, a `timeout` no longer than `shed_window`, written or
    // the default 10 s.
    let around_ten_seconds = [
        1,
        1_000_000_000,
        9_999_999_999,
        10_000_000_000,
        10_000_000_001,
        30_000_000_000,
        u64::MAX,
    ];
    for k in [0.99, 1.0, 10.0, 10.01] {
        for timeout in around_ten_seconds {
            let timeout_d = nanos(timeout);
            for window in around_ten_seconds.map(Some).into_iter().chain([None]) {
                let written =
                    window.map_or_else(String::new, |w| format!(", shed_window = \"{w}ns\""));
                let window_d = window.map_or(failfast_rules::DEFAULT_SHED_WINDOW, nanos);
                let covers = Verdicts {
                    literal: Some(literal(&format!(
                        "shed = {k:?}{written}, timeout = \"{timeout}ns\""
                    ))),
                    constant: Some(constant(move || {
                        let _ = consts::shed(k);
                        let _ = consts::shed_window_covers_timeout(window_d, timeout_d);
                    })),
                    ..Verdicts::default()
                };
                agreement.check(("shed, shed_window, timeout", k, window, timeout), covers);
            }
        }
    }

    // Between settings: a growing recovery, `slow` under `timeout`.
    let ends = [0, 1, 1_000_000, 1_000_000_000, 30_000_000_000, u64::MAX];
    for start in ends {
        for max in ends {
            let (start_d, max_d) = (nanos(start), nanos(max));
            let growing = Verdicts {
                literal: Some(literal(&format!("recovery = \"{start}ns..{max}ns\""))),
                builder: Some(builds(
                    Breaker::builder().recovery(start_d).max_recovery(max_d),
                )),
                patch: Some(patched(
                    Breaker::builder(),
                    Breaker::builder().recovery(start_d).max_recovery(max_d),
                )),
                ..Verdicts::default()
            };
            agreement.check(("recovery..max_recovery", start, max), growing);
            let slow_under_timeout = Verdicts {
                literal: Some(literal(&format!(
                    "slow = \"{start}ns\", timeout = \"{max}ns\""
                ))),
                constant: Some(constant(move || {
                    let _ = consts::slow_under_timeout(consts::slow(start_d), max_d);
                })),
                ..Verdicts::default()
            };
            // A zero `timeout` is the attribute's own refusal.
            if max != 0 {
                agreement.check(("slow, timeout", start, max), slow_under_timeout);
            }
        }
    }

    // `min_calls` within a count window, written or the default one.
    let sizes = [1, 5, 9, 10, 11, 50, 100, 101, 1000, 1 << 20];
    for min_calls in sizes.into_iter().chain([0, (1 << 20) + 1]) {
        for window in sizes.map(Some).into_iter().chain([None]) {
            let written = window.map_or_else(String::new, |w| format!(", window = {w}"));
            let size = window.unwrap_or(100);
            let base = window.map_or_else(rate_rule, |w| rate_rule().window_calls(w));
            let within = Verdicts {
                literal: Some(literal(&format!(
                    "failure_rate = 0.5{written}, min_calls = {min_calls}"
                ))),
                constant: Some(constant(move || {
                    let _ = consts::min_calls_within(consts::min_calls(min_calls), size);
                })),
                builder: Some(builds(base.clone().min_calls(min_calls))),
                patch: Some(patched(base, Breaker::builder().min_calls(min_calls))),
            };
            agreement.check(("min_calls, window", min_calls, window), within);
            // The window changed under a `min_calls` in force.
            if let (Some(window), 1..=1000) = (window, min_calls) {
                let reshaped = Verdicts {
                    literal: Some(literal(&format!(
                        "failure_rate = 0.5, window = {window}, min_calls = {min_calls}"
                    ))),
                    patch: Some(patched(
                        rate_rule().window_calls(1000).min_calls(min_calls),
                        Breaker::builder().window_calls(window),
                    )),
                    ..Verdicts::default()
                };
                agreement.check(("window under min_calls", min_calls, window), reshaped);
            }
        }
    }

    // `threshold` counting failures within a count window.
    for threshold in [1, 5, 9, 10, 11, 100, 101] {
        for window in [1u32, 5, 10, 100] {
            let within = Verdicts {
                literal: Some(literal(&format!(
                    "threshold = {threshold}, window = {window}"
                ))),
                constant: Some(constant(move || {
                    let _ = consts::threshold_within(consts::threshold(threshold), window);
                })),
                builder: Some(builds(
                    Breaker::builder().threshold(threshold).window_calls(window),
                )),
                patch: Some(patched(
                    Breaker::builder().threshold(1).window_calls(window),
                    Breaker::builder().threshold(threshold),
                )),
            };
            agreement.check(("threshold within window", threshold, window), within);
        }
    }

    // An adaptive `max_concurrent = MIN..=MAX` and
    // `Builder::adaptive_concurrency(min, max)`, for a breaker and for each
    // key of a family.
    let places = [
        0,
        1,
        2,
        10,
        200,
        65_534,
        65_535,
        65_536,
        70_000,
        1 << 20,
        u32::MAX - 1,
        u32::MAX,
    ];
    for min in places {
        for max in places {
            let adaptive = Verdicts {
                literal: Some(literal(&format!("max_concurrent = {min}..={max}"))),
                builder: Some(builds(Breaker::builder().adaptive_concurrency(min, max))),
                ..Verdicts::default()
            };
            agreement.check(("max_concurrent adaptive", min, max), adaptive);
            let keyed = Verdicts {
                literal: Some(literal(&format!(
                    "key = id, max_concurrent = {min}..={max}"
                ))),
                builder: Some(
                    Family::<u32>::builder(Breaker::builder().adaptive_concurrency(min, max))
                        .build()
                        .is_ok(),
                ),
                ..Verdicts::default()
            };
            agreement.check(("key, max_concurrent adaptive", min, max), keyed);
        }
    }

    // Which settings go together: every combination of the rules' keys.
    type Setter = fn(Builder) -> Builder;
    let settings: [(&str, Setter); 9] = [
        ("threshold = 5", |b| b.threshold(5)),
        ("failure_rate = 0.5", |b| b.failure_rate(0.5)),
        ("window = 100", |b| b.window_calls(100)),
        ("window = 5", |b| b.window_calls(5)),
        ("min_calls = 10", |b| b.min_calls(10)),
        ("slow = \"1s\"", |b| b.slow(Duration::from_secs(1))),
        ("slow_rate = 0.5", |b| b.slow_rate(0.5)),
        ("shed = 2", |b| b.shed(2.0)),
        ("window = \"10s\"", |b| {
            b.window_time(Duration::from_secs(10))
        }),
    ];
    let windows = 0b1_0000_1100u32;
    for mask in 0u32..(1 << settings.len()) {
        // One `window` at most: the attribute refuses a key given twice.
        if (mask & windows).count_ones() > 1 {
            continue;
        }
        let chosen: Vec<_> = (0..settings.len())
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| settings[i])
            .collect();
        let args: Vec<&str> = chosen.iter().map(|(written, _)| *written).collect();
        let builder = chosen
            .iter()
            .fold(Breaker::builder(), |builder, (_, set)| set(builder));
        let combination = Verdicts {
            literal: Some(literal(&args.join(", "))),
            builder: Some(builds(builder)),
            ..Verdicts::default()
        };
        agreement.check(args, combination);
    }

    // The duration grammar: the attribute's `recovery = "…"` and the
    // override `FAILFAST__<BREAKER>__RECOVERY=…` read the same texts.
    let mut kept = Vec::new();
    for (i, text) in [
        "30s",
        "250ms",
        "1m 30s",
        " 2m ",
        "1h",
        "1.5s",
        "1ns",
        "0s",
        "0ns",
        "18446744073709551615ns",
        "18446744073709551616ns",
        "584942417355y",
        "30x",
        "30",
        "-1s",
        "",
        " ",
        "s",
    ]
    .into_iter()
    .enumerate()
    {
        let breaker = Arc::new(
            Breaker::builder()
                .name(format!("agreement::durations_{i}"))
                .build()
                .unwrap(),
        );
        failfast_runtime::registry::register(&breaker);
        kept.push(breaker);
        let variable = format!("FAILFAST__AGREEMENT_DURATIONS_{i}__RECOVERY");
        let grammar = Verdicts {
            literal: Some(literal(&format!("recovery = {text:?}"))),
            patch: Some(failfast_runtime::configure::from_env([(variable, text)]).is_ok()),
            ..Verdicts::default()
        };
        agreement.check(("recovery text", text), grammar);
    }

    assert!(
        agreement.disagreements.is_empty(),
        "{} of {} cases are accepted by one side and refused by another:\n{}",
        agreement.disagreements.len(),
        agreement.cases,
        agreement.disagreements.join("\n")
    );
    assert!(agreement.cases > 3_000, "{} cases", agreement.cases);
}
