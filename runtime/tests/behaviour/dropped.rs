//! A call dropped from outside before it finished (a call-site timeout,
//! `select!`, a disconnected client) is judged by how long it had run: neutral
//! when dropped early, a slow call once it ran longer than `slow` (and a slow
//! trial fails). On a manual clock, so no test waits.

use std::future::{Future, pending};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use failfast_runtime::{Breaker, ManualClock, State};

const SLOW: Duration = Duration::from_secs(2);

fn breaker(clock: &ManualClock) -> Breaker {
    Breaker::builder()
        .slow(SLOW)
        .window_calls(2)
        .min_calls(2)
        .recovery(Duration::from_secs(10))
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// Starts a call of `breaker` that never answers, lets `ran` pass on the
/// clock, then drops it.
fn dropped_after(breaker: &Breaker, clock: &ManualClock, ran: Duration) {
    let mut call = pin!(breaker.call_async(pending::<Result<(), ()>>()));
    let polled = call.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    assert!(matches!(polled, Poll::Pending));
    clock.advance(ran);
}

#[test]
fn dropped_early_is_neutral_and_dropped_after_slow_is_slow() {
    let clock = ManualClock::new();
    let b = breaker(&clock);
    for _ in 0..4 {
        dropped_after(&b, &clock, SLOW / 2);
    }
    let s = b.snapshot();
    assert_eq!(
        (s.state, s.window_calls, s.window_slow),
        (State::Closed, 0, 0)
    );

    dropped_after(&b, &clock, SLOW + Duration::from_millis(1));
    let s = b.snapshot();
    assert_eq!(
        (s.state, s.window_calls, s.window_slow, s.window_failures),
        (State::Closed, 1, 1, 0)
    );
    dropped_after(&b, &clock, SLOW * 3);
    assert_eq!(b.state(), State::Open, "two slow calls of two");
}

#[test]
fn a_trial_dropped_after_slow_fails_and_one_dropped_early_gives_its_slot_back() {
    let clock = ManualClock::new();
    let b = breaker(&clock);
    // Trip by two slow calls, then wait out the open time.
    dropped_after(&b, &clock, SLOW * 2);
    dropped_after(&b, &clock, SLOW * 2);
    assert_eq!(b.state(), State::Open);
    clock.advance(Duration::from_secs(10));

    dropped_after(&b, &clock, SLOW / 2);
    let s = b.snapshot();
    assert_eq!((s.state, s.trials_in_flight), (State::HalfOpen, 0), "{s:?}");

    dropped_after(&b, &clock, SLOW * 2);
    assert_eq!(b.state(), State::Open, "a slow trial is a failed trial");
}
