//! The breaker's contract, scenario by scenario, through the builder API.
//!
//! The same scenarios through `#[circuit_breaker]` live in the facade's
//! `tests/calls/attribute_scenarios.rs`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use failfast_runtime::{Breaker, Error, ManualClock, Mode, State};

const RECOVERY: Duration = Duration::from_secs(30);

fn breaker(threshold: u32, clock: &ManualClock) -> Breaker {
    Breaker::builder()
        .name("inventory")
        .threshold(threshold)
        .recovery(RECOVERY)
        .clock(clock.clone())
        .build()
        .expect("valid settings")
}

fn fail(b: &Breaker) -> Result<(), Error<&'static str>> {
    b.call(|| Err("503"))
}

fn succeed(b: &Breaker) -> Result<(), Error<&'static str>> {
    b.call(|| Ok(()))
}

/// Waits (bounded) until `counter` reaches `target`; a test that would deadlock
/// on a broken breaker fails instead.
/// The refusal `r` holds.
fn rejection<T: std::fmt::Debug, E: std::fmt::Debug>(
    r: Result<T, Error<E>>,
) -> failfast_runtime::Rejected {
    match r {
        Err(Error::Rejected(rejected)) => rejected,
        other => panic!("refused, not {other:?}"),
    }
}

fn wait_for(counter: &AtomicUsize, target: usize) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while counter.load(SeqCst) < target && Instant::now() < give_up {
        std::thread::yield_now();
    }
}

#[test]
fn opens_after_exactly_threshold_consecutive_failures() {
    let clock = ManualClock::new();
    let b = breaker(5, &clock);
    for _ in 0..4 {
        assert!(matches!(fail(&b), Err(Error::Failed(_))));
    }
    assert_eq!(b.state(), State::Closed, "N-1 failures must not trip");
    assert_eq!(b.snapshot().consecutive_failures, 4);

    // A success in between resets the count.
    succeed(&b).unwrap();
    assert_eq!(b.snapshot().consecutive_failures, 0);
    for _ in 0..4 {
        let _ = fail(&b);
    }
    assert_eq!(
        b.state(),
        State::Closed,
        "the count restarted after the success"
    );

    let _ = fail(&b);
    assert_eq!(b.state(), State::Open, "the Nth consecutive failure trips");

    // While open the body never runs and the caller gets a rejection.
    let ran = AtomicUsize::new(0);
    for _ in 0..100 {
        let r = b.call(|| {
            ran.fetch_add(1, SeqCst);
            Ok::<(), &str>(())
        });
        let Err(Error::Rejected(rejected)) = r else {
            panic!("refused, not {r:?}")
        };
        assert_eq!(rejected.name(), "inventory");
        assert_eq!(rejected.state(), State::Open);
        assert_eq!(rejected.retry_after(), Some(RECOVERY));
    }
    assert_eq!(ran.load(SeqCst), 0);
}

#[test]
fn threshold_one_more_than_failures_stays_closed() {
    let clock = ManualClock::new();
    let b = breaker(6, &clock);
    for _ in 0..5 {
        let _ = fail(&b);
    }
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn errors_not_counted_never_move_the_breaker() {
    let clock = ManualClock::new();
    let b = breaker(3, &clock);
    let is_dependency = |status: &u16| *status >= 500;
    for _ in 0..1000 {
        let r = crate::call_counting(&b, is_dependency, || Err::<(), u16>(400));
        assert!(
            matches!(r, Err(Error::Failed(400))),
            "neutral errors reach the caller"
        );
    }
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().consecutive_failures, 0);
    assert_eq!(
        crate::call_counting(&b, is_dependency, || Ok::<u32, u16>(42)).unwrap(),
        42
    );

    // Neutral outcomes neither count nor reset the consecutive count.
    for _ in 0..2 {
        let _ = crate::call_counting(&b, is_dependency, || Err::<(), u16>(503));
    }
    for _ in 0..10 {
        let _ = crate::call_counting(&b, is_dependency, || Err::<(), u16>(400));
    }
    assert_eq!(b.snapshot().consecutive_failures, 2);
    let _ = crate::call_counting(&b, is_dependency, || Err::<(), u16>(503));
    assert_eq!(b.state(), State::Open);
}

#[test]
fn full_recovery_cycle_on_a_manual_clock() {
    let clock = ManualClock::new();
    let b = breaker(2, &clock);
    let _ = fail(&b);
    let _ = fail(&b);
    assert_eq!(b.state(), State::Open);

    clock.advance(RECOVERY - Duration::from_nanos(1));
    assert_eq!(b.state(), State::Open);
    let early = rejection(succeed(&b));
    assert_eq!(early.retry_after(), Some(Duration::from_nanos(1)));

    clock.advance(Duration::from_nanos(1));
    assert_eq!(b.state(), State::HalfOpen);
    // The dependency has healed: the first call is the trial, and it closes the breaker.
    let ran = AtomicUsize::new(0);
    let r = b.call(|| {
        ran.fetch_add(1, SeqCst);
        Ok::<_, &str>("in stock")
    });
    assert_eq!(r.unwrap(), "in stock");
    assert_eq!(ran.load(SeqCst), 1);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().consecutive_failures, 0);
    succeed(&b).unwrap();
}

#[test]
fn full_recovery_cycle_in_real_time() {
    let b = Breaker::builder()
        .threshold(1)
        // Long enough that a busy machine cannot deschedule this thread past it
        // between the trip and the checks that the breaker is open.
        .recovery(Duration::from_millis(300))
        .build()
        .unwrap();
    let _ = fail(&b);
    assert_eq!(b.state(), State::Open);
    assert!(matches!(succeed(&b), Err(Error::Rejected(_))));
    std::thread::sleep(Duration::from_millis(300));
    // The deadline is checked against a clock refreshed by a background
    // thread, which a loaded machine can run late: poll rather than sleep a
    // fixed margin.
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while b.state() != State::HalfOpen {
        assert!(std::time::Instant::now() < give_up, "never left Open");
        std::thread::sleep(Duration::from_millis(1));
    }
    succeed(&b).unwrap();
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn failed_trial_reopens_and_restarts_the_wait() {
    let clock = ManualClock::new();
    let b = breaker(1, &clock);
    let _ = fail(&b);
    clock.advance(RECOVERY);
    assert!(matches!(fail(&b), Err(Error::Failed(_))), "the trial ran");
    assert_eq!(b.state(), State::Open);
    assert_eq!(rejection(succeed(&b)).retry_after(), Some(RECOVERY));
}

/// Ten threads arrive at the instant a trial becomes allowed while the dependency
/// is still down: exactly one reaches it.
#[test]
fn thundering_herd_of_threads_sends_one_trial() {
    let clock = ManualClock::new();
    let b = Arc::new(breaker(1, &clock));
    let _ = fail(&b);
    clock.advance(RECOVERY);

    let reached = Arc::new(AtomicUsize::new(0));
    let rejected = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(10));
    let threads: Vec<_> = (0..10)
        .map(|_| {
            let (b, reached, rejected, start) =
                (b.clone(), reached.clone(), rejected.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let r = b.call(|| {
                    reached.fetch_add(1, SeqCst);
                    // Still down: hold the trial until everyone else has tried.
                    wait_for(&rejected, 9);
                    Err::<(), _>("503")
                });
                if let Err(Error::Rejected(_)) = r {
                    rejected.fetch_add(1, SeqCst);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(reached.load(SeqCst), 1);
    assert_eq!(rejected.load(SeqCst), 9);
    assert_eq!(
        b.state(),
        State::Open,
        "the failed trial reopened the breaker"
    );
}

#[test]
fn thundering_herd_of_tasks_sends_one_trial() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let clock = ManualClock::new();
        let b = Arc::new(breaker(1, &clock));
        let _ = fail(&b);
        clock.advance(RECOVERY);

        let reached = Arc::new(AtomicUsize::new(0));
        let rejected = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(tokio::sync::Barrier::new(10));
        let tasks: Vec<_> = (0..10)
            .map(|_| {
                let (b, reached, rejected, start) =
                    (b.clone(), reached.clone(), rejected.clone(), start.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    let r = b
                        .call_async(async {
                            reached.fetch_add(1, SeqCst);
                            let give_up = Instant::now() + Duration::from_secs(10);
                            while rejected.load(SeqCst) < 9 && Instant::now() < give_up {
                                tokio::time::sleep(Duration::from_millis(1)).await;
                            }
                            Err::<(), _>("503")
                        })
                        .await;
                    if let Err(Error::Rejected(_)) = r {
                        rejected.fetch_add(1, SeqCst);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(reached.load(SeqCst), 1);
        assert_eq!(rejected.load(SeqCst), 9);
    });
}

fn half_open(clock: &ManualClock) -> Breaker {
    let b = breaker(1, clock);
    let _ = fail(&b);
    clock.advance(RECOVERY);
    assert_eq!(b.state(), State::HalfOpen);
    b
}

#[test]
fn trial_that_panics_counts_as_failure_and_does_not_wedge() {
    let clock = ManualClock::new();
    let b = half_open(&clock);
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        let _ = b.call(|| -> Result<(), &str> { panic!("dependency client bug") });
    }));
    assert!(panicked.is_err(), "the panic resumes unwinding");
    assert_eq!(
        b.state(),
        State::Open,
        "a panicking trial is a failed trial"
    );
    clock.advance(RECOVERY);
    succeed(&b).expect("a new trial is admitted");
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn trial_with_neutral_error_gives_the_permit_back() {
    let clock = ManualClock::new();
    let b = half_open(&clock);
    let r = crate::call_counting(&b, |_: &u16| false, || Err::<(), u16>(400));
    assert!(matches!(r, Err(Error::Failed(400))), "{r:?}");
    assert_eq!(b.state(), State::HalfOpen, "neutral: no verdict");
    succeed(&b).expect("the permit came back: a new trial runs");
    assert_eq!(b.state(), State::Closed);
}

#[tokio::test]
async fn trial_future_dropped_by_timeout_gives_the_permit_back() {
    let clock = ManualClock::new();
    let b = half_open(&clock);
    let hung = b.call_async(std::future::pending::<Result<(), &str>>());
    assert!(
        tokio::time::timeout(Duration::from_millis(10), hung)
            .await
            .is_err()
    );
    assert_eq!(b.state(), State::HalfOpen);
    b.call_async(async { Ok::<_, &str>(()) })
        .await
        .expect("new trial admitted");
    assert_eq!(b.state(), State::Closed);
}

#[tokio::test]
async fn trial_future_dropped_by_select_gives_the_permit_back() {
    let clock = ManualClock::new();
    let b = half_open(&clock);
    tokio::select! {
        _ = b.call_async(std::future::pending::<Result<(), &str>>()) => unreachable!(),
        () = tokio::task::yield_now() => {}
    }
    // While the trial was in flight nobody else got in; now it is gone.
    b.call_async(async { Ok::<_, &str>(()) })
        .await
        .expect("new trial admitted");
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn trial_never_resolved_expires_after_its_lease() {
    let clock = ManualClock::new();
    let b = half_open(&clock);
    let permit = b.acquire().expect("trial");
    std::mem::forget(permit); // resolved never, not even by Drop
    assert!(
        b.acquire().is_err(),
        "the lost trial still holds the only permit"
    );
    // The default lease: ten times `recovery`.
    clock.advance(RECOVERY * 10 - Duration::from_nanos(1));
    assert!(b.acquire().is_err(), "still within its lease");
    clock.advance(Duration::from_nanos(1));
    let trial = b.acquire().expect("the permit expired: a new trial runs");
    trial.record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn reading_state_never_consumes_the_trial() {
    let clock = ManualClock::new();
    let b = breaker(1, &clock);
    let _ = fail(&b);
    clock.advance(RECOVERY);
    for _ in 0..10_000 {
        assert_eq!(b.state(), State::HalfOpen);
        let _ = b.snapshot();
    }
    let trial = b.acquire().expect("the trial is still there");
    assert!(b.acquire().is_err(), "and there was exactly one");
    trial.record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn outcomes_of_calls_admitted_under_an_earlier_state_are_ignored() {
    let clock = ManualClock::new();
    let b = breaker(1, &clock);
    let old = b.acquire().unwrap(); // admitted while closed
    let _ = fail(&b); // trips
    clock.advance(RECOVERY);
    let trial = b.acquire().unwrap();
    old.record(failfast_runtime::Outcome::Success); // must not close the breaker: it was admitted before the trip
    assert_eq!(b.state(), State::HalfOpen);
    trial.record(failfast_runtime::Outcome::Failure);
    assert_eq!(b.state(), State::Open);

    // And an old failure does not reopen a breaker that recovered meanwhile.
    clock.advance(RECOVERY);
    let stale_trial = b.acquire().unwrap();
    b.set_mode(Mode::Normal);
    stale_trial.record(failfast_runtime::Outcome::Failure);
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn manual_control() {
    let clock = ManualClock::new();
    let b = breaker(1, &clock);
    b.set_mode(Mode::ForcedOpen);
    assert_eq!(b.snapshot().mode, Mode::ForcedOpen);
    assert_eq!(rejection(succeed(&b)).retry_after(), None);
    clock.advance(RECOVERY * 10);
    assert_eq!(
        b.state(),
        State::Open,
        "forced open does not recover by itself"
    );

    b.set_mode(Mode::ForcedClosed);
    for _ in 0..10 {
        assert!(matches!(fail(&b), Err(Error::Failed(_))));
    }
    assert_eq!(b.state(), State::Closed, "forced closed never trips");

    b.set_mode(Mode::ObserveOnly);
    let _ = fail(&b);
    assert_eq!(b.state(), State::Open, "disabled: the rule still runs");
    let before = b.snapshot();
    assert!(
        matches!(fail(&b), Err(Error::Failed(_))),
        "but calls still pass"
    );
    assert!(succeed(&b).is_ok());
    let after = b.snapshot();
    assert_eq!(
        (
            after.would_reject,
            after.rejected,
            after.calls,
            after.failures,
            after.successes
        ),
        (
            before.would_reject + 2,
            before.rejected,
            before.calls + 2,
            before.failures + 1,
            before.successes + 1
        ),
        "a call it would have refused is counted as such, and by its outcome"
    );
    clock.advance(RECOVERY * 10);
    assert!(succeed(&b).is_ok(), "its trial");
    assert_eq!(b.state(), State::Closed, "disabled: recovers by itself too");
    assert!(succeed(&b).is_ok());
    assert_eq!(
        b.snapshot().would_reject,
        after.would_reject,
        "closed: nothing it would refuse"
    );

    b.set_mode(Mode::Normal);
    assert_eq!(b.snapshot().mode, Mode::Normal);
    assert_eq!(b.state(), State::Closed);
    let _ = fail(&b);
    assert!(matches!(succeed(&b), Err(Error::Rejected(_))));
}

#[test]
fn permit_dropped_during_panic_records_failure_outside_half_open_too() {
    let clock = ManualClock::new();
    let b = breaker(2, &clock);
    for _ in 0..2 {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let _permit = b.acquire().unwrap();
            panic!("boom");
        }));
    }
    assert_eq!(b.state(), State::Open);
}

#[test]
fn snapshot_reports_counts_and_retry_after() {
    let clock = ManualClock::new();
    let b = breaker(3, &clock);
    let _ = fail(&b);
    let _ = fail(&b);
    let s = b.snapshot();
    assert_eq!(
        (s.state, s.consecutive_failures, s.retry_after),
        (State::Closed, 2, None)
    );
    let _ = fail(&b);
    clock.advance(Duration::from_secs(10));
    let s = b.snapshot();
    assert_eq!(s.state, State::Open);
    assert_eq!(s.retry_after, Some(RECOVERY - Duration::from_secs(10)));
    assert_eq!(s.since_transition, Duration::from_secs(10));
}

/// Failures recorded at once from several threads are all counted: a lost
/// compare-and-swap is retried, not dropped.
#[test]
fn concurrent_failures_are_all_counted() {
    let b = Breaker::builder()
        .threshold(16_777_215)
        .build()
        .expect("valid settings");
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..20_000 {
                    let _ = fail(&b);
                }
            });
        }
    });
    assert_eq!(b.snapshot().consecutive_failures, 80_000);
}

/// The snapshot's shares are the window's counts divided by its calls.
#[test]
fn snapshot_reports_failure_and_slow_shares_of_the_window() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .failure_rate(1.0)
        .slow(Duration::from_secs(1))
        .slow_rate(1.0)
        .window_calls(8)
        .clock(clock.clone())
        .build()
        .expect("valid settings");
    let s = b.snapshot();
    assert_eq!((s.failure_rate, s.slow_rate), (None, None));
    for i in 0..8 {
        let permit = b.acquire().expect("closed");
        if i < 2 {
            clock.advance(Duration::from_secs(2)); // slow
        }
        if i % 2 == 0 && i > 0 {
            permit.record(failfast_runtime::Outcome::Failure);
        } else {
            permit.record(failfast_runtime::Outcome::Success);
        }
    }
    let s = b.snapshot();
    assert_eq!(
        (s.window_calls, s.window_failures, s.window_slow),
        (8, 3, 2)
    );
    assert_eq!(s.failure_rate, Some(3.0 / 8.0));
    assert_eq!(s.slow_rate, Some(2.0 / 8.0));
}

/// Observe-only: every call that ran is counted by its outcome, and
/// `would_reject` counts those of them the breaker would have refused; the
/// totals equal the calls made, with threads calling at once through every
/// state (the breaker trips, recovers, and trips again meanwhile).
#[test]
fn observe_only_totals_add_up_to_the_calls_made_under_concurrency() {
    const THREADS: usize = 4;
    const CALLS: usize = 20_000;
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .threshold(3)
        .recovery(Duration::from_millis(5))
        .clock(clock.clone())
        .build()
        .unwrap();
    b.set_mode(Mode::ObserveOnly);
    let made = std::sync::atomic::AtomicU64::new(0);
    let refused = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (b, clock, made, refused) = (&b, &clock, &made, &refused);
            s.spawn(move || {
                for i in 0..CALLS {
                    let permit = match b.acquire() {
                        Ok(permit) => permit,
                        Err(_) => {
                            refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            continue;
                        }
                    };
                    made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    // Four failures in a row on each thread: it trips however
                    // the threads are scheduled (one at a time included).
                    match (i + t) % 10 {
                        0..=3 => permit.record(failfast_runtime::Outcome::Failure),
                        4 => drop(permit),
                        _ => permit.record(failfast_runtime::Outcome::Success),
                    }
                    if i % 97 == 0 {
                        clock.advance(Duration::from_millis(1));
                    }
                }
            });
        }
    });
    let s = b.snapshot();
    let made = made.into_inner();
    assert_eq!(refused.into_inner(), 0, "observe-only never refuses");
    assert_eq!(made, (THREADS * CALLS) as u64);
    assert_eq!(s.successes + s.failures + s.neutral, made, "{s:?}");
    assert_eq!(s.calls, made, "{s:?}");
    assert_eq!(s.rejected, 0);
    assert!(
        s.would_reject > 0 && s.would_reject < made,
        "some calls, not all, would have been refused: {s:?}"
    );
}

/// The attribute's entry point (`__private::acquire`, which decides an open
/// breaker's common refusal inline) answers as `Breaker::acquire` does: a
/// refusal to the nanosecond before the deadline, the trial at it and past
/// it, a half-open breaker's busy trial slot and a forced open refused as
/// such.
#[test]
fn the_attributes_entry_point_decides_as_acquire_does() {
    use failfast_runtime::__private::acquire;
    use failfast_runtime::{Outcome, Reason};

    let clock = ManualClock::new();
    let b: &'static Breaker = Box::leak(Box::new(breaker(1, &clock)));
    let _ = fail(b);
    clock.advance(RECOVERY - Duration::from_nanos(1));
    let refused = acquire(b).unwrap_err();
    assert_eq!(
        (refused.reason(), refused.retry_after()),
        (Reason::Open, Some(Duration::from_nanos(1)))
    );
    assert_eq!(b.snapshot().rejected, 1, "counted");
    clock.advance(Duration::from_nanos(1));
    let trial = acquire(b).expect("the trial, at the deadline");
    assert!(trial.is_trial());
    assert_eq!(acquire(b).unwrap_err().reason(), Reason::TrialsInFlight);
    trial.record(Outcome::Failure);
    // Open again: past its deadline, not only at it, the call is the trial.
    clock.advance(RECOVERY * 2);
    let trial = acquire(b).expect("the trial, past the deadline");
    trial.record(Outcome::Success);
    assert_eq!(b.state(), State::Closed);
    b.set_mode(Mode::ForcedOpen);
    assert_eq!(acquire(b).unwrap_err().reason(), Reason::ForcedOpen);
    assert_eq!(b.snapshot().rejected, 3);
}
