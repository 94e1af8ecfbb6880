//! Running totals in `Snapshot`: exact under real threads (two sharing a
//! breaker, more threads than slots, threads replaced as a pool does), slow
//! calls, rejections, transitions and the time of the last opening.

use std::time::{Duration, SystemTime};

use failfast_runtime::Mode;
use failfast_runtime::{Breaker, ManualClock, Outcome, State};

/// The outcome of call `i`: 1 in 10 fails, 1 in 10 is neutral; never ten
/// failures in a row, so a threshold of 10 never trips.
fn outcome(i: u64) -> Outcome {
    match i % 10 {
        0 => Outcome::Failure,
        1 => Outcome::Neutral,
        _ => Outcome::Success,
    }
}

fn calls(b: &Breaker, n: u64) {
    for i in 0..n {
        b.acquire().expect("closed").record(outcome(i));
    }
}

#[test]
fn totals_match_the_calls_made_by_two_threads() {
    const N: u64 = 200_000;
    const REJECTED: u64 = 1_000;
    let b = Breaker::builder().threshold(10).build().unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| calls(&b, N));
        }
    });
    b.set_mode(Mode::ForcedOpen);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..REJECTED {
                    assert!(b.acquire().is_err());
                }
            });
        }
    });
    let s = b.snapshot();
    assert_eq!(s.successes, 2 * N * 8 / 10);
    assert_eq!(s.failures, 2 * N / 10);
    assert_eq!(s.neutral, 2 * N / 10);
    assert_eq!(s.rejected, 2 * REJECTED);
    assert_eq!(s.calls, 2 * N + 2 * REJECTED);
    assert_eq!((s.slow, s.transitions), (0, 1));
    assert_eq!(
        s.opened_at, None,
        "forced open is not an opening of its own"
    );
}

/// More threads at once than there are slots (at most 32): the extra ones
/// share slots and still count exactly; then rounds of short-lived threads,
/// as a pool that replaces its threads, reuse the slots of those that exited.
#[test]
fn more_threads_than_slots_and_replaced_threads_count_exactly() {
    const THREADS: u64 = 48;
    const N: u64 = 40_000;
    let b = Breaker::builder().threshold(10).build().unwrap();
    let start = std::sync::Barrier::new(THREADS as usize);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                start.wait();
                calls(&b, N);
            });
        }
    });
    for _ in 0..20 {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| calls(&b, N));
            }
        });
    }
    let total = (THREADS + 20 * 4) * N;
    let s = b.snapshot();
    assert_eq!(s.calls, total);
    assert_eq!(
        (s.successes, s.failures, s.neutral),
        (total * 8 / 10, total / 10, total / 10)
    );
}

#[test]
fn slow_calls_transitions_and_the_last_opening_are_counted() {
    let clock = ManualClock::new();
    let recovery = Duration::from_secs(30);
    let b = Breaker::builder()
        .threshold(1)
        .slow(Duration::from_secs(1))
        .slow_rate(1.0)
        .min_calls(5)
        .recovery(recovery)
        .clock(clock.clone())
        .build()
        .unwrap();
    let fresh = b.snapshot();
    assert_eq!(
        (fresh.calls, fresh.transitions, fresh.opened_at),
        (0, 0, None)
    );

    let permit = b.acquire().unwrap();
    clock.advance(Duration::from_secs(2));
    permit.record(Outcome::Success);
    assert_eq!((b.snapshot().slow, b.snapshot().successes), (1, 1));

    let before = SystemTime::now();
    b.acquire().unwrap().record(Outcome::Failure);
    assert_eq!(b.state(), State::Open);
    let opened = b.snapshot().opened_at.expect("opened on its own");
    assert!(opened >= before - Duration::from_millis(1) && opened <= SystemTime::now());

    clock.advance(recovery);
    b.acquire().unwrap().record(Outcome::Success); // trial: HalfOpen, then Closed
    let s = b.snapshot();
    assert_eq!(s.transitions, 3);
    assert_eq!((s.calls, s.successes, s.failures, s.slow), (3, 2, 1, 1));
    // The clock has moved on by `recovery` since the opening.
    let since = SystemTime::now()
        .duration_since(s.opened_at.unwrap())
        .unwrap();
    assert!(since >= recovery, "{since:?}");
}

#[test]
fn calls_let_through_unrecorded_are_not_counted() {
    let b = Breaker::builder().threshold(1).build().unwrap();
    b.set_mode(Mode::ForcedClosed);
    for _ in 0..10 {
        b.acquire().unwrap().record(Outcome::Failure);
    }
    let s = b.snapshot();
    assert_eq!((s.calls, s.failures, s.transitions), (0, 0, 1));
}

#[test]
fn a_panicking_call_counts_once_as_a_failure() {
    let b = Breaker::builder().threshold(5).build().unwrap();
    let result = std::panic::catch_unwind(|| b.call(|| -> Result<(), ()> { panic!("bug") }));
    assert!(result.is_err());
    let s = b.snapshot();
    assert_eq!((s.calls, s.failures), (1, 1));
}
