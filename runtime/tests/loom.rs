//! Model checking of the state machine's races with loom: every interleaving of
//! the threads below is explored, not just the ones a real run happens to hit.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p failfast-runtime --test loom --release --features keyed
//! ```
#![cfg(loom)]

use std::time::Duration;

use failfast_runtime::{Breaker, ManualClock, Mode, Outcome, State};
use loom::sync::Arc;
use loom::thread;

const RECOVERY: Duration = Duration::from_secs(1);

/// Explores every interleaving with up to three preemptions per execution
/// (loom's recommended bound: bugs of real code show up within two or three).
fn model(f: impl Fn() + Sync + Send + 'static) {
    model_within(3, f);
}

/// Explores every interleaving with up to `preemptions` per execution.
fn model_within(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.check(f);
}

/// A breaker that has tripped and whose recovery has elapsed: the next call is
/// the trial.
fn eligible(trial_calls: u32, success_threshold: u32) -> Arc<Breaker> {
    eligible_on(&ManualClock::new(), trial_calls, success_threshold)
}

fn eligible_on(clock: &ManualClock, trial_calls: u32, success_threshold: u32) -> Arc<Breaker> {
    let b = Breaker::builder()
        .threshold(1)
        .recovery(RECOVERY)
        .trial_calls(trial_calls)
        .success_threshold(success_threshold)
        .clock(clock.clone())
        .build()
        .unwrap();
    let _ = b.call(|| Err::<(), _>("down"));
    clock.advance(RECOVERY);
    Arc::new(b)
}

/// A closed breaker that trips at `threshold` failures, on a clock that
/// stands still.
fn closed(threshold: u32) -> Arc<Breaker> {
    Arc::new(
        Breaker::builder()
            .threshold(threshold)
            .recovery(RECOVERY)
            .clock(ManualClock::new())
            .build()
            .unwrap(),
    )
}

/// One call through `b`, if it is admitted, ending with `outcome`.
fn call(b: &Breaker, outcome: Outcome) {
    if let Ok(permit) = b.acquire() {
        permit.record(outcome);
    }
}

#[test]
fn racing_callers_get_exactly_one_trial() {
    model(|| {
        let b = eligible(1, 1);
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || match b.acquire() {
                    Ok(permit) => {
                        std::mem::forget(permit); // still in flight at the end
                        1
                    }
                    Err(rejected) => {
                        // Refused because the trial is taken, never on a stale
                        // reading of the open state.
                        assert_eq!(rejected.state(), State::HalfOpen);
                        0
                    }
                })
            })
            .collect();
        let admitted: u32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(admitted, 1);
        assert_eq!(b.state(), State::HalfOpen);
    });
}

#[test]
fn trial_success_racing_a_new_caller_never_admits_two_at_once() {
    model(|| {
        let b = eligible(1, 2);
        let trial = b.acquire().expect("the trial");
        let b2 = b.clone();
        let racer = thread::spawn(move || {
            b2.acquire()
                .map(|p| p.record(failfast_runtime::Outcome::Success))
                .is_ok()
        });
        trial.record(failfast_runtime::Outcome::Success);
        let racer_ran = racer.join().unwrap();
        let s = b.snapshot();
        if racer_ran {
            // Admitted after the first trial gave its permit back: two successes.
            assert_eq!(s.state, State::Closed);
        } else {
            assert_eq!(
                (s.state, s.trial_successes, s.trials_in_flight),
                (State::HalfOpen, 1, 0)
            );
        }
    });
}

#[test]
fn concurrent_failures_trip_once_and_publish_the_deadline() {
    model(|| {
        let b = closed(2);
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    let _ = b.call(|| Err::<(), _>("down"));
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let s = b.snapshot();
        assert_eq!(s.state, State::Open);
        assert_eq!(s.retry_after, Some(RECOVERY));
    });
}

#[test]
fn a_call_admitted_before_the_trip_cannot_close_the_breaker() {
    model(|| {
        let b = closed(1);
        let early = b.acquire().unwrap();
        let b2 = b.clone();
        let tripper = thread::spawn(move || {
            let _ = b2.call(|| Err::<(), _>("down"));
        });
        early.record(failfast_runtime::Outcome::Success);
        tripper.join().unwrap();
        assert_eq!(
            b.state(),
            State::Open,
            "the failure trips whatever the order"
        );
    });
}

/// Two trials race through Open → HalfOpen → Open: whatever the interleaving,
/// the breaker ends Open with a deadline it will reach (it used to be possible
/// for the first trial's late deadline to overwrite the second trip's and
/// leave the breaker open for good).
#[test]
fn racing_trials_that_fail_never_wedge_the_breaker() {
    for trial_calls in [2, 3] {
        model(move || {
            let clock = ManualClock::new();
            let b = eligible_on(&clock, trial_calls, 2);
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    let b = b.clone();
                    thread::spawn(move || {
                        call(&b, Outcome::Failure);
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            let s = b.snapshot();
            assert_eq!(s.state, State::Open);
            assert_eq!(s.retry_after, Some(RECOVERY));
            clock.advance(RECOVERY);
            b.acquire()
                .expect("a trial after recovery")
                .record(failfast_runtime::Outcome::Success);
        });
    }
}

/// A trial that succeeds racing a second trial that fails, with
/// `trial_calls = 2`: Open or Closed, never stuck.
#[test]
fn a_trial_success_racing_a_trial_failure_never_wedges() {
    model(|| {
        let clock = ManualClock::new();
        let b = eligible_on(&clock, 2, 1);
        let b2 = b.clone();
        let failing = thread::spawn(move || {
            call(&b2, Outcome::Failure);
        });
        call(&b, Outcome::Success);
        failing.join().unwrap();
        clock.advance(RECOVERY);
        b.acquire()
            .expect("closed, or a trial after recovery")
            .record(failfast_runtime::Outcome::Success);
        assert_eq!(b.state(), State::Closed);
    });
}

/// `reset()` racing a trip by the trial (`trial_calls = 1`): whichever wins,
/// the breaker is usable again at once (reset last) or after recovery (trip
/// last), never wedged.
#[test]
fn reset_racing_a_failed_trial_never_wedges() {
    model(|| {
        let clock = ManualClock::new();
        let b = eligible_on(&clock, 1, 1);
        let trial = b.acquire().expect("the trial");
        let b2 = b.clone();
        let resetter = thread::spawn(move || b2.set_mode(Mode::Normal));
        trial.record(failfast_runtime::Outcome::Failure);
        resetter.join().unwrap();
        match b.state() {
            State::Closed => {}
            State::Open => clock.advance(RECOVERY),
            State::HalfOpen => panic!("a failed trial or a reset cannot leave it half-open"),
        }
        b.acquire()
            .expect("usable again")
            .record(failfast_runtime::Outcome::Success);
        assert_eq!(b.state(), State::Closed);
    });
}

/// A reset of a closed breaker racing the failure that trips it: closed
/// (the reset last, or the trip seen by the reset, which then closes it),
/// or open until its own deadline (the trip last); never an open word
/// whose deadline the reset's clearing of the counts wrote over.
#[test]
fn a_reset_racing_a_trip_leaves_it_closed_or_open_until_its_deadline() {
    model(|| {
        let b = closed(1);
        let permit = b.acquire().expect("closed");
        let b2 = b.clone();
        let resetter = thread::spawn(move || b2.set_mode(Mode::Normal));
        permit.record(Outcome::Failure);
        resetter.join().unwrap();
        let s = b.snapshot();
        match s.state {
            State::Closed => {}
            State::Open => assert_eq!(s.retry_after, Some(RECOVERY)),
            State::HalfOpen => panic!("neither a trip nor a reset makes it half-open"),
        }
    });
}

/// `force_open()` then `reset()` racing a caller taking the trial: the
/// caller's outcome never applies to the state the manual control created.
#[test]
fn manual_control_racing_a_trial_never_wedges() {
    model(|| {
        let clock = ManualClock::new();
        let b = eligible_on(&clock, 1, 1);
        let b2 = b.clone();
        let caller = thread::spawn(move || {
            if let Ok(permit) = b2.acquire() {
                // A trial fails; a call admitted after the reset is healthy.
                if permit.is_trial() {
                    permit.record(failfast_runtime::Outcome::Failure);
                } else {
                    permit.record(failfast_runtime::Outcome::Success);
                }
            }
        });
        b.set_mode(Mode::ForcedOpen);
        b.set_mode(Mode::Normal);
        caller.join().unwrap();
        let s = b.snapshot();
        assert_eq!(
            s.state,
            State::Closed,
            "a stale trial cannot undo the reset"
        );
        b.acquire()
            .expect("closed")
            .record(failfast_runtime::Outcome::Success);
    });
}

/// `threads` threads entering a bulkhead of `max` `rounds` times each: never
/// more than `max` inside at once, and every place comes back.
fn bulkhead_model(
    max: u32,
    threads: usize,
    rounds: usize,
) -> Arc<failfast_runtime::__private::Bulkhead> {
    use loom::sync::atomic::{AtomicU32, Ordering::SeqCst};

    let bulkhead = Arc::new(failfast_runtime::__private::Bulkhead::new(max));
    let inside = Arc::new(AtomicU32::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (bulkhead, inside) = (bulkhead.clone(), inside.clone());
            thread::spawn(move || {
                for _ in 0..rounds {
                    if let Some(slot) = bulkhead.try_enter() {
                        assert!(inside.fetch_add(1, SeqCst) < max);
                        inside.fetch_sub(1, SeqCst);
                        drop(slot);
                    }
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(bulkhead.running(), 0);
    bulkhead
}

/// A bulkhead of one, two threads each entering twice: never two inside at
/// once, and every slot comes back.
#[test]
fn a_bulkhead_never_admits_more_than_its_max() {
    model(|| {
        bulkhead_model(1, 2, 2);
    });
}

/// A bulkhead of two, three threads entering once each and the main thread
/// after them: never three inside at once, whichever counter (the central
/// one, or a thread's stripe) each place is taken from and given back to;
/// afterwards both places are found again.
#[test]
fn a_striped_bulkhead_never_admits_more_than_its_max() {
    model(|| {
        let bulkhead = bulkhead_model(2, 3, 1);
        let first = bulkhead.try_enter().expect("a place");
        let second = bulkhead.try_enter().expect("a second place");
        assert!(bulkhead.try_enter().is_none());
        drop((first, second));
    });
}

/// A resize from `from` to `to` places racing two calls that take a place
/// and give it back, on a striped bulkhead, and a third thread that
/// resizes and then takes a place itself: never more than `max(from, to)`
/// calls inside at once, and once all are done no place lost or made:
/// exactly `to` are found, none owed.
fn resize_model(from: u32, to: u32) {
    use failfast_runtime::__private::Bulkhead;
    use loom::sync::atomic::{AtomicU32, Ordering::SeqCst};

    let bound = from.max(to);
    let bulkhead = Arc::new(Bulkhead::new(from));
    let inside = Arc::new(AtomicU32::new(0));
    let mut handles = Vec::new();
    for _ in 0..2 {
        let (bulkhead, inside) = (bulkhead.clone(), inside.clone());
        handles.push(thread::spawn(move || {
            if let Some(slot) = bulkhead.try_enter() {
                assert!(inside.fetch_add(1, SeqCst) < bound);
                inside.fetch_sub(1, SeqCst);
                drop(slot);
            }
        }));
    }
    {
        let (bulkhead, inside) = (bulkhead.clone(), inside.clone());
        handles.push(thread::spawn(move || {
            bulkhead.resize(to);
            if let Some(slot) = bulkhead.try_enter() {
                assert!(inside.fetch_add(1, SeqCst) < bound);
                inside.fetch_sub(1, SeqCst);
                drop(slot);
            }
        }));
    }
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(bulkhead.running(), 0);
    let places: Vec<_> = std::iter::from_fn(|| bulkhead.try_enter()).collect();
    assert_eq!(places.len(), to as usize, "exactly the new limit's places");
    assert_eq!(bulkhead.running(), to);
}

/// Lowering a striped bulkhead from two places to one while calls take
/// and give back places: the places given back beyond one are retired.
#[test]
fn a_lowered_bulkhead_keeps_its_bound_and_loses_no_place() {
    // Three threads and retries on the counters: two preemptions keep the
    // run short.
    model_within(2, || resize_model(2, 1));
}

/// Raising a striped bulkhead from two places to three while calls take
/// and give back places: the new place is free at once, and no more.
#[test]
fn a_raised_bulkhead_keeps_its_bound_and_makes_no_place_more() {
    model_within(2, || resize_model(2, 3));
}

/// Calls through a bulkhead of one with `max_wait`: `holders` threads take
/// the place if it is free and give it back, `waiters` threads wait for it
/// (the model has no time: they wait until they are handed it). A place
/// given back while a call joins the line is never lost: a waiter left
/// parked would be a deadlock, which loom reports. Afterwards nobody waits
/// and the place is free.
fn waiting_model(holders: usize, waiters: usize) {
    use failfast_runtime::__private::Bulkhead;

    let breaker = Arc::new(
        Breaker::builder()
            .clock(ManualClock::new())
            .build()
            .unwrap(),
    );
    let bulkhead = Arc::new(Bulkhead::new(1).max_wait(Duration::from_secs(60)));
    let mut handles = Vec::new();
    for _ in 0..holders {
        let bulkhead = bulkhead.clone();
        handles.push(thread::spawn(move || drop(bulkhead.try_enter())));
    }
    for _ in 0..waiters {
        let (breaker, bulkhead) = (breaker.clone(), bulkhead.clone());
        handles.push(thread::spawn(move || {
            let mut permit = breaker.acquire().unwrap();
            let place = bulkhead
                .enter(&breaker, &mut permit)
                .expect("handed a place");
            drop(place);
            permit.record(Outcome::Success);
        }));
    }
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(bulkhead.running(), 0);
    assert!(bulkhead.try_enter().is_some(), "the place came back");
}

#[test]
fn a_waiting_call_is_handed_the_place_given_back() {
    model(|| waiting_model(1, 1));
}

/// Two calls waiting while a third takes and gives back the place: each is
/// served in turn.
#[test]
fn waiting_calls_are_each_handed_a_place() {
    // Three threads and the line's lock: two preemptions keep the run short.
    model_within(2, || waiting_model(1, 2));
}

/// A reconfiguration racing two failures: whichever threshold each failure
/// reads is one published whole (the old 3 or the new 2), so two failures
/// trip the breaker exactly when the second one reads the new threshold, and
/// afterwards the new threshold is in force.
#[test]
fn a_reconfiguration_racing_failures_publishes_whole_settings() {
    model(|| {
        let b = Arc::new(
            Breaker::builder()
                .threshold(3)
                .recovery(RECOVERY)
                .clock(ManualClock::new())
                .build()
                .unwrap(),
        );
        let changer = {
            let b = b.clone();
            thread::spawn(move || {
                let patch = failfast_runtime::Breaker::builder()
                    .threshold(2)
                    .recovery(RECOVERY * 2);
                b.reconfigure(&patch).unwrap();
            })
        };
        let caller = {
            let b = b.clone();
            thread::spawn(move || {
                for _ in 0..2 {
                    let _ = b.call(|| Err::<(), _>("down"));
                }
                let c = b.config();
                // Read together: never the new threshold with the old recovery.
                assert_eq!(c.recovery(), RECOVERY * (4 - c.threshold()));
            })
        };
        changer.join().unwrap();
        caller.join().unwrap();
        assert_eq!(b.config().threshold(), 2);
        if b.state() == State::Closed {
            assert_eq!(b.snapshot().consecutive_failures, 2);
            let _ = b.call(|| Err::<(), _>("down"));
        }
        assert_eq!(b.state(), State::Open);
    });
}

/// A change of the window's shape racing a failure: the failure is recorded
/// in the old window (two failures of two: it trips) or in the fresh one
/// (one call: below `min_calls`), never lost to both, and afterwards the
/// fresh window decides.
#[test]
fn a_window_reshape_racing_a_failure_lands_it_in_one_window() {
    model(|| {
        let b = Arc::new(
            Breaker::builder()
                .failure_rate(1.0)
                .window_calls(4)
                .min_calls(2)
                .clock(ManualClock::new())
                .build()
                .unwrap(),
        );
        let _ = b.call(|| Err::<(), _>("down"));
        let reshaper = {
            let b = b.clone();
            thread::spawn(move || {
                let patch = failfast_runtime::Breaker::builder().window_calls(2);
                b.reconfigure(&patch).unwrap();
            })
        };
        let caller = {
            let b = b.clone();
            thread::spawn(move || {
                let _ = b.call(|| Err::<(), _>("down"));
            })
        };
        reshaper.join().unwrap();
        caller.join().unwrap();
        if b.state() == State::Closed {
            assert_eq!(b.snapshot().window_calls, 1, "in the fresh window");
            let _ = b.call(|| Err::<(), _>("down"));
        }
        assert_eq!(b.state(), State::Open);
    });
}

/// A trial success closing the breaker while a reconfiguration swaps its
/// count window for a time window: whichever goes first, the Closed word
/// asks successes to consult the time window (a success there counts the
/// calls its bucket holds), so the first success after both is in it.
#[test]
fn a_close_racing_a_reshape_to_a_time_window_leaves_successes_counted() {
    model(|| {
        let clock = ManualClock::new();
        let b = Arc::new(
            Breaker::builder()
                .failure_rate(1.0)
                .window_calls(4)
                .min_calls(1)
                .recovery(RECOVERY)
                .clock(clock.clone())
                .build()
                .unwrap(),
        );
        let _ = b.call(|| Err::<(), _>("down"));
        assert_eq!(b.state(), State::Open);
        clock.advance(RECOVERY);
        let reshaper = {
            let b = b.clone();
            thread::spawn(move || {
                let patch = failfast_runtime::Breaker::builder().window_time(RECOVERY * 10);
                b.reconfigure(&patch).unwrap();
            })
        };
        let trial = {
            let b = b.clone();
            thread::spawn(move || call(&b, Outcome::Success))
        };
        reshaper.join().unwrap();
        trial.join().unwrap();
        assert_eq!(b.state(), State::Closed);
        call(&b, Outcome::Success);
        assert_eq!(b.snapshot().window_calls, 1);
    });
}

/// Four members of a keyed family's ejection budget of 25 %: room for one
/// open member. (The family itself is not modelled: its map is scc's, which
/// loom cannot see into. The members are real breakers sharing the budget a
/// family gives its stored members, as `Family` does.)
fn budgeted(clock: &ManualClock) -> Vec<Arc<Breaker>> {
    let members: Vec<Arc<Breaker>> = (0..4)
        .map(|_| {
            Arc::new(
                Breaker::builder()
                    .threshold(1)
                    .recovery(RECOVERY)
                    .clock(clock.clone())
                    .build()
                    .unwrap(),
            )
        })
        .collect();
    let each: Vec<&Breaker> = members.iter().map(|b| &**b).collect();
    Breaker::share_ejection_budget(&each, 25);
    members
}

/// Runs `a` and `b` on two threads at once.
fn racing(a: impl FnOnce() + Send + 'static, b: impl FnOnce() + Send + 'static) {
    let a = thread::spawn(a);
    let b = thread::spawn(b);
    a.join().unwrap();
    b.join().unwrap();
}

/// How many of `members` are Open or HalfOpen.
fn ejected(members: &[Arc<Breaker>]) -> usize {
    members
        .iter()
        .filter(|b| b.state() != State::Closed)
        .count()
}

/// The budget counts exactly the `open` members ejected: with none, a
/// member trips and a second is held back; with one or more, none trips.
fn assert_counted(members: &[Arc<Breaker>], open: usize) {
    let closed: Vec<&Arc<Breaker>> = members
        .iter()
        .filter(|b| b.state() == State::Closed)
        .collect();
    call(closed[0], Outcome::Failure);
    let tripped = usize::from(closed[0].state() == State::Open);
    assert_eq!(tripped, usize::from(open == 0), "{open} open: room for one");
    call(closed[1], Outcome::Failure);
    assert_eq!(closed[1].state(), State::Closed, "never a second");
}

/// Two members failing at once with room for one: exactly one opens, and
/// the budget counts it, whatever the interleaving (the budget read and the
/// trip are one decision).
#[test]
fn two_members_tripping_at_once_never_both_open_with_room_for_one() {
    model(|| {
        let members = budgeted(&ManualClock::new());
        let (a, b) = (members[0].clone(), members[1].clone());
        racing(
            move || call(&a, Outcome::Failure),
            move || call(&b, Outcome::Failure),
        );
        assert_eq!(ejected(&members), 1);
        assert_counted(&members, 1);
        for b in &members {
            b.set_mode(Mode::Normal);
        }
        assert_counted(&members, 0);
    });
}

/// A member closing (its trial succeeds, or it is set back to normal)
/// while another fails: the other opens if the close came first, is held
/// back otherwise, and the room the close gives back is counted exactly.
#[test]
fn a_close_racing_a_trip_gives_back_its_room_exactly() {
    for by_trial in [true, false] {
        model(move || {
            let clock = ManualClock::new();
            let members = budgeted(&clock);
            call(&members[0], Outcome::Failure);
            clock.advance(RECOVERY);
            let (a, b) = (members[0].clone(), members[1].clone());
            racing(
                move || {
                    if by_trial {
                        call(&a, Outcome::Success);
                    } else {
                        a.set_mode(Mode::Normal);
                    }
                },
                move || call(&b, Outcome::Failure),
            );
            assert_eq!(members[0].state(), State::Closed);
            let open = ejected(&members);
            assert!(open <= 1);
            assert_counted(&members, open);
        });
    }
}

/// A member forced open while another fails: a forced open is not held
/// back (two may be open then), but it is counted, and given back when the
/// member is set back to normal.
#[test]
fn a_forced_open_racing_a_trip_is_counted() {
    model(|| {
        let members = budgeted(&ManualClock::new());
        let (a, b) = (members[0].clone(), members[1].clone());
        racing(
            move || a.set_mode(Mode::ForcedOpen),
            move || call(&b, Outcome::Failure),
        );
        let open = ejected(&members);
        assert!((1..=2).contains(&open));
        assert_counted(&members, open);
        for b in &members {
            b.set_mode(Mode::Normal);
        }
        assert_counted(&members, 0);
    });
}

/// A keyed family's lease handshake (`policy/keyed/members.rs`, `Leases`):
/// callers taking leases of a member, each on its thread's stripe, while
/// the family retires it to evict it. Whatever the interleaving and the
/// values each load may read, a lease is never held of a retired member:
/// either the lease lets go (and counts nothing), or the family keeps the
/// member. Built with the `keyed` feature:
///
/// ```text
/// RUSTFLAGS="--cfg loom" cargo test -p failfast-runtime --test loom --release --features keyed lease
/// ```
#[cfg(feature = "keyed")]
mod lease {
    use super::*;
    use failfast_runtime::Leases;
    use loom::sync::atomic::AtomicBool;

    /// A member's lease counts and its retired mark.
    #[derive(Default)]
    struct Member {
        leases: Leases,
        retired: AtomicBool,
    }

    impl Member {
        fn take(&self, stripe: usize) -> bool {
            self.leases.take(&self.retired, stripe)
        }
    }

    /// `takers` threads, on stripes 0, 1, …, each take a lease (and, with
    /// `give_back`, drop it) while the model's thread retires the member.
    fn retire_racing(takers: usize, give_back: bool) {
        let member = Arc::new(Member::default());
        let handles: Vec<_> = (0..takers)
            .map(|stripe| {
                let member = member.clone();
                thread::spawn(move || {
                    let took = member.take(stripe);
                    if took && give_back {
                        member.leases.release(stripe);
                        return false;
                    }
                    took
                })
            })
            .collect();
        let retired = member.leases.retire(&member.retired);
        let held = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|&held| held)
            .count();
        assert!(!(retired && held > 0), "a lease held of a retired member");
        // Counts are exact: nothing counted but the leases still held.
        assert_eq!(member.leases.unleased(), held == 0);
        if retired {
            assert!(!member.take(0), "a retired member lets every lease go");
        }
    }

    #[test]
    fn a_lease_taken_while_its_member_is_retired_either_keeps_it_or_lets_go() {
        model(|| retire_racing(1, false));
    }

    #[test]
    fn leases_on_two_stripes_racing_a_retirement_never_hold_a_retired_member() {
        model(|| retire_racing(2, false));
    }

    /// A lease dropped before the retirement reads its stripe is no
    /// longer counted: the member may be retired, and the family that then
    /// frees it has acquired everything the lease did.
    #[test]
    fn a_lease_given_back_racing_a_retirement_is_not_counted() {
        model(|| retire_racing(1, true));
    }
}
