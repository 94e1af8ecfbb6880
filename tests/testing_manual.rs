//! The test kit with a `ManualClock`: attribute breakers move through Open
//! and HalfOpen as the test moves time, and resets put them back. The clock
//! is installed by every test (the same one), as the kit's docs advise.

use std::sync::LazyLock;
use std::time::Duration;

mod support;
use support::{Down, outcome};

use failfast::{ManualClock, State, circuit_breaker, registry, testing};

static CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);

fn clock() -> &'static ManualClock {
    testing::install_clock(&CLOCK);
    &CLOCK
}

#[circuit_breaker(threshold = 1, recovery = "30s", name = "kit::recovery")]
fn recovering(fail: bool) -> Result<(), Down> {
    outcome(fail)
}

fn state(name: &str) -> State {
    registry::get(name).unwrap().state()
}

#[test]
fn an_attribute_breaker_half_opens_when_the_manual_clock_reaches_recovery() {
    let clock = clock();
    assert_eq!(recovering(true), Err(Down::Failed));
    assert_eq!(state("kit::recovery"), State::Open);
    // The refusal tells the time left on the test clock.
    assert_eq!(
        recovering(false),
        Err(Down::Refused(Some(Duration::from_secs(30))))
    );
    clock.advance(Duration::from_secs(29));
    assert_eq!(state("kit::recovery"), State::Open);
    assert_eq!(
        recovering(false),
        Err(Down::Refused(Some(Duration::from_secs(1))))
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(state("kit::recovery"), State::HalfOpen);
    recovering(false).unwrap();
    assert_eq!(state("kit::recovery"), State::Closed);
}

#[circuit_breaker(threshold = 2, recovery = "1h", name = "kit::reset")]
fn resettable(fail: bool) -> Result<(), Down> {
    outcome(fail)
}

#[test]
fn reset_by_name_closes_the_breaker_and_forgets_its_failures() {
    clock();
    let _ = resettable(true);
    let _ = resettable(true);
    assert_eq!(state("kit::reset"), State::Open);
    failfast::registry::get("kit::reset")
        .expect("registered")
        .set_mode(failfast::Mode::Normal);
    assert_eq!(state("kit::reset"), State::Closed);
    // One failure after the reset does not trip a threshold of 2.
    let _ = resettable(true);
    assert_eq!(state("kit::reset"), State::Closed);
    assert!(failfast::registry::get("kit::no-such-breaker").is_none());
}

#[test]
fn installing_another_clock_in_the_same_binary_panics() {
    clock();
    clock(); // the same clock again: fine
    let other = ManualClock::new();
    let refused = std::panic::catch_unwind(|| testing::install_clock(&other));
    let message = refused.unwrap_err();
    let message = message.downcast_ref::<String>().unwrap();
    assert!(message.contains("once per test binary"), "{message}");
}
