//! A call through a breaker allocates nothing on the heap, in any state: closed
//! (success and counted failure), open (rejection), half-open (trial), and async;
//! under the consecutive rule and the rate rules; built with the builder or
//! declared with `#[circuit_breaker]`; with `max_concurrent` (a slot taken and
//! given back, a refusal at the limit) and with `timeout` (answered in time,
//! timed out), where tokio's timer itself allocates nothing per call either
//! (`tokio::time::timeout` is measured beside it). So does `#[retry]`, sync
//! and async (on tokio's timer), whether it retries or not.
//!
//! A counting global allocator counts the allocations of the current thread
//! only (the test harness runs tests on parallel threads, and the coarse clock
//! has a thread of its own). Each test first runs every path once: a few things
//! are allocated once per breaker or per process (the rate window's ring, the
//! registry entry of an attribute's breaker, the coarse clock's thread on the
//! first open), never per call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::thread::sleep;
use std::time::Duration;

use failfast::{Breaker, ManualClock, Rejected, State, circuit_breaker};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: the slot is gone while the thread is being torn down.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are ours. Counting touches a
// const-initialised thread-local `Cell` without a destructor, which never
// allocates (no recursion into the allocator).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller upholds `alloc`'s contract; passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: `ptr` came from this allocator, that is from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Heap allocations made by this thread while `f` runs.
fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn the_counter_sees_allocations() {
    let n = allocations(|| drop(std::hint::black_box(Box::new(7))));
    assert_eq!(n, 1);
}

const CALLS: usize = 1000;

#[derive(Debug)]
enum Fault {
    Down,
    Rejected(Rejected),
}

impl From<Rejected> for Fault {
    fn from(rejected: Rejected) -> Self {
        Fault::Rejected(rejected)
    }
}

fn ok() -> Result<u32, Fault> {
    Ok(42)
}

fn down() -> Result<u32, Fault> {
    Err(Fault::Down)
}

/// Polls a future that needs no I/O to completion, without an executor (which
/// would allocate on its own account).
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

fn assert_no_allocation(what: &str, f: impl FnOnce()) {
    let n = allocations(f);
    assert_eq!(n, 0, "{what}: {n} heap allocations in {CALLS} calls");
}

/// Runs `f` once to warm up, then `CALLS` times while counting.
fn per_call(what: &str, mut f: impl FnMut()) {
    f();
    assert_no_allocation(what, || {
        for _ in 0..CALLS {
            f();
        }
    });
}

/// Opens a breaker on the system clock once, so the coarse clock's thread (a
/// one-time allocation per process) exists before counting starts.
fn start_coarse_clock() {
    let breaker = Breaker::builder().threshold(1).build().unwrap();
    let _ = breaker.call(down);
    assert_eq!(breaker.state(), State::Open);
}

mod builder {
    use super::*;

    fn consecutive(threshold: u32, clock: &ManualClock) -> Breaker {
        Breaker::builder()
            .threshold(threshold)
            .recovery(Duration::from_secs(1))
            .clock(clock.clone())
            .build()
            .unwrap()
    }

    fn rate(clock: &ManualClock) -> Breaker {
        Breaker::builder()
            .failure_rate(0.5)
            .window_calls(100)
            .min_calls(10)
            .recovery(Duration::from_secs(1))
            .clock(clock.clone())
            .build()
            .unwrap()
    }

    fn time_rate(clock: &ManualClock) -> Breaker {
        Breaker::builder()
            .failure_rate(0.5)
            .window_time(Duration::from_secs(10))
            .min_calls(10)
            .recovery(Duration::from_secs(1))
            .clock(clock.clone())
            .build()
            .unwrap()
    }

    /// Fails calls until `b` opens. A rule that never trips fails the test
    /// instead of hanging it: a rate of 50% trips within 100 failures over a
    /// window of 100 calls, and within about 1,430 over the 10 s window
    /// that the successes 7 ms apart filled.
    fn fail_until_open(b: &Breaker) {
        let mut calls = 0;
        while b.state() == State::Closed {
            let _ = b.call(down);
            calls += 1;
            assert!(calls < 10_000, "the rate rule never tripped");
        }
    }

    #[test]
    fn closed_success_consecutive() {
        let b = consecutive(5, &ManualClock::new());
        per_call("closed success", || assert!(b.call(ok).is_ok()));
        per_call("closed success by permit", || {
            b.acquire().unwrap().record(failfast::Outcome::Success);
        });
    }

    #[test]
    fn closed_counted_failure_consecutive() {
        let b = consecutive(16_777_215, &ManualClock::new());
        per_call("closed failure", || {
            assert!(matches!(b.call(down), Err(failfast::Error::Failed(_))));
        });
        // A success after failures clears the count: a write, still no allocation.
        per_call("closed failure then success", || {
            let _ = b.call(down);
            assert!(b.call(ok).is_ok());
        });
        assert_eq!(b.state(), State::Closed);
    }

    #[test]
    fn open_rejection() {
        start_coarse_clock();
        let system = Breaker::builder()
            .threshold(1)
            .recovery(Duration::from_secs(3600))
            .build()
            .unwrap();
        let _ = system.call(down);
        per_call("open rejection, system clock", || {
            let Err(failfast::Error::Rejected(rejected)) = system.call(ok) else {
                panic!("refused")
            };
            assert!(rejected.retry_after().is_some());
        });
        let clock = ManualClock::new();
        let manual = consecutive(1, &clock);
        let _ = manual.call(down);
        per_call("open rejection, manual clock", || {
            assert!(matches!(manual.call(ok), Err(failfast::Error::Rejected(_))));
        });
    }

    #[test]
    fn half_open_trial_consecutive() {
        let clock = ManualClock::new();
        let b = consecutive(1, &clock);
        // Trip, reject, wait out recovery, succeed a trial, close: a full round.
        per_call("trip, reject, successful trial", || {
            let _ = b.call(down);
            assert_eq!(b.state(), State::Open);
            assert!(matches!(b.call(ok), Err(failfast::Error::Rejected(_))));
            clock.advance(Duration::from_secs(1));
            assert!(b.call(ok).is_ok());
            assert_eq!(b.state(), State::Closed);
        });
        per_call("failed trial", || {
            let _ = b.call(down);
            clock.advance(Duration::from_secs(1));
            assert!(matches!(b.call(down), Err(failfast::Error::Failed(_))));
            assert_eq!(b.state(), State::Open);
            clock.advance(Duration::from_secs(1));
            assert!(b.call(ok).is_ok());
        });
    }

    #[test]
    fn rate_rule_count_window_every_state() {
        let clock = ManualClock::new();
        let b = rate(&clock);
        per_call("closed success, count window", || {
            assert!(b.call(ok).is_ok())
        });
        // One failure in ten: counted, below the rate. The warm-up call is
        // the first failure, which makes the window (successes before it
        // had no need of one).
        let mut i = 9;
        per_call("closed mixed outcomes, count window", || {
            i += 1;
            let _ = b.call(if i % 10 == 0 { down } else { ok });
        });
        assert_eq!(b.state(), State::Closed);
        per_call("trip, reject, trial, close; count window", || {
            fail_until_open(&b);
            assert!(matches!(b.call(ok), Err(failfast::Error::Rejected(_))));
            clock.advance(Duration::from_secs(1));
            assert!(b.call(ok).is_ok());
            assert_eq!(b.state(), State::Closed);
        });
    }

    #[test]
    fn rate_rule_time_window_every_state() {
        let clock = ManualClock::new();
        let b = time_rate(&clock);
        per_call("closed success, time window", || {
            clock.advance(Duration::from_millis(7));
            assert!(b.call(ok).is_ok());
        });
        per_call("trip, reject, trial, close; time window", || {
            fail_until_open(&b);
            assert!(matches!(b.call(ok), Err(failfast::Error::Rejected(_))));
            clock.advance(Duration::from_secs(1));
            assert!(b.call(ok).is_ok());
            assert_eq!(b.state(), State::Closed);
        });
    }

    #[test]
    fn async_calls() {
        let clock = ManualClock::new();
        let b = consecutive(1, &clock);
        per_call("async closed success", || {
            assert!(block_on(b.call_async(async { ok() })).is_ok());
        });
        per_call("async trip, reject, trial", || {
            let _ = block_on(b.call_async(async { down() }));
            assert!(matches!(
                block_on(b.call_async(async { ok() })),
                Err(failfast::Error::Rejected(_))
            ));
            clock.advance(Duration::from_secs(1));
            assert!(block_on(b.call_async(async { ok() })).is_ok());
        });
        let r = rate(&clock);
        per_call("async closed success, rate rule", || {
            assert!(block_on(r.call_async(async { ok() })).is_ok());
        });
    }
}

mod attribute {
    use super::*;

    #[circuit_breaker(threshold = 1_000_000, recovery = "30s")]
    fn healthy(fail: bool) -> Result<u32, Fault> {
        if fail { down() } else { ok() }
    }

    #[circuit_breaker(threshold = 1, recovery = "50ms")]
    fn flaky(fail: bool) -> Result<u32, Fault> {
        if fail { down() } else { ok() }
    }

    #[circuit_breaker(failure_rate = 0.5, window = 100, min_calls = 10, recovery = "50ms")]
    fn rated(fail: bool) -> Result<u32, Fault> {
        if fail { down() } else { ok() }
    }

    #[circuit_breaker(threshold = 1, recovery = "50ms")]
    async fn flaky_async(fail: bool) -> Result<u32, Fault> {
        if fail { down() } else { ok() }
    }

    /// Rounds of the whole cycle on the system clock: each round waits out
    /// `recovery` (outside the counted part).
    const ROUNDS: usize = 5;

    /// Trips with `trip`, calls while open, waits out `recovery`, runs a trial
    /// with `call`. A round in which the machine stalled past `recovery` sees a
    /// trial instead of a rejection; most rounds must see the rejection.
    fn cycle(what: &str, trip: impl Fn(), call: impl Fn(bool) -> Result<u32, Fault>) {
        start_coarse_clock();
        let mut rejections = 0;
        for round in 0..=ROUNDS {
            let n = allocations(|| {
                trip();
                if let Err(Fault::Rejected(rejected)) = call(false) {
                    assert_eq!(rejected.state(), State::Open);
                    rejections += 1;
                }
            });
            sleep(Duration::from_millis(60));
            // The trial: admitted now, or a little later if the coarse clock's
            // thread was held up on a busy machine.
            let n = n + allocations(|| {
                for _ in 0..400 {
                    match call(false) {
                        Ok(_) => return,
                        Err(Fault::Rejected(_)) => sleep(Duration::from_millis(5)),
                        Err(Fault::Down) => unreachable!("the call does not fail"),
                    }
                }
                panic!("{what}: no trial admitted 2 s after recovery");
            });
            // Round 0 registers the breaker in the registry.
            if round > 0 {
                assert_eq!(n, 0, "{what}: {n} heap allocations in round {round}");
            }
        }
        assert!(rejections > 0, "{what}: the open breaker never rejected");
    }

    #[test]
    fn closed_success_and_failure() {
        per_call("attribute closed success", || {
            assert!(healthy(false).is_ok())
        });
        per_call("attribute closed failure", || {
            assert!(matches!(healthy(true), Err(Fault::Down)));
        });
    }

    #[test]
    fn consecutive_every_state() {
        cycle(
            "attribute consecutive",
            || assert!(matches!(flaky(true), Err(Fault::Down))),
            flaky,
        );
    }

    #[test]
    fn rate_every_state() {
        per_call("attribute rate, closed success", || {
            assert!(rated(false).is_ok())
        });
        cycle(
            "attribute rate",
            || {
                let mut calls = 0;
                while !matches!(rated(true), Err(Fault::Rejected(_))) {
                    calls += 1;
                    assert!(calls < 1000, "the rate rule never tripped");
                }
            },
            rated,
        );
    }

    #[test]
    fn async_every_state() {
        per_call("attribute async closed success", || {
            assert!(block_on(flaky_async(false)).is_ok());
        });
        cycle(
            "attribute async",
            || assert!(matches!(block_on(flaky_async(true)), Err(Fault::Down))),
            |fail| block_on(flaky_async(fail)),
        );
    }
}

/// `max_concurrent`: taking and giving back a slot, and a refusal at the
/// limit, allocate nothing.
mod bulkhead {
    use super::*;
    use failfast::Reason;

    #[circuit_breaker(threshold = 1_000_000, max_concurrent = 4)]
    fn limited(fail: bool) -> Result<u32, Fault> {
        if fail { down() } else { ok() }
    }

    /// Holds the only slot and calls itself: the inner call is refused at
    /// the limit.
    #[circuit_breaker(threshold = 1_000_000, max_concurrent = 1)]
    fn nested(depth: u32) -> Result<u32, Fault> {
        if depth == 0 {
            return match nested(1) {
                Err(Fault::Rejected(r)) if r.reason() == Reason::ConcurrencyLimit => Ok(0),
                other => other,
            };
        }
        ok()
    }

    #[circuit_breaker(threshold = 1_000_000, max_concurrent = 4)]
    async fn limited_async(fail: bool) -> Result<u32, Fault> {
        if fail { down() } else { ok() }
    }

    #[test]
    fn every_path() {
        per_call("bulkhead success", || assert!(limited(false).is_ok()));
        per_call("bulkhead counted failure", || {
            assert!(matches!(limited(true), Err(Fault::Down)));
        });
        per_call("bulkhead refusal at the limit", || {
            assert_eq!(nested(0).unwrap(), 0);
        });
        per_call("bulkhead async success", || {
            assert!(block_on(limited_async(false)).is_ok());
        });
    }
}

/// `timeout`: a call that answers in time, and one that times out, allocate
/// nothing beyond what tokio's timer does for `tokio::time::timeout` itself
/// (measured here: nothing, once the runtime is warm).
#[cfg(feature = "tokio")]
mod timeout {
    use super::*;

    #[derive(Debug)]
    enum Slow {
        TimedOut,
        Rejected,
    }

    impl From<failfast::TimedOut> for Slow {
        fn from(_: failfast::TimedOut) -> Self {
            Slow::TimedOut
        }
    }

    impl From<Rejected> for Slow {
        fn from(_: Rejected) -> Self {
            Slow::Rejected
        }
    }

    #[circuit_breaker(threshold = 1_000_000, timeout = "1s")]
    async fn in_time() -> Result<u32, Slow> {
        Ok(42)
    }

    #[circuit_breaker(threshold = 1_000_000, timeout = "1ms", max_concurrent = 4)]
    async fn hangs() -> Result<u32, Slow> {
        std::future::pending().await
    }

    async fn plain() -> Result<u32, Slow> {
        Ok(42)
    }

    /// Heap allocations by this thread while `calls` runs (the current-thread
    /// runtime polls every future and the timer on this thread).
    async fn counted<F: Future<Output = ()>>(calls: impl FnOnce() -> F) -> u64 {
        let before = ALLOCATIONS.with(Cell::get);
        calls().await;
        ALLOCATIONS.with(Cell::get) - before
    }

    #[test]
    fn in_time_and_timed_out() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(async {
            let limit = Duration::from_secs(1);
            // Warm up every path once.
            let _ = tokio::time::timeout(limit, plain()).await;
            let _ = in_time().await;
            let _ = hangs().await;
            let tokio_alone = counted(|| async {
                for _ in 0..CALLS {
                    assert!(tokio::time::timeout(limit, plain()).await.is_ok());
                }
            })
            .await;
            assert_eq!(tokio_alone, 0, "tokio::time::timeout itself");
            let ours = counted(|| async {
                for _ in 0..CALLS {
                    assert!(in_time().await.is_ok());
                }
            })
            .await;
            assert_eq!(ours, 0, "timeout key, answered in time");
            // Paused time moves on by itself while every task waits.
            let timed_out = counted(|| async {
                for _ in 0..CALLS {
                    assert!(matches!(hangs().await, Err(Slow::TimedOut)));
                }
            })
            .await;
            assert_eq!(timed_out, 0, "timeout key, timed out");
        });
    }
}

/// `#[retry]` above `#[circuit_breaker]` and alone: the first attempt's path,
/// retried failures (with their sleeps and the budget's bookkeeping), and a
/// rejection that ends the retries at once.
mod retry {
    use super::*;
    use failfast::retry;

    #[retry(attempts = 3, backoff = "1us", budget = 1)]
    #[circuit_breaker(threshold = 16_000_000, recovery = "30s")]
    fn retried(fail: bool) -> Result<u32, Fault> {
        if fail { down() } else { ok() }
    }

    #[retry(attempts = 3, backoff = "1us", budget = 1)]
    fn alone(fail: bool) -> Result<u32, Fault> {
        if fail { down() } else { ok() }
    }

    #[retry(attempts = 3, backoff = "1us")]
    #[circuit_breaker(threshold = 1, recovery = "1h")]
    fn tripped(fail: bool) -> Result<u32, Fault> {
        if fail { down() } else { ok() }
    }

    #[test]
    fn sync_paths() {
        per_call("retry, first attempt succeeds", || {
            assert!(retried(false).is_ok());
        });
        per_call("retry, failures retried", || {
            assert!(matches!(retried(true), Err(Fault::Down)));
        });
        per_call("retry alone, failures retried", || {
            assert!(matches!(alone(true), Err(Fault::Down)));
        });
        start_coarse_clock();
        let _ = tripped(true);
        per_call("retry, rejected by the open breaker", || {
            assert!(matches!(tripped(false), Err(Fault::Rejected(_))));
        });
    }

    #[cfg(feature = "tokio")]
    mod with_tokio {
        use super::*;

        /// Body runs, to prove the failures were retried.
        static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

        #[retry(attempts = 3, backoff = "1ms", budget = 1)]
        #[circuit_breaker(threshold = 16_000_000, recovery = "30s")]
        async fn retried_async(fail: bool) -> Result<u32, Fault> {
            RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if fail { down() } else { ok() }
        }

        /// tokio's `Sleep` keeps its timer entry inside the future (the
        /// wheel links entries in place), so a retried async call allocates
        /// nothing either once the runtime's timer wheel exists: on the
        /// paused clock, which jumps to each deadline, and on the real one.
        #[test]
        fn async_paths_on_tokio_timer() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .unwrap();
            per_call("async retry, first attempt succeeds", || {
                assert!(block_on(retried_async(false)).is_ok());
            });
            per_call("async retry, failures retried on tokio's timer", || {
                runtime.block_on(async {
                    assert!(matches!(retried_async(true).await, Err(Fault::Down)));
                });
            });
            let real_clock = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            let call = || {
                real_clock.block_on(async {
                    assert!(matches!(retried_async(true).await, Err(Fault::Down)));
                });
            };
            call();
            let runs = RUNS.load(std::sync::atomic::Ordering::Relaxed);
            // Each call sleeps a millisecond or two: fewer calls.
            let n = allocations(|| (0..50).for_each(|_| call()));
            let retried = RUNS.load(std::sync::atomic::Ordering::Relaxed) - runs - 50;
            assert!(
                retried >= 25,
                "the budget let half the retries through: {retried}"
            );
            assert_eq!(
                n, 0,
                "async retry on tokio's real clock: {n} allocations in 50 calls"
            );
        }
    }
}

/// One breaker per key: a call through an existing key's breaker allocates
/// nothing, with `Family` and with `key = …` (the key is looked up as the
/// `&str` it is, never turned into a `String`), sync and async, in every
/// state.
#[cfg(feature = "keyed")]
mod keyed {
    use super::*;
    use failfast::Family;

    #[test]
    fn family_hit() {
        let hosts: Family<String> = Family::builder(Breaker::builder().threshold(1_000_000))
            .build()
            .unwrap();
        let _ = hosts.get("10.0.0.1");
        per_call("Family::get, existing key", || {
            assert!(hosts.get("10.0.0.1").call(ok).is_ok());
        });
        per_call("Family::lease, existing key", || {
            assert!(hosts.lease("10.0.0.1").call(ok).is_ok());
        });
        let shards: Family<(String, u16)> = Family::builder(Breaker::builder()).build().unwrap();
        let _ = shards.get(&("eu", 3u16));
        per_call("Family::get, tuple key", || {
            assert!(shards.get(&("eu", 3u16)).call(ok).is_ok());
        });
        per_call("Family::lease, tuple key", || {
            assert!(shards.lease(&("eu", 3u16)).call(ok).is_ok());
        });
    }

    #[circuit_breaker(key = host, threshold = 1, recovery = "1h", max_concurrent = 4)]
    fn by_host(host: &str, fail: bool) -> Result<u32, Fault> {
        if fail { down() } else { ok() }
    }

    #[circuit_breaker(key = (host, port), threshold = 1_000_000)]
    async fn by_host_async(host: &str, port: u16) -> Result<u32, Fault> {
        let _ = (host, port);
        ok()
    }

    #[test]
    fn attribute_hit() {
        per_call("key = host, existing key, success", || {
            assert!(by_host("a", false).is_ok());
        });
        per_call("key = (host, port), async, existing key", || {
            assert!(block_on(by_host_async("a", 443)).is_ok());
        });
        start_coarse_clock();
        let _ = by_host("sick", true);
        per_call("key = host, existing key, open: rejected", || {
            assert!(matches!(by_host("sick", false), Err(Fault::Rejected(_))));
        });
        per_call("key = host, the healthy key beside it", || {
            assert!(by_host("a", false).is_ok());
        });
    }
}
