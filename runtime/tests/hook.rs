//! The process-wide transition hook: every transition of every breaker, in
//! order per breaker across threads, with its cause; remote opens marked as
//! such; a panicking hook leaves the breaker and its caller alone; a second
//! hook is refused. A transition held in the hook orders the events after
//! it: the adaptive limit's (one made behind it waits for it, and one that
//! gave up waiting is not told by the windows after it) and the next
//! transition's, after a remote open that moved the deadline.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use failfast_runtime::events::Subscription;
use failfast_runtime::events::TransitionReason::{self, LimitLowered, Manual};
use failfast_runtime::integration::{self, Cause, Change};
use failfast_runtime::{Breaker, ManualClock, Mode, Outcome, State};

type Seen = (State, State, Mode, Cause);

/// What the hook saw, by breaker name.
static SEEN: Mutex<Option<HashMap<String, Vec<Seen>>>> = Mutex::new(None);

/// While set, the hook holds the first transition of `hook-holds` it sees
/// (between its compare-and-swap and its queueing), up to 5 s.
static HOLD: AtomicBool = AtomicBool::new(false);
/// Set by the hook once it holds one: the transitions after it pass.
static HELD: AtomicBool = AtomicBool::new(false);
/// The tests that hold transitions run one at a time.
static HOLDING: Mutex<()> = Mutex::new(());

fn record(change: &Change<'_>) {
    let name = change.breaker.name().to_owned();
    assert!(name != "hook-panics", "a hook that panics");
    if name == "hook-holds" && HOLD.load(Ordering::SeqCst) && !HELD.swap(true, Ordering::SeqCst) {
        let began = Instant::now();
        while HOLD.load(Ordering::SeqCst) && began.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let mut seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    seen.get_or_insert_with(HashMap::new)
        .entry(name)
        .or_default()
        .push((change.from, change.to, change.mode, change.cause));
}

fn installed() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| assert!(integration::install_hook(&record), "the first hook"));
}

fn seen(name: &str) -> Vec<Seen> {
    let seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    seen.as_ref()
        .and_then(|s| s.get(name).cloned())
        .unwrap_or_default()
}

fn breaker(name: &str, clock: &ManualClock) -> Breaker {
    Breaker::builder()
        .name(name.to_owned())
        .threshold(1)
        .recovery(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn a_second_hook_is_refused() {
    installed();
    assert!(!integration::install_hook(&record));
}

/// Four threads, each cycling its own breaker through trips, trials and manual
/// control: the hook sees each breaker's transitions, all of them, in the
/// order they happened, with their causes.
#[test]
fn every_transition_reaches_the_hook_in_order_per_breaker() {
    installed();
    const CYCLES: usize = 300;
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let name = format!("hook-storm-{t}");
                let clock = ManualClock::new();
                let b = breaker(&name, &clock);
                for i in 0..CYCLES {
                    let _ = b.call(|| Err::<(), _>("refused"));
                    clock.advance(Duration::from_secs(2));
                    let _ = b.call(|| Ok::<_, &str>(()));
                    if i % 10 == 0 {
                        b.set_mode(Mode::ForcedOpen);
                        b.set_mode(Mode::Normal);
                    }
                }
                name
            })
        })
        .collect();
    for thread in threads {
        let name = thread.join().unwrap();
        let mut expected = Vec::new();
        for i in 0..CYCLES {
            expected.push((State::Closed, State::Open, Mode::Normal, Cause::Calls));
            expected.push((State::Open, State::HalfOpen, Mode::Normal, Cause::Calls));
            expected.push((State::HalfOpen, State::Closed, Mode::Normal, Cause::Calls));
            if i % 10 == 0 {
                expected.push((State::Closed, State::Open, Mode::ForcedOpen, Cause::Manual));
                expected.push((State::Open, State::Closed, Mode::Normal, Cause::Manual));
            }
        }
        assert_eq!(seen(&name), expected, "{name}");
    }
}

#[test]
fn remote_opens_reach_the_hook_as_remote() {
    installed();
    let clock = ManualClock::new();
    let b = breaker("hook-remote", &clock);
    let open = integration::open_remote(&b, Duration::from_secs(5), None).expect("applied");
    let released = integration::release_remote(&b, open, Duration::ZERO);
    assert!(released.is_some(), "the open it imposed is released");
    let causes: Vec<_> = seen("hook-remote").iter().map(|s| (s.1, s.3)).collect();
    assert_eq!(causes[0], (State::Open, Cause::Remote));
    assert!(
        causes.iter().all(|(_, c)| *c == Cause::Remote),
        "{causes:?}"
    );
    // Released at once: a trial goes through without the clock moving.
    assert_eq!(b.call(|| Ok::<_, &str>(7)).ok(), Some(7));
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn a_panicking_hook_leaves_the_breaker_and_its_caller_alone() {
    installed();
    let clock = ManualClock::new();
    let b = Arc::new(breaker("hook-panics", &clock));
    let _ = b.call(|| Err::<(), _>("refused"));
    assert_eq!(b.state(), State::Open);
    clock.advance(Duration::from_secs(2));
    assert_eq!(b.call(|| Ok::<_, &str>(7)).ok(), Some(7));
    assert_eq!(b.state(), State::Closed);
}

/// An adaptive breaker named `hook-holds` (on `clock`, if given), and the
/// reasons of the events delivered to a listener of it, while the
/// listener lasts.
fn held_breaker(
    clock: Option<&ManualClock>,
) -> (
    Arc<Breaker>,
    Arc<Mutex<Vec<TransitionReason>>>,
    Subscription,
) {
    let mut builder = Breaker::builder();
    builder = builder
        .name("hook-holds")
        .adaptive_concurrency(2, 10)
        .threshold(1000);
    if let Some(clock) = clock {
        builder = builder.clock(clock.clone());
    }
    let b = Arc::new(builder.build().unwrap());
    let delivered = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&delivered);
    let listening = failfast_runtime::events::subscribe(&*b, move |t| {
        sink.lock().unwrap().push(t.reason);
    });
    (b, delivered, listening)
}

/// Changes `b`'s mode to observe-only on a thread of its own, held in the
/// hook after its compare-and-swap (until `HOLD` is cleared, or 5 s);
/// then, in the new period, a failure on another thread lowers the limit,
/// and its event waits for the change to be queued. The two threads: the
/// second answers its `thread_turns`.
fn lower_behind_a_held_change(b: &Arc<Breaker>) -> (JoinHandle<()>, JoinHandle<(u64, u64, u64)>) {
    HELD.store(false, Ordering::SeqCst);
    HOLD.store(true, Ordering::SeqCst);
    // A change of mode (not a reset, which would restore the limit).
    let observing = {
        let b = Arc::clone(b);
        std::thread::spawn(move || b.set_mode(Mode::ObserveOnly))
    };
    while !HELD.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let lowering = {
        let b = Arc::clone(b);
        std::thread::spawn(move || {
            b.acquire().unwrap().record(Outcome::Failure);
            failfast_runtime::__private::thread_turns()
        })
    };
    (observing, lowering)
}

/// An event of the adaptive limit made while the transition before it is
/// still on its way to the queue (its thread held here, in the hook, after
/// its compare-and-swap) waits for that transition to be queued, and
/// follows it.
#[test]
fn a_limit_event_waits_for_the_transition_before_it_to_be_queued() {
    installed();
    let _one_at_a_time = HOLDING.lock().unwrap_or_else(PoisonError::into_inner);
    let (b, delivered, _listening) = held_breaker(None);
    let (observing, lowering) = lower_behind_a_held_change(&b);
    std::thread::sleep(Duration::from_millis(30));
    HOLD.store(false, Ordering::SeqCst);
    observing.join().unwrap();
    let (_, waited, gave_up) = lowering.join().unwrap();
    let delivered = delivered.lock().unwrap().clone();
    if gave_up == 0 {
        assert_eq!(delivered, [Manual, LimitLowered], "waited: {waited}");
    } else {
        // Held past the 100 ms bound (a loaded machine): the limit's event
        // found the breaker's events out of step, and was not queued.
        assert_eq!(delivered, [Manual], "waited: {waited}");
    }
}

/// A limit's lowering whose thread gave up waiting (past 100 ms) for the
/// transition before it to be queued is not told by the windows that close
/// while the limit stays lowered: only the guard's next change tells it,
/// if it holds then (`TransitionReason::SheddingStarted`'s docs), and
/// windows whose calls keep the limit where it is are no change.
#[test]
fn a_limit_lowering_overtaken_by_a_transition_is_not_told_by_the_windows_after_it() {
    installed();
    let _one_at_a_time = HOLDING.lock().unwrap_or_else(PoisonError::into_inner);
    let clock = ManualClock::new();
    let (b, delivered, _listening) = held_breaker(Some(&clock));
    let (observing, lowering) = lower_behind_a_held_change(&b);
    // The change is held until the lowering's thread has given up waiting
    // for it.
    let (_, waited, gave_up) = lowering.join().unwrap();
    HOLD.store(false, Ordering::SeqCst);
    observing.join().unwrap();
    assert_eq!((waited, gave_up), (1, 1));
    let limit = || b.snapshot().concurrency_limit.unwrap();
    assert_eq!(limit(), 9);
    assert_eq!(
        *delivered.lock().unwrap(),
        [Manual],
        "the lowering was not queued"
    );
    // Windows of calls at 5 ms, one at a time: each closes with the limit
    // still below its most (it grows back over 20 s).
    for _ in 0..64 {
        let permit = b.acquire().unwrap();
        clock.advance(Duration::from_millis(5));
        permit.record(Outcome::Success);
    }
    assert_eq!(limit(), 9);
    assert_eq!(*delivered.lock().unwrap(), [Manual]);
}

/// A remote open that moves an open breaker's deadline, however little, is
/// a transition from one open period to another: the transition after it,
/// made while it is still on its way to the queue (held here), waits for
/// it to be queued, and its event follows.
#[test]
fn a_transition_after_a_remote_extension_waits_for_it_to_be_queued() {
    installed();
    let _one_at_a_time = HOLDING.lock().unwrap_or_else(PoisonError::into_inner);
    let clock = ManualClock::new();
    let b = Arc::new(
        Breaker::builder()
            .name("hook-holds")
            .threshold(1)
            .recovery(Duration::from_secs(10))
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let delivered = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&delivered);
    let _listening = failfast_runtime::events::subscribe(&*b, move |t| {
        sink.lock().unwrap().push(t.reason);
    });
    let _ = b.call(|| Err::<(), _>("down"));
    HELD.store(false, Ordering::SeqCst);
    HOLD.store(true, Ordering::SeqCst);
    // The deadline a nanosecond later.
    let extending = {
        let b = Arc::clone(&b);
        std::thread::spawn(move || {
            let remaining = Duration::from_secs(10) + Duration::from_nanos(1);
            integration::open_remote(&b, remaining, None).is_some()
        })
    };
    while !HELD.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let resetting = {
        let b = Arc::clone(&b);
        std::thread::spawn(move || {
            let began = Instant::now();
            b.set_mode(Mode::Normal);
            (failfast_runtime::__private::thread_turns(), began.elapsed())
        })
    };
    // Released once the reset has made its change (and is on its way to
    // wait for its turn).
    while b.state() != State::Closed {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(30));
    HOLD.store(false, Ordering::SeqCst);
    assert!(extending.join().unwrap(), "the deadline moved");
    let ((_, waited, gave_up), took) = resetting.join().unwrap();
    let delivered = delivered.lock().unwrap().clone();
    // Unless the reset's thread was kept off a processor past the 100 ms
    // bound (a loaded machine): then it gave up waiting, not before.
    if gave_up > 0 {
        assert!(took >= Duration::from_millis(100), "gave up after {took:?}");
    } else {
        assert_eq!(
            delivered,
            [
                TransitionReason::ThresholdReached,
                TransitionReason::Remote,
                Manual
            ],
            "waited: {waited}"
        );
    }
}
