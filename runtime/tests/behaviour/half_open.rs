//! Half-open sizing through the public builder: `trial_calls` admitted at once,
//! `success_threshold` successful trials to close, a failed or slow trial reopens
//! at once, and no combination of the two settings can wedge the breaker.

use std::time::Duration;

use failfast_runtime::{Breaker, ManualClock, Outcome, Permit, State};

const RECOVERY: Duration = Duration::from_secs(30);
const NS: Duration = Duration::from_nanos(1);

/// A breaker with threshold 1, tripped and `recovery` later: eligible for trials.
fn eligible(clock: &ManualClock, trial_calls: u32, success_threshold: u32) -> Breaker {
    let b = Breaker::builder()
        .threshold(1)
        .recovery(RECOVERY)
        .trial_calls(trial_calls)
        .success_threshold(success_threshold)
        .clock(clock.clone())
        .build()
        .unwrap();
    trip(&b);
    clock.advance(RECOVERY);
    assert_eq!(b.state(), State::HalfOpen);
    b
}

fn trip(b: &Breaker) {
    let _ = b.call(|| Err::<(), _>("down"));
    assert_eq!(b.state(), State::Open);
}

fn trial(b: &Breaker) -> Permit<'_> {
    b.acquire().expect("a trial should have been admitted")
}

fn assert_rejected(b: &Breaker, state: State) {
    let rejected = b.acquire().expect_err("should have been rejected");
    assert_eq!(rejected.state(), state);
}

#[test]
fn trial_calls_3_admits_exactly_3_at_once_and_rejects_the_4th() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 3, 3);
    let permits = [trial(&b), trial(&b), trial(&b)];
    assert_eq!(b.snapshot().trials_in_flight, 3);
    for _ in 0..10 {
        let rejected = b.acquire().expect_err("a 4th trial at once");
        assert_eq!(rejected.state(), State::HalfOpen);
        // The next trial depends on how the running ones end.
        assert_eq!(rejected.retry_after(), None);
    }
    // The dependency is not touched by a rejected call.
    let r = b.call(|| -> Result<(), ()> { panic!("the dependency was called") });
    assert!(matches!(r, Err(failfast_runtime::Error::Rejected(_))));
    let [p1, p2, p3] = permits;
    p1.record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::HalfOpen);
    // A permit came back: one more trial may run (3 in flight again), not two.
    let p4 = trial(&b);
    assert_rejected(&b, State::HalfOpen);
    p2.record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::HalfOpen, "2 of 3 successes");
    p3.record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::Closed, "3 of 3 successes");
    // The straggler admitted as a trial no longer drives the closed breaker.
    p4.record(failfast_runtime::Outcome::Failure);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().consecutive_failures, 0);
}

#[test]
fn trial_calls_default_to_one() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 1, 1);
    let p = trial(&b);
    assert_rejected(&b, State::HalfOpen);
    p.record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::Closed);
    let b = Breaker::builder()
        .threshold(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    trip(&b);
    clock.advance(std::time::Duration::from_secs(30));
    let p = trial(&b);
    assert_rejected(&b, State::HalfOpen);
    drop(p);
}

/// A peer crate counts probes since it went half-open and never closes when its
/// probe budget is below its success threshold. Here the budget is of trials at
/// once: each finished trial gives its permit back.
#[test]
fn success_threshold_3_with_trial_calls_1_closes_after_3_sequential_trials() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 1, 3);
    for i in 1..=3 {
        let p = trial(&b);
        assert_rejected(&b, State::HalfOpen);
        p.record(failfast_runtime::Outcome::Success);
        let snap = b.snapshot();
        if i < 3 {
            assert_eq!(snap.state, State::HalfOpen, "{i} of 3 successful trials");
            assert_eq!((snap.trials_in_flight, snap.trial_successes), (0, i));
        } else {
            assert_eq!(snap.state, State::Closed, "3 of 3 successful trials");
        }
    }
}

#[test]
fn success_threshold_above_trial_calls_closes_through_call() {
    // The same combination through `call`, spread over time: no wedge.
    let clock = ManualClock::new();
    let b = eligible(&clock, 1, 3);
    for _ in 0..3 {
        clock.advance(Duration::from_millis(1));
        b.call(|| Ok::<_, ()>(())).unwrap();
    }
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn no_combination_of_trial_calls_and_success_threshold_wedges() {
    for trial_calls in 1..=5 {
        for success_threshold in 1..=7 {
            let clock = ManualClock::new();
            let b = eligible(&clock, trial_calls, success_threshold);
            let mut successes = 0;
            // Rounds of as many trials at once as allowed, all succeeding.
            while b.state() == State::HalfOpen {
                let mut permits = Vec::new();
                while let Ok(p) = b.acquire() {
                    permits.push(p);
                    assert!(permits.len() <= trial_calls as usize, "too many trials");
                }
                assert_eq!(permits.len(), trial_calls as usize);
                for p in permits {
                    p.record(failfast_runtime::Outcome::Success);
                    successes += 1;
                }
                assert!(
                    successes <= success_threshold + trial_calls,
                    "trial_calls {trial_calls}, success_threshold {success_threshold}: \
                     still half-open after {successes} successful trials"
                );
            }
            assert_eq!(b.state(), State::Closed);
            assert!(successes >= success_threshold);
        }
    }
}

#[test]
fn neutral_trials_do_not_count_toward_success_threshold() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 1, 2);
    trial(&b).record(failfast_runtime::Outcome::Success);
    for _ in 0..5 {
        trial(&b).record(Outcome::Neutral);
        drop(trial(&b)); // an abandoned trial
    }
    let snap = b.snapshot();
    assert_eq!((snap.state, snap.trial_successes), (State::HalfOpen, 1));
    trial(&b).record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn a_failed_trial_reopens_at_once_and_restarts_the_wait() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 1, 1);
    clock.advance(Duration::from_secs(7)); // the trial comes late
    let p = trial(&b);
    clock.advance(Duration::from_secs(2)); // and takes a while
    p.record(failfast_runtime::Outcome::Failure);
    assert_eq!(b.state(), State::Open);
    let rejected = b.acquire().expect_err("open again");
    assert_eq!(rejected.state(), State::Open);
    // The wait counts from the failed trial, not from the first trip.
    assert_eq!(rejected.retry_after(), Some(RECOVERY));
    clock.advance(RECOVERY - NS);
    assert_rejected(&b, State::Open);
    clock.advance(NS);
    assert_eq!(b.state(), State::HalfOpen);
    trial(&b).record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn a_failed_trial_among_several_reopens_and_discards_the_others() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 3, 2);
    let (p1, p2, p3) = (trial(&b), trial(&b), trial(&b));
    p1.record(failfast_runtime::Outcome::Success);
    p2.record(failfast_runtime::Outcome::Failure);
    assert_eq!(b.state(), State::Open, "one failed trial is enough");
    // The last trial succeeds, but it belongs to the round that failed.
    p3.record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.snapshot().retry_after, Some(RECOVERY));
}

#[test]
fn a_failure_after_some_successful_trials_starts_over() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 1, 3);
    trial(&b).record(failfast_runtime::Outcome::Success);
    trial(&b).record(failfast_runtime::Outcome::Success);
    trial(&b).record(failfast_runtime::Outcome::Failure);
    assert_eq!(b.state(), State::Open);
    clock.advance(RECOVERY);
    // The two earlier successes do not carry over.
    trial(&b).record(failfast_runtime::Outcome::Success);
    trial(&b).record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::HalfOpen);
    trial(&b).record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn a_panicking_trial_reopens() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 1, 1);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = b.call(|| -> Result<(), ()> { panic!("client bug") });
    }));
    assert!(caught.is_err());
    assert_eq!(b.state(), State::Open);
}

const SLOW: Duration = Duration::from_secs(2);

fn slow_breaker(clock: &ManualClock) -> Breaker {
    let b = Breaker::builder()
        .slow(SLOW)
        .slow_rate(0.5)
        .window_calls(2)
        .min_calls(2)
        .recovery(RECOVERY)
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..2 {
        b.call(|| {
            clock.advance(SLOW * 2);
            Ok::<_, ()>(())
        })
        .unwrap();
    }
    assert_eq!(b.state(), State::Open);
    clock.advance(RECOVERY);
    b
}

#[test]
fn a_slow_trial_reopens_even_when_it_succeeds() {
    let clock = ManualClock::new();
    let b = slow_breaker(&clock);
    b.call(|| {
        clock.advance(SLOW + NS);
        Ok::<_, ()>(())
    })
    .unwrap();
    assert_eq!(b.state(), State::Open, "a slow trial is a failed trial");
    let rejected = b.acquire().expect_err("open again");
    assert_eq!(rejected.retry_after(), Some(RECOVERY));
}

#[test]
fn a_fast_enough_trial_closes() {
    let clock = ManualClock::new();
    let b = slow_breaker(&clock);
    b.call(|| {
        clock.advance(SLOW);
        Ok::<_, ()>(())
    })
    .unwrap();
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn a_slow_neutral_trial_just_gives_its_permit_back() {
    let clock = ManualClock::new();
    let b = slow_breaker(&clock);
    let _ = crate::call_counting(
        &b,
        |_: &()| false,
        || {
            clock.advance(SLOW * 10);
            Err::<(), ()>(())
        },
    );
    assert_eq!(b.state(), State::HalfOpen);
    b.call(|| Ok::<_, ()>(())).unwrap();
    assert_eq!(b.state(), State::Closed);
}

/// The default lease: ten times `recovery` (300 s here), at least 60 s.
const LEASE: Duration = Duration::from_secs(300);

#[test]
fn unresolved_trials_are_presumed_lost_after_their_lease() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 2, 2);
    // Two trials that never report back (leaked, e.g. a detached task that hangs).
    std::mem::forget(trial(&b));
    std::mem::forget(trial(&b));
    assert_rejected(&b, State::HalfOpen);
    // `recovery` is no reason to give up on a trial: it may just be slow.
    clock.advance(RECOVERY);
    assert_rejected(&b, State::HalfOpen);
    clock.advance(LEASE - RECOVERY - NS);
    assert_rejected(&b, State::HalfOpen);
    clock.advance(NS);
    // A new round of trials begins.
    trial(&b).record(failfast_runtime::Outcome::Success);
    trial(&b).record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn the_lease_counts_from_the_latest_trial() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 2, 2);
    std::mem::forget(trial(&b));
    clock.advance(Duration::from_secs(100));
    std::mem::forget(trial(&b));
    // The first is past its lease, the second is not: no new round yet.
    clock.advance(LEASE - Duration::from_secs(100));
    assert_rejected(&b, State::HalfOpen);
    clock.advance(Duration::from_secs(100));
    trial(&b).record(failfast_runtime::Outcome::Success);
}

#[test]
fn a_slow_trial_is_not_replaced_and_its_failure_reopens() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 1, 1);
    let slow = trial(&b);
    // The trial takes five times `recovery`: no second trial meanwhile.
    for _ in 0..5 {
        clock.advance(RECOVERY);
        assert_rejected(&b, State::HalfOpen);
    }
    slow.record(failfast_runtime::Outcome::Failure);
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.snapshot().retry_after, Some(RECOVERY));
}

#[test]
fn a_late_failure_from_a_presumed_lost_trial_still_reopens() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 1, 2);
    let lost = trial(&b);
    clock.advance(LEASE);
    // Presumed lost: a new round starts, and its trial succeeds (1 of 2).
    trial(&b).record(failfast_runtime::Outcome::Success);
    assert_eq!(b.snapshot().trial_successes, 1);
    // The first trial was only slow, and failed.
    lost.record(failfast_runtime::Outcome::Failure);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_late_success_or_neutral_from_a_presumed_lost_trial_is_ignored() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 1, 2);
    let lost_1 = trial(&b);
    clock.advance(LEASE);
    let current = trial(&b);
    // Ignored: it does not give back the slot of the running trial...
    lost_1.record(failfast_runtime::Outcome::Neutral);
    assert_rejected(&b, State::HalfOpen);
    clock.advance(LEASE);
    let lost_2 = current;
    let current = trial(&b);
    // ...nor count toward closing.
    lost_2.record(failfast_runtime::Outcome::Success);
    assert_eq!(b.snapshot().trial_successes, 0);
    assert_eq!(b.snapshot().trials_in_flight, 1);
    current.record(failfast_runtime::Outcome::Success);
    assert_eq!(b.snapshot().trial_successes, 1);
}

#[test]
fn trial_lease_is_configurable() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .threshold(1)
        .recovery(RECOVERY)
        .trial_lease(Duration::from_secs(5))
        .clock(clock.clone())
        .build()
        .unwrap();
    trip(&b);
    clock.advance(RECOVERY);
    std::mem::forget(trial(&b));
    clock.advance(Duration::from_secs(5) - NS);
    assert_rejected(&b, State::HalfOpen);
    clock.advance(NS);
    trial(&b).record(failfast_runtime::Outcome::Success);
    assert_eq!(b.state(), State::Closed);
    let zero = Breaker::builder().trial_lease(Duration::ZERO).build();
    assert_eq!(zero.unwrap_err().key(), "trial_lease");
}

#[test]
fn the_default_lease_is_at_least_a_minute() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .threshold(1)
        .recovery(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    trip(&b);
    clock.advance(Duration::from_secs(1));
    std::mem::forget(trial(&b));
    clock.advance(Duration::from_secs(60) - NS);
    assert_rejected(&b, State::HalfOpen);
    clock.advance(NS);
    trial(&b).record(failfast_runtime::Outcome::Success);
}

/// `since_transition` counts from the last change of state, not from the last
/// trial that came back.
#[test]
fn a_trial_coming_back_is_not_a_transition() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 2, 3);
    let first = trial(&b);
    clock.advance(Duration::from_secs(5));
    first.record(failfast_runtime::Outcome::Success);
    clock.advance(Duration::from_secs(5));
    trial(&b).record(failfast_runtime::Outcome::Neutral);
    clock.advance(Duration::from_secs(5));
    let s = b.snapshot();
    assert_eq!((s.state, s.trial_successes), (State::HalfOpen, 1));
    assert_eq!(s.since_transition, Duration::from_secs(15));
}

/// A breaker with threshold 1 and a 10 ms trial lease, tripped and
/// `recovery` later: eligible for trials.
fn eligible_with_short_lease(clock: &ManualClock) -> Breaker {
    let b = Breaker::builder()
        .threshold(1)
        .recovery(RECOVERY)
        .trial_lease(Duration::from_millis(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    trip(&b);
    clock.advance(RECOVERY);
    b
}

/// `rounds` lost rounds: every trial held past its lease, and the next call
/// starts a new round. Returns every trial, the first one first.
fn lose_rounds<'b>(b: &'b Breaker, clock: &ManualClock, rounds: usize) -> Vec<Permit<'b>> {
    let lease = Duration::from_millis(10);
    let mut trials = vec![trial(b)];
    for _ in 0..rounds {
        clock.advance(lease + NS);
        trials.push(
            b.acquire()
                .expect("every trial is past its lease: a new round"),
        );
        assert_rejected(b, State::HalfOpen);
    }
    trials
}

/// A very late success of the first trial, however many rounds were lost
/// since, is not the current round's: the breaker stays half-open with the
/// current trial still running, and lets no second trial in. Past 256 rounds
/// the word's round number starts again; 255, 256, 257 and 600 rounds cover
/// the last round of a generation, the first of the next, and more.
#[test]
fn a_late_success_of_a_lost_round_never_counts_however_many_rounds_passed() {
    for rounds in [1, 255, 256, 257, 511, 512, 600] {
        let clock = ManualClock::new();
        let b = eligible_with_short_lease(&clock);
        // Listened to: a round past the 256th renumbers the period, and the
        // transition after it must find its turn at once.
        let _listening = failfast_runtime::events::subscribe(&b, |_| {});
        let (_, _, gave_up) = failfast_runtime::__private::thread_turns();
        let mut trials = lose_rounds(&b, &clock, rounds);
        let current = trials.pop().expect("the current trial");
        let first = trials.remove(0);
        first.record(failfast_runtime::Outcome::Success);
        let s = b.snapshot();
        assert_eq!(
            (s.state, s.trial_successes, s.trials_in_flight),
            (State::HalfOpen, 0, 1),
            "after {rounds} lost rounds"
        );
        assert_rejected(&b, State::HalfOpen);
        current.record(failfast_runtime::Outcome::Success);
        assert_eq!(b.state(), State::Closed, "after {rounds} lost rounds");
        assert_eq!(
            failfast_runtime::__private::thread_turns().2,
            gave_up,
            "no transition waited out the ordering bound"
        );
        drop(trials);
    }
}

/// A late failure of a lost round reopens the breaker while the round's
/// generation lasts (the 255 rounds after it); a trial of an earlier
/// generation is stale and ignored whatever it reports.
#[test]
fn a_late_failure_reopens_within_its_generation_and_is_ignored_after() {
    for (rounds, reopens) in [(1, true), (255, true), (256, false), (300, false)] {
        let clock = ManualClock::new();
        let b = eligible_with_short_lease(&clock);
        let mut trials = lose_rounds(&b, &clock, rounds);
        let current = trials.pop().expect("the current trial");
        trials.remove(0).record(failfast_runtime::Outcome::Failure);
        let expected = if reopens {
            State::Open
        } else {
            State::HalfOpen
        };
        assert_eq!(b.state(), expected, "after {rounds} lost rounds");
        drop(current);
        drop(trials);
    }
}

/// A rule on `Ok` values (the attribute's `counts_ok`, recorded by hand):
/// a trial whose `Ok` the rule counts reopens at once, one it does not
/// count closes, and an error is judged by `counts` as `resolve` judges it.
#[test]
fn a_trials_counted_ok_reopens_and_an_uncounted_ok_closes() {
    let clock = ManualClock::new();
    let b = eligible(&clock, 1, 1);
    let unavailable = |status: &u16| *status >= 500;
    let judged = |result: Result<u16, u16>, counts: fn(&u16) -> bool| match result {
        Ok(status) if unavailable(&status) => Outcome::Failure,
        Ok(_) => Outcome::Success,
        Err(e) if counts(&e) => Outcome::Failure,
        Err(_) => Outcome::Neutral,
    };
    trial(&b).record(judged(Ok(503), |_| true));
    assert_eq!(
        b.state(),
        State::Open,
        "a counted `Ok` of the trial reopens"
    );
    clock.advance(RECOVERY);
    trial(&b).record(judged(Err(400), |e| *e >= 500));
    assert_eq!(
        b.state(),
        State::HalfOpen,
        "a neutral error gives the trial back"
    );
    trial(&b).record(judged(Ok(204), |_| true));
    assert_eq!(b.state(), State::Closed, "an `Ok` not counted closes");
    let seen = b.snapshot();
    assert_eq!((seen.failures, seen.neutral, seen.successes), (2, 1, 1));
}
