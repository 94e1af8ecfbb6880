//! Transition events: one per transition, with the reason, the counts that
//! decided it and the open time chosen; listeners that panic or re-enter; order
//! per breaker under two threads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use failfast_runtime::events::{self, Subscription, Transition, TransitionReason};
use failfast_runtime::{Breaker, Builder, ManualClock, Mode, Outcome, State};

#[path = "../common/sequence.rs"]
mod sequence;
use sequence::check_sequence;

const RECOVERY: Duration = Duration::from_secs(30);

/// Events of one breaker, as delivered.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Transition>>>);

impl Log {
    fn listen(&self, b: &Breaker) -> Subscription {
        let log = self.clone();
        failfast_runtime::events::subscribe(b, move |t| log.0.lock().unwrap().push(t.clone()))
    }

    /// The events since the last call.
    fn take(&self) -> Vec<Transition> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }

    /// Why and with what number each event since the last call came.
    fn numbered(&self) -> Vec<(TransitionReason, u64)> {
        self.take().iter().map(|t| (t.reason, t.seq)).collect()
    }

    /// The one event since the last call.
    fn one(&self) -> Transition {
        let mut events = self.take();
        assert_eq!(events.len(), 1, "exactly one event expected: {events:#?}");
        events.pop().unwrap()
    }
}

/// A breaker built by `builder`, and the log of its events.
fn listened(builder: Builder) -> (Breaker, Log, Subscription) {
    let b = builder.build().unwrap();
    let log = Log::default();
    let subscription = log.listen(&b);
    (b, log, subscription)
}

fn builder(clock: &ManualClock) -> Builder {
    Breaker::builder()
        .name("events-under-test")
        .recovery(RECOVERY)
        .clock(clock.clone())
}

/// From, to and why.
fn edge(t: &Transition) -> (State, State, TransitionReason) {
    (t.from, t.to, t.reason)
}

/// The window's calls, failures and slow calls.
fn window(t: &Transition) -> (u64, u64, u64) {
    let c = &t.counts;
    (c.window_calls, c.window_failures, c.window_slow)
}

fn fail(b: &Breaker) {
    b.acquire().expect("admitted").record(Outcome::Failure);
}

fn succeed(b: &Breaker) {
    b.acquire().expect("admitted").record(Outcome::Success);
}

#[test]
fn consecutive_failures_reaching_the_threshold_open_with_one_event() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(builder(&clock).threshold(3));
    fail(&b);
    fail(&b);
    assert!(log.take().is_empty(), "no transition yet");
    fail(&b);
    let t = log.one();
    assert_eq!(t.name, "events-under-test");
    assert_eq!(
        edge(&t),
        (
            State::Closed,
            State::Open,
            TransitionReason::ThresholdReached
        )
    );
    assert_eq!(t.counts.consecutive_failures, 3);
    assert_eq!(t.open_for, Some(RECOVERY));
    assert_eq!((t.mode, t.seq), (Mode::Normal, 1));
    // Rejections are not transitions.
    assert!(b.acquire().is_err());
    assert!(log.take().is_empty());
}

#[test]
fn recovery_trials_and_their_outcomes_each_give_one_event() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(
        builder(&clock)
            .threshold(1)
            .success_threshold(2)
            .max_recovery(RECOVERY * 8),
    );
    fail(&b);
    assert_eq!(log.one().open_for, Some(RECOVERY));

    // Open → HalfOpen on the first call after the open time, not on `state()`.
    clock.advance(RECOVERY);
    assert_eq!(b.state(), State::HalfOpen);
    assert!(log.take().is_empty());
    let trial = b.acquire().expect("a trial");
    let t = log.one();
    assert_eq!(
        edge(&t),
        (
            State::Open,
            State::HalfOpen,
            TransitionReason::RecoveryElapsed
        )
    );
    assert_eq!((t.open_for, t.seq), (None, 2));

    // A failed trial reopens, for twice as long (growing open time).
    trial.record(Outcome::Failure);
    let t = log.one();
    assert_eq!(
        edge(&t),
        (State::HalfOpen, State::Open, TransitionReason::TrialFailed)
    );
    assert_eq!(t.open_for, Some(RECOVERY * 2));
    assert_eq!(t.counts.trial_successes, 0);

    // Two successful trials close it: one event for the second.
    clock.advance(RECOVERY * 2);
    succeed(&b);
    assert_eq!(log.one().reason, TransitionReason::RecoveryElapsed);
    succeed(&b);
    let t = log.one();
    assert_eq!(
        edge(&t),
        (
            State::HalfOpen,
            State::Closed,
            TransitionReason::TrialsSucceeded
        )
    );
    assert_eq!(t.counts.trial_successes, 2);
    assert_eq!(t.seq, 5);
}

#[test]
fn a_failure_rate_opens_with_the_window_counts() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(
        builder(&clock)
            .failure_rate(0.5)
            .window_calls(4)
            .min_calls(4),
    );
    succeed(&b);
    fail(&b);
    succeed(&b);
    assert!(log.take().is_empty());
    fail(&b);
    let t = log.one();
    assert_eq!(
        edge(&t),
        (State::Closed, State::Open, TransitionReason::FailureRate)
    );
    assert_eq!(window(&t), (4, 2, 0));
    assert_eq!(t.open_for, Some(RECOVERY));
}

/// A call that succeeds after twice `slow`.
fn slow_success(b: &Breaker, clock: &ManualClock, slow: Duration) {
    let permit = b.acquire().expect("admitted");
    clock.advance(slow * 2);
    permit.record(Outcome::Success);
}

#[test]
fn a_slow_call_rate_opens_with_the_window_counts() {
    let clock = ManualClock::new();
    let slow = Duration::from_millis(100);
    let (b, log, _s) = listened(
        builder(&clock)
            .slow(slow)
            .slow_rate(0.5)
            .window_calls(4)
            .min_calls(4),
    );
    let slow_success = || slow_success(&b, &clock, slow);
    succeed(&b);
    slow_success();
    succeed(&b);
    assert!(log.take().is_empty());
    slow_success();
    let t = log.one();
    assert_eq!(
        edge(&t),
        (State::Closed, State::Open, TransitionReason::SlowCallRate)
    );
    assert_eq!(window(&t), (4, 0, 2));
}

/// Beside a failure-rate rule, a trip by the slow-call rate says so: the
/// failure share (1 of 4) is below its rate (0.5), however many calls and
/// failures there are.
#[test]
fn a_slow_call_rate_beside_a_failure_rate_names_the_rule_that_tripped() {
    let clock = ManualClock::new();
    let slow = Duration::from_millis(100);
    let (b, log, _s) = listened(
        builder(&clock)
            .failure_rate(0.5)
            .slow(slow)
            .slow_rate(0.5)
            .window_calls(4)
            .min_calls(4),
    );
    let slow_success = || slow_success(&b, &clock, slow);
    fail(&b);
    slow_success();
    succeed(&b);
    assert!(log.take().is_empty());
    slow_success();
    let t = log.one();
    assert_eq!(
        edge(&t),
        (State::Closed, State::Open, TransitionReason::SlowCallRate)
    );
    assert_eq!(window(&t), (4, 1, 2));
}

/// A failure-rate trip with as many failures as the default `threshold`
/// (5) is still a failure rate: only failures within a window are counted
/// against `threshold`.
#[test]
fn a_failure_rate_trip_is_a_failure_rate_however_many_failures() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(
        builder(&clock)
            .failure_rate(0.5)
            .window_calls(10)
            .min_calls(10),
    );
    for _ in 0..5 {
        succeed(&b);
    }
    for _ in 0..4 {
        fail(&b);
    }
    assert!(log.take().is_empty());
    fail(&b);
    let t = log.one();
    assert_eq!(t.reason, TransitionReason::FailureRate);
    assert_eq!(window(&t), (10, 5, 0));
}

/// Failures within a window trip with `ThresholdReached` and the window's
/// counts.
#[test]
fn failures_within_a_window_open_with_the_threshold_and_the_window_counts() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(builder(&clock).threshold(2).window_calls(4));
    fail(&b);
    succeed(&b);
    assert!(log.take().is_empty());
    fail(&b);
    let t = log.one();
    assert_eq!(
        edge(&t),
        (
            State::Closed,
            State::Open,
            TransitionReason::ThresholdReached
        )
    );
    assert_eq!(window(&t), (3, 2, 0));
    assert_eq!(t.counts.consecutive_failures, 0);
}

#[test]
fn each_manual_control_gives_one_event_with_its_mode() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(builder(&clock).threshold(5));
    fail(&b);
    fail(&b);
    b.set_mode(Mode::ForcedOpen);
    let t = log.one();
    assert_eq!(
        (t.from, t.to, t.reason, t.mode),
        (
            State::Closed,
            State::Open,
            TransitionReason::Manual,
            Mode::ForcedOpen
        )
    );
    assert_eq!(
        t.counts.consecutive_failures, 2,
        "the count that was cleared"
    );
    assert_eq!(t.open_for, None);
    b.set_mode(Mode::ForcedClosed);
    let t = log.one();
    assert_eq!(
        (t.from, t.to, t.mode),
        (State::Open, State::Closed, Mode::ForcedClosed)
    );
    b.set_mode(Mode::ObserveOnly);
    let t = log.one();
    assert_eq!(
        (t.from, t.to, t.mode),
        (State::Closed, State::Closed, Mode::ObserveOnly)
    );
    b.set_mode(Mode::Normal);
    let t = log.one();
    assert_eq!(
        (t.from, t.to, t.reason, t.mode),
        (
            State::Closed,
            State::Closed,
            TransitionReason::Manual,
            Mode::Normal
        )
    );
    assert_eq!(t.seq, 4);
}

#[test]
fn setting_the_mode_a_breaker_already_has_is_no_transition() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(builder(&clock).threshold(3));
    for mode in [Mode::ForcedOpen, Mode::ForcedClosed, Mode::ObserveOnly] {
        b.set_mode(mode);
        let t = log.one();
        assert_eq!(t.mode, mode);
        let transitions = b.snapshot().transitions;
        b.set_mode(mode);
        b.set_mode(mode);
        assert_eq!(log.take().len(), 0, "{mode:?} again: no event");
        assert_eq!(b.snapshot().transitions, transitions, "{mode:?} again");
        assert_eq!(b.snapshot().mode, mode);
    }
    // Observe only keeps its running state when set again: two failures
    // stay counted.
    fail(&b);
    fail(&b);
    b.set_mode(Mode::ObserveOnly);
    fail(&b);
    assert_eq!(b.state(), State::Open, "three failures in a row observed");
    let _ = log.take();

    // Normal on a closed, normal breaker: counters start again, no event.
    b.set_mode(Mode::Normal);
    assert_eq!(log.one().mode, Mode::Normal);
    let transitions = b.snapshot().transitions;
    fail(&b);
    fail(&b);
    assert_eq!(b.snapshot().consecutive_failures, 2);
    b.set_mode(Mode::Normal);
    assert_eq!(log.take().len(), 0, "no event");
    assert_eq!(b.snapshot().transitions, transitions);
    assert_eq!(b.snapshot().consecutive_failures, 0, "counters start again");
    fail(&b);
    fail(&b);
    assert_eq!(b.state(), State::Closed, "two failures of three");
    // Normal on an open breaker is a reset: a transition.
    fail(&b);
    assert_eq!(b.state(), State::Open);
    let _ = log.take();
    b.set_mode(Mode::Normal);
    let t = log.one();
    assert_eq!((t.from, t.to), (State::Open, State::Closed));
}

/// A panic payload whose drop panics with another such payload: it gets
/// out of a `catch_unwind` whose result is dropped, and then out of the
/// next one around it.
struct Bomb(u32);

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.0 == 0 {
            panic!("the last payload's drop");
        }
        std::panic::panic_any(Bomb(self.0 - 1));
    }
}

/// Even a panic that gets out of delivery (a listener's panic payload
/// whose drop panics, twice over) leaves delivery to the breaker's next
/// transition: that thread's turn at delivering ends as it unwinds.
#[test]
fn a_panic_out_of_delivery_leaves_the_next_transition_delivered() {
    let clock = ManualClock::new();
    let b = builder(&clock).threshold(1).build().unwrap();
    let first = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&first);
    let _bomb = failfast_runtime::events::subscribe(&b, move |_| {
        if seen.fetch_add(1, Ordering::Relaxed) == 0 {
            std::panic::panic_any(Bomb(1));
        }
    });
    let log = Log::default();
    let _log = log.listen(&b);
    let tripped = std::panic::catch_unwind(|| b.call(|| Err::<(), _>("down")));
    assert!(tripped.is_err(), "the panic got out of delivery");
    assert_eq!(b.state(), State::Open);
    clock.advance(RECOVERY);
    assert!(b.call(|| Ok::<_, ()>(())).is_ok(), "the trial runs");
    let reasons: Vec<_> = log.take().iter().map(|t| t.reason).collect();
    assert_eq!(
        reasons,
        [
            TransitionReason::RecoveryElapsed,
            TransitionReason::TrialsSucceeded
        ]
    );
    assert_eq!(first.load(Ordering::Relaxed), 3);
}

#[test]
fn a_panicking_listener_leaves_the_breaker_and_other_listeners_working() {
    let clock = ManualClock::new();
    let b = builder(&clock).threshold(1).build().unwrap();
    let panics = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&panics);
    let _bad = failfast_runtime::events::subscribe(&b, move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
        panic!("a listener's bug");
    });
    let log = Log::default();
    let _good = log.listen(&b);

    // The failing call that trips returns normally to its caller.
    let result = b.call(|| Err::<(), _>("down"));
    assert!(result.is_err_and(|e| matches!(e, failfast_runtime::Error::Failed(_))));
    assert_eq!(b.state(), State::Open);
    assert_eq!(log.one().to, State::Open);

    clock.advance(RECOVERY);
    assert!(b.call(|| Ok::<_, ()>(())).is_ok(), "the trial runs");
    assert_eq!(b.state(), State::Closed);
    assert_eq!(log.take().len(), 2);
    assert_eq!(panics.load(Ordering::Relaxed), 3, "called every time");
    // Still usable from other threads afterwards.
    std::thread::scope(|s| {
        s.spawn(|| fail(&b));
    });
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_listener_may_drive_the_breaker_it_listens_to() {
    let clock = ManualClock::new();
    let b = Arc::new(builder(&clock).threshold(1).build().unwrap());
    let log = Log::default();
    let _log = log.listen(&b);
    let weak = Arc::downgrade(&b);
    let _resets = failfast_runtime::events::subscribe(&b, move |t| {
        if t.reason == TransitionReason::ThresholdReached {
            weak.upgrade().unwrap().set_mode(Mode::Normal);
        }
    });
    fail(&b);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(
        log.numbered(),
        [
            (TransitionReason::ThresholdReached, 1),
            (TransitionReason::Manual, 2)
        ]
    );
}

#[test]
fn subscriptions_by_name_and_for_all_see_only_what_they_asked_for_until_dropped() {
    let clock = ManualClock::new();
    let payments = builder(&clock)
        .name(format!("payments@{}", "host-3"))
        .threshold(1)
        .build()
        .unwrap();
    let other = builder(&clock)
        .name("events-other")
        .threshold(1)
        .build()
        .unwrap();
    let by_name = Log::default();
    let sink = by_name.clone();
    let named = events::subscribe("payments@host-3", move |t| {
        sink.0.lock().unwrap().push(t.clone())
    });
    let all = Log::default();
    let sink = all.clone();
    let everything = events::subscribe(.., move |t| {
        // Other tests run in parallel: keep this test's breakers only.
        if t.name == "payments@host-3" || t.name == "events-other" {
            sink.0.lock().unwrap().push(t.clone());
        }
    });
    fail(&payments);
    fail(&other);
    assert_eq!(by_name.one().name, "payments@host-3");
    let names: Vec<_> = all.take().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["payments@host-3", "events-other"]);
    drop(named);
    drop(everything);
    payments.set_mode(Mode::Normal);
    other.set_mode(Mode::Normal);
    assert!(by_name.take().is_empty());
    assert!(all.take().is_empty());
}

#[test]
fn a_source_says_what_it_listens_to() {
    use failfast_runtime::events::Source;

    let b = Breaker::builder().name("events-source").build().unwrap();
    assert_eq!(format!("{:?}", Source::from(..)), "Source(..)");
    assert_eq!(
        format!("{:?}", Source::from("inventory")),
        "Source(\"inventory\")"
    );
    assert_eq!(format!("{:?}", Source::from(&b)), "Source(breaker)");
}

/// A kept subscription listens for the rest of the program: the handle is
/// gone, the listener stays.
#[test]
fn a_kept_subscription_keeps_listening() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .name("events-kept")
        .threshold(1)
        .build()
        .unwrap();
    let log = Log::default();
    std::mem::forget(log.listen(&b));
    fail(&b);
    assert_eq!(log.one().to, State::Open);
    b.set_mode(Mode::Normal);
    assert_eq!(log.one().to, State::Closed);
}

/// Two threads drive one breaker through every state as fast as they can,
/// moving the clock as they go: the events of that breaker come numbered
/// 1, 2, 3, …, skipping only the events they say were dropped (should the
/// thread delivering them be kept off a processor while 32 more wait), and
/// each starts in the state the previous one entered when none was dropped
/// in between. Once the threads stop, the next transitions deliver what
/// still waits: every transition is delivered or counted as dropped.
/// Delivers what waits (each manual transition delivers up to 4 events,
/// its own included), then checks the numbers of the events delivered
/// ([`check_sequence`]). Returns them and how many were dropped.
///
/// Each round forces the breaker closed and back to normal: two
/// transitions whatever state the threads left it in. (`Mode::Normal`
/// alone is no transition on a breaker already closed and normal, and
/// would deliver nothing.)
fn check_numbers(b: &Breaker, log: &Log, ordered: bool) -> (Vec<Transition>, u64) {
    for _ in 0..32 {
        if failfast_runtime::__private::backlog(b) == 0 {
            break;
        }
        b.set_mode(Mode::ForcedClosed);
        b.set_mode(Mode::Normal);
    }
    assert_eq!(
        failfast_runtime::__private::backlog(b),
        0,
        "the resets delivered what waited"
    );
    let events = log.take();
    let dropped = check_sequence(&events, ordered);
    (events, dropped)
}

/// One xorshift step.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

#[test]
fn events_arrive_in_order_per_breaker_under_two_threads() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .name("events-order")
        .threshold(2)
        .recovery(Duration::from_micros(1))
        .trial_calls(2)
        .success_threshold(2)
        .clock(clock.clone())
        .build()
        .unwrap();
    let log = Log::default();
    let _s = log.listen(&b);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..2u64)
            .map(|seed| {
                let (b, clock) = (&b, &clock);
                s.spawn(move || {
                    let mut x = seed + 1;
                    for _ in 0..200_000 {
                        let x = next(&mut x);
                        if x % 5 == 0 {
                            clock.advance(Duration::from_micros(1));
                        }
                        if let Ok(permit) = b.acquire() {
                            permit.record(if x % 3 == 0 {
                                Outcome::Failure
                            } else {
                                Outcome::Success
                            });
                        }
                    }
                    failfast_runtime::__private::thread_turns().2
                })
            })
            .collect();
        let gave_up: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        // An ordering wait that gave up (a thread kept off a processor for
        // 100 ms) may have queued an event out of order.
        let (events, dropped) = check_numbers(&b, &log, gave_up == 0);
        assert!(
            events.len() > 100,
            "only {} transitions: the test did not race",
            events.len()
        );
        assert_eq!(
            events.len() as u64 + dropped,
            b.snapshot().transitions,
            "one event per transition, or one dropped"
        );
    });
}

/// A listener that blocks holds up only the thread delivering to it: other
/// threads keep calling the breaker and changing its state, and their events
/// follow in order once the listener returns.
#[test]
fn a_blocked_listener_holds_up_only_the_thread_delivering_to_it() {
    use std::sync::mpsc;
    let clock = ManualClock::new();
    let b = builder(&clock).threshold(1).build().unwrap();
    let (entered, wait_entered) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let log = Log::default();
    let sink = log.clone();
    let _s = failfast_runtime::events::subscribe(&b, move |t| {
        if t.reason == TransitionReason::ThresholdReached {
            entered.send(()).unwrap();
            released.lock().unwrap().recv().unwrap();
        }
        sink.0.lock().unwrap().push(t.clone());
    });
    std::thread::scope(|s| {
        let tripping = s.spawn(|| fail(&b));
        wait_entered.recv().unwrap();
        // The tripping thread is stuck in the listener; this one is not.
        assert!(b.acquire().is_err(), "open");
        b.set_mode(Mode::Normal);
        succeed(&b);
        assert_eq!(b.state(), State::Closed);
        assert!(
            log.take().is_empty(),
            "both events wait for the first listener"
        );
        release.send(()).unwrap();
        tripping.join().unwrap();
    });
    let reasons: Vec<_> = log.take().iter().map(|t| t.reason).collect();
    assert_eq!(
        reasons,
        [TransitionReason::ThresholdReached, TransitionReason::Manual]
    );
}

/// A manual control reports what it cleared: the trial successes of a
/// half-open breaker, and no consecutive count under the failure-rate rule
/// (whose state word keeps none) while its window asks successes to
/// consult it.
#[test]
fn a_manual_control_reports_the_counts_it_cleared() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(builder(&clock).threshold(1).success_threshold(3));
    fail(&b);
    clock.advance(RECOVERY);
    succeed(&b);
    assert_eq!(log.take().len(), 2, "opened, then half-open");
    b.set_mode(Mode::Normal);
    let t = log.one();
    assert_eq!(
        (t.from, t.to, t.reason),
        (State::HalfOpen, State::Closed, TransitionReason::Manual)
    );
    assert_eq!(t.counts.trial_successes, 1);

    let (b, log, _s) = listened(
        builder(&clock)
            .failure_rate(0.5)
            .window_calls(10)
            .min_calls(5),
    );
    succeed(&b);
    fail(&b);
    b.set_mode(Mode::ForcedOpen);
    let t = log.one();
    assert_eq!(
        (t.from, t.reason),
        (State::Closed, TransitionReason::Manual)
    );
    assert_eq!(t.counts.consecutive_failures, 0);
}

/// A subscription by a keyed family's name, given as a `String` that
/// outlives nothing, gets the transitions of its members, the overflow
/// breaker's included, and of no breaker whose name merely starts alike; a
/// member's full name gets that member's only.
#[cfg(feature = "keyed")]
#[test]
fn a_subscription_by_a_family_name_gets_its_members_and_its_overflow_breaker() {
    use failfast_runtime::Family;
    let clock = ManualClock::new();
    let family: Family<String> = Family::builder(
        builder(&clock)
            .name("events-inventory")
            .threshold(1)
            .max_keys(1),
    )
    .build()
    .unwrap();
    let listen = |name: &str| {
        let log = Log::default();
        let sink = log.clone();
        let subscription = events::subscribe(name, move |t| sink.0.lock().unwrap().push(t.clone()));
        (log, subscription)
    };
    let names =
        |log: &Log| -> Vec<String> { log.take().iter().map(|t| t.name.to_string()).collect() };
    let by_family = String::from("events-inventory");
    let (whole, _whole) = listen(&by_family);
    drop(by_family);
    let (one, _one) = listen("events-inventory[x]");
    let (shorter, _shorter) = listen("events-inv");
    let longer = builder(&clock)
        .name("events-inventory-v2")
        .threshold(1)
        .build()
        .unwrap();

    // `x` opens and keeps its place: `y` runs through the overflow breaker.
    fail(&family.get("x"));
    fail(&family.get("y"));
    assert_eq!(family.get("y").name(), "events-inventory[*]");
    fail(&longer);

    assert_eq!(
        names(&whole),
        ["events-inventory[x]", "events-inventory[*]"]
    );
    assert_eq!(names(&one), ["events-inventory[x]"]);
    assert_eq!(names(&shorter), Vec::<String>::new());
    let states: Vec<_> = [family.get("x"), family.get("y")]
        .iter()
        .map(|m| m.state())
        .collect();
    assert_eq!(states, [State::Open, State::Open]);
}

#[test]
fn graded_shedding_starting_and_stopping_are_events_between_the_transitions() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(builder(&clock).shed(2.0));
    for _ in 0..30 {
        succeed(&b);
    }
    let mut failures = 0;
    while b.snapshot().shedding == 0.0 {
        fail(&b);
        failures += 1;
    }
    assert_eq!(failures, 31);
    let t = log.one();
    assert_eq!(
        edge(&t),
        (
            State::Closed,
            State::Closed,
            TransitionReason::SheddingStarted
        )
    );
    assert_eq!(t.shedding, b.snapshot().shedding);
    assert!(t.shedding > 0.0);
    assert_eq!(
        window(&t),
        (61, 31, 0),
        "the calls admitted in the shedding window, and those not accepted"
    );
    assert_eq!((t.seq, t.counts.concurrency_limit), (1, 0));
    assert_eq!(b.snapshot().transitions, 0, "not a change of state");
    // More failures while shedding: no more events.
    for _ in 0..50 {
        let _ = b.acquire().map(|p| p.record(Outcome::Failure));
    }
    assert!(log.take().is_empty());
    // A reset of a closed breaker is no transition: it says only that
    // shedding stopped.
    b.set_mode(Mode::Normal);
    let events = log.take();
    let edges: Vec<_> = events.iter().map(edge).collect();
    assert_eq!(
        edges,
        [(
            State::Closed,
            State::Closed,
            TransitionReason::SheddingStopped
        )]
    );
    assert!(events[0].shedding == 0.0);
    assert_eq!(events[0].seq, 2);
    assert_eq!(b.snapshot().transitions, 0);
}

#[test]
fn shedding_stops_with_an_event_when_successes_catch_up() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(builder(&clock).shed(2.0));
    for _ in 0..10 {
        fail(&b);
    }
    assert_eq!(log.one().reason, TransitionReason::SheddingStarted);
    let mut steps = 0;
    while b.snapshot().shedding > 0.0 {
        clock.advance(Duration::from_millis(100));
        let _ = b.acquire().map(|p| p.record(Outcome::Success));
        steps += 1;
        assert!(steps < 1000, "shedding never stopped");
    }
    let t = log.one();
    assert_eq!(
        edge(&t),
        (
            State::Closed,
            State::Closed,
            TransitionReason::SheddingStopped
        )
    );
    assert_eq!(t.shedding, 0.0);
    assert_eq!(t.seq, 2);
}

#[test]
fn a_shedding_breaker_that_trips_and_closes_says_shedding_stopped_after_closing() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(builder(&clock).shed(2.0).threshold(12));
    for _ in 0..10 {
        fail(&b);
    }
    assert_eq!(log.one().reason, TransitionReason::SheddingStarted);
    // Failures until the threshold trips (refusals in between).
    let mut calls = 0;
    while b.state() == State::Closed {
        let _ = b.acquire().map(|p| p.record(Outcome::Failure));
        calls += 1;
        assert!(calls < 10_000, "the threshold never tripped");
    }
    let t = log.one();
    assert_eq!(
        edge(&t),
        (
            State::Closed,
            State::Open,
            TransitionReason::ThresholdReached
        )
    );
    assert!(t.shedding > 0.0, "the chance as it stood when it tripped");
    clock.advance(RECOVERY);
    succeed(&b);
    let edges: Vec<_> = log.take().iter().map(edge).collect();
    assert_eq!(
        edges,
        [
            (
                State::Open,
                State::HalfOpen,
                TransitionReason::RecoveryElapsed
            ),
            (
                State::HalfOpen,
                State::Closed,
                TransitionReason::TrialsSucceeded
            ),
            (
                State::Closed,
                State::Closed,
                TransitionReason::SheddingStopped
            ),
        ]
    );
}

#[test]
fn an_adaptive_limit_leaving_and_regaining_its_most_places_are_events() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(builder(&clock).adaptive_concurrency(2, 10).threshold(1000));
    // A success of 10 ms: the latency the limit takes as its baseline.
    let succeed = |b: &Breaker| {
        let permit = b.acquire().expect("admitted");
        clock.advance(Duration::from_millis(10));
        permit.record(Outcome::Success);
    };
    succeed(&b);
    assert!(
        log.take().is_empty(),
        "a success at the most places: no event"
    );
    fail(&b);
    let t = log.one();
    assert_eq!(
        edge(&t),
        (State::Closed, State::Closed, TransitionReason::LimitLowered)
    );
    assert_eq!((t.counts.concurrency_limit, t.seq), (9, 1));
    // Further cuts are in snapshots and metrics, not events.
    fail(&b);
    fail(&b);
    assert!(log.take().is_empty());
    assert_eq!(b.snapshot().concurrency_limit, Some(7));
    // Calls at their baseline raise it back to its most, by (10 − 2) ×
    // 1 s / 20 s = 0.4 places a second, one call a second.
    for _ in 0..7 {
        clock.advance(Duration::from_secs(1));
        succeed(&b);
    }
    assert!(log.take().is_empty(), "at 9: not back yet");
    assert_eq!(b.snapshot().concurrency_limit, Some(9));
    clock.advance(Duration::from_secs(1));
    succeed(&b);
    let t = log.one();
    assert_eq!(
        edge(&t),
        (
            State::Closed,
            State::Closed,
            TransitionReason::LimitRestored
        )
    );
    assert_eq!((t.counts.concurrency_limit, t.seq), (10, 2));
    // A reset restores it too; of a closed breaker, that is its only event.
    fail(&b);
    assert_eq!(log.one().reason, TransitionReason::LimitLowered);
    b.set_mode(Mode::Normal);
    let t = log.one();
    assert_eq!(t.reason, TransitionReason::LimitRestored);
    assert_eq!(t.counts.concurrency_limit, 10);
    assert_eq!(b.snapshot().concurrency_limit, Some(10));
    // A reset at the most places of a closed breaker says nothing.
    b.set_mode(Mode::Normal);
    assert!(log.take().is_empty());
    // Of an open one, it is a transition, and the limit's event follows.
    b.set_mode(Mode::ForcedOpen);
    assert!(b.acquire().is_err(), "forced open");
    let _ = log.take();
    b.set_mode(Mode::Normal);
    assert_eq!(log.one().reason, TransitionReason::Manual);
}

/// An adaptive range changed at run time is an event when it moves the
/// limit to or from the most places: a lowered limit the new most reaches
/// is restored; one still below it, or a limit at the most that stays at
/// the new most, says nothing.
#[test]
fn a_range_changed_at_run_time_restores_a_limit_it_brings_to_its_most() {
    let clock = ManualClock::new();
    let (b, log, _s) = listened(builder(&clock).adaptive_concurrency(2, 10).threshold(1000));
    let range = |least, most| {
        b.reconfigure(&Breaker::builder().adaptive_concurrency(least, most))
            .unwrap();
    };
    fail(&b);
    fail(&b);
    fail(&b);
    assert_eq!(log.one().reason, TransitionReason::LimitLowered);
    assert_eq!(b.snapshot().concurrency_limit, Some(7));
    range(2, 8);
    assert!(log.take().is_empty(), "at 7 of 8: still lowered");
    range(2, 6);
    let t = log.one();
    assert_eq!(t.reason, TransitionReason::LimitRestored);
    assert_eq!(t.counts.concurrency_limit, 6);
    range(2, 4);
    assert!(log.take().is_empty(), "at the most, and at the new most");
    assert_eq!(b.snapshot().concurrency_limit, Some(4));
}

#[test]
fn guard_events_made_while_nobody_listened_leave_a_gap_in_the_numbers() {
    let clock = ManualClock::new();
    let b = builder(&clock)
        .adaptive_concurrency(2, 10)
        .threshold(1000)
        .build()
        .unwrap();
    fail(&b);
    let log = Log::default();
    let _s = log.listen(&b);
    b.set_mode(Mode::Normal);
    assert_eq!(log.numbered(), [(TransitionReason::LimitRestored, 2)]);
}

/// Guard events (shedding, the adaptive limit) race with transitions on two
/// threads: numbered in one sequence with them, each from and to the state
/// the one before it entered.
#[test]
fn guard_events_and_transitions_arrive_in_one_order_under_two_threads() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .name("events-guard-order")
        .threshold(20)
        .shed(1.0)
        .min_calls(4)
        .adaptive_concurrency(1, 2)
        .recovery(Duration::from_micros(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    let log = Log::default();
    let _s = log.listen(&b);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..2u64)
            .map(|seed| {
                let (b, clock) = (&b, &clock);
                s.spawn(move || {
                    let mut x = seed + 7;
                    for i in 0..100_000u64 {
                        let x = next(&mut x);
                        if x % 7 == 0 {
                            clock.advance(Duration::from_millis(50));
                        }
                        // Phases of health and sickness, so that shedding
                        // and the limit come and go: about 40 s each, the
                        // limit being back at its most after 20 s of
                        // health (no failure then, each cutting a tenth).
                        let sick = (i / 6_000) % 2 == 1;
                        let fails = sick && x % 4 != 0;
                        if let Ok(permit) = b.acquire() {
                            permit.record(if fails {
                                Outcome::Failure
                            } else {
                                Outcome::Success
                            });
                        }
                    }
                    failfast_runtime::__private::thread_turns().2
                })
            })
            .collect();
        let gave_up: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        let (events, dropped) = check_numbers(&b, &log, gave_up == 0);
        let count = |reason| events.iter().filter(|t| t.reason == reason).count();
        // Each kind of event happened, and guard events raced the
        // transitions many times over. (How often the limit comes back in
        // a healthy phase depends on how the two threads' clock moves fall
        // inside calls, so it is not counted on alone: one lowering and one
        // restoring are enough for the order checks below.)
        let reasons = [
            TransitionReason::SheddingStarted,
            TransitionReason::SheddingStopped,
            TransitionReason::LimitLowered,
            TransitionReason::LimitRestored,
            TransitionReason::ThresholdReached,
        ];
        for reason in reasons {
            assert!(
                count(reason) > 0,
                "{reason}: {}, the test did not race",
                count(reason)
            );
        }
        let raced: usize = reasons[..4].iter().map(|&reason| count(reason)).sum();
        assert!(raced > 8, "{raced} guard events, the test did not race");
        let guards = events.iter().filter(|t| {
            matches!(
                t.reason,
                TransitionReason::SheddingStarted
                    | TransitionReason::SheddingStopped
                    | TransitionReason::LimitLowered
                    | TransitionReason::LimitRestored
            )
        });
        assert!(guards.clone().all(|t| t.from == t.to));
        if dropped == 0 {
            // Each guard's events alternate, from its start.
            for (on, off) in [
                (
                    TransitionReason::SheddingStarted,
                    TransitionReason::SheddingStopped,
                ),
                (
                    TransitionReason::LimitLowered,
                    TransitionReason::LimitRestored,
                ),
            ] {
                let told: Vec<_> = events
                    .iter()
                    .filter(|t| t.reason == on || t.reason == off)
                    .map(|t| t.reason)
                    .collect();
                for (i, reason) in told.iter().enumerate() {
                    assert_eq!(*reason, if i % 2 == 0 { on } else { off }, "{told:?}");
                }
            }
        }
        let transitions = events.len() - guards.count();
        assert!(
            transitions as u64 <= b.snapshot().transitions
                && transitions as u64 + dropped >= b.snapshot().transitions,
            "every transition delivered or dropped"
        );
    });
}

#[test]
fn shedding_that_started_while_nobody_listened_is_told_when_it_stops() {
    let clock = ManualClock::new();
    let b = builder(&clock).shed(2.0).build().unwrap();
    for _ in 0..10 {
        fail(&b);
    }
    assert!(b.snapshot().shedding > 0.0);
    let log = Log::default();
    let _s = log.listen(&b);
    while b.snapshot().shedding > 0.0 {
        clock.advance(Duration::from_millis(100));
        let _ = b.acquire().map(|p| p.record(Outcome::Success));
    }
    let t = log.one();
    assert_eq!(
        (t.reason, t.seq),
        (TransitionReason::SheddingStopped, 2),
        "the start, unheard, took number 1"
    );
}

/// Names as logs and tables show them: a transition's reason, state and the
/// reason a call was refused write their short name, padded to the width
/// asked.
#[test]
fn reasons_and_states_display_their_short_names_padded() {
    use failfast_runtime::Reason;
    assert_eq!(
        format!("{:<19}|", TransitionReason::ThresholdReached),
        "threshold_reached  |"
    );
    assert_eq!(format!("{:>8}|", TransitionReason::Manual), "  manual|");
    assert_eq!(format!("{:<10}|", State::HalfOpen), "half-open |");
    assert_eq!(format!("{:^6}|", Reason::Shed), " shed |");
    let breaker = Breaker::builder().name("display.padded").build().unwrap();
    assert_eq!(
        format!("{:>16}|", breaker.snapshot().name),
        "  display.padded|"
    );
}
