//! The checks' messages and spans, and the values parsed, through both
//! stages as the attribute runs them.

use std::time::Duration;

use crate::attr::grammar::suggest;
use failfast_rules::{DEFAULT_WINDOW_CALLS, Key};

use crate::attr::{Args, BREAKER_KEYS, Concurrency, Errors, Fallback, KEYS, Window};
use failfast_rules::{FailureRule, Place, Resolved, Value};

/// The arguments of `#[circuit_breaker]`, parsed and checked.
fn parse_checked(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
    super::breaker(Args::parse(tokens, errors), errors).args
}

/// The settings of `failfast::breaker!`, parsed and checked.
fn declaration_checked(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
    super::declaration(Args::parse_declaration(tokens, errors), errors).args
}

fn errors_of(tokens: &str) -> Vec<String> {
    let mut errors = Errors::default();
    parse_checked(tokens.parse().unwrap(), &mut errors);
    errors.messages()
}

#[test]
fn every_key_parses() {
    let mut errors = Errors::default();
    let args = parse_checked(
        r#"failure_rate = 0.5, window = "1m", min_calls = 20, slow = "2s", slow_rate = 1,
           timeout = "3s", max_concurrent = 8, recovery = "30s..10m", jitter = 0.2, trial_calls = 3, success_threshold = 2,
           counts = |e: &E| e.is_transient(), ignores = E::BadRequest(_), fallback = Self::cached,
           name = "inventory", crate = ::failfast"#
            .parse()
            .unwrap(),
        &mut errors,
    );
    assert!(errors.into_result().is_none());
    let value = |key| args.setting(key).map(|arg| arg.value);
    assert_eq!(value(Key::FailureRate), Some(Value::Number(0.5)));
    assert!(
        matches!(args.window.as_ref().unwrap().value, Window::Time(d) if d == Duration::from_secs(60))
    );
    assert_eq!(value(Key::SlowRate), Some(Value::Number(1.0)));
    assert_eq!(value(Key::Jitter), Some(Value::Number(0.2)));
    assert_eq!(value(Key::MinCalls), Some(Value::Count(20)));
    assert_eq!(
        value(Key::Slow),
        Some(Value::Duration(Duration::from_secs(2)))
    );
    let recovery = &args.recovery.as_ref().unwrap().value;
    assert_eq!(recovery.start, Duration::from_secs(30));
    assert_eq!(recovery.max, Some(Duration::from_secs(600)));
    assert_eq!(value(Key::TrialCalls), Some(Value::Count(3)));
    assert_eq!(value(Key::SuccessThreshold), Some(Value::Count(2)));
    assert_eq!(
        args.duration(Key::Timeout).map(|arg| arg.value),
        Some(Duration::from_secs(3))
    );
    assert_eq!(args.count(Key::Timeout).map(|arg| arg.value), None);
    assert_eq!(
        args.settings().map(|(key, _)| key).collect::<Vec<_>>(),
        [
            Key::FailureRate,
            Key::MinCalls,
            Key::Slow,
            Key::SlowRate,
            Key::Timeout,
            Key::Jitter,
            Key::TrialCalls,
            Key::SuccessThreshold
        ]
    );
    assert_eq!(
        args.max_concurrent.as_ref().unwrap().value,
        Concurrency::Fixed(8)
    );
}

#[test]
fn keyed_and_shared_keys_are_checked_once_each() {
    assert!(errors_of("key = self.host.as_str(), max_keys = 8, threshold = 2").is_empty());
    let errors = errors_of("max_keys = 8");
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with("`max_keys` bounds a family"),
        "{errors:?}"
    );
    assert_eq!(
        errors_of("key = id, max_keys = 0"),
        ["`max_keys` must be at least 1"]
    );
    // Next to `breaker`, each key of the breaker is one error, `max_keys`
    // included (not also "without `key`"); the function's own keys pass.
    let errors = errors_of("breaker = PAYMENTS, threshold = 2, max_keys = 8, name = \"x\"");
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors
            .iter()
            .all(|e| e.contains("configure the shared breaker where it is declared"))
    );
    assert!(
        errors_of(
            "breaker = PAYMENTS, key = host, counts = E::A, timeout = \"1s\", max_concurrent = 2, \
         crate = ::failfast"
        )
        .is_empty()
    );
    assert_eq!(errors_of("breaker = \"PAYMENTS\"").len(), 1);
    let declared = |tokens: &str| {
        let mut errors = Errors::default();
        declaration_checked(tokens.parse().unwrap(), &mut errors);
        errors.messages()
    };
    assert!(declared("threshold = 5, max_keys = 64, name = \"gateway\"").is_empty());
    let errors = declared("counts = E::A, key = id, threshold = 0");
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].starts_with("`counts` is set by each function"));
    assert!(errors[1].starts_with("`key` is set by each function"));
    // An adaptive limit is the breaker's: declared with it, for one
    // breaker or each member of a family; a fixed one is a function's.
    assert!(declared("max_concurrent = 5..=50, threshold = 5").is_empty());
    assert!(declared("max_concurrent = 5..=50, max_keys = 8").is_empty());
    let errors = declared("max_concurrent = 8");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("a fixed `max_concurrent = N` is a bulkhead"));
    assert_eq!(declared("max_concurrent = 50..=5").len(), 1);
    let errors = errors_of("breaker = PAYMENTS, max_concurrent = 5..=50");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("write it where the breaker is declared"));
}

#[test]
fn slow_is_shorter_than_timeout() {
    for (slow, timeout) in [("3s", "3s"), ("5s", "3s")] {
        let errors = errors_of(&format!("slow = \"{slow}\", timeout = \"{timeout}\""));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("`slow` must be shorter than `timeout`"));
    }
    assert!(errors_of(r#"slow = "2s", timeout = "3s""#).is_empty());
    assert_eq!(errors_of("max_concurrent = 0").len(), 1);
}

#[test]
fn one_error_per_mistake_and_parsing_goes_on() {
    let errors =
        errors_of(r#"treshold = 5, counts = |a, b| a == b, recovery = "30x", threshold = 0"#);
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].starts_with("unknown argument `treshold` (did you mean `threshold`?)"));
    assert!(errors[1].starts_with("invalid duration \"30x\""));
    assert_eq!(errors[2], "`threshold` must be at least 1");
}

#[test]
fn a_bad_value_is_not_also_a_missing_key() {
    assert_eq!(errors_of("failure_rate = 1.5, window = 20").len(), 1);
    assert_eq!(errors_of(r#"slow = "0s", slow_rate = 0.5"#).len(), 1);
}

#[test]
fn contradictions_point_at_the_later_key() {
    let errors = errors_of("threshold = 5, failure_rate = 0.5");
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with("`threshold` and `failure_rate`"));
    assert_eq!(errors_of("window = 10").len(), 1);
    assert_eq!(errors_of("slow_rate = 0.5").len(), 1);
    assert_eq!(
        errors_of("failure_rate = 0.5, window = 10, min_calls = 11").len(),
        1
    );
    assert!(errors_of(r#"slow = "1s", window = 10"#).is_empty());
}

#[test]
fn shed_is_a_multiplier_over_a_time_no_shorter_than_timeout() {
    for accepted in [
        "shed = 1",
        "shed = 1.0",
        "shed = 2",
        "shed = 10",
        "shed = 10.0",
        "shed = K",
        "shed = K * 2.0",
        "shed = 2, threshold = 5",
        "shed = 2, failure_rate = 0.5",
        "shed = 2, failure_rate = 0.5, min_calls = 100",
        "shed = 2, failure_rate = 0.5, window = 20",
        r#"shed = 2, failure_rate = 0.5, window = "1m", min_calls = 500"#,
        r#"shed = 2, slow = "1s", window = "1m""#,
        // `min_calls` with `shed` alone: its window is a time, which
        // holds any number of calls.
        "shed = 2, min_calls = 500",
        r#"shed = 2, shed_window = "1m", min_calls = 5000"#,
        r#"shed = 2, shed_window = "3s", timeout = "3s""#,
        r#"shed = 2, timeout = "10s""#,
        r#"timeout = "1m", shed_window = "2m", shed = 2"#,
        // Failures within a window beside a shedding window of its own.
        r#"shed = 2, threshold = 5, window = 100, shed_window = "5s""#,
        r#"shed = 2, threshold = 5, window = "5s", shed_window = "5s""#,
    ] {
        assert!(errors_of(accepted).is_empty(), "{accepted}");
    }
    let outside = |k: &str| {
        format!(
            "`shed = {k}` is outside [1, 10]: it is the `k` of `1 − k × accepted / sent`, the \
             chance a call is refused (2 is the usual choice)"
        )
    };
    for (refused, message) in [
        ("shed = 0.5", outside("0.5")),
        ("shed = 11", outside("11")),
        ("shed = -2", outside("-2")),
        ("shed = \"2\"", "expected a number, e.g. `shed = 2`".into()),
        (
            r#"shed = 2, window = "5s""#,
            "`window` is the window of a trip rule (`threshold`, `failure_rate`, `slow`), and \
             there is none here: graded shedding's window is `shed_window`, e.g. \
             `shed_window = \"10s\"`"
                .into(),
        ),
        (
            r#"shed = 2, threshold = 10, window = "5s""#,
            "beside `shed`, `window` would make `threshold` count the failures within it \
             instead of failures in a row: for the shedding window write \
             `shed_window = \"10s\"` instead; to count the failures within `window`, write \
             `shed_window` as well"
                .into(),
        ),
        (
            r#"shed_window = "5s""#,
            "`shed_window` needs `shed`: it is the time graded shedding measures over, e.g. \
             `shed = 2, shed_window = \"10s\"`"
                .into(),
        ),
        (
            "shed = 2, shed_window = 100",
            "expected a duration string, e.g. `shed_window = \"30s\"` or \
             `shed_window = \"250ms\"`"
                .into(),
        ),
        (
            r#"shed = 2, shed_window = "1s", timeout = "3s""#,
            "`shed_window` (1s) is shorter than `timeout` (3s): graded shedding's window must \
             be at least as long as the longest call, or a call still running when the \
             window has moved on is counted in no window"
                .into(),
        ),
        (
            r#"shed = 2, timeout = "30s""#,
            "`shed_window` (10s) is shorter than `timeout` (30s): graded shedding's window \
             must be at least as long as the longest call, or a call still running when the \
             window has moved on is counted in no window; without `shed_window`, `shed` \
             measures over 10s: write a `shed_window` at least as long as `timeout`, e.g. \
             `shed_window = \"30s\"`"
                .into(),
        ),
        ("shed = 2, shed = 3", "`shed` is set more than once".into()),
        ("shed = K, shed = 3", "`shed` is set more than once".into()),
        (
            r#"shed = 2, shed_window = "1s", shed_window = "2s""#,
            "`shed_window` is set more than once".into(),
        ),
    ] {
        assert_eq!(errors_of(refused), [message], "{refused}");
    }
    // A `window` is reported at `window`, a short shedding window at
    // its value, the default one at `timeout`'s.
    assert_eq!(columns_of(r#"shed = 2, window = "5s""#), [10]);
    assert_eq!(
        columns_of(r#"shed = 2, threshold = 10, window = "5s""#),
        [26]
    );
    assert_eq!(
        columns_of(r#"shed = 2, shed_window = "1s", timeout = "3s""#),
        [24]
    );
    assert_eq!(columns_of(r#"shed = 2, timeout = "30s""#), [20]);
    assert_eq!(suggest("shd", &KEYS), Some("shed"));
    assert_eq!(suggest("sheds", &KEYS), Some("shed"));
    // A breaker's setting: declared with it, not beside `breaker = …`.
    assert_eq!(errors_of("breaker = PAYMENTS, shed = 2").len(), 1);
}

#[test]
fn min_calls_fits_in_the_count_window_explicit_or_default() {
    let default = errors_of("failure_rate = 0.5, min_calls = 200");
    assert_eq!(default.len(), 1, "{default:?}");
    assert!(
        default[0].starts_with("`min_calls = 200` is more than the 100 calls the default"),
        "{default:?}"
    );
    assert_eq!(errors_of(r#"slow = "1ns", min_calls = 101"#).len(), 1);
    assert!(errors_of(r#"slow = "1ns", min_calls = 100"#).is_empty());
    assert!(errors_of("failure_rate = 0.5, window = 500, min_calls = 200").is_empty());
    // A time window holds any number of calls.
    assert!(errors_of(r#"failure_rate = 0.5, window = "1m", min_calls = 5000"#).is_empty());
    // One mistake, one error: no rate rule at all, or a bad window value.
    assert_eq!(errors_of("min_calls = 200").len(), 1);
    assert_eq!(
        errors_of("failure_rate = 0.5, window = 0, min_calls = 200").len(),
        1
    );
}

#[test]
fn duplicates_are_reported_for_every_key() {
    for key in [
        "threshold = 1",
        "recovery = \"1s\"",
        "counts = E::A",
        "name = \"a\"",
    ] {
        let errors = errors_of(&format!("{key}, {key}"));
        assert_eq!(errors.len(), 1, "{key}");
        assert!(errors[0].ends_with("is set more than once"), "{errors:?}");
    }
}

#[test]
fn suggestions_only_for_near_misses() {
    assert_eq!(suggest("treshold", &KEYS), Some("threshold"));
    assert_eq!(suggest("ignore", &KEYS), Some("ignores"));
    assert_eq!(suggest("retries", &KEYS), None);
    // Edits at the start, in the middle and at the end, up to two.
    assert_eq!(suggest("hreshold", &KEYS), Some("threshold"));
    assert_eq!(suggest("xxthreshold", &KEYS), Some("threshold"));
    assert_eq!(suggest("xxxthreshold", &KEYS), None);
    assert_eq!(suggest("thresholdxx", &KEYS), Some("threshold"));
    assert_eq!(suggest("fallbak", &KEYS), Some("fallback"));
}

/// The attribute's keys are the settings the table gives it, in the
/// table's order, with `key` just before `max_keys` and the attribute's
/// own keys after them; a declaration's, the settings it takes.
#[test]
fn the_keys_are_the_tables_in_its_order_and_the_attributes_own() {
    let settings = |place| -> Vec<&str> {
        Key::ALL
            .iter()
            .filter(|key| key.written_in(place))
            .map(|key| key.name())
            .collect()
    };
    let of_the_table = |keys: &[&'static str]| -> Vec<&'static str> {
        keys.iter()
            .copied()
            .filter(|key| Key::from_name(key).is_some())
            .collect()
    };
    assert_eq!(of_the_table(&KEYS), settings(Place::Attribute));
    assert_eq!(of_the_table(&BREAKER_KEYS), settings(Place::Declaration));
    let at = |name| KEYS.iter().position(|key| *key == name).unwrap();
    assert_eq!(at("key") + 1, at("max_keys"));
    let own = [
        "breaker",
        "counts",
        "ignores",
        "counts_ok",
        "fallback",
        "reject_with",
        "name",
        "crate",
    ];
    assert_eq!(KEYS[KEYS.len() - own.len()..], own);
    assert_eq!(KEYS.len(), settings(Place::Attribute).len() + own.len() + 1);
    assert_eq!(BREAKER_KEYS[BREAKER_KEYS.len() - 2..], ["name", "crate"]);
    assert!(!BREAKER_KEYS.contains(&"timeout") && !BREAKER_KEYS.contains(&"key"));
}

#[test]
fn an_unknown_key_lists_every_key() {
    let errors = errors_of("retries = 3");
    assert_eq!(errors.len(), 1);
    let list = KEYS
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    assert_eq!(
        errors[0],
        format!("unknown argument `retries`; expected one of {list}")
    );
}

/// The column of each error's first token.
fn columns_of(tokens: &str) -> Vec<usize> {
    let mut errors = Errors::default();
    parse_checked(tokens.parse().unwrap(), &mut errors);
    errors
        .into_result()
        .map(|e| e.into_iter().map(|e| e.span().start().column).collect())
        .unwrap_or_default()
}

#[test]
fn the_later_of_two_contradicting_keys_is_the_one_reported() {
    // "threshold = 5, failure_rate = 0.5": `failure_rate` starts at 15.
    assert_eq!(columns_of("threshold = 5, failure_rate = 0.5"), [15]);
    // "failure_rate = 0.5, threshold = 5": `threshold` starts at 20.
    assert_eq!(columns_of("failure_rate = 0.5, threshold = 5"), [20]);
    // "reject_with = f, fallback = g": `fallback` starts at 17.
    assert_eq!(columns_of("reject_with = f, fallback = g"), [17]);
    assert_eq!(columns_of("fallback = g, reject_with = f"), [14]);
    assert_eq!(
        errors_of("reject_with = \"f\"")[0],
        "expected the path of a function from `failfast::Rejected` to the function's \
         error type, e.g. `reject_with = unavailable`"
    );
}

#[test]
fn after_a_bad_value_parsing_resumes_at_the_next_key_only() {
    // Commas and `==` inside a bad value are not the start of a key.
    for value in ["|a, b| a == b", "|a, b| a, b = c", "x, b== c", "x, b ==c"] {
        let errors = errors_of(&format!("counts = {value}, threshold = 0"));
        assert_eq!(
            errors.last().map(String::as_str),
            Some("`threshold` must be at least 1"),
            "{value}: {errors:?}"
        );
    }
    // After a stray token, only `, key =` starts the next argument: not
    // `, x y`, `, x == y` or `, x= =y`.
    for rest in ["x y", "x == y", "x ==y", "x | y"] {
        let errors = errors_of(&format!("jitter = 0.5 0.5, {rest}, threshold = 0"));
        assert_eq!(
            errors,
            [
                "expected `,` before the next argument",
                "`threshold` must be at least 1"
            ],
            "{rest}"
        );
    }
    // A key right after the bad value is found, with or without spaces.
    assert_eq!(errors_of("recovery = \"30x\", threshold=0").len(), 2);
    assert_eq!(errors_of("threshold = 0, name = \"x\"").len(), 1);
}

#[test]
fn settings_take_constants_and_a_key_is_still_set_once() {
    let mut errors = Errors::default();
    let args = parse_checked(
        "threshold = limits::T, recovery = RECOVERY, jitter = J / 2.0"
            .parse()
            .unwrap(),
        &mut errors,
    );
    assert!(errors.messages().is_empty());
    let settings: Vec<Key> = args.consts.iter().map(|c| c.setting).collect();
    assert_eq!(settings, [Key::Threshold, Key::Recovery, Key::Jitter]);
    for twice in [
        "threshold = 5, threshold = T",
        "threshold = T, threshold = 5",
    ] {
        assert_eq!(
            errors_of(twice),
            ["`threshold` is set more than once"],
            "{twice}"
        );
    }
    // Keys that shape the generated code take literals only.
    for literal_only in [
        "timeout = LIMIT",
        "max_concurrent = MAX",
        "failure_rate = 0.5, window = W",
    ] {
        let errors = errors_of(literal_only);
        assert_eq!(errors.len(), 1, "{literal_only}");
        assert!(errors[0].contains("is written as a literal"), "{errors:?}");
    }
}

#[test]
fn numbers_are_checked_with_their_sign_and_bounds() {
    for refused in [
        "failure_rate = -0.5",
        "failure_rate = 0",
        "failure_rate = 0.0",
        "failure_rate = 1.0001",
        "slow = \"1s\", slow_rate = -1",
        "jitter = -0.1",
        "jitter = 1",
    ] {
        assert_eq!(errors_of(refused).len(), 1, "{refused}");
    }
    for accepted in [
        "failure_rate = 1",
        "failure_rate = 0.001",
        "jitter = 0",
        "jitter = 0.99",
    ] {
        assert!(errors_of(accepted).is_empty(), "{accepted}");
    }
    assert_eq!(
        errors_of("failure_rate = -1")[0],
        "`failure_rate` is a share of calls: greater than 0 and at most 1 \
         (0.5 means half of the calls)"
    );
}

#[test]
fn a_growing_recovery_needs_both_ends_in_order() {
    for refused in ["\"..10m\"", "\"30s..\"", "\"30s..10s\"", "\"1m..59s\""] {
        assert_eq!(
            errors_of(&format!("recovery = {refused}")).len(),
            1,
            "{refused}"
        );
    }
    let mut errors = Errors::default();
    let args = parse_checked("recovery = \"30s..30s\"".parse().unwrap(), &mut errors);
    assert!(errors.into_result().is_none());
    let recovery = &args.recovery.as_ref().unwrap().value;
    assert_eq!(
        (recovery.start, recovery.max),
        (Duration::from_secs(30), Some(Duration::from_secs(30)))
    );
}

#[test]
fn fallback_closures_of_every_spelling_are_closures() {
    let fallback = |tokens: &str| {
        let mut errors = Errors::default();
        let args = parse_checked(tokens.parse().unwrap(), &mut errors);
        (
            errors.into_result().map(|e| e.to_string()),
            args.fallback.map(|f| f.value),
        )
    };
    assert!(matches!(
        fallback("fallback = move |e| x(e)"),
        (None, Some(Fallback::Closure(_)))
    ));
    assert!(matches!(
        fallback("fallback = |e| x(e)"),
        (None, Some(Fallback::Closure(_)))
    ));
    let (error, _) = fallback("fallback = || x()");
    assert!(
        error
            .unwrap()
            .starts_with("a `fallback` closure takes the error alone")
    );
}

#[test]
fn counts_are_bounded_by_what_the_runtime_accepts() {
    for (key, max) in [
        ("trial_calls", 255u64),
        ("success_threshold", 255),
        ("threshold", (1 << 24) - 1),
    ] {
        assert!(errors_of(&format!("{key} = {max}")).is_empty(), "{key}");
        let errors = errors_of(&format!("{key} = {}", max + 1));
        assert_eq!(
            errors,
            [format!("`{key}` is too large; the largest value is {max}")]
        );
    }
    let window = 1u64 << 20;
    assert!(errors_of(&format!("failure_rate = 0.5, window = {window}")).is_empty());
    assert_eq!(
        errors_of(&format!("failure_rate = 0.5, window = {}", window + 1)),
        [format!(
            "`window` is too large; the largest value is {window}"
        )]
    );
    assert!(errors_of("failure_rate = 0.5, min_calls = 4294967295, window = \"1m\"").is_empty());
}

#[test]
fn each_mistake_has_its_own_message() {
    assert_eq!(
        errors_of("threshold = -3"),
        ["`threshold` must be a whole number of at least 1, not a negative number"]
    );
    for recovery in [r#""30s..""#, r#""..5m""#, r#"" .. ""#] {
        let errors = errors_of(&format!("recovery = {recovery}"));
        assert_eq!(errors.len(), 1, "{recovery}: {errors:?}");
        assert!(
            errors[0].starts_with("a growing `recovery` needs both ends"),
            "{recovery}: {errors:?}"
        );
    }
    // A qualified path is not a breaker declared with `failfast::breaker!`.
    let errors = errors_of("breaker = <T>::PAYMENTS");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("expected the path of a breaker declared with"),
        "{errors:?}"
    );
}

#[test]
fn max_concurrent_takes_an_adaptive_range_of_literals() {
    let adaptive = |tokens: &str| {
        let mut errors = Errors::default();
        let args = parse_checked(tokens.parse().unwrap(), &mut errors);
        assert!(errors.messages().is_empty(), "{tokens}");
        (args.adaptive_concurrency(), args.bulkhead())
    };
    assert_eq!(
        adaptive("max_concurrent = 10..=200"),
        (Some((10, 200)), None)
    );
    assert_eq!(adaptive("max_concurrent = 1..=1"), (Some((1, 1)), None));
    assert_eq!(
        adaptive("max_concurrent = 65535..=65535"),
        (Some((65535, 65535)), None)
    );
    assert_eq!(
        adaptive("max_concurrent = 1u32..=0x10"),
        (Some((1, 16)), None)
    );
    assert_eq!(adaptive("max_concurrent = 8"), (None, Some(8)));
    for accepted in [
        "key = id, max_concurrent = 2..=8",
        "max_concurrent = 2..=8, shed = 2",
        "max_concurrent = 2..=8, threshold = 100, timeout = \"1s\"",
    ] {
        assert!(errors_of(accepted).is_empty(), "{accepted}");
    }
    const RANGE: &str = "is not an adaptive range: write `MIN..=MAX` with 1 <= MIN <= MAX \
                         <= 65535, e.g. `max_concurrent = 10..=200`";
    const BOTH_ENDS: &str = "an adaptive `max_concurrent` needs both ends, its least and \
                             most places: `MIN..=MAX`, e.g. `max_concurrent = 10..=200`";
    for (refused, message) in [
        (
            "max_concurrent = 0..=10",
            format!("`max_concurrent = 0..=10` {RANGE}"),
        ),
        (
            "max_concurrent = 20..=10",
            format!("`max_concurrent = 20..=10` {RANGE}"),
        ),
        (
            "max_concurrent = 1..=70000",
            format!("`max_concurrent = 1..=70000` {RANGE}"),
        ),
        (
            "max_concurrent = 1..=4294967296",
            "an adaptive `max_concurrent` is a range `MIN..=MAX` with 1 <= MIN <= MAX <= \
             65535, e.g. `max_concurrent = 10..=200`"
                .to_owned(),
        ),
        (
            "max_concurrent = 10..200",
            "an adaptive `max_concurrent` is written with `..=`, both ends included: \
             `max_concurrent = 10..=200` (from 10 to 200 places), not `10..200`"
                .to_owned(),
        ),
        ("max_concurrent = ..=8", BOTH_ENDS.to_owned()),
        ("max_concurrent = 8..", BOTH_ENDS.to_owned()),
        ("max_concurrent = ..", BOTH_ENDS.to_owned()),
        (
            "max_concurrent = MIN..=200",
            "the ends of an adaptive `max_concurrent` are integer literals, e.g. \
             `max_concurrent = 10..=200`; `max_concurrent` takes no constant"
                .to_owned(),
        ),
        (
            "max_concurrent = -1..=8",
            "the ends of an adaptive `max_concurrent` are whole numbers of at least 1, not \
             negative numbers"
                .to_owned(),
        ),
        (
            "max_concurrent = 1..=8, max_wait = \"10ms\"",
            "`max_wait` needs a fixed `max_concurrent = N`: an adaptive limit refuses at \
             once, so that the calls it sheds never wait"
                .to_owned(),
        ),
        (
            "breaker = PAYMENTS, max_concurrent = 2..=8",
            "an adaptive `max_concurrent = MIN..=MAX` is a limit the breaker itself keeps, \
             and this function uses a shared breaker (`breaker = …`); write it where the \
             breaker is declared (`failfast::breaker!(static NAME = max_concurrent = \
             MIN..=MAX, …)`), or here a fixed `max_concurrent = N` (a bulkhead of this \
             function's calls)"
                .to_owned(),
        ),
        (
            "max_concurrent = \"10..=200\"",
            "an adaptive `max_concurrent` is a range written without quotes, `MIN..=MAX`: \
             `max_concurrent = 10..=200`"
                .to_owned(),
        ),
        (
            "max_concurrent = 2..=8, max_concurrent = 4",
            "`max_concurrent` is set more than once".to_owned(),
        ),
    ] {
        assert_eq!(errors_of(refused), [message], "{refused}");
    }
    // A bad range is one mistake: not also `max_wait` beside it.
    assert_eq!(
        errors_of("max_concurrent = 0..=8, max_wait = \"10ms\"").len(),
        1
    );
    // `max_wait` is reported at its key; the half-open range at `..`;
    // bad bounds at the range.
    assert_eq!(
        columns_of("max_concurrent = 1..=8, max_wait = \"10ms\""),
        [24]
    );
    assert_eq!(columns_of("max_concurrent = 10..200"), [19]);
    assert_eq!(columns_of("max_concurrent = 20..=10"), [17]);
    // Fixed or adaptive, a `max_concurrent` beside `breaker` is refused
    // only for the adaptive form.
    assert!(errors_of("breaker = PAYMENTS, max_concurrent = 2").is_empty());
}

/// Generated code imports from the crate's path, where `Self` cannot be
/// written: found by the grammar fuzz once the default `counts` did.
#[test]
fn the_crate_path_is_a_module_path() {
    for value in ["Self::cached", "\"Self::failfast\"", "a::Self"] {
        let errors = errors_of(&format!("crate = {value}"));
        assert_eq!(
            errors,
            ["expected the path of the failfast crate, e.g. `crate = ::failfast`"],
            "{value}"
        );
    }
    assert!(errors_of("crate = crate::reexport").is_empty());
    assert!(errors_of("crate = \"::failfast\"").is_empty());
}

/// What valid arguments mean together.
fn rules_of(tokens: &str) -> Resolved {
    let mut errors = Errors::default();
    let checked = super::breaker(
        Args::parse(tokens.parse().unwrap(), &mut errors),
        &mut errors,
    );
    assert_eq!(errors.messages(), Vec::<String>::new(), "{tokens}");
    checked.rules
}

#[test]
fn a_threshold_with_a_window_counts_the_failures_within_it() {
    for args in [
        r#"threshold = 5, window = "10s""#,
        "window = 20, threshold = 5",
        "threshold = LIMIT, window = 20",
        r#"shed = 2, shed_window = "1m", window = 20, threshold = 5"#,
    ] {
        assert_eq!(rules_of(args).failures, FailureRule::WithinWindow, "{args}");
    }
    for args in [
        "threshold = 5",
        r#"failure_rate = 0.5, window = "10s""#,
        "failure_rate = RATE, window = 20",
        "shed = 3, threshold = 7",
    ] {
        assert_ne!(rules_of(args).failures, FailureRule::WithinWindow, "{args}");
    }
}

#[test]
fn graded_shedding_alone_has_no_trip_rule() {
    for args in [
        "shed = 2",
        "shed = 2.0, min_calls = 20",
        r#"shed = 2, slow = "1s""#,
        "shed = K",
    ] {
        assert_eq!(rules_of(args).failures, FailureRule::Off, "{args}");
    }
    // With a trip rule of its own, literal or constant, the breaker keeps it;
    // without `shed`, the default rule is the consecutive one.
    for args in [
        "shed = 3, threshold = 7",
        "failure_rate = 0.5, shed = 3",
        "threshold = LIMIT, shed = 3",
        "failure_rate = RATE, shed = 3",
        "",
        r#"recovery = "30s""#,
    ] {
        assert_ne!(rules_of(args).failures, FailureRule::Off, "{args}");
    }
}

#[test]
fn min_calls_is_held_to_the_rate_rules_count_window() {
    let window = |args| rules_of(args).min_calls_window;
    assert_eq!(window("failure_rate = 0.5"), Some(DEFAULT_WINDOW_CALLS));
    assert_eq!(
        window(r#"slow = "1s", slow_rate = 0.5"#),
        Some(DEFAULT_WINDOW_CALLS)
    );
    assert_eq!(window("failure_rate = 0.5, window = 20"), Some(20));
    assert_eq!(
        window("failure_rate = RATE, window = 20, min_calls = N"),
        Some(20)
    );
    // Beside a failure rate, graded shedding's `min_calls` is the rate rule's.
    assert_eq!(
        window("failure_rate = 0.5, shed = 2, min_calls = N"),
        Some(DEFAULT_WINDOW_CALLS)
    );
    // A time window holds any number of calls; graded shedding alone
    // measures over a time; the consecutive rule has no rate.
    assert_eq!(window(r#"failure_rate = 0.5, window = "10s""#), None);
    assert_eq!(window("shed = K, min_calls = N"), None);
    assert_eq!(window("threshold = 5"), None);
}

#[test]
fn a_count_window_smaller_than_the_default_min_calls_waits_for_a_full_window() {
    let min_calls = |args| rules_of(args).implied_min_calls;
    assert_eq!(min_calls("window = 5, failure_rate = 0.5"), Some(5));
    assert_eq!(min_calls("window = 2, threshold = 2"), Some(2));
    // A window at least as large as the default, a time window, or
    // `min_calls` written: nothing is implied.
    assert_eq!(min_calls("window = 50, failure_rate = 0.5"), None);
    assert_eq!(min_calls(r#"window = "10s", failure_rate = 0.5"#), None);
    assert_eq!(
        min_calls("window = 5, failure_rate = 0.5, min_calls = 3"),
        None
    );
    assert_eq!(min_calls("failure_rate = 0.5"), None);
}

#[test]
fn constants_keep_their_setting_and_the_order_they_were_written_in() {
    let mut errors = Errors::default();
    let args = parse_checked(
        "recovery = RECOVERY, threshold = limits::T, failure_rate = { RATE * 2.0 }, window = 20"
            .parse()
            .unwrap(),
        &mut errors,
    );
    let settings: Vec<Key> = args.consts.iter().map(|c| c.setting).collect();
    assert_eq!(settings, [Key::Recovery, Key::Threshold, Key::FailureRate]);
    assert!(args.recovery.is_none() && args.setting(Key::Threshold).is_none());
    assert!(matches!(
        args.window.map(|w| w.value),
        Some(Window::Calls(20))
    ));
    // The contradiction of two trip rules is found whatever the form.
    assert_eq!(errors.messages().len(), 1);
}

#[test]
fn max_concurrent_is_a_bulkhead_or_an_adaptive_limit() {
    let mut errors = Errors::default();
    let fixed = parse_checked("max_concurrent = 8".parse().unwrap(), &mut errors);
    assert_eq!(
        (fixed.bulkhead(), fixed.adaptive_concurrency()),
        (Some(8), None)
    );
    let adaptive = parse_checked("max_concurrent = 2..=8".parse().unwrap(), &mut errors);
    assert_eq!(
        (adaptive.bulkhead(), adaptive.adaptive_concurrency()),
        (None, Some((2, 8)))
    );
    assert!(errors.into_result().is_none());
}

#[test]
fn a_value_is_reported_at_the_value_and_a_key_is_known_by_where_it_was_written() {
    let mut errors = Errors::default();
    let args = parse_checked(
        r#"timeout = "3s", max_concurrent = 2, max_wait = "50ms", key = id"#
            .parse()
            .unwrap(),
        &mut errors,
    );
    assert!(errors.into_result().is_none());
    let timeout = args.duration(Key::Timeout).unwrap();
    assert_eq!(
        (timeout.key.start().column, timeout.span.start().column),
        (0, 10)
    );
    let max_wait = args.duration(Key::MaxWait).unwrap();
    assert_eq!(max_wait.key.start().column, 36);
    assert_eq!(args.key.unwrap().key.start().column, 55);
}

#[test]
fn a_declaration_checks_what_only_a_declaration_cannot_hold() {
    let errors = |tokens: &str| {
        let mut errors = Errors::default();
        declaration_checked(tokens.parse().unwrap(), &mut errors);
        errors.messages()
    };
    assert!(errors("threshold = 5, max_concurrent = 2..=8").is_empty());
    assert!(errors("max_keys = 8, max_ejection_percent = 50").is_empty());
    let fixed = errors("max_concurrent = 8");
    assert_eq!(fixed.len(), 1);
    assert!(
        fixed[0].starts_with("a fixed `max_concurrent = N` is a bulkhead"),
        "{fixed:?}"
    );
    let budget = errors("max_ejection_percent = 50");
    assert_eq!(budget.len(), 1);
    assert!(
        budget[0].contains("this declares a single breaker"),
        "{budget:?}"
    );
}

/// The keys written reach the rules' resolution as written: over every
/// combination of the trip rules' keys, literal or constant, the attribute
/// refuses exactly what the resolution refuses, with its messages (what the
/// builder refuses too, as it resolves its settings with the same function).
#[test]
fn every_combination_is_refused_as_the_rules_resolution_refuses_it() {
    use failfast_rules::{Setting, Written};
    /// A setting: its value, or `Setting::Later` for a constant.
    fn given<T>(value: T, constant: bool) -> Setting<T> {
        if constant {
            Setting::Later
        } else {
            Setting::Set(value)
        }
    }
    type Write = fn(&mut Written, bool);
    let keys: [(&str, &str, Write); 10] = [
        ("threshold = 5", "threshold = T", |w, c| {
            w.threshold = given(5, c)
        }),
        ("failure_rate = 0.5", "failure_rate = R", |w, c| {
            w.failure_rate = given(0.5, c);
        }),
        ("window = 100", "", |w, _| {
            w.window = given(Window::Calls(100), false)
        }),
        ("window = 5", "", |w, _| {
            w.window = given(Window::Calls(5), false)
        }),
        ("min_calls = 10", "min_calls = N", |w, c| {
            w.min_calls = given(10, c)
        }),
        ("slow = \"1s\"", "slow = S", |w, c| {
            w.slow = given(Duration::from_secs(1), c);
        }),
        ("slow_rate = 0.5", "slow_rate = R", |w, c| {
            w.slow_rate = given(0.5, c)
        }),
        ("shed = 2", "shed = K", |w, c| w.shed = given(2.0, c)),
        ("window = \"10s\"", "", |w, _| {
            w.window = given(Window::Time(Duration::from_secs(10)), false);
        }),
        ("shed_window = \"1m\"", "", |w, _| {
            w.shed_window = given(Duration::from_secs(60), false);
        }),
    ];
    let windows = 0b01_0000_1100u32;
    let mut cases = 0;
    for constants in [false, true] {
        for mask in 0u32..(1 << keys.len()) {
            if (mask & windows).count_ones() > 1 {
                continue;
            }
            let mut written = Written::NOTHING;
            let mut args = Vec::new();
            for (i, (literal, constant, write)) in keys.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    let as_constant = constants && !constant.is_empty();
                    write(&mut written, as_constant);
                    args.push(if as_constant { *constant } else { *literal });
                }
            }
            let args = args.join(", ");
            let refused: Vec<String> = failfast_rules::resolution(&written)
                .violations
                .iter()
                .map(|v| v.to_string())
                .collect();
            assert_eq!(errors_of(&args), refused, "{args}");
            cases += 1;
        }
    }
    assert!(cases > 1000, "{cases}");
}

/// A literal is accepted exactly when its rule in `failfast_rules`
/// accepts it, at every edge: the rule the builder, a run-time patch and
/// const evaluation hold the same setting to.
#[test]
fn a_literal_is_accepted_exactly_when_its_rule_accepts_it() {
    use failfast_rules as rules;
    let accepted = |args: &str| errors_of(args).is_empty();
    for n in [
        0u64,
        1,
        100,
        255,
        256,
        1 << 20,
        (1 << 20) + 1,
        (1 << 24) - 1,
        1 << 24,
        u64::from(u32::MAX),
        u64::from(u32::MAX) + 1,
    ] {
        for key in [
            Key::Threshold,
            Key::TrialCalls,
            Key::SuccessThreshold,
            Key::MaxEjectionPercent,
            Key::MaxKeys,
        ] {
            let keyed = if key == Key::MaxEjectionPercent || key == Key::MaxKeys {
                "key = id, "
            } else {
                ""
            };
            let args = format!("{keyed}{} = {n}", key.name());
            assert_eq!(accepted(&args), rules::count(key, n).is_ok(), "{args}");
        }
        let window = format!("failure_rate = 0.5, min_calls = 1, window = {n}");
        let fits = rules::count(Key::Window, n).is_ok();
        assert_eq!(accepted(&window), fits, "{window}");
        let min_calls = format!("failure_rate = 0.5, window = \"1m\", min_calls = {n}");
        let fits = rules::count(Key::MinCalls, n).is_ok();
        assert_eq!(accepted(&min_calls), fits, "{min_calls}");
    }
    for value in [
        0.0,
        -0.0,
        1e-300,
        0.5,
        0.999,
        1.0,
        1.000_000_1,
        2.0,
        10.0,
        10.01,
        -1.0,
    ] {
        let share = rules::failure_rate(value).is_ok();
        assert_eq!(accepted(&format!("failure_rate = {value:?}")), share);
        let slow_rate = format!("slow = \"1s\", slow_rate = {value:?}");
        assert_eq!(accepted(&slow_rate), share, "{slow_rate}");
        let jitter = rules::jitter(value).is_ok();
        assert_eq!(accepted(&format!("jitter = {value:?}")), jitter, "{value}");
        let shed = rules::shed(value).is_ok();
        assert_eq!(accepted(&format!("shed = {value:?}")), shed, "{value}");
    }
    // The duration grammar, as a run-time override reads it too.
    for text in [
        "30s",
        "250ms",
        "1m 30s",
        " 2m ",
        "1.5s",
        "1ns",
        "0s",
        "18446744073709551615ns",
        "18446744073709551616ns",
        "30x",
        "30",
        "-1s",
        "",
        "s",
    ] {
        let duration = rules::parse_duration(text).map(rules::recovery);
        let args = format!("recovery = {text:?}");
        assert_eq!(accepted(&args), matches!(duration, Ok(Ok(_))), "{args}");
        let within = format!("failure_rate = 0.5, window = {text:?}");
        let window = rules::parse_duration(text).map(rules::window_time);
        assert_eq!(accepted(&within), matches!(window, Ok(Ok(_))), "{within}");
    }
    for (start, max) in [("1s", "1s"), ("1s", "500ms"), ("0s", "1s"), ("1s", "0s")] {
        let args = format!("recovery = \"{start}..{max}\"");
        let (start, max) = (
            rules::parse_duration(start).unwrap(),
            rules::parse_duration(max).unwrap(),
        );
        let fits = rules::recovery(start).is_ok() && rules::max_recovery(start, max).is_ok();
        assert_eq!(accepted(&args), fits, "{args}");
    }
}

/// `counts_ok` takes the forms of `counts`, is set once, and is one of a
/// function's own keys beside a shared breaker, not a declaration's.
#[test]
fn counts_ok_is_parsed_as_a_matcher_and_set_once() {
    use crate::attr::Matcher;
    let form = |tokens: &str| {
        let mut errors = Errors::default();
        let args = parse_checked(tokens.parse().unwrap(), &mut errors);
        assert!(errors.into_result().is_none(), "{tokens}");
        match args.counts_ok.expect("counts_ok").value {
            Matcher::Predicate(_) => "predicate",
            Matcher::Type(_) => "type",
            Matcher::Pattern(_) => "pattern",
        }
    };
    assert_eq!(
        form("counts_ok = |r: &Response| r.status().is_server_error()"),
        "predicate"
    );
    assert_eq!(form("counts_ok = Reply::Unavailable { .. }"), "pattern");
    assert_eq!(
        form("counts_ok = failfast::classify::HttpClassifier"),
        "type"
    );
    assert_eq!(
        errors_of("counts_ok = |r: &R| true, counts_ok = R::Down"),
        ["`counts_ok` is set more than once"]
    );
    assert!(errors_of("breaker = GATEWAY, counts_ok = R::Down").is_empty());
    let mut errors = Errors::default();
    declaration_checked("counts_ok = R::Down".parse().unwrap(), &mut errors);
    let errors = errors.messages();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("`counts_ok` is set by each function that uses the breaker"),
        "{errors:?}"
    );
}
