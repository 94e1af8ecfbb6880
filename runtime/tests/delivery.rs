//! Event delivery under load: six threads cycle one breaker on a manual
//! clock. With a listener taking 1 ms, no call makes more than 4 listener
//! calls per transition it makes, at most 32 events wait, and every
//! transition is either delivered, in order, or counted as dropped. With a
//! listener that does nothing, a call that makes no transition neither waits
//! for its turn nor calls a listener.
//!
//! Everything here is counted on the calling thread (listener calls through
//! a thread-local counter, ordering waits through `__private::thread_turns`):
//! nothing depends on how fast the machine is.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use failfast_runtime::events::Transition;

#[path = "common/sequence.rs"]
mod sequence;
use failfast_runtime::{Breaker, ManualClock, Outcome};
use sequence::check_sequence;

/// Events a call delivers at most per transition it makes (`events` docs).
const BUDGET: u64 = 4;
/// Events of one breaker waiting for delivery at most (`events` docs).
const BACKLOG: usize = 32;
const THREADS: u64 = 6;

/// Whether anyone listens is one count for the whole process: a test that
/// subscribes makes every breaker build and order its events. The tests of
/// this binary run one at a time, so that "no listener" means none.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

thread_local! {
    /// Listener calls made on this thread.
    static LISTENER_CALLS: Cell<u64> = const { Cell::new(0) };
}

fn listener_calls() -> u64 {
    LISTENER_CALLS.with(Cell::get)
}

/// A breaker that six threads drive through every state as fast as they
/// can: two failures trip it, it recovers after 1 µs of the manual clock,
/// two trials at once, two successes close it.
fn cycled(name: &'static str, clock: &ManualClock) -> Arc<Breaker> {
    Arc::new(
        Breaker::builder()
            .name(name)
            .threshold(2)
            .recovery(Duration::from_micros(1))
            .trial_calls(2)
            .success_threshold(2)
            .clock(clock.clone())
            .build()
            .unwrap(),
    )
}

/// What one thread saw of its own calls.
#[derive(Debug, Default)]
struct Seen {
    /// Calls (an `acquire`, or a `record`).
    calls: u64,
    /// Of which made a transition.
    transitioning: u64,
    /// The most listener calls one call made.
    most_listener_calls: u64,
    /// The most listener calls one `acquire` and its `record` made together.
    most_per_pair: u64,
    /// Calls that made no transition yet called a listener.
    idle_but_called: u64,
    /// Calls that made no transition yet waited for their turn.
    idle_but_waited: u64,
    /// Calls that called a listener more than `BUDGET` times per transition
    /// they made.
    over_budget: u64,
    /// Ordering waits, and those that gave up.
    waited: u64,
    gave_up: u64,
    /// The longest a call took that made no transition, and the longest
    /// one that waited for its turn: for the record, not asserted (the
    /// machine is shared), to tell the ordering wait from the scheduler.
    slowest_idle: Duration,
    slowest_waiting: Duration,
}

impl Seen {
    /// Runs `f`, one call, and counts what it made on this thread.
    fn call<T>(&mut self, f: impl FnOnce() -> T) -> (T, u64) {
        let (made, waited, gave_up) = failfast_runtime::__private::thread_turns();
        let listened = listener_calls();
        let began = Instant::now();
        let result = f();
        let took = began.elapsed();
        let (made_after, waited_after, gave_up_after) = failfast_runtime::__private::thread_turns();
        let (made, waited) = (made_after - made, waited_after - waited);
        let listened = listener_calls() - listened;
        self.calls += 1;
        self.waited += waited;
        self.gave_up += gave_up_after - gave_up;
        self.most_listener_calls = self.most_listener_calls.max(listened);
        if waited != 0 {
            self.slowest_waiting = self.slowest_waiting.max(took);
        }
        if made == 0 {
            self.slowest_idle = self.slowest_idle.max(took);
            self.idle_but_called += u64::from(listened != 0);
            self.idle_but_waited += u64::from(waited != 0);
        } else {
            self.transitioning += 1;
        }
        self.over_budget += u64::from(listened > BUDGET * made);
        (result, listened)
    }

    fn merge(&mut self, other: Seen) {
        self.calls += other.calls;
        self.transitioning += other.transitioning;
        self.most_listener_calls = self.most_listener_calls.max(other.most_listener_calls);
        self.most_per_pair = self.most_per_pair.max(other.most_per_pair);
        self.idle_but_called += other.idle_but_called;
        self.idle_but_waited += other.idle_but_waited;
        self.over_budget += other.over_budget;
        self.waited += other.waited;
        self.gave_up += other.gave_up;
        self.slowest_idle = self.slowest_idle.max(other.slowest_idle);
        self.slowest_waiting = self.slowest_waiting.max(other.slowest_waiting);
    }
}

/// Six threads cycle `b` until `done` says so, each at least `at_least`
/// times; every call is counted, and `watch` runs after each.
fn cycle(
    b: &Breaker,
    clock: &ManualClock,
    at_least: u32,
    done: &(dyn Fn() -> bool + Sync),
    watch: &(dyn Fn() + Sync),
) -> Seen {
    let mut total = Seen::default();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|seed| {
                s.spawn(move || {
                    let mut seen = Seen::default();
                    let mut x = seed + 1;
                    let mut round = 0u32;
                    while round < at_least || !done() {
                        round += 1;
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        if x % 5 == 0 {
                            clock.advance(Duration::from_micros(1));
                        }
                        let (permit, acquiring) = seen.call(|| b.acquire());
                        watch();
                        let Ok(permit) = permit else { continue };
                        let outcome = if x % 3 == 0 {
                            Outcome::Failure
                        } else {
                            Outcome::Success
                        };
                        let ((), recording) = seen.call(|| permit.record(outcome));
                        watch();
                        seen.most_per_pair = seen.most_per_pair.max(acquiring + recording);
                    }
                    seen
                })
            })
            .collect();
        for w in workers {
            total.merge(w.join().unwrap());
        }
    });
    total
}

/// The listener sleeps 1 ms. Each call (one `acquire`, or one `record`) makes
/// at most one transition, so it calls the listener at most 4 times: at most
/// 4 ms of listener time, 8 ms for an `acquire` and its `record` (the limit
/// asked for is 10 ms). Meanwhile the other threads' events wait, 32 at
/// most, the oldest dropped beyond that; once the threads stop, a few manual
/// transitions deliver what still waits, and then every transition is
/// either delivered or counted as dropped.
#[test]
fn a_slow_listener_costs_a_call_a_bounded_number_of_listener_calls_and_the_backlog_is_bounded() {
    let _one_at_a_time = one_at_a_time();
    let clock = ManualClock::new();
    let b = cycled("delivery-slow-listener", &clock);
    let delivered = Arc::new(Mutex::new(Vec::<Transition>::new()));
    let most_waiting = Arc::new(AtomicUsize::new(0));
    let sink = Arc::clone(&delivered);
    let (watched, most) = (Arc::downgrade(&b), Arc::clone(&most_waiting));
    let _s = failfast_runtime::events::subscribe(&b, move |t| {
        LISTENER_CALLS.with(|n| n.set(n.get() + 1));
        if let Some(b) = watched.upgrade() {
            most.fetch_max(failfast_runtime::__private::backlog(&b), Ordering::Relaxed);
        }
        sink.lock().unwrap().push(t.clone());
        std::thread::sleep(Duration::from_millis(1));
    });
    let count = || delivered.lock().unwrap().len();
    let seen = cycle(&b, &clock, 1_000, &|| count() >= 300, &|| {
        most_waiting.fetch_max(failfast_runtime::__private::backlog(&b), Ordering::Relaxed);
    });

    // What waits is delivered by the breaker's next transitions.
    let mut drains = 0;
    while failfast_runtime::__private::backlog(&b) > 0 {
        drains += 1;
        assert!(
            drains <= BACKLOG,
            "{drains} resets did not deliver what waited"
        );
        // Two transitions whatever the state (a reset of a closed breaker
        // is none).
        b.set_mode(failfast_runtime::Mode::ForcedOpen);
        b.set_mode(failfast_runtime::Mode::Normal);
    }
    let delivered = delivered.lock().unwrap().clone();
    let transitions = b.snapshot().transitions;
    let dropped = check_sequence(&delivered, seen.gave_up == 0);
    eprintln!(
        "slow listener: {} calls, {} transitions, {} delivered, {} dropped, {} drains; \
         most listener calls by one call {}, by an acquire and its record {}; \
         most events waiting {}; ordering waits {} (gave up {}); \
         slowest call without a transition {:?}, slowest that waited {:?}",
        seen.calls,
        transitions,
        delivered.len(),
        dropped,
        drains,
        seen.most_listener_calls,
        seen.most_per_pair,
        most_waiting.load(Ordering::Relaxed),
        seen.waited,
        seen.gave_up,
        seen.slowest_idle,
        seen.slowest_waiting,
    );
    assert_eq!(seen.over_budget, 0, "{seen:#?}");
    assert!(seen.most_listener_calls <= BUDGET, "{seen:#?}");
    assert!(seen.most_per_pair <= 2 * BUDGET, "{seen:#?}");
    assert_eq!(seen.idle_but_called, 0, "{seen:#?}");
    assert!(
        most_waiting.load(Ordering::Relaxed) <= BACKLOG,
        "{} events waited",
        most_waiting.load(Ordering::Relaxed)
    );
    assert!(
        dropped > 0,
        "the listener kept up: the test did not fill the backlog"
    );
    assert_eq!(
        delivered.len() as u64 + dropped,
        transitions,
        "every transition delivered or counted as dropped"
    );
    assert_eq!(delivered.last().unwrap().seq, transitions);
}

/// A listener that does nothing, then no listener at all, in one run: a call
/// that made no transition never waited for its turn nor called a listener,
/// with the listener or without; a call that made one waited at most once and
/// called the listener at most 4 times.
#[test]
fn calls_that_make_no_transition_never_wait_for_their_turn() {
    let _one_at_a_time = one_at_a_time();
    let clock = ManualClock::new();
    let b = cycled("delivery-no-op-listener", &clock);
    let called = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&called);
    let subscription = failfast_runtime::events::subscribe(&b, move |_| {
        LISTENER_CALLS.with(|n| n.set(n.get() + 1));
        counter.fetch_add(1, Ordering::Relaxed);
    });
    let listened = cycle(&b, &clock, 20_000, &|| true, &|| {});
    let transitions_with = b.snapshot().transitions;
    drop(subscription);
    let quiet = cycle(&b, &clock, 20_000, &|| true, &|| {});
    let transitions_without = b.snapshot().transitions - transitions_with;
    for (what, seen, transitions) in [
        ("a no-op listener", &listened, transitions_with),
        ("no listener", &quiet, transitions_without),
    ] {
        eprintln!(
            "{what}: {} calls, {} of them made a transition ({} transitions); \
             ordering waits {} (gave up {}); most listener calls by one call {}; \
             slowest call without a transition {:?}, slowest that waited {:?}",
            seen.calls,
            seen.transitioning,
            transitions,
            seen.waited,
            seen.gave_up,
            seen.most_listener_calls,
            seen.slowest_idle,
            seen.slowest_waiting,
        );
        assert!(seen.transitioning > 100, "{what}: the test did not race");
        assert_eq!(seen.idle_but_waited, 0, "{what}: {seen:#?}");
        assert_eq!(seen.idle_but_called, 0, "{what}: {seen:#?}");
        assert_eq!(seen.over_budget, 0, "{what}: {seen:#?}");
        assert!(seen.waited <= seen.transitioning, "{what}: {seen:#?}");
    }
    if !cfg!(feature = "tracing") {
        // Nobody wants the events: no event is built, so nothing is ordered.
        assert_eq!(quiet.waited, 0, "{quiet:#?}");
    }
    assert_eq!(quiet.most_listener_calls, 0);
    assert!(called.load(Ordering::Relaxed) > 0);
}
