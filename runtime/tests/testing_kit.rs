//! Feature `testing`: breakers on the system clock follow an installed
//! `ManualClock` to the nanosecond, and one test binary has one test clock.
#![cfg(feature = "testing")]

use std::panic::catch_unwind;
use std::time::Duration;

use failfast_runtime::{Breaker, ManualClock, State, registry, testing};

#[test]
fn an_installed_clock_decides_the_open_deadline_to_the_nanosecond() {
    let clock = ManualClock::new();
    testing::install_clock(&clock);
    testing::install_clock(&clock.clone()); // the same clock again: nothing happens
    let recovery = Duration::from_secs(30);
    let b = Breaker::builder()
        .name("kit-deadline")
        .threshold(1)
        .recovery(recovery)
        .build()
        .unwrap();
    let _ = b.call(|| Err::<(), _>("down"));
    assert_eq!(b.state(), State::Open);
    clock.advance(recovery - Duration::from_nanos(1));
    assert_eq!(b.state(), State::Open, "a nanosecond early");
    assert!(b.acquire().is_err());
    clock.advance(Duration::from_nanos(1));
    assert_eq!(b.state(), State::HalfOpen, "at the deadline");
    assert!(b.acquire().is_ok(), "the trial");

    // The attribute's entry point, which decides the common refusal inline,
    // reads the installed clock alike.
    let declared: &'static Breaker = Box::leak(Box::new(
        Breaker::builder()
            .name("kit-deadline-declared")
            .threshold(1)
            .recovery(recovery)
            .build()
            .unwrap(),
    ));
    let _ = declared.call(|| Err::<(), _>("down"));
    clock.advance(recovery - Duration::from_nanos(1));
    assert!(
        failfast_runtime::__private::acquire(declared).is_err(),
        "a nanosecond early"
    );
    clock.advance(Duration::from_nanos(1));
    let trial = failfast_runtime::__private::acquire(declared).expect("the trial, at the deadline");
    trial.record(failfast_runtime::Outcome::Failure);
    clock.advance(recovery * 2);
    assert!(
        failfast_runtime::__private::acquire(declared).is_ok(),
        "the trial, past the deadline"
    );

    let other = ManualClock::new();
    assert!(
        catch_unwind(|| testing::install_clock(&other)).is_err(),
        "a second, different clock in one binary is refused"
    );
}

#[test]
fn reset_by_name_closes_that_breaker_and_says_whether_there_was_one() {
    let b = std::sync::Arc::new(
        Breaker::builder()
            .name("kit-reset")
            .threshold(1)
            // Longer than the other test moves the installed clock.
            .recovery(Duration::from_secs(3600))
            .build()
            .unwrap(),
    );
    registry::register(&b);
    let _ = b.call(|| Err::<(), _>("down"));
    assert_eq!(b.state(), State::Open);
    registry::get("kit-reset")
        .expect("registered")
        .set_mode(failfast_runtime::Mode::Normal);
    assert_eq!(b.state(), State::Closed);
    assert!(registry::get("kit-no-such-breaker").is_none());
}
