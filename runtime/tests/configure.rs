//! Overrides from the environment (`FAILFAST__<BREAKER>__<KEY>`): each key
//! changes the setting its `ConfigPatch` setter changes, and nothing else.

use std::sync::Arc;
use std::time::Duration;

use failfast_runtime::configure::from_vars;
use failfast_runtime::{registry, Breaker, Builder, ConfigPatch, Mode, RunMode};

/// A registered breaker built by `builder`, and an unregistered twin of it.
fn pair(builder: impl Fn() -> Builder) -> (Arc<Breaker>, Breaker) {
    let registered = Arc::new(builder().build().unwrap());
    registry::register(&registered);
    (registered, builder().build().unwrap())
}

/// Sets `key` to `value` on `breaker` through the environment and `patch` on
/// `twin`, then checks that both have the same settings, and that they
/// changed.
fn same_as_patch(breaker: &Breaker, twin: &Breaker, var: &str, value: &str, patch: &ConfigPatch) {
    let before = format!("{:?}", breaker.current_config());
    assert_eq!(
        from_vars([(var.to_owned(), value.to_owned())]),
        Ok(1),
        "{var}={value}"
    );
    twin.reconfigure(patch).unwrap();
    let after = format!("{:?}", breaker.current_config());
    assert_ne!(after, before, "{var}={value} changed nothing");
    assert_eq!(
        after,
        format!("{:?}", twin.current_config()),
        "{var}={value}"
    );
}

#[test]
fn every_key_of_a_consecutive_breaker_sets_what_its_setter_sets() {
    let (b, twin) = pair(|| {
        Breaker::builder()
            .name("env::consecutive")
            .threshold(5)
            .recovery(Duration::from_secs(10))
    });
    let set = |key: &str, value: &str, patch: ConfigPatch| {
        let var = format!("FAILFAST__ENV_CONSECUTIVE__{key}");
        same_as_patch(&b, &twin, &var, value, &patch);
    };
    set("THRESHOLD", "7", ConfigPatch::new().threshold(7));
    set(
        "RECOVERY",
        "1m 30s",
        ConfigPatch::new().recovery(Duration::from_secs(90)),
    );
    set(
        "MAX_RECOVERY",
        "10m",
        ConfigPatch::new().max_recovery(Duration::from_secs(600)),
    );
    set("JITTER", "0.25", ConfigPatch::new().jitter(0.25));
    set("TRIAL_CALLS", "3", ConfigPatch::new().trial_calls(3));
    set(
        "SUCCESS_THRESHOLD",
        "2",
        ConfigPatch::new().success_threshold(2),
    );

    // `mode` is not a setting but a state: the breaker observes only, then
    // goes back to normal.
    assert_eq!(
        from_vars([(
            "FAILFAST__ENV_CONSECUTIVE__MODE".to_owned(),
            "observe_only".to_owned()
        )]),
        Ok(1)
    );
    twin.reconfigure(&ConfigPatch::new().mode(RunMode::ObserveOnly))
        .unwrap();
    assert_eq!((b.mode(), twin.mode()), (Mode::Disabled, Mode::Disabled));
    assert_eq!(
        from_vars([(
            "FAILFAST__ENV_CONSECUTIVE__MODE".to_owned(),
            "normal".to_owned()
        )]),
        Ok(1)
    );
    assert_eq!(b.mode(), Mode::Normal);
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
    let set = |key: &str, value: &str, patch: ConfigPatch| {
        let var = format!("FAILFAST__ENV_RATES__{key}");
        same_as_patch(&b, &twin, &var, value, &patch);
    };
    set(
        "FAILURE_RATE",
        "0.75",
        ConfigPatch::new().failure_rate(0.75),
    );
    set("MIN_CALLS", "20", ConfigPatch::new().min_calls(20));
    set("SLOW_RATE", "0.25", ConfigPatch::new().slow_rate(0.25));
    set("WINDOW", "50", ConfigPatch::new().window_calls(50));
    set(
        "WINDOW",
        "2m",
        ConfigPatch::new().window_time(Duration::from_secs(120)),
    );
}
