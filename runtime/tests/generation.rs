//! A permit held across 2^28 + a few transitions is still stale.
//!
//! Outcomes of calls admitted before a transition are ignored, however many
//! transitions happened meanwhile. 2^28 is the period of the 28-bit generation
//! counter the state word had when these tests were written: the counts below
//! are chosen so that with such a counter the held permit's generation comes
//! round to the current one exactly. Any design that keeps stale permits stale
//! passes them for any count.
//!
//! Each test makes 2^28 transitions (`reset()` in a loop): a few seconds in
//! release, minutes in debug, so they are skipped in debug builds:
//!
//! ```text
//! cargo test --release -p failfast-runtime --test generation
//! ```

use std::time::Duration;

use failfast_runtime::{Breaker, ManualClock, State};

const WRAP: u64 = 1 << 28;
const RECOVERY: Duration = Duration::from_secs(1);

fn breaker(clock: &ManualClock) -> Breaker {
    Breaker::builder()
        .threshold(1)
        .recovery(RECOVERY)
        .clock(clock.clone())
        .build()
        .unwrap()
}

fn resets(b: &Breaker, n: u64) {
    for _ in 0..n {
        b.reset();
    }
}

/// A call admitted in Closed, resolved as a failure 2^28 resets later, must not
/// trip the breaker of a later closed period.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "2^28 transitions: cargo test --release -p failfast-runtime --test generation"
)]
fn closed_permit_held_across_2_pow_28_transitions_is_stale() {
    let clock = ManualClock::new();
    let b = breaker(&clock);
    let stale = b.acquire().unwrap();
    resets(&b, WRAP);
    assert_eq!(b.state(), State::Closed);
    stale.failure();
    assert_eq!(
        b.state(),
        State::Closed,
        "a failure admitted 2^28 transitions ago tripped the breaker"
    );
    assert_eq!(b.snapshot().consecutive_failures, 0);
}

/// A trial admitted in an earlier half-open period, resolved as a success 2^28
/// transitions later, must not close the breaker while the real trial runs.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "2^28 transitions: cargo test --release -p failfast-runtime --test generation"
)]
fn trial_permit_held_across_2_pow_28_transitions_is_stale() {
    let clock = ManualClock::new();
    let b = breaker(&clock);
    let _ = b.call(|| Err::<(), _>("down")); // Closed → Open
    clock.advance(RECOVERY);
    let stale = b.acquire().unwrap(); // Open → HalfOpen
    assert!(stale.is_trial());
    // Reset, then trip again and admit a new trial: 2^28 transitions in all.
    resets(&b, WRAP - 2);
    let _ = b.call(|| Err::<(), _>("down")); // Closed → Open
    assert_eq!(b.state(), State::Open);
    clock.advance(RECOVERY);
    let trial = b.acquire().unwrap(); // Open → HalfOpen
    assert!(trial.is_trial());
    stale.success();
    assert_eq!(
        b.state(),
        State::HalfOpen,
        "a trial admitted 2^28 transitions ago closed the breaker while the real trial runs"
    );
    let s = b.snapshot();
    assert_eq!((s.trials_in_flight, s.trial_successes), (1, 0));
    assert!(
        b.acquire().is_err(),
        "the real trial still holds the only slot"
    );
    trial.success();
    assert_eq!(b.state(), State::Closed);
}
