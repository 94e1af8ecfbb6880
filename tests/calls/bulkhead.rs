//! `max_concurrent = N` through `#[circuit_breaker]`: at most N bodies run at
//! once, proven with real threads and tasks; the others are refused at once
//! without running, with a rejection at the concurrency limit that reaches the
//! fallback and moves no counter of the breaker; and the slot is given back on
//! every path a call can end by.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use failfast::{Error, Reason, State, circuit_breaker, registry};

use crate::support;

/// The upstream's status code: 5xx is sickness, 4xx the caller's mistake.
type Fault = support::Fault<u16>;

fn at_limit(result: &Result<u32, Fault>) -> bool {
    matches!(result, Err(Fault::Rejected(r)) if r.reason() == Reason::ConcurrencyLimit)
}

/// The breaker must not have moved: closed, no failure counted.
fn assert_unmoved(name: &str) {
    let s = registry::get(name).expect("registered").snapshot();
    assert_eq!(
        (s.state, s.consecutive_failures),
        (State::Closed, 0),
        "{s:?}"
    );
}

/// Bodies running now, the most seen at once, and how many ever started.
struct Gauge {
    running: AtomicUsize,
    max: AtomicUsize,
    entered: AtomicUsize,
}

impl Gauge {
    const fn new() -> Self {
        Gauge {
            running: AtomicUsize::new(0),
            max: AtomicUsize::new(0),
            entered: AtomicUsize::new(0),
        }
    }

    fn enter(&self) {
        let now = self.running.fetch_add(1, SeqCst) + 1;
        self.max.fetch_max(now, SeqCst);
        self.entered.fetch_add(1, SeqCst);
    }

    fn leave(&self) {
        self.running.fetch_sub(1, SeqCst);
    }
}

/// Spins (yielding) until `done`, for at most 10 s.
fn wait_until(done: impl Fn() -> bool) -> bool {
    let give_up = Instant::now() + Duration::from_secs(10);
    while !done() {
        if Instant::now() > give_up {
            return false;
        }
        std::thread::yield_now();
    }
    true
}

const N: usize = 4;

#[test]
fn ten_n_threads_never_run_more_than_n_bodies_and_the_rest_are_refused_unrun() {
    static GAUGE: Gauge = Gauge::new();
    static RELEASE: AtomicBool = AtomicBool::new(false);
    static REFUSED: AtomicUsize = AtomicUsize::new(0);

    // threshold = 1: a single counted failure would open the breaker.
    #[circuit_breaker(name = "bulkhead::threads", max_concurrent = 4, threshold = 1)]
    fn guarded() -> Result<u32, Fault> {
        GAUGE.enter();
        while !RELEASE.load(SeqCst) {
            std::thread::yield_now();
        }
        GAUGE.leave();
        Ok(1)
    }

    let callers = 10 * N;
    let start = Arc::new(Barrier::new(callers));
    let threads: Vec<_> = (0..callers)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                let result = guarded();
                if at_limit(&result) {
                    REFUSED.fetch_add(1, SeqCst);
                }
                result
            })
        })
        .collect();
    // Every caller has either entered (and waits for the release) or been
    // refused: nobody leaves before the release, so exactly N entered.
    assert!(wait_until(|| GAUGE.entered.load(SeqCst)
        + REFUSED.load(SeqCst)
        == callers));
    assert_eq!(GAUGE.entered.load(SeqCst), N);
    RELEASE.store(true, SeqCst);
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), N);
    assert_eq!(results.iter().filter(|r| at_limit(r)).count(), 9 * N);
    assert_eq!(GAUGE.max.load(SeqCst), N, "most bodies at once");
    assert_unmoved("bulkhead::threads");
    assert_eq!(guarded().unwrap(), 1, "every slot was given back");
}

#[test]
fn ten_n_tasks_on_two_workers_never_run_more_than_n_bodies() {
    static GAUGE: Gauge = Gauge::new();
    static REFUSED: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(name = "bulkhead::tasks", max_concurrent = 4, threshold = 1)]
    async fn guarded(release: Arc<tokio::sync::Notify>) -> Result<u32, Fault> {
        GAUGE.enter();
        release.notified().await;
        GAUGE.leave();
        Ok(1)
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let callers = 10 * N;
        let release = Arc::new(tokio::sync::Notify::new());
        let start = Arc::new(tokio::sync::Barrier::new(callers));
        let tasks: Vec<_> = (0..callers)
            .map(|_| {
                let (start, release) = (start.clone(), release.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    let result = guarded(release).await;
                    if at_limit(&result) {
                        REFUSED.fetch_add(1, SeqCst);
                    }
                    result
                })
            })
            .collect();
        let give_up = Instant::now() + Duration::from_secs(10);
        while GAUGE.entered.load(SeqCst) + REFUSED.load(SeqCst) < callers {
            assert!(Instant::now() < give_up, "callers did not finish");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(GAUGE.entered.load(SeqCst), N);
        release.notify_waiters();
        let mut ok = 0;
        for task in tasks {
            match task.await.unwrap() {
                Ok(_) => ok += 1,
                refused => assert!(at_limit(&refused), "{refused:?}"),
            }
        }
        assert_eq!(ok, N);
        assert_eq!(REFUSED.load(SeqCst), 9 * N);
        assert_eq!(GAUGE.max.load(SeqCst), N);
    });
    assert_unmoved("bulkhead::tasks");
}

/// Many short calls from two threads: the limit holds at every instant, and
/// the calls refused never ran.
#[test]
fn under_churn_the_limit_holds() {
    static GAUGE: Gauge = Gauge::new();
    static CALLS: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(name = "bulkhead::churn", max_concurrent = 1, threshold = 1)]
    fn guarded() -> Result<u32, Fault> {
        GAUGE.enter();
        std::thread::yield_now();
        GAUGE.leave();
        Ok(1)
    }

    let threads: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(|| {
                let mut refused = 0;
                for _ in 0..20_000 {
                    CALLS.fetch_add(1, SeqCst);
                    match guarded() {
                        Ok(_) => {}
                        other => {
                            assert!(at_limit(&other), "{other:?}");
                            refused += 1;
                        }
                    }
                }
                refused
            })
        })
        .collect();
    let refused: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(GAUGE.max.load(SeqCst), 1);
    assert_eq!(GAUGE.entered.load(SeqCst) + refused, CALLS.load(SeqCst));
    assert_unmoved("bulkhead::churn");
}

#[derive(Clone, Copy, Debug)]
enum Ending {
    Success,
    Counted,
    Neutral,
    Panic,
    Hang,
}

fn end_sync(ending: Ending) -> Result<u32, Fault> {
    match ending {
        Ending::Success => Ok(1),
        Ending::Counted => Err(Fault::Upstream(503)),
        Ending::Neutral => Err(Fault::Upstream(400)),
        Ending::Panic => panic!("the body panics"),
        Ending::Hang => unreachable!("a sync body does not hang here"),
    }
}

#[test]
fn a_sync_call_gives_its_slot_back_on_every_path() {
    static INSIDE: AtomicBool = AtomicBool::new(false);

    #[circuit_breaker(
        name = "bulkhead::sync_paths",
        max_concurrent = 1,
        threshold = 100,
        counts = Fault::Upstream(500..=599)
    )]
    fn one(ending: Ending) -> Result<u32, Fault> {
        // While this call holds the only slot, a call from inside is refused.
        if !INSIDE.swap(true, SeqCst) {
            assert!(at_limit(&one(Ending::Success)));
            INSIDE.store(false, SeqCst);
        }
        end_sync(ending)
    }

    for ending in [Ending::Success, Ending::Counted, Ending::Neutral] {
        let _ = one(ending);
        assert_eq!(one(Ending::Success).unwrap(), 1, "after {ending:?}");
    }
    let panicked = std::panic::catch_unwind(|| one(Ending::Panic));
    assert!(panicked.is_err());
    INSIDE.store(false, SeqCst);
    assert_eq!(one(Ending::Success).unwrap(), 1, "after a panic");
}

fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    std::pin::Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

#[tokio::test]
async fn an_async_call_gives_its_slot_back_on_every_path() {
    #[circuit_breaker(
        name = "bulkhead::async_paths",
        max_concurrent = 1,
        threshold = 100,
        timeout = "20ms",
        counts = Fault::Upstream(500..=599)
    )]
    async fn one(ending: Ending) -> Result<u32, Fault> {
        tokio::task::yield_now().await;
        match ending {
            Ending::Hang => std::future::pending().await,
            other => end_sync(other),
        }
    }

    // A call in flight holds the only slot; once it ends, the next is admitted.
    async fn holds_then_frees(ending: Ending) {
        let mut call = Box::pin(one(ending));
        assert!(poll_once(&mut call).is_pending(), "{ending:?}: in flight");
        assert!(at_limit(&one(Ending::Success).await), "{ending:?}: held");
        let _ = call.await;
        assert_eq!(one(Ending::Success).await.unwrap(), 1, "after {ending:?}");
    }

    for ending in [
        Ending::Success,
        Ending::Counted,
        Ending::Neutral,
        Ending::Hang,
    ] {
        holds_then_frees(ending).await;
    }
    // Timed out: the `Hang` call above ran out of its 20 ms.
    assert!(matches!(
        one(Ending::Hang).await,
        Err(Fault::TimedOut(t)) if t.limit() == Duration::from_millis(20)
    ));
    // Dropped from outside before it finished.
    let mut dropped = Box::pin(one(Ending::Hang));
    assert!(poll_once(&mut dropped).is_pending());
    drop(dropped);
    assert_eq!(one(Ending::Success).await.unwrap(), 1, "after a drop");
    // A task whose body panics.
    let panicked = tokio::spawn(one(Ending::Panic)).await;
    assert!(panicked.unwrap_err().is_panic());
    assert_eq!(one(Ending::Success).await.unwrap(), 1, "after a panic");
}

#[test]
fn a_refusal_at_the_limit_reaches_the_fallback_and_moves_no_counter() {
    static FALLBACK_SAW: std::sync::Mutex<Option<Reason>> = std::sync::Mutex::new(None);

    #[circuit_breaker(
        name = "bulkhead::fallback",
        max_concurrent = 1,
        threshold = 1,
        fallback = busy
    )]
    fn page(depth: u32) -> Result<u32, Fault> {
        // The nested call finds the only slot taken.
        if depth == 0 {
            return page(1);
        }
        Ok(depth)
    }

    fn busy(depth: u32, error: Error<Fault>) -> Result<u32, Fault> {
        let Error::Rejected(rejected) = error else {
            panic!("a refusal, not {error:?}")
        };
        assert_eq!(rejected.name(), "bulkhead::fallback");
        assert_eq!(rejected.state(), State::Closed);
        assert_eq!(rejected.reason(), Reason::ConcurrencyLimit);
        assert_eq!(
            rejected.to_string(),
            "circuit breaker `bulkhead::fallback` is at its concurrency limit: call not attempted"
        );
        *FALLBACK_SAW.lock().unwrap() = Some(rejected.reason());
        Ok(100 + depth)
    }

    assert_eq!(page(0).unwrap(), 101);
    assert_eq!(
        *FALLBACK_SAW.lock().unwrap(),
        Some(Reason::ConcurrencyLimit)
    );
    assert_unmoved("bulkhead::fallback");
    // The refused call is counted as rejected, not as a neutral outcome.
    let totals = failfast::registry::get("bulkhead::fallback")
        .unwrap()
        .snapshot();
    assert_eq!(
        (
            totals.calls,
            totals.successes,
            totals.rejected,
            totals.neutral
        ),
        (2, 1, 1, 0)
    );
    assert_eq!(page(1).unwrap(), 1);
}

#[test]
fn an_open_breaker_refuses_before_the_bulkhead_and_says_so() {
    static RAN: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(
        name = "bulkhead::open",
        max_concurrent = 1,
        threshold = 1,
        recovery = "1h"
    )]
    fn call(fail: bool) -> Result<u32, Fault> {
        RAN.fetch_add(1, SeqCst);
        if fail {
            Err(Fault::Upstream(503))
        } else {
            Ok(1)
        }
    }

    assert!(matches!(call(true), Err(Fault::Upstream(503))));
    for _ in 0..3 {
        match call(false) {
            Err(Fault::Rejected(r)) => assert_eq!(r.reason(), Reason::Open),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(RAN.load(SeqCst), 1);
    registry::get("bulkhead::open")
        .unwrap()
        .set_mode(failfast::Mode::Normal);
    assert_eq!(call(false).unwrap(), 1, "no slot was kept by the refusals");
}

// ------------------------------------------------------------------ max_wait
//
// `max_concurrent = N, max_wait = "…"`: a call that finds every place taken
// waits its turn for one, that long at most.

#[test]
fn a_sync_call_waits_for_a_place_given_back_within_max_wait() {
    static HOLD: AtomicBool = AtomicBool::new(true);
    static ENTERED: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(name = "bulkhead::wait_sync", max_concurrent = 1, max_wait = "10s")]
    fn guarded(hold: bool) -> Result<u32, Fault> {
        ENTERED.fetch_add(1, SeqCst);
        while hold && HOLD.load(SeqCst) {
            std::thread::yield_now();
        }
        Ok(1)
    }

    let holder = std::thread::spawn(|| guarded(true));
    assert!(wait_until(|| ENTERED.load(SeqCst) == 1));
    let waiter = std::thread::spawn(|| guarded(false));
    // The waiter has not run: the only place is held.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(ENTERED.load(SeqCst), 1, "the second call waits, unrun");
    HOLD.store(false, SeqCst);
    assert_eq!(holder.join().unwrap().unwrap(), 1);
    assert_eq!(
        waiter.join().unwrap().unwrap(),
        1,
        "given the place, not refused"
    );
    assert_unmoved("bulkhead::wait_sync");
}

#[test]
fn a_sync_call_still_waiting_at_max_wait_is_refused_at_the_limit() {
    static HOLD: AtomicBool = AtomicBool::new(true);
    static ENTERED: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(
        name = "bulkhead::wait_sync_refused",
        max_concurrent = 1,
        max_wait = "30ms"
    )]
    fn guarded(hold: bool) -> Result<u32, Fault> {
        ENTERED.fetch_add(1, SeqCst);
        while hold && HOLD.load(SeqCst) {
            std::thread::yield_now();
        }
        Ok(1)
    }

    let holder = std::thread::spawn(|| guarded(true));
    assert!(wait_until(|| ENTERED.load(SeqCst) == 1));
    let asked = Instant::now();
    let refused = guarded(false);
    assert!(at_limit(&refused), "{refused:?}");
    assert!(
        asked.elapsed() >= Duration::from_millis(30),
        "it waited first"
    );
    assert_eq!(ENTERED.load(SeqCst), 1, "the refused call did not run");
    // The refusal gave back no place of its own: the next call waits and
    // is refused too.
    assert!(at_limit(&guarded(false)));
    HOLD.store(false, SeqCst);
    assert_eq!(holder.join().unwrap().unwrap(), 1);
    let s = registry::get("bulkhead::wait_sync_refused")
        .unwrap()
        .snapshot();
    assert_eq!((s.rejected, s.failures), (2, 0), "{s:?}");
    assert_eq!(guarded(false).unwrap(), 1, "the place was given back");
}

/// Many threads sharing two places, each waiting long enough: nobody is
/// refused (a place given back is always handed to a waiting call, never
/// lost while it sleeps), and never more than two run at once.
#[test]
fn threads_waiting_for_places_are_all_served_and_never_exceed_the_limit() {
    static GAUGE: Gauge = Gauge::new();

    #[circuit_breaker(name = "bulkhead::wait_many", max_concurrent = 2, max_wait = "60s")]
    fn guarded() -> Result<u32, Fault> {
        GAUGE.enter();
        std::thread::yield_now();
        GAUGE.leave();
        Ok(1)
    }

    let threads = 8;
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                (0..300).filter(|_| guarded().is_ok()).count()
            })
        })
        .collect();
    let served: usize = handles.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(served, threads * 300, "no call was refused");
    assert!(GAUGE.max.load(SeqCst) <= 2, "most bodies at once");
    assert_unmoved("bulkhead::wait_many");
}

#[tokio::test(start_paused = true)]
async fn async_calls_wait_their_turn_in_order_and_one_out_of_time_is_refused() {
    static ORDER: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

    #[circuit_breaker(name = "bulkhead::wait_async", max_concurrent = 1, max_wait = "100ms")]
    async fn guarded(id: u32, hold: Duration) -> Result<u32, Fault> {
        ORDER.lock().unwrap().push(id);
        tokio::time::sleep(hold).await;
        Ok(id)
    }

    // 0 holds the place 30 ms; 1, 2 and 3 arrive in that order and wait:
    // 1 runs at 30 ms, 2 at 60 ms, 3 at 90 ms (each holding 30 ms), all
    // within their 100 ms. 4 arrives last and would run at 120 ms: refused.
    let hold = Duration::from_millis(30);
    let mut calls = Vec::new();
    for id in 0..5 {
        calls.push(tokio::spawn(guarded(id, hold)));
        tokio::task::yield_now().await;
    }
    let mut results = Vec::new();
    for call in calls {
        results.push(call.await.unwrap());
    }
    assert_eq!(
        results[..4]
            .iter()
            .map(|r| *r.as_ref().unwrap())
            .collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert!(at_limit(&results[4]), "{:?}", results[4]);
    assert_eq!(
        *ORDER.lock().unwrap(),
        [0, 1, 2, 3],
        "first come, first served"
    );
}

#[tokio::test(start_paused = true)]
async fn an_async_call_dropped_while_waiting_loses_no_place() {
    static ENTERED: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(name = "bulkhead::wait_dropped", max_concurrent = 1, max_wait = "1s")]
    async fn guarded(hold: Duration) -> Result<u32, Fault> {
        ENTERED.fetch_add(1, SeqCst);
        tokio::time::sleep(hold).await;
        Ok(1)
    }

    let holder = tokio::spawn(guarded(Duration::from_millis(50)));
    tokio::task::yield_now().await;
    // A waiter given up on by its caller before the place comes back…
    let given_up = tokio::time::timeout(Duration::from_millis(10), guarded(Duration::ZERO)).await;
    assert!(given_up.is_err(), "still waiting when dropped");
    // …and one dropped the moment the place is handed to it.
    let mut late = Box::pin(guarded(Duration::ZERO));
    assert!(poll_once(&mut late).is_pending());
    assert_eq!(holder.await.unwrap().unwrap(), 1);
    drop(late);
    assert_eq!(ENTERED.load(SeqCst), 1, "neither waiter ran");
    // Both places' worth of hand-overs came back: the place is free.
    assert_eq!(guarded(Duration::ZERO).await.unwrap(), 1);
    assert_unmoved("bulkhead::wait_dropped");
}

#[test]
fn each_key_waits_for_its_own_places() {
    static HOLD: AtomicBool = AtomicBool::new(true);
    static ENTERED: AtomicUsize = AtomicUsize::new(0);

    #[circuit_breaker(key = host, max_concurrent = 1, max_wait = "20ms", name = "bulkhead::wait_keyed")]
    fn guarded(host: &str, hold: bool) -> Result<u32, Fault> {
        ENTERED.fetch_add(1, SeqCst);
        while hold && HOLD.load(SeqCst) {
            std::thread::yield_now();
        }
        Ok(1)
    }

    let holder = std::thread::spawn(|| guarded("a", true));
    assert!(wait_until(|| ENTERED.load(SeqCst) == 1));
    // Another key has a place of its own; the same key waits, then is refused.
    assert_eq!(guarded("b", false).unwrap(), 1);
    let asked = Instant::now();
    assert!(at_limit(&guarded("a", false)));
    assert!(asked.elapsed() >= Duration::from_millis(20));
    HOLD.store(false, SeqCst);
    assert_eq!(holder.join().unwrap().unwrap(), 1);
    assert_eq!(guarded("a", false).unwrap(), 1);
}
