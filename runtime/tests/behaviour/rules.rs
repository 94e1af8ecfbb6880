//! Trip rules through the public builder: consecutive failures, failure rate over
//! count and time windows, `min_calls`, slow calls, and the builder's validation.
//!
//! Every boundary is tested from both sides: one call short of the verdict the
//! breaker is still closed, and the very call that reaches it opens the breaker.

use std::time::Duration;

use failfast_runtime::{Breaker, Builder, ManualClock, Outcome, State};

const RECOVERY: Duration = Duration::from_secs(30);

fn builder(clock: &ManualClock) -> Builder {
    Breaker::builder().recovery(RECOVERY).clock(clock.clone())
}

fn fail(b: &Breaker) {
    let r = b.call(|| Err::<(), _>("boom"));
    assert!(
        matches!(r, Err(failfast_runtime::Error::Failed(_))),
        "a failing call was rejected"
    );
}

fn succeed(b: &Breaker) {
    b.call(|| Ok::<_, ()>(()))
        .expect("a succeeding call was rejected");
}

fn fails(b: &Breaker, n: usize) {
    for _ in 0..n {
        fail(b);
    }
}

fn succeeds(b: &Breaker, n: usize) {
    for _ in 0..n {
        succeed(b);
    }
}

// ---------------------------------------------------------------- consecutive

#[test]
fn consecutive_rule_trips_exactly_at_the_threshold() {
    for threshold in [1, 2, 3, 5, 8, 20] {
        let clock = ManualClock::new();
        let b = builder(&clock).threshold(threshold).build().unwrap();
        fails(&b, threshold as usize - 1);
        assert_eq!(b.state(), State::Closed, "threshold {threshold}: one below");
        assert_eq!(b.snapshot().consecutive_failures, threshold - 1);
        fail(&b);
        assert_eq!(b.state(), State::Open, "threshold {threshold}: exactly at");
        // The call after the threshold is not needed, and is not admitted.
        let r = b.call(|| -> Result<(), ()> { panic!("the dependency was called") });
        assert!(matches!(r, Err(failfast_runtime::Error::Rejected(_))));
    }
}

#[test]
fn default_threshold_is_five() {
    let clock = ManualClock::new();
    let b = builder(&clock).build().unwrap();
    fails(&b, 4);
    assert_eq!(b.state(), State::Closed);
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_success_resets_the_consecutive_count() {
    let clock = ManualClock::new();
    let b = builder(&clock).threshold(3).build().unwrap();
    for _ in 0..50 {
        fails(&b, 2);
        succeed(&b);
        assert_eq!(b.snapshot().consecutive_failures, 0);
    }
    assert_eq!(b.state(), State::Closed);
    fails(&b, 3);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn neutral_outcomes_neither_count_nor_reset() {
    let clock = ManualClock::new();
    let b = builder(&clock).threshold(3).build().unwrap();
    fails(&b, 2);
    for _ in 0..10 {
        // A 400 is the caller's mistake: neutral.
        let _ = crate::call_counting(&b, |status: &u16| *status >= 500, || Err::<(), u16>(400));
        b.acquire().unwrap().record(Outcome::Neutral);
        drop(b.acquire().unwrap()); // abandoned call
    }
    assert_eq!(b.snapshot().consecutive_failures, 2);
    assert_eq!(b.state(), State::Closed);
    let _ = crate::call_counting(&b, |status: &u16| *status >= 500, || Err::<(), u16>(503));
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_panic_is_a_failure() {
    let clock = ManualClock::new();
    let b = builder(&clock).threshold(2).build().unwrap();
    for _ in 0..2 {
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = b.call(|| -> Result<(), ()> { panic!("dependency client bug") });
        }));
        assert!(caught.is_err(), "the panic must keep unwinding");
    }
    assert_eq!(b.state(), State::Open);
}

// ------------------------------------------------------ failure rate, count window

fn rate_breaker(clock: &ManualClock, rate: f64, window: u32, min_calls: u32) -> Breaker {
    builder(clock)
        .failure_rate(rate)
        .window_calls(window)
        .min_calls(min_calls)
        .build()
        .unwrap()
}

#[test]
fn failure_rate_trips_exactly_at_the_rate_not_one_below() {
    // (rate, window, failures that make exactly that rate). Several of these are
    // pairs where `rate * window` in floating point comes out a hair above the
    // whole number (0.07 * 100 = 7.000000000000001): the breaker must still trip
    // on the 7th failure of 100.
    let cases = [
        (0.5, 10, 5),
        (0.5, 2, 1),
        (1.0, 10, 10),
        (0.1, 10, 1),
        (0.07, 100, 7),
        (0.14, 50, 7),
        (0.28, 25, 7),
        (0.56, 50, 28),
        (0.68, 75, 51),
        (0.3, 10, 3),
        (0.57, 100, 57),
        (0.29, 100, 29),
        (0.25, 8, 2),
    ];
    for (rate, window, at) in cases {
        let clock = ManualClock::new();
        let b = rate_breaker(&clock, rate, window, window);
        // A full window with one failure too few…
        succeeds(&b, (window - at + 1) as usize);
        fails(&b, at as usize - 1);
        let snap = b.snapshot();
        assert_eq!(
            (snap.window_calls, snap.window_failures),
            (u64::from(window), u64::from(at - 1))
        );
        assert_eq!(
            b.state(),
            State::Closed,
            "rate {rate}, window {window}: {} failures is one below",
            at - 1
        );
        // …then one more failure pushes the oldest success out: exactly the rate.
        fail(&b);
        assert_eq!(
            b.state(),
            State::Open,
            "rate {rate}, window {window}: {at} failures is exactly the rate"
        );
    }
}

#[test]
fn no_rate_verdict_before_min_calls() {
    let clock = ManualClock::new();
    let b = rate_breaker(&clock, 0.5, 10, 10);
    // Nine failures out of nine: 100%, but the window does not hold 10 calls yet.
    fails(&b, 9);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().failure_rate, Some(1.0));
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn the_call_that_reaches_min_calls_brings_the_verdict_even_a_success() {
    let clock = ManualClock::new();
    let b = rate_breaker(&clock, 0.5, 10, 4);
    fails(&b, 2);
    succeed(&b);
    assert_eq!(b.state(), State::Closed, "3 calls < min_calls = 4");
    // 2 failures of 4 calls = 50%: the success that makes the 4th call trips it.
    succeed(&b);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn min_calls_below_the_rate_boundary() {
    // min_calls = 4 within a window of 10: 3 failures of 4 calls (75%) trips a
    // 0.75 rule at the 4th call; 2 of 4 does not.
    let clock = ManualClock::new();
    let b = rate_breaker(&clock, 0.75, 10, 4);
    succeed(&b);
    fails(&b, 2);
    assert_eq!(b.state(), State::Closed, "3 calls < min_calls");
    fail(&b);
    assert_eq!(b.state(), State::Open, "3 of 4 is exactly 0.75");

    let b = rate_breaker(&clock, 0.75, 10, 4);
    succeeds(&b, 2);
    fails(&b, 2);
    assert_eq!(b.state(), State::Closed, "2 of 4 is below 0.75");
    fails(&b, 3);
    assert_eq!(b.state(), State::Closed, "5 of 7 is below 0.75");
    fail(&b);
    assert_eq!(b.state(), State::Open, "6 of 8 is exactly 0.75");
}

#[test]
fn window_slides_after_1000_successes() {
    let clock = ManualClock::new();
    let b = rate_breaker(&clock, 0.5, 10, 10);
    succeeds(&b, 1000);
    for i in 1..=4 {
        fail(&b);
        assert_eq!(
            b.state(),
            State::Closed,
            "{i} failures of the last 10 calls"
        );
        let snap = b.snapshot();
        assert_eq!((snap.window_calls, snap.window_failures), (10, i));
    }
    fail(&b);
    assert_eq!(
        b.state(),
        State::Open,
        "the 5th consecutive failure is 5 of the last 10 calls"
    );
}

#[test]
fn window_forgets_failures_that_slid_out() {
    let clock = ManualClock::new();
    let b = rate_breaker(&clock, 0.5, 10, 10);
    // Alternate bursts of 4 failures and 6 successes forever: never 5 of 10.
    for _ in 0..100 {
        fails(&b, 4);
        succeeds(&b, 6);
    }
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn failure_rate_without_window_uses_the_default_window() {
    let clock = ManualClock::new();
    let b = builder(&clock).failure_rate(0.5).build().unwrap();
    // Default window 100 calls, default min_calls 10.
    fails(&b, 9);
    assert_eq!(b.state(), State::Closed);
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn rate_rule_replaces_the_consecutive_rule() {
    let clock = ManualClock::new();
    let b = rate_breaker(&clock, 0.9, 100, 100);
    succeeds(&b, 50);
    fails(&b, 40); // far beyond the default threshold of 5 consecutive
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn a_count_window_smaller_than_the_default_min_calls_still_trips() {
    // min_calls defaults to 10; a window of 4 calls can never hold 10. The rule
    // must then wait for a full window, not wait forever.
    let clock = ManualClock::new();
    let b = builder(&clock)
        .failure_rate(0.5)
        .window_calls(4)
        .build()
        .unwrap();
    fails(&b, 1);
    succeed(&b);
    succeed(&b);
    assert_eq!(b.state(), State::Closed, "3 calls: the window is not full");
    fail(&b);
    assert_eq!(b.state(), State::Open, "2 of 4 failed");
}

#[test]
fn a_closed_breaker_starts_a_fresh_window() {
    let clock = ManualClock::new();
    let b = rate_breaker(&clock, 0.5, 10, 10);
    fails(&b, 10);
    assert_eq!(b.state(), State::Open);
    clock.advance(RECOVERY);
    succeed(&b); // the trial
    assert_eq!(b.state(), State::Closed);
    let snap = b.snapshot();
    assert_eq!((snap.window_calls, snap.window_failures), (0, 0));
    fails(&b, 9);
    assert_eq!(b.state(), State::Closed, "old failures do not count again");
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

// ------------------------------------------------------- failure rate, time window

const T: Duration = Duration::from_secs(10);

fn time_breaker(clock: &ManualClock, rate: f64, min_calls: u32) -> Breaker {
    builder(clock)
        .failure_rate(rate)
        .window_time(T)
        .min_calls(min_calls)
        .build()
        .unwrap()
}

#[test]
fn time_window_trips_at_the_rate() {
    let clock = ManualClock::new();
    let b = time_breaker(&clock, 0.5, 4);
    succeed(&b);
    clock.advance(Duration::from_secs(1));
    succeed(&b);
    fail(&b);
    assert_eq!(b.state(), State::Closed, "3 calls < min_calls");
    clock.advance(Duration::from_secs(1));
    succeed(&b);
    assert_eq!(b.state(), State::Closed, "1 of 4");
    fail(&b);
    assert_eq!(b.state(), State::Closed, "2 of 5");
    fail(&b);
    assert_eq!(b.state(), State::Open, "3 of 6");
}

/// On the system clock, where a 1 s window's buckets (50 ms) are wide
/// enough for Linux's coarse clock (resolution 1 to 4 ms): calls still leave
/// the window once it has passed.
#[test]
fn a_time_window_on_the_system_clock_forgets_failures_that_slid_out() {
    let window = Duration::from_secs(1);
    let b = Breaker::builder()
        .recovery(RECOVERY)
        .failure_rate(0.5)
        .window_time(window)
        .min_calls(4)
        .build()
        .unwrap();
    fails(&b, 3);
    assert_eq!(b.snapshot().window_failures, 3);
    std::thread::sleep(window + window / 5);
    succeeds(&b, 3);
    fail(&b);
    // 1 failure of 4: with the three older ones, 4 of 7 would have tripped.
    assert_eq!(b.state(), State::Closed);
    let snap = b.snapshot();
    assert_eq!((snap.window_calls, snap.window_failures), (4, 1));
}

#[test]
fn time_window_old_failures_expire() {
    let clock = ManualClock::new();
    let b = time_breaker(&clock, 0.5, 2);
    // 3 failures of 7 calls at t = 0.
    succeeds(&b, 4);
    fails(&b, 3);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().window_failures, 3);
    // Still within T: the old failures are in the window.
    clock.advance(T - Duration::from_secs(1));
    assert_eq!(b.snapshot().window_failures, 3);
    // A full window later they have expired…
    clock.advance(Duration::from_secs(1));
    let snap = b.snapshot();
    assert_eq!((snap.window_calls, snap.window_failures), (0, 0));
    // …so a failure among fresh successes is 1 of 5, not 4 of 12.
    succeeds(&b, 4);
    fail(&b);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().window_failures, 1);
}

#[test]
fn time_window_same_failures_trip_when_they_have_not_expired() {
    // The control experiment for `time_window_old_failures_expire`.
    let clock = ManualClock::new();
    let b = time_breaker(&clock, 0.5, 2);
    succeeds(&b, 4);
    fails(&b, 3);
    clock.advance(T - Duration::from_secs(1));
    succeeds(&b, 3);
    assert_eq!(b.state(), State::Closed, "3 of 10");
    fails(&b, 3);
    assert_eq!(b.state(), State::Closed, "6 of 13");
    fail(&b);
    assert_eq!(b.state(), State::Open, "7 of 14 within T");
}

#[test]
fn time_window_rolls_bucket_by_bucket() {
    // Failures spread over time leave the window one by one.
    let clock = ManualClock::new();
    let b = time_breaker(&clock, 1.0, 1);
    // rate 1.0: trips only when every call in the window failed.
    succeed(&b);
    clock.advance(T / 2);
    succeeds(&b, 3);
    assert_eq!(b.snapshot().window_calls, 4);
    clock.advance(T / 2);
    // The first success has left the window; three successes remain.
    assert_eq!(b.snapshot().window_calls, 3);
    clock.advance(T / 2);
    assert_eq!(b.snapshot().window_calls, 0);
    fail(&b);
    assert_eq!(b.state(), State::Open, "1 of 1 failed");
}

#[test]
fn time_window_keeps_a_call_at_least_t_minus_a_bucket_and_at_most_t() {
    // 20 buckets of T / 20 = 500 ms: a call leaves the window between T − 500 ms
    // and T after it ended, wherever it fell in its bucket.
    let bucket = T / 20;
    for offset_ms in [0, 1, 250, 499, 500, 777, 1234] {
        let clock = ManualClock::new();
        let b = builder(&clock)
            .failure_rate(1.0)
            .window_time(T)
            .min_calls(2)
            .build()
            .unwrap();
        clock.advance(Duration::from_millis(offset_ms));
        fail(&b);
        clock.advance(T - bucket);
        assert_eq!(b.snapshot().window_failures, 1, "offset {offset_ms} ms");
        clock.advance(bucket);
        assert_eq!(b.snapshot().window_failures, 0, "offset {offset_ms} ms");
        // And it no longer counts toward a verdict: 1 of 2 is below 1.0.
        succeed(&b);
        fail(&b);
        assert_eq!(b.state(), State::Closed);
    }
}

// ------------------------------------------------- failures within a window
//
// `threshold` with `window`: that many counted failures within the window
// trip the breaker, whatever the successes between them.

fn within_breaker(clock: &ManualClock, threshold: u32) -> Breaker {
    builder(clock)
        .threshold(threshold)
        .window_time(T)
        .build()
        .unwrap()
}

#[test]
fn failures_within_a_time_window_trip_at_the_threshold_whatever_the_successes() {
    let clock = ManualClock::new();
    let b = within_breaker(&clock, 5);
    for second in 0..4 {
        fail(&b);
        // Successes do not reset the count, as they would the consecutive rule's.
        succeeds(&b, 10);
        clock.advance(Duration::from_secs(1));
        assert_eq!(b.state(), State::Closed, "{} failures", second + 1);
    }
    assert_eq!(b.snapshot().window_failures, 4);
    assert_eq!(b.snapshot().consecutive_failures, 0);
    fail(&b);
    assert_eq!(b.state(), State::Open, "the fifth failure within 10 s");
}

#[test]
fn failures_within_a_window_trip_for_the_threshold_with_its_reason_and_counts() {
    use failfast_runtime::events::{self, TransitionReason};
    use std::sync::{Arc, Mutex};

    let clock = ManualClock::new();
    let b = builder(&clock)
        .name("rules-within-reason")
        .threshold(3)
        .window_time(T)
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let _subscription = events::subscribe(&b, move |t: &events::Transition| {
        sink.lock()
            .unwrap()
            .push((t.reason, t.counts.window_failures));
    });
    fail(&b);
    succeed(&b);
    fail(&b);
    succeed(&b);
    fail(&b);
    assert_eq!(b.state(), State::Open);
    assert_eq!(
        *seen.lock().unwrap(),
        [(TransitionReason::ThresholdReached, 3)]
    );
}

#[test]
fn failures_older_than_the_window_do_not_count() {
    let clock = ManualClock::new();
    let b = within_breaker(&clock, 5);
    fails(&b, 4);
    clock.advance(T);
    assert_eq!(b.snapshot().window_failures, 0);
    fails(&b, 4);
    assert_eq!(b.state(), State::Closed, "4 within the window, 8 in all");
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_failure_counts_from_t_minus_a_bucket_to_t_after_it() {
    let bucket = T / 20;
    for offset_ms in [0, 1, 250, 499, 777] {
        // Still in the window at T − bucket: the second failure trips.
        let clock = ManualClock::new();
        let b = within_breaker(&clock, 2);
        clock.advance(Duration::from_millis(offset_ms));
        fail(&b);
        clock.advance(T - bucket);
        fail(&b);
        assert_eq!(b.state(), State::Open, "offset {offset_ms} ms");
        // Gone at T: the second failure is the only one.
        let clock = ManualClock::new();
        let b = within_breaker(&clock, 2);
        clock.advance(Duration::from_millis(offset_ms));
        fail(&b);
        clock.advance(T);
        fail(&b);
        assert_eq!(b.state(), State::Closed, "offset {offset_ms} ms");
    }
}

#[test]
fn failures_within_a_count_window_are_those_of_its_last_calls() {
    let clock = ManualClock::new();
    let within_ten = || {
        builder(&clock)
            .threshold(3)
            .window_calls(10)
            .build()
            .unwrap()
    };
    // Calls 1 (failed), 2 to 10, 11 and 12 (failed): the first failure has
    // left the last ten calls.
    let b = within_ten();
    fail(&b);
    succeeds(&b, 9);
    fails(&b, 2);
    assert_eq!(b.state(), State::Closed, "2 failures in calls 3 to 12");
    fail(&b);
    assert_eq!(b.state(), State::Open, "3 failures in calls 4 to 13");
    // One success fewer and the first failure is still in: 3 of calls 1 to 10.
    let b = within_ten();
    fail(&b);
    succeeds(&b, 7);
    fails(&b, 2);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn neutral_outcomes_and_trials_are_not_failures_within_the_window() {
    let clock = ManualClock::new();
    let b = within_breaker(&clock, 2);
    fail(&b);
    for _ in 0..5 {
        b.acquire().unwrap().record(Outcome::Neutral);
    }
    assert_eq!(b.state(), State::Closed);
    fail(&b);
    assert_eq!(b.state(), State::Open);
    // The trial that closes it starts a fresh window: one failure after it
    // is one, not three.
    clock.advance(RECOVERY);
    succeed(&b);
    assert_eq!(b.state(), State::Closed);
    fail(&b);
    assert_eq!(b.state(), State::Closed);
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_threshold_above_the_count_window_is_refused() {
    let err = Breaker::builder()
        .name("rules-within-refused")
        .threshold(11)
        .window_calls(10)
        .build()
        .unwrap_err();
    assert_eq!(err.key(), "threshold");
    assert_eq!(
        err.to_string(),
        "breaker `rules-within-refused`: `threshold` is 11, more than the 10 calls the window \
         holds, so failures within it could never reach it; use at most 10"
    );
    assert!(
        Breaker::builder()
            .threshold(10)
            .window_calls(10)
            .build()
            .is_ok()
    );
    // Without a rule to measure over it, a window is refused.
    let err = Breaker::builder().window_time(T).build().unwrap_err();
    assert_eq!(err.key(), "window");
}

#[test]
fn a_threshold_without_a_window_is_still_consecutive() {
    let clock = ManualClock::new();
    let b = builder(&clock).threshold(2).build().unwrap();
    fail(&b);
    succeed(&b);
    fail(&b);
    assert_eq!(
        b.state(),
        State::Closed,
        "a success in between resets the count"
    );
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn reconfiguring_failures_within_keeps_the_rule() {
    let clock = ManualClock::new();
    let b = within_breaker(&clock, 5);
    fails(&b, 2);
    b.reconfigure(&Breaker::builder().threshold(3)).unwrap();
    assert_eq!(b.config().threshold(), 3);
    succeed(&b);
    assert_eq!(b.state(), State::Closed);
    fail(&b);
    assert_eq!(b.state(), State::Open, "3 failures within the window");
}

// -------------------------------------------------------------------- slow calls

const SLOW: Duration = Duration::from_secs(2);

fn slow_success(b: &Breaker, clock: &ManualClock, took: Duration) {
    b.call(|| {
        clock.advance(took);
        Ok::<_, ()>(())
    })
    .expect("rejected");
}

#[test]
fn slow_calls_that_succeed_trip_the_breaker() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .slow(SLOW)
        .slow_rate(0.5)
        .window_calls(10)
        .min_calls(10)
        .build()
        .unwrap();
    succeeds(&b, 6);
    for _ in 0..4 {
        slow_success(&b, &clock, SLOW * 3);
    }
    let snap = b.snapshot();
    assert_eq!(
        (snap.window_calls, snap.window_slow, snap.window_failures),
        (10, 4, 0)
    );
    assert_eq!(b.state(), State::Closed, "4 slow of 10 is below 0.5");
    slow_success(&b, &clock, SLOW * 3);
    assert_eq!(b.state(), State::Open, "5 slow of 10, every call succeeded");
}

/// The slow-call rule's verdict can come with a call that was neither slow
/// nor failed: the one that brings the window to `min_calls`.
#[test]
fn the_fast_success_that_reaches_min_calls_brings_the_slow_verdict() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .slow(SLOW)
        .slow_rate(0.5)
        .window_calls(10)
        .min_calls(4)
        .build()
        .unwrap();
    slow_success(&b, &clock, SLOW * 3);
    slow_success(&b, &clock, SLOW * 3);
    succeed(&b);
    assert_eq!(b.state(), State::Closed, "3 calls < min_calls = 4");
    // 2 slow of 4 calls = 50%: the fast success that makes the 4th trips it.
    succeed(&b);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn slow_means_longer_than_slow() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .slow(SLOW)
        .window_calls(1)
        .min_calls(1)
        .build()
        .unwrap();
    // slow_rate defaults to 1.0: with a window of one call, one slow call trips.
    slow_success(&b, &clock, SLOW - Duration::from_nanos(1));
    assert_eq!(b.state(), State::Closed, "faster than `slow`");
    slow_success(&b, &clock, SLOW);
    assert_eq!(
        b.state(),
        State::Closed,
        "exactly `slow` is not slower than it"
    );
    assert_eq!(b.snapshot().window_slow, 0);
    slow_success(&b, &clock, SLOW + Duration::from_nanos(1));
    assert_eq!(b.state(), State::Open, "slower than `slow`");
}

#[test]
fn slow_rate_defaults_to_one() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .slow(SLOW)
        .window_calls(4)
        .min_calls(4)
        .build()
        .unwrap();
    for _ in 0..3 {
        slow_success(&b, &clock, SLOW * 2);
    }
    succeed(&b);
    assert_eq!(b.state(), State::Closed, "3 slow of 4");
    for _ in 0..3 {
        slow_success(&b, &clock, SLOW * 2);
        assert_eq!(
            b.state(),
            State::Closed,
            "3 slow of 4, the fast one still in"
        );
    }
    slow_success(&b, &clock, SLOW * 2);
    assert_eq!(b.state(), State::Open, "4 slow of 4");
}

#[test]
fn slow_and_failure_rates_are_independent_verdicts() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .failure_rate(0.5)
        .slow(SLOW)
        .slow_rate(0.5)
        .window_calls(10)
        .min_calls(10)
        .build()
        .unwrap();
    // 4 failures + 4 slow successes + 2 fast successes: 40% each, 80% unhealthy,
    // but neither rule is reached on its own.
    fails(&b, 4);
    for _ in 0..4 {
        slow_success(&b, &clock, SLOW * 2);
    }
    succeeds(&b, 2);
    assert_eq!(b.state(), State::Closed);
    // A slow failure counts toward both; it pushes out the oldest failure.
    b.call(|| {
        clock.advance(SLOW * 2);
        Err::<(), _>(())
    })
    .unwrap_err();
    let snap = b.snapshot();
    assert_eq!((snap.window_failures, snap.window_slow), (4, 5));
    assert_eq!(b.state(), State::Open);
}

#[test]
fn slow_neutral_calls_are_not_counted() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .slow(SLOW)
        .window_calls(2)
        .min_calls(1)
        .build()
        .unwrap();
    let _ = crate::call_counting(
        &b,
        |_: &()| false,
        || {
            clock.advance(SLOW * 5);
            Err::<(), ()>(())
        },
    );
    assert_eq!(b.snapshot().window_calls, 0);
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn slow_calls_with_a_time_window() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .slow(SLOW)
        .slow_rate(0.5)
        .window_time(Duration::from_secs(60))
        .min_calls(4)
        .build()
        .unwrap();
    slow_success(&b, &clock, SLOW * 2);
    succeeds(&b, 2);
    assert_eq!(b.state(), State::Closed);
    slow_success(&b, &clock, SLOW * 2);
    assert_eq!(b.state(), State::Open, "2 slow of 4");
}

#[test]
fn slow_rule_combines_with_the_consecutive_rule() {
    // `slow` is not a failure-rate rule: consecutive failures still trip.
    let clock = ManualClock::new();
    let b = builder(&clock)
        .threshold(3)
        .slow(SLOW)
        .window_calls(10)
        .min_calls(10)
        .build()
        .unwrap();
    fails(&b, 2);
    assert_eq!(b.state(), State::Closed);
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

// ------------------------------------------------------------- builder validation

fn rejects(b: Builder, setting: &str) {
    match b.build() {
        Ok(_) => panic!("built a breaker that should be rejected for `{setting}`"),
        Err(e) => {
            assert_eq!(e.key(), setting, "{e}");
            assert!(e.to_string().contains(setting), "{e}");
        }
    }
}

#[test]
fn builder_rejects_rates_outside_zero_one() {
    for bad in [0.0, -0.0, -0.5, 1.000_001, 2.0, f64::NAN, f64::INFINITY] {
        rejects(Breaker::builder().failure_rate(bad), "failure_rate");
        rejects(Breaker::builder().slow(SLOW).slow_rate(bad), "slow_rate");
    }
    for good in [f64::MIN_POSITIVE, 0.01, 0.5, 1.0] {
        Breaker::builder().failure_rate(good).build().unwrap();
        Breaker::builder()
            .slow(SLOW)
            .slow_rate(good)
            .build()
            .unwrap();
    }
}

#[test]
fn builder_rejects_zero_counts_and_durations() {
    rejects(Breaker::builder().threshold(0), "threshold");
    rejects(Breaker::builder().trial_calls(0), "trial_calls");
    rejects(Breaker::builder().success_threshold(0), "success_threshold");
    rejects(Breaker::builder().recovery(Duration::ZERO), "recovery");
    rejects(
        Breaker::builder().failure_rate(0.5).min_calls(0),
        "min_calls",
    );
    rejects(Breaker::builder().slow(Duration::ZERO), "slow");
}

#[test]
fn builder_rejects_zero_windows() {
    rejects(
        Breaker::builder().failure_rate(0.5).window_calls(0),
        "window",
    );
    rejects(
        Breaker::builder()
            .failure_rate(0.5)
            .window_time(Duration::ZERO),
        "window",
    );
    Breaker::builder()
        .failure_rate(0.5)
        .window_calls(1)
        .min_calls(1)
        .build()
        .unwrap();
    Breaker::builder()
        .failure_rate(0.5)
        .window_time(Duration::from_nanos(1))
        .build()
        .unwrap();
}

#[test]
fn builder_rejects_min_calls_beyond_a_count_window() {
    rejects(
        Breaker::builder()
            .failure_rate(0.5)
            .window_calls(10)
            .min_calls(11),
        "min_calls",
    );
    Breaker::builder()
        .failure_rate(0.5)
        .window_calls(10)
        .min_calls(10)
        .build()
        .unwrap();
    // A time window holds any number of calls.
    Breaker::builder()
        .failure_rate(0.5)
        .window_time(T)
        .min_calls(1000)
        .build()
        .unwrap();
}

#[test]
fn builder_rejects_threshold_with_failure_rate() {
    rejects(
        Breaker::builder().threshold(5).failure_rate(0.5),
        "threshold",
    );
    rejects(
        Breaker::builder().failure_rate(0.5).threshold(5),
        "threshold",
    );
}

#[test]
fn builder_rejects_a_window_without_a_rule_to_measure() {
    rejects(Breaker::builder().window_calls(10), "window");
    rejects(Breaker::builder().window_time(T), "window");
    rejects(Breaker::builder().min_calls(5), "min_calls");
    // Failures within a window are a count: no rate for `min_calls` to wait for.
    rejects(
        Breaker::builder()
            .threshold(3)
            .window_calls(10)
            .min_calls(5),
        "min_calls",
    );
}

#[test]
fn builder_rejects_slow_rate_without_slow() {
    rejects(Breaker::builder().slow_rate(0.5), "slow_rate");
    rejects(
        Breaker::builder().failure_rate(0.5).slow_rate(0.5),
        "slow_rate",
    );
}

#[test]
fn builder_rejects_max_recovery_below_recovery() {
    rejects(
        Breaker::builder()
            .recovery(Duration::from_secs(30))
            .max_recovery(Duration::from_secs(29)),
        "max_recovery",
    );
    rejects(
        Breaker::builder()
            .recovery(Duration::from_secs(30))
            .max_recovery(Duration::ZERO),
        "max_recovery",
    );
    Breaker::builder()
        .recovery(Duration::from_secs(30))
        .max_recovery(Duration::from_secs(30))
        .build()
        .unwrap();
}

#[test]
fn builder_rejects_jitter_outside_zero_one() {
    for bad in [-0.1, 1.0, 1.5, f64::NAN, f64::NEG_INFINITY] {
        rejects(Breaker::builder().jitter(bad), "jitter");
    }
    for good in [0.0, 0.1, 0.999] {
        Breaker::builder().jitter(good).build().unwrap();
    }
}

#[test]
fn builder_rejects_oversized_settings() {
    rejects(
        Breaker::builder()
            .failure_rate(0.5)
            .window_calls((1 << 20) + 1),
        "window",
    );
    rejects(Breaker::builder().trial_calls(0x1_0000), "trial_calls");
    rejects(
        Breaker::builder().success_threshold(0x1_0000),
        "success_threshold",
    );
}

#[test]
fn the_largest_threshold_is_accepted_and_one_more_refused() {
    assert!(Breaker::builder().threshold(16_777_215).build().is_ok());
    let e = Breaker::builder()
        .threshold(16_777_216)
        .build()
        .unwrap_err();
    assert_eq!(e.key(), "threshold");
    assert!(e.to_string().contains("at most 16777215"), "{e}");
}

#[test]
fn rejected_debug_shows_the_breaker_state_and_time_to_the_trial() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .name("payments")
        .threshold(1)
        .recovery(Duration::from_secs(30))
        .clock(clock.clone())
        .build()
        .unwrap();
    let _ = b.call(|| Err::<(), _>("down"));
    clock.advance(Duration::from_secs(10));
    let rejected = b.acquire().unwrap_err();
    assert_eq!(
        format!("{rejected:?}"),
        r#"Rejected { breaker: "payments", state: Open, reason: Open, retry_after: Some(20s) }"#
    );
}

// ------------------------------------------- failure rate, threads sharing one

/// Two threads each call `calls` times, failing `failing` of every 20 calls,
/// through one breaker with a 0.5 failure rate over the last 1000 calls;
/// returns the breaker once both are done or it opened.
fn two_threads_failing(failing: u32, calls: u32) -> Breaker {
    let b = Breaker::builder()
        .failure_rate(0.5)
        .window_calls(1000)
        .min_calls(1000)
        .recovery(Duration::from_secs(3600))
        .build()
        .unwrap();
    two_threads_calling(b, failing, calls, || {})
}

/// Two threads each call `b` `calls` times, failing `failing` of every 20
/// calls and running `every_50` every 50 calls; returns `b` once both are
/// done or it opened.
fn two_threads_calling(
    b: Breaker,
    failing: u32,
    calls: u32,
    every_50: impl Fn() + Sync,
) -> Breaker {
    let start = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        for offset in 0..2 {
            let (b, start, every_50) = (&b, &start, &every_50);
            s.spawn(move || {
                start.wait();
                for i in 0..calls {
                    if i % 50 == 0 {
                        every_50();
                    }
                    let fails = (i + offset * 7) % 20 < failing;
                    let r = b.call(|| if fails { Err(()) } else { Ok(()) });
                    if matches!(r, Err(failfast_runtime::Error::Rejected(_))) {
                        return;
                    }
                }
            });
        }
    });
    b
}

/// Whatever the interleaving, every 1000 consecutive calls of two threads
/// failing 11 of every 20 hold 550 ± 2 failures: above the rate, so the
/// breaker opens; with 9 of 20, 450 ± 2: below it, so it stays closed and
/// its window shows the threads' share.
#[test]
fn two_threads_sharing_a_rate_breaker_trip_above_the_rate_and_not_below() {
    let b = two_threads_failing(11, 200_000);
    assert_eq!(b.state(), State::Open, "55% failing trips a 50% rule");
    let s = b.snapshot();
    assert!(
        s.calls < 20_000,
        "it opened as soon as the window was full: {} calls",
        s.calls
    );

    let b = two_threads_failing(9, 200_000);
    assert_eq!(
        b.state(),
        State::Closed,
        "45% failing does not trip a 50% rule"
    );
    let s = b.snapshot();
    assert_eq!(s.window_calls, 1000);
    let rate = s.failure_rate.unwrap();
    assert!((0.44..=0.46).contains(&rate), "window failure rate {rate}");
}

/// The same over a time window whose buckets the threads move on as they
/// call (each moves the clock 1 ms every 50 calls: a window of 1 s holds
/// 47,500 to 50,000 calls): the window counts only failures, and the calls it
/// holds are read from the per-thread totals, so every reading is off by at
/// most a call or two. 55% failing opens the breaker as soon as `min_calls`
/// are in the window; 45% failing never does, and its window shows the
/// threads' share.
#[test]
fn two_threads_sharing_a_time_window_rate_breaker_trip_above_the_rate_and_not_below() {
    let timed = |failing: u32| {
        let clock = ManualClock::new();
        let b = Breaker::builder()
            .failure_rate(0.5)
            .window_time(Duration::from_secs(1))
            .min_calls(1000)
            .recovery(Duration::from_secs(3600))
            .clock(clock.clone())
            .build()
            .unwrap();
        let b = two_threads_calling(b, failing, 200_000, || {
            clock.advance(Duration::from_millis(1));
        });
        (b, clock)
    };
    let (b, _) = timed(11);
    assert_eq!(b.state(), State::Open, "55% failing trips a 50% rule");
    let s = b.snapshot();
    assert!(
        s.calls < 20_000,
        "it opened as soon as the window held min_calls: {} calls",
        s.calls
    );

    let (b, clock) = timed(9);
    assert_eq!(
        b.state(),
        State::Closed,
        "45% failing does not trip a 50% rule"
    );
    let s = b.snapshot();
    // 400,000 calls over 8 s: the last 1 s, less up to one bucket of 50 ms.
    assert!(
        (47_000..=50_500).contains(&s.window_calls),
        "{} calls in the window at {:?}",
        s.window_calls,
        clock.now()
    );
    let rate = s.failure_rate.unwrap();
    assert!((0.44..=0.46).contains(&rate), "window failure rate {rate}");
}
