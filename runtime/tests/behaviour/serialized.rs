//! Feature `serde`: `Config` survives a round trip and is checked on the way
//! in; snapshots, states, modes and events serialize in `snake_case` with
//! durations as strings.
#![cfg(feature = "serde")]

use std::time::Duration;

use failfast_runtime::{Breaker, Builder, Config, ManualClock, Mode, Outcome};
use serde_json::{Value, json};

fn round_trip(config: &Config) -> Config {
    let text = serde_json::to_string(config).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn configs_of_every_rule_survive_a_round_trip() {
    let configs = [
        Breaker::builder()
            .name(format!("payments@{}", "host-3"))
            .threshold(7)
            .recovery(Duration::from_millis(1_500))
            .max_recovery(Duration::from_secs(600))
            .jitter(0.25)
            .trial_calls(3)
            .success_threshold(2)
            .trial_lease(Duration::from_secs(90)),
        Breaker::builder()
            .name("search")
            .failure_rate(0.07)
            .window_time(Duration::from_secs(60))
            .min_calls(20)
            .slow(Duration::from_nanos(250_000_001))
            .slow_rate(0.5),
        Breaker::builder().name("defaults"),
        Breaker::builder()
            .name("small-window")
            .failure_rate(0.5)
            .window_calls(4),
        // Failures within a window, over time and over calls.
        Breaker::builder()
            .name("within")
            .threshold(5)
            .window_time(Duration::from_secs(10)),
        Breaker::builder()
            .name("within-calls")
            .threshold(3)
            .window_calls(100)
            .slow(Duration::from_secs(1)),
        // The consecutive rule beside a slow-call rule, over the default
        // window and another one.
        Breaker::builder()
            .name("consecutive-slow")
            .threshold(3)
            .slow(Duration::from_secs(1)),
        Breaker::builder()
            .name("consecutive-slow-window")
            .slow(Duration::from_secs(1))
            .window_time(Duration::from_secs(30)),
        // Graded shedding alone, beside each trip rule, over its default
        // window and another one.
        Breaker::builder().name("shed").shed(1.1),
        Breaker::builder()
            .name("shed-window")
            .shed(2.0)
            .shed_window(Duration::from_secs(30))
            .min_calls(40),
        Breaker::builder()
            .name("shed-consecutive")
            .shed(2.0)
            .threshold(8),
        Breaker::builder()
            .name("shed-within")
            .shed(3.5)
            .threshold(8)
            .window_time(Duration::from_secs(20))
            .shed_window(Duration::from_secs(5)),
        Breaker::builder()
            .name("shed-rate-window")
            .shed(2.0)
            .failure_rate(0.5)
            .window_calls(50),
        Breaker::builder()
            .name("shed-rate")
            .shed(2.0)
            .failure_rate(0.9),
        Breaker::builder()
            .name("shed-slow")
            .shed(2.0)
            .slow(Duration::from_secs(2)),
        Breaker::builder()
            .name("adaptive")
            .adaptive_concurrency(10, 200),
        Breaker::builder()
            .name("adaptive-shed")
            .shed(2.0)
            .adaptive_concurrency(1, 65_535),
    ];
    for builder in configs {
        let b = builder.build().unwrap();
        let config = b.config();
        let back = round_trip(&config);
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&config).unwrap()
        );
        assert_eq!(format!("{back:?}"), format!("{config:?}"), "every field");
    }
}

#[test]
fn graded_shedding_is_written_with_its_shed_window_and_without_a_threshold_it_has_not() {
    let alone = Breaker::builder()
        .name("pricing")
        .shed(1.1)
        .build()
        .unwrap();
    let written = serde_json::to_value(alone.config()).unwrap();
    assert_eq!(written["shed"], json!(1.1));
    assert_eq!(written.get("shed_window"), None, "the default, 10 s");
    assert_eq!(
        written.get("window"),
        None,
        "no trip rule to measure over it"
    );
    assert_eq!(written["min_calls"], json!(10));
    let longer = Breaker::builder()
        .name("pricing")
        .shed(1.1)
        .shed_window(Duration::from_secs(30))
        .build()
        .unwrap();
    let written = serde_json::to_value(longer.config()).unwrap();
    assert_eq!(written["shed_window"], json!("30s"));
    assert_eq!(written.get("threshold"), None, "no trip rule of its own");
    let beside = Breaker::builder()
        .name("pricing")
        .shed(2.0)
        .threshold(3)
        .build()
        .unwrap();
    let written = serde_json::to_value(beside.config()).unwrap();
    assert_eq!(
        (&written["shed"], &written["threshold"]),
        (&json!(2.0), &json!(3))
    );
    assert_eq!(
        written.get("window"),
        None,
        "it would read as failures within it"
    );
    let refused = serde_json::from_value::<Config>(json!({"name": "x", "shed": 0.5}))
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("`shed`") && refused.contains("outside [1, 10]"),
        "{refused}"
    );
    let adaptive = Breaker::builder()
        .name("search")
        .adaptive_concurrency(4, 64)
        .build()
        .unwrap();
    let written = serde_json::to_value(adaptive.config()).unwrap();
    assert_eq!(written["max_concurrent"], json!("4..=64"));
    for (range, says) in [
        ("64..=4", "is 64..=4, not a range"),
        ("4..64", "not an adaptive range"),
    ] {
        let refused =
            serde_json::from_value::<Config>(json!({"name": "x", "max_concurrent": range}))
                .unwrap_err()
                .to_string();
        assert!(refused.contains(says), "{refused}");
    }
    // `window` is a trip rule's: with none, refused, pointing at
    // `shed_window`.
    let refused =
        serde_json::from_value::<Config>(json!({"name": "x", "shed": 2.0, "window": "5s"}))
            .unwrap_err()
            .to_string();
    assert!(
        refused.contains("`window`") && refused.contains("`shed_window`"),
        "{refused}"
    );
}

#[test]
fn a_config_is_written_with_the_attribute_keys_and_duration_strings() {
    let b = Breaker::builder()
        .name("payments")
        .threshold(3)
        .recovery(Duration::from_secs(90))
        .build()
        .unwrap();
    assert_eq!(
        serde_json::to_value(b.config()).unwrap(),
        json!({
            "name": "payments",
            "threshold": 3,
            "recovery": "1m 30s",
            "trial_calls": 1,
            "success_threshold": 1,
        })
    );
    let rate = Breaker::builder()
        .name("search")
        .failure_rate(0.5)
        .window_time(Duration::from_secs(10))
        .build()
        .unwrap();
    let v = serde_json::to_value(rate.config()).unwrap();
    assert_eq!(
        (&v["failure_rate"], &v["window"], &v["min_calls"]),
        (&json!(0.5), &json!("10s"), &json!(10))
    );
    assert_eq!(v.get("threshold"), None, "only the rule in use");
}

#[test]
fn a_config_that_cannot_work_is_refused_with_the_setting_named() {
    for (input, setting) in [
        (json!({"name": "a", "threshold": 0}), "threshold"),
        (
            json!({"name": "a", "threshold": 3, "failure_rate": 0.5}),
            "threshold",
        ),
        (json!({"name": "a", "failure_rate": 1.5}), "failure_rate"),
        (json!({"name": "a", "window": 10}), "window"),
        (json!({"name": "a", "recovery": "30x"}), "30x"),
        (json!({"name": "a", "treshold": 3}), "treshold"),
        (json!({"threshold": 3}), "name"),
    ] {
        let error = serde_json::from_value::<Config>(input.clone()).expect_err(&input.to_string());
        assert!(error.to_string().contains(setting), "{input}: {error}");
    }
}

#[test]
fn a_deserialized_config_builds_the_breaker_it_describes() {
    let config: Config =
        serde_json::from_value(json!({"name": "payments", "threshold": 2, "recovery": "10s"}))
            .unwrap();
    let b = Breaker::try_from(config).unwrap();
    assert_eq!(b.name(), "payments");
    for _ in 0..2 {
        b.acquire().unwrap().record(Outcome::Failure);
    }
    let rejected = b.acquire().unwrap_err();
    assert!(rejected.retry_after().unwrap() <= Duration::from_secs(10));
}

/// A breaker named `name` with threshold 1 and a 30 s recovery, on `clock`,
/// opened by one failure.
/// A configuration file's section (a `Builder`): durations as the attribute
/// writes them, each setting it names applied, the others left alone.
#[test]
fn a_file_section_sets_what_it_names_with_durations_as_strings() {
    let section: Builder = serde_json::from_str(
        r#"{ "recovery": "10s", "max_recovery": "1m", "threshold": 4, "mode": "observe_only" }"#,
    )
    .unwrap();
    let b = Breaker::builder()
        .name("serde-section")
        .threshold(2)
        .recovery(Duration::from_secs(30))
        .build()
        .unwrap();
    b.reconfigure(&section).unwrap();
    let config = b.config();
    assert_eq!(config.recovery(), Duration::from_secs(10));
    assert_eq!(config.threshold(), 4);
    assert!(
        format!("{config:?}").contains("max_recovery: 60000000000"),
        "{config:?}"
    );
    assert_eq!(b.snapshot().mode, Mode::ObserveOnly);

    // Built from, a section is the settings it names over the defaults.
    let built = section.build().unwrap();
    assert_eq!(built.config().recovery(), Duration::from_secs(10));
    assert_eq!(built.snapshot().mode, Mode::ObserveOnly);

    // A duration left out changes nothing; one that is not a duration is refused.
    let untouched: Builder = serde_json::from_str(r#"{ "recovery": null }"#).unwrap();
    b.reconfigure(&untouched).unwrap();
    assert_eq!(b.config().recovery(), Duration::from_secs(10));
    let error = serde_json::from_str::<Builder>(r#"{ "recovery": "soon" }"#).unwrap_err();
    assert!(error.to_string().contains("is not a duration"), "{error}");
    assert!(serde_json::from_str::<Builder>(r#"{ "slow": "1s" }"#).is_err());

    // Graded shedding's window, as a file's section writes it.
    let shedding = Breaker::builder()
        .name("file-shed")
        .shed(2.0)
        .build()
        .unwrap();
    let section: Builder = serde_json::from_str(r#"{ "shed_window": "30s" }"#).unwrap();
    shedding.reconfigure(&section).unwrap();
    assert!(
        format!("{:?}", shedding.config()).contains("shed_window: 30000,"),
        "{:?}",
        shedding.config()
    );
}

fn opened(name: &'static str, clock: &ManualClock) -> Breaker {
    let b = Breaker::builder()
        .name(name)
        .threshold(1)
        .recovery(Duration::from_secs(30))
        .clock(clock.clone())
        .build()
        .unwrap();
    b.acquire().unwrap().record(Outcome::Failure);
    b
}

#[test]
fn snapshots_serialize_in_snake_case_with_duration_strings() {
    let clock = ManualClock::new();
    let b = opened("payments", &clock);
    clock.advance(Duration::from_secs(10));
    let _ = b.acquire();
    let v: Value = serde_json::to_value(b.snapshot()).unwrap();
    assert_eq!(v["name"], "payments");
    assert_eq!(v["state"], "open");
    assert_eq!(v["mode"], "normal");
    assert_eq!(v["retry_after"], "20s");
    assert_eq!(v["since_transition"], "10s");
    assert_eq!(
        (&v["calls"], &v["failures"], &v["rejected"]),
        (&json!(2), &json!(1), &json!(1))
    );
    assert!(v["opened_at"].as_str().unwrap().ends_with('Z'), "{v}");
    clock.advance(Duration::from_secs(20));
    assert_eq!(serde_json::to_value(b.state()).unwrap(), "half_open");
}

/// A `ManualClock` advanced by centuries puts the moment the breaker opened
/// before 1970 on the wall clock: the snapshot still serializes, with
/// `opened_at` clamped to the epoch.
#[test]
fn a_snapshot_whose_opening_falls_before_1970_still_serializes() {
    let clock = ManualClock::new();
    let b = opened("opened-before-1970", &clock);
    let years = |n: u64| Duration::from_secs(n * 365 * 86_400);
    clock.advance(years(200));
    let snapshot = b.snapshot();
    assert!(
        snapshot.opened_at.unwrap() < std::time::UNIX_EPOCH,
        "{snapshot:?}"
    );
    let v: Value = serde_json::to_value(&snapshot).unwrap();
    assert_eq!(v["opened_at"], "1970-01-01T00:00:00.000000000Z", "{v}");
}
