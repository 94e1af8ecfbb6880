//! Overrides from the environment (`FAILFAST__<BREAKER>__<KEY>`): each key
//! changes the setting its `Builder` setter changes, and nothing else.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use failfast_runtime::configure::{self, from_env};
use failfast_runtime::{Breaker, Builder, Mode, registry};

/// A registered breaker built by `builder`, and an unregistered twin of it.
fn pair(builder: impl Fn() -> Builder) -> (Arc<Breaker>, Breaker) {
    let registered = Arc::new(builder().build().unwrap());
    registry::register(&registered);
    (registered, builder().build().unwrap())
}

/// Sets `key` to `value` on `breaker` through the environment and `patch` on
/// `twin`, then checks that both have the same settings, and that they
/// changed.
fn same_as_patch(breaker: &Breaker, twin: &Breaker, var: &str, value: &str, patch: &Builder) {
    let before = format!("{:?}", breaker.config());
    assert_eq!(
        from_env([(var.to_owned(), value.to_owned())]),
        Ok(1),
        "{var}={value}"
    );
    twin.reconfigure(patch).unwrap();
    let after = format!("{:?}", breaker.config());
    assert_ne!(after, before, "{var}={value} changed nothing");
    assert_eq!(after, format!("{:?}", twin.config()), "{var}={value}");
}

#[test]
fn the_shedding_multiplier_is_set_as_its_setter_sets_it() {
    let (b, twin) = pair(|| Breaker::builder().name("env::shed").shed(2.0));
    same_as_patch(
        &b,
        &twin,
        "FAILFAST__ENV_SHED__SHED",
        "1.5",
        &Breaker::builder().shed(1.5),
    );
}

#[test]
fn the_shedding_window_is_set_as_its_setter_sets_it() {
    let (b, twin) = pair(|| Breaker::builder().name("env::shed-window").shed(2.0));
    same_as_patch(
        &b,
        &twin,
        "FAILFAST__ENV_SHED_WINDOW__SHED_WINDOW",
        "30s",
        &Breaker::builder().shed_window(Duration::from_secs(30)),
    );
    // Only where the breaker sheds.
    let (plain, _) = pair(|| Breaker::builder().name("env::no-shed-window"));
    let errors = from_env([(
        "FAILFAST__ENV_NO_SHED_WINDOW__SHED_WINDOW".to_owned(),
        "30s".to_owned(),
    )])
    .unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].key(), "shed_window", "{}", errors[0]);
    assert_eq!(plain.config().threshold(), 5);
}

#[test]
fn every_key_of_a_consecutive_breaker_sets_what_its_setter_sets() {
    let (b, twin) = pair(|| {
        Breaker::builder()
            .name("env::consecutive")
            .threshold(5)
            .recovery(Duration::from_secs(10))
    });
    let set = |key: &str, value: &str, patch: Builder| {
        let var = format!("FAILFAST__ENV_CONSECUTIVE__{key}");
        same_as_patch(&b, &twin, &var, value, &patch);
    };
    set("THRESHOLD", "7", Breaker::builder().threshold(7));
    set(
        "RECOVERY",
        "1m 30s",
        Breaker::builder().recovery(Duration::from_secs(90)),
    );
    set(
        "MAX_RECOVERY",
        "10m",
        Breaker::builder().max_recovery(Duration::from_secs(600)),
    );
    set("JITTER", "0.25", Breaker::builder().jitter(0.25));
    set("TRIAL_CALLS", "3", Breaker::builder().trial_calls(3));
    set(
        "SUCCESS_THRESHOLD",
        "2",
        Breaker::builder().success_threshold(2),
    );

    // `mode` is not a setting but a state: the breaker observes only, then
    // goes back to normal.
    assert_eq!(
        from_env([(
            "FAILFAST__ENV_CONSECUTIVE__MODE".to_owned(),
            "observe_only".to_owned()
        )]),
        Ok(1)
    );
    twin.reconfigure(&Breaker::builder().mode(Mode::ObserveOnly))
        .unwrap();
    assert_eq!(
        (b.snapshot().mode, twin.snapshot().mode),
        (Mode::ObserveOnly, Mode::ObserveOnly)
    );
    assert_eq!(
        from_env([(
            "FAILFAST__ENV_CONSECUTIVE__MODE".to_owned(),
            "normal".to_owned()
        )]),
        Ok(1)
    );
    assert_eq!(b.snapshot().mode, Mode::Normal);
    // Every mode has its word.
    for (word, mode) in [
        ("forced_open", Mode::ForcedOpen),
        ("forced_closed", Mode::ForcedClosed),
        ("observe_only", Mode::ObserveOnly),
        ("normal", Mode::Normal),
    ] {
        let var = "FAILFAST__ENV_CONSECUTIVE__MODE".to_owned();
        assert_eq!(from_env([(var, word.to_owned())]), Ok(1), "{word}");
        assert_eq!(b.snapshot().mode, mode, "{word}");
    }
    let refused = from_env([(
        "FAILFAST__ENV_CONSECUTIVE__MODE".to_owned(),
        "disabled".to_owned(),
    )]);
    assert!(refused.is_err_and(|e| e[0].key() == "mode"));
}

#[test]
fn every_key_of_a_rate_breaker_sets_what_its_setter_sets() {
    let (b, twin) = pair(|| {
        Breaker::builder()
            .name("env::rates")
            .failure_rate(0.5)
            .window_calls(100)
            .min_calls(10)
            .slow(Duration::from_secs(1))
            .slow_rate(0.5)
    });
    let set = |key: &str, value: &str, patch: Builder| {
        let var = format!("FAILFAST__ENV_RATES__{key}");
        same_as_patch(&b, &twin, &var, value, &patch);
    };
    set(
        "FAILURE_RATE",
        "0.75",
        Breaker::builder().failure_rate(0.75),
    );
    set("MIN_CALLS", "20", Breaker::builder().min_calls(20));
    set("SLOW_RATE", "0.25", Breaker::builder().slow_rate(0.25));
    set("WINDOW", "50", Breaker::builder().window_calls(50));
    set(
        "WINDOW",
        "2m",
        Breaker::builder().window_time(Duration::from_secs(120)),
    );
}

/// A registered breaker of `name` with `threshold`.
fn registered(name: &'static str, threshold: u32) -> Arc<Breaker> {
    let b = Arc::new(
        Breaker::builder()
            .name(name)
            .threshold(threshold)
            .build()
            .unwrap(),
    );
    registry::register(&b);
    b
}

fn threshold(b: &Breaker) -> u32 {
    b.config().threshold()
}

/// `pay.charge` and `pay-charge` are both `PAY_CHARGE` in variables: the
/// variable cannot say which it means, so it is refused, listing both.
#[test]
fn a_variable_matching_two_breaker_names_is_refused_with_both_names() {
    let dotted = registered("clash.charge", 5);
    let dashed = registered("clash-charge", 5);
    let errors = from_env([("FAILFAST__CLASH_CHARGE__THRESHOLD", "2")]).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        (errors[0].name(), errors[0].key()),
        ("CLASH_CHARGE", "name")
    );
    assert!(
        errors[0]
            .reason()
            .contains("matches 2 names of breakers or families, `clash-charge`, `clash.charge`"),
        "{}",
        errors[0]
    );
    assert_eq!((threshold(&dotted), threshold(&dashed)), (5, 5));
    // By name, each can still be set.
    configure::apply("clash.charge", Breaker::builder().threshold(3)).unwrap();
    assert_eq!((threshold(&dotted), threshold(&dashed)), (3, 5));
}

/// A name with no ASCII letter or digit maps to the empty name in
/// variables: a variable naming the empty breaker is refused, and changes
/// none of them.
#[test]
fn a_breaker_whose_name_has_no_ascii_letter_cannot_be_set_from_the_environment() {
    let cyrillic = registered("платежи", 5);
    let chinese = registered("支付", 5);
    let errors = from_env([("FAILFAST____THRESHOLD", "2")]).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!((errors[0].name(), errors[0].key()), ("", "name"));
    assert!(
        errors[0]
            .reason()
            .contains("cannot be set from the environment"),
        "{}",
        errors[0]
    );
    assert_eq!((threshold(&cyrillic), threshold(&chinese)), (5, 5));
    configure::apply("支付", Breaker::builder().threshold(3)).unwrap();
    assert_eq!((threshold(&cyrillic), threshold(&chinese)), (5, 3));
}

/// Breakers built at run time may share a name: `configure`, `apply` and
/// the environment change every live one of them, or none.
#[test]
fn every_live_breaker_of_a_shared_name_is_configured_or_none() {
    let first = registered("twins::shared", 5);
    let second = registered("twins::shared", 5);
    configure::apply("twins::shared", Breaker::builder().threshold(7)).unwrap();
    assert_eq!((threshold(&first), threshold(&second)), (7, 7));
    assert_eq!(
        from_env([("FAILFAST__TWINS_SHARED__THRESHOLD", "4")]),
        Ok(2),
        "two breakers changed"
    );
    assert_eq!((threshold(&first), threshold(&second)), (4, 4));

    // One of the name cannot take the patch: none changes.
    let counting = registered("twins::mixed", 5);
    let rate = Arc::new(
        Breaker::builder()
            .name("twins::mixed")
            .failure_rate(0.5)
            .build()
            .unwrap(),
    );
    registry::register(&rate);
    let error = configure::apply("twins::mixed", Breaker::builder().threshold(2)).unwrap_err();
    assert_eq!((error.name(), error.key()), ("twins::mixed", "threshold"));
    assert_eq!(threshold(&counting), 5, "nothing applied");
    configure::apply("twins::mixed", Breaker::builder().trial_calls(3)).unwrap();
    for b in [&counting, &rate] {
        let config = format!("{:?}", b.config());
        assert!(config.contains("trial_calls: 3"), "{config}");
    }
}

/// A variable that is not UTF-8: ignored unless it is under `FAILFAST__`,
/// refused (never a panic) when it is, and then nothing applies.
#[cfg(unix)]
#[test]
fn variables_that_are_not_utf8_are_ignored_or_refused() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    let b = registered("env::bytes", 5);
    let os = |bytes: &[u8]| OsString::from_vec(bytes.to_vec());
    let good = (os(b"FAILFAST__ENV_BYTES__THRESHOLD"), os(b"3"));

    let unrelated = (os(b"caf\xE9"), os(b"cr\xE8me"));
    assert_eq!(from_env([unrelated, good.clone()]), Ok(1));
    assert_eq!(threshold(&b), 3);

    let bad_name = (os(b"FAILFAST__CAF\xE9__THRESHOLD"), os(b"2"));
    let bad_value = (os(b"FAILFAST__ENV_BYTES__RECOVERY"), os(b"1\xE9s"));
    let good = (os(b"FAILFAST__ENV_BYTES__THRESHOLD"), os(b"9"));
    let errors = from_env([bad_name, bad_value, good]).unwrap_err();
    let found: Vec<_> = errors.iter().map(|e| (e.name(), e.key())).collect();
    assert_eq!(
        found,
        [("CAF\u{FFFD}__THRESHOLD", ""), ("env::bytes", "recovery")],
        "{errors:?}"
    );
    assert!(
        errors[0]
            .reason()
            .contains("`FAILFAST__CAF\u{FFFD}__THRESHOLD` is not UTF-8"),
        "{}",
        errors[0]
    );
    assert!(errors[1].reason().contains("`1\u{FFFD}s`"), "{}", errors[1]);
    assert_eq!(threshold(&b), 3, "nothing applied");
}

/// Tests that change the process environment take this lock.
static ENVIRONMENT: Mutex<()> = Mutex::new(());

/// `from_env` reads the process environment (a variable that is not
/// UTF-8 there does no harm) and says how many breakers it changed.
#[test]
fn from_env_applies_the_process_environment_and_counts_the_breakers() {
    let _lock = ENVIRONMENT.lock().unwrap_or_else(|e| e.into_inner());
    let b = registered("env::process", 5);
    // SAFETY: the tests of this binary that touch the environment hold
    // ENVIRONMENT, and nothing else in it reads the environment meanwhile.
    unsafe {
        std::env::set_var("FAILFAST__ENV_PROCESS__THRESHOLD", "6");
        #[cfg(unix)]
        std::env::set_var(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"FAILFAST_TEST_CAF\xE9"),
            "1",
        );
    }
    let changed = configure::from_env(std::env::vars_os());
    // SAFETY: as above.
    unsafe {
        std::env::remove_var("FAILFAST__ENV_PROCESS__THRESHOLD");
        #[cfg(unix)]
        std::env::remove_var(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"FAILFAST_TEST_CAF\xE9"),
        );
    }
    assert_eq!(changed, Ok(1));
    assert_eq!(threshold(&b), 6);
}

/// A rate rule (`rule`) over a count window of 100 with `min_calls` of
/// 10: patched down to a window of 10, `min_calls` takes at most 10 and the
/// window at least 10.
fn window_edges(rule: Builder) -> Breaker {
    let rate = rule.window_calls(100).min_calls(10).build().unwrap();
    rate.reconfigure(&Breaker::builder().window_calls(10))
        .unwrap();
    rate.reconfigure(&Breaker::builder().min_calls(10)).unwrap();
    for (patch, key) in [
        (Breaker::builder().min_calls(11), "min_calls"),
        (Breaker::builder().window_calls(9), "window"),
    ] {
        let error = rate.reconfigure(&patch).unwrap_err();
        assert_eq!(error.key(), key, "{error}");
    }
    rate
}

/// A rule of slow calls alone measures a rate over its window too: a
/// patch's `min_calls` must fit a count window, as for the failure rate.
#[test]
fn a_slow_call_rule_refuses_more_min_calls_than_its_window_holds() {
    window_edges(
        Breaker::builder()
            .slow(Duration::from_millis(100))
            .slow_rate(0.5),
    );
}

/// The edges of what a patch accepts: a count window as large as
/// `min_calls` can trip, a rate of exactly 1 is a rate, and a rate of 0 or
/// a rate for a breaker without that rule is refused.
#[test]
fn a_patch_is_accepted_up_to_its_edges_and_refused_past_them() {
    let rate = window_edges(Breaker::builder().failure_rate(0.5));
    rate.reconfigure(&Breaker::builder().failure_rate(1.0))
        .unwrap();
    let error = rate
        .reconfigure(&Breaker::builder().failure_rate(0.0))
        .unwrap_err();
    assert_eq!(
        (error.key(), error.reason()),
        (
            "failure_rate",
            "is 0, outside (0, 1]; write a share like 0.5 for 50%"
        )
    );

    let counting = Breaker::builder().threshold(3).build().unwrap();
    let error = counting
        .reconfigure(&Breaker::builder().failure_rate(0.5))
        .unwrap_err();
    assert_eq!(error.key(), "failure_rate");
    assert!(
        error
            .reason()
            .contains("does not use the failure-rate rule"),
        "{error}"
    );
}

/// A registered keyed family of `name` with `threshold`, `max_keys` 4.
#[cfg(feature = "keyed")]
fn family(name: &'static str, threshold: u32) -> failfast_runtime::Family<String> {
    let family = failfast_runtime::Family::builder(
        Breaker::builder()
            .name(name)
            .threshold(threshold)
            .max_keys(4),
    )
    .build()
    .unwrap();
    registry::register(&family);
    family
}

/// A keyed family's name reaches every key's breaker, now and later; and
/// `family[key]` one key's, before its first call too. A patch that does not
/// fit the family changes nothing.
#[cfg(feature = "keyed")]
#[test]
fn a_family_is_configured_by_its_name_and_one_key_by_family_and_key() {
    let keys = family("cfg::replicas", 5);
    let before = keys.get("10.0.0.1");
    configure::apply("cfg::replicas", Breaker::builder().threshold(3)).unwrap();
    assert_eq!(threshold(&before), 3);
    assert_eq!(threshold(&keys.get("10.0.0.2")), 3, "made later");

    // A key with no call yet: its first call adopts the breaker set by name.
    configure::apply("cfg::replicas[10.0.0.3]", Breaker::builder().threshold(1)).unwrap();
    assert_eq!(threshold(&keys.get("10.0.0.3")), 1);
    // A key with a breaker already.
    configure::apply("cfg::replicas[10.0.0.1]", Breaker::builder().threshold(2)).unwrap();
    assert_eq!(threshold(&before), 2);
    assert_eq!(threshold(&keys.get("10.0.0.2")), 3, "only that key");

    let refused =
        configure::apply("cfg::replicas", Breaker::builder().failure_rate(0.5)).unwrap_err();
    assert_eq!(
        (refused.name(), refused.key()),
        ("cfg::replicas", "failure_rate")
    );
    let refused =
        configure::apply("cfg::replicas[10.0.0.9]", Breaker::builder().threshold(0)).unwrap_err();
    assert_eq!(
        (refused.name(), refused.key()),
        ("cfg::replicas[10.0.0.9]", "threshold")
    );
    assert!(
        registry::get("cfg::replicas[10.0.0.9]").is_none(),
        "no breaker made for a refused patch"
    );
    // The overflow breaker exists only once used.
    let refused =
        configure::apply("cfg::replicas[*]", Breaker::builder().threshold(2)).unwrap_err();
    assert_eq!(refused.key(), "name");
    assert!(refused.reason().contains("overflow breaker"), "{refused}");
}

/// Variables name families as they name breakers, and a family's name takes
/// part in telling names apart.
#[cfg(feature = "keyed")]
#[test]
fn a_variable_names_a_family_and_one_matching_a_family_and_a_breaker_is_refused() {
    let keys = family("cfg::env.family", 5);
    let member = keys.get("a");
    assert_eq!(
        from_env([("FAILFAST__CFG_ENV_FAMILY__THRESHOLD", "4")]),
        Ok(1),
        "the family counts once"
    );
    assert_eq!(threshold(&member), 4);
    assert_eq!(threshold(&keys.get("b")), 4);

    let _clashing = family("cfg::clash.family", 5);
    let breaker = registered("cfg::clash-family", 5);
    let errors = from_env([("FAILFAST__CFG_CLASH_FAMILY__THRESHOLD", "2")]).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].reason().contains(
            "matches 2 names of breakers or families, `cfg::clash-family`, `cfg::clash.family`"
        ),
        "{}",
        errors[0]
    );
    assert_eq!(threshold(&breaker), 5);
}

/// `apply` applies each section it can: one refused keeps no other from
/// being applied, and every refusal comes back at once.
#[test]
fn each_section_is_applied_on_its_own_and_every_refusal_is_returned() {
    let good = registered("sections::good", 5);
    let bad = registered("sections::bad", 5);
    let patches = std::collections::BTreeMap::from([
        ("sections::good".to_owned(), Breaker::builder().threshold(7)),
        (
            "sections::bad".to_owned(),
            Breaker::builder().threshold(6).trial_calls(0),
        ),
        ("sections::gone".to_owned(), Breaker::builder().threshold(2)),
    ]);
    // A configuration file's sections: one `apply` each.
    let errors: Vec<_> = patches
        .into_iter()
        .filter_map(|(name, settings)| configure::apply(&name, settings).err())
        .collect();
    let found: Vec<_> = errors.iter().map(|e| (e.name(), e.key())).collect();
    assert_eq!(
        found,
        [("sections::bad", "trial_calls"), ("sections::gone", "name")]
    );
    assert_eq!(threshold(&good), 7, "the good section applied");
    assert_eq!(
        threshold(&bad),
        5,
        "a refused section applied whole or not at all"
    );
}

/// The message of a name that matches nothing blames the name, not a key.
#[test]
fn an_unknown_name_is_reported_as_matching_no_breaker_or_family() {
    let error = configure::apply("cfg::nowhere", Breaker::builder().threshold(2)).unwrap_err();
    assert_eq!(error.key(), "name");
    assert_eq!(
        error.to_string(),
        "`cfg::nowhere` matches no registered breaker or family"
    );
    let errors = from_env([("FAILFAST__CFG_NOWHERE__THRESHOLD", "2")]).unwrap_err();
    assert_eq!(
        errors[0].to_string(),
        "`CFG_NOWHERE` (from `FAILFAST__CFG_NOWHERE__THRESHOLD`) matches no registered breaker \
         or family"
    );
}

/// Every kind of refusal, as its message reads: the breaker, the key, then
/// what is wrong with it, as one sentence.
#[test]
fn every_refusal_reads_as_a_sentence() {
    let built = |b: Builder| b.name("sentences").build().unwrap_err().to_string();
    assert_eq!(
        built(Breaker::builder().threshold(0)),
        "breaker `sentences`: `threshold` must be at least 1"
    );
    assert_eq!(
        built(Breaker::builder().failure_rate(1.5)),
        "breaker `sentences`: `failure_rate` is 1.5, outside (0, 1]; write a share like 0.5 for \
         50%"
    );
    assert_eq!(
        built(Breaker::builder().jitter(1.5)),
        "breaker `sentences`: `jitter` is 1.5, outside [0, 1)"
    );
    assert_eq!(
        built(Breaker::builder().shed(11.0)),
        "breaker `sentences`: `shed` is 11, outside [1, 10]; 2 is the usual choice"
    );
    assert_eq!(
        built(Breaker::builder().adaptive_concurrency(64, 4)),
        "breaker `sentences`: `max_concurrent` is 64..=4, not a range with 1 <= min <= max <= \
         65535"
    );
    assert_eq!(
        built(
            Breaker::builder()
                .failure_rate(0.5)
                .window_calls(5)
                .min_calls(6)
        ),
        "breaker `sentences`: `min_calls` is 6, more than the 5 calls the window holds, so the \
         rate rule could never trip; use at most 5"
    );

    // A change the breaker's rules cannot take.
    let counting = Breaker::builder()
        .name("sentences")
        .threshold(3)
        .build()
        .unwrap();
    let refused = |b: Builder| counting.reconfigure(&b).unwrap_err().to_string();
    assert_eq!(
        refused(Breaker::builder().failure_rate(0.5)),
        "breaker `sentences`: `failure_rate` cannot be changed: the breaker does not use the \
         failure-rate rule; which rules a breaker uses is set where it is declared"
    );
    assert_eq!(
        refused(Breaker::builder().window_calls(10)),
        "breaker `sentences`: `window` cannot be changed: the breaker does not use a rule \
         measured over a window; which rules a breaker uses is set where it is declared"
    );
    assert_eq!(
        refused(Breaker::builder().min_calls(10)),
        "breaker `sentences`: `min_calls` cannot be changed: the breaker does not use a rate \
         rule; which rules a breaker uses is set where it is declared"
    );

    // From the environment.
    let b = Arc::new(Breaker::builder().name("env::sentences").build().unwrap());
    registry::register(&b);
    let env = |key: &str, value: &str| {
        let errors =
            from_env([(format!("FAILFAST__ENV_SENTENCES__{key}"), value.to_owned())]).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        errors[0].to_string()
    };
    assert_eq!(
        env("RECOVERY", "soon"),
        "breaker `env::sentences`: `recovery` is `soon`, not a duration (expected number at 0); \
         write it like \"30s\", \"250ms\" or \"1m 30s\""
    );
    assert_eq!(
        env("THRESHOLD", "many"),
        "breaker `env::sentences`: `threshold` is `many`, not a number of the expected kind"
    );
    assert_eq!(
        env("MODE", "off"),
        "breaker `env::sentences`: `mode` is `off`, not a mode; write `normal`, \
         `observe_only`, `forced_open` or `forced_closed`"
    );
    let errors = from_env([("FAILFAST__NOWHERE__THRESHOLD", "3")]).unwrap_err();
    assert_eq!(
        errors[0].to_string(),
        "`NOWHERE` (from `FAILFAST__NOWHERE__THRESHOLD`) matches no registered breaker or family"
    );
}

/// `min_calls` bounds a count window only under a rate rule, which it
/// applies to: the window of failures counted within it shrinks below
/// `min_calls`' default freely.
#[test]
fn a_count_window_without_a_rate_rule_shrinks_below_min_calls() {
    let b = Breaker::builder()
        .name("configure.window_no_rate")
        .threshold(3)
        .window_calls(20)
        .build()
        .unwrap();
    b.reconfigure(&Breaker::builder().window_calls(5)).unwrap();
}
