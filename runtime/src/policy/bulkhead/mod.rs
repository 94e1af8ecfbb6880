//! A bulkhead: at most `max` calls run at once; the next one is refused at
//! once instead of queueing, or, with [`max_wait`](Bulkhead::max_wait),
//! after waiting its turn that long at most (the `queue` module).
//!
//! No lock, no allocation per call, no queue: a caller that finds every place
//! taken is told so at once and can answer from a fallback, which is what a
//! service under overload needs (a queue in front of a hanging dependency only
//! holds more callers hostage). A place is given back by the [`BulkheadPermit`]'s
//! `Drop`, so on every path: success, error, panic, a future dropped mid-call.
//!
//! # Free places, counted where they are used
//!
//! The bulkhead counts free places, not running calls, and every place is in
//! exactly one counter or held by one call. At first every place is in one
//! counter, `central`: entering is a read and one compare-and-swap on it,
//! leaving one addition. Threads sharing a busy bulkhead would then take turns
//! owning that counter's cache line, twice per call. So the first time two
//! callers are seen racing on it (a compare-and-swap that lost to another
//! thread), the bulkhead gets *stripes*: further counters, each on a line of
//! its own, one per thread slot of the running totals (`totals` module) up to
//! `max` of them. From then on a thread gives a place back to its own stripe
//! and takes one from its own stripe first, then from `central`, then from the
//! other stripes in turn; a thread that keeps calling keeps its places on its
//! own line, and two such threads write nothing the other reads.
//!
//! Each move is one atomic operation on one counter (a taken place is held by
//! the call that took it), so no interleaving admits more than `max` calls at
//! once: the loom model in `runtime/tests/loom.rs` checks it with places on
//! several stripes. The price is in the refusal: with stripes, a call is
//! refused after it has looked at each counter once and found it empty, and a
//! place given back meanwhile to a counter already looked at is not seen, as
//! if it had come back just after the refusal.
//!
//! # A limit changed while calls run
//!
//! [`resize`](Bulkhead::resize) and [`set_max_wait`](Bulkhead::set_max_wait)
//! change the limit and the wait of a bulkhead in use (the `resize`
//! module): a lower limit lets the running calls finish and retires the
//! places they give back beyond it (its *debt*); a higher one admits calls
//! at once and wakes those waiting. A call that takes a place reads the
//! debt (one relaxed load of a line it reads anyway); nothing else on the
//! way of a call changes.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::core::breaker::{Breaker, Permit};
use crate::core::error::{Rejected, State};
use crate::sync::{AtomicU32, AtomicU64, Ordering};

mod queue;
mod resize;
mod stripes;
use queue::{Joined, Ticket};
pub(crate) use resize::attach_declared;
pub use resize::{BOUNDED, Bounded};
use stripes::Stripe;

/// At most `max` calls at once: what `#[circuit_breaker(max_concurrent =
/// N)]` declares in a `static` of the function, in front of the breaker,
/// and what a keyed family gives each key
/// ([`FamilyBuilder::max_concurrent`](crate::FamilyBuilder::max_concurrent)).
/// Reached by generated code through `__private`; a breaker built by hand
/// has its limit from
/// [`Builder::adaptive_concurrency`](crate::Builder::adaptive_concurrency)
/// (`(n, n)` for a fixed one).
///
/// A refusal is not a failure of the dependency: it reaches the caller (or
/// the `fallback`) as a [`Rejected`](crate::Rejected) whose
/// [`reason`](crate::Rejected::reason) is
/// [`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit), and it
/// moves no counter of the breaker.
///
/// Threads that share a busy bulkhead keep their places on cache lines of
/// their own (see the module docs), so it costs two threads about what it
/// costs one.
///
/// With [`max_wait`](Self::max_wait), a call that finds every place taken
/// waits its turn for one, that long at most (`max_wait = "50ms"` beside
/// `max_concurrent`).
///
/// Its limit and wait can change while calls run
/// ([`resize`](Self::resize), [`set_max_wait`](Self::set_max_wait)).
#[derive(Debug)]
pub struct Bulkhead {
    /// Free places not on a stripe.
    central: AtomicU32,
    /// Places owed by a lowered `max`: held by running calls, and retired
    /// as they come back (`resize` module).
    debt: AtomicU32,
    max: AtomicU32,
    /// Free places by thread slot, made once callers race on `central`.
    stripes: OnceLock<Box<[Stripe]>>,
    /// How long a call may wait for a place, in nanoseconds, read as it
    /// starts waiting.
    wait: AtomicU64,
    /// Made with `max_wait`: calls wait in `queue`, and a place given back
    /// is handed to the first of them. Fixed once made.
    lined: bool,
    /// The callers waiting. Always there (empty, it is a counter and an
    /// unlocked lock): a place given back must find the line whenever a
    /// call may be joining it (a line made on first use could be missed by
    /// a giver while the joining call misses the place).
    queue: queue::Queue,
}

/// The bulkhead a keyed family gives each key: its size and wait.
#[cfg(feature = "keyed")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limit {
    pub(crate) max: u32,
    pub(crate) wait: Duration,
}

#[cfg(feature = "keyed")]
impl Limit {
    /// `max_concurrent`, if set, with `max_wait` (zero: none).
    pub(crate) const fn of(max_concurrent: Option<u32>, wait: Duration) -> Option<Limit> {
        match max_concurrent {
            Some(max) => Some(Limit { max, wait }),
            None => None,
        }
    }

    /// A bulkhead of this size and wait.
    pub(crate) fn bulkhead(self) -> Bulkhead {
        Bulkhead::new(self.max).max_wait(self.wait)
    }

    /// A family's members' settings, `config`, with their fixed limit
    /// `limit` and its wait, which a patch can change like the rest.
    pub(crate) const fn declared_in(
        limit: Option<Limit>,
        config: crate::core::config::Config,
    ) -> crate::core::config::Config {
        match limit {
            Some(Limit { max, wait }) => config.with_bulkhead(max).with_max_wait(wait),
            None => config,
        }
    }
}

/// A place in a [`Bulkhead`], held while the call runs; dropping it gives the
/// place back.
#[derive(Debug)]
#[must_use = "the place is given back as soon as the permit is dropped"]
pub struct BulkheadPermit<'a> {
    bulkhead: &'a Bulkhead,
}

/// The constructors are `const` (so that `#[circuit_breaker]` can put a
/// bulkhead in a `static`), except under the loom model checker, whose
/// atomics have no const constructor.
macro_rules! constructors {
    ($($const:tt)?) => {
        /// A bulkhead admitting at most `max` calls at once (`max = 0` admits
        /// none).
        #[must_use]
        pub $($const)? fn new(max: u32) -> Self {
            // No stripes yet: they are made once callers race on the
            // central count (under loom, at once: see `loom_stripes`).
            #[cfg(not(loom))]
            let stripes = OnceLock::new();
            #[cfg(loom)]
            let stripes = stripes::loom_stripes(max);
            Self {
                central: AtomicU32::new(max),
                debt: AtomicU32::new(0),
                max: AtomicU32::new(max),
                stripes,
                wait: AtomicU64::new(0),
                lined: false,
                queue: queue::Queue::new(),
            }
        }

        /// Lets a call that finds every place taken wait for one, `wait` at
        /// most (a zero `wait` waits not at all), in turn: places go to
        /// waiting calls in the order they came (a call arriving at the very
        /// moment a place is given back may take it first). A call still waiting when its time is up is
        /// refused as at once ([`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit)).
        /// [`enter`](Self::enter) waits on the thread;
        /// `enter_async` as a future. A bulkhead without it
        /// costs what it did. The wait can change later
        /// ([`set_max_wait`](Self::set_max_wait)) on a bulkhead made with one.
        #[must_use]
        pub $($const)? fn max_wait(mut self, wait: Duration) -> Self {
            self.wait = AtomicU64::new(crate::core::config::nanos(wait));
            self.lined = !wait.is_zero();
            self
        }
    };
}

#[cfg(not(loom))]
impl Bulkhead {
    constructors!(const);
}

#[cfg(loom)]
impl Bulkhead {
    constructors!();
}

impl Bulkhead {
    /// A permit if fewer than `max` calls are running, `None` at once
    /// otherwise.
    #[inline]
    pub fn try_enter(&self) -> Option<BulkheadPermit<'_>> {
        self.take_place().then(|| BulkheadPermit { bulkhead: self })
    }

    /// Takes a free place, if there is one: from a counter, retired at
    /// once while a lowered limit is owed places (`resize` module).
    #[inline]
    fn take_place(&self) -> bool {
        self.take_free() && (self.debt.load(Ordering::Relaxed) == 0 || self.retire_taken())
    }

    /// A place, waiting on this thread for one up to `max_wait` (in turn,
    /// see [`max_wait`](Self::max_wait)); `None` once that time is up.
    /// Without `max_wait`, [`try_enter`](Self::try_enter).
    #[cfg(test)]
    pub(crate) fn enter_waiting(&self) -> Option<BulkheadPermit<'_>> {
        self.enter_waiting_with(None)
    }

    /// [`enter_waiting`](Self::enter_waiting) for a call the breaker
    /// admitted with `permit`: while it waits in line the call is not
    /// running, and its time starts once the wait is over (see
    /// `Permit::wait_for_place`).
    pub(crate) fn enter_waiting_with(
        &self,
        permit: Option<&mut Permit<'_>>,
    ) -> Option<BulkheadPermit<'_>> {
        let deadline = Instant::now().checked_add(self.wait());
        let ticket = match self.start_wait() {
            Ok(at_once) => return at_once,
            Err(ticket) => ticket,
        };
        let _waiting = permit.map(Permit::wait_for_place);
        ticket.wake_thread();
        while !ticket.granted() {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            match left {
                Some(Duration::ZERO) => break,
                // The model checker has no time: there a call waits until
                // it is handed a place (a hand-over lost would be a
                // deadlock, which it reports).
                #[cfg(loom)]
                Some(_) | None => loom::thread::park(),
                #[cfg(not(loom))]
                Some(left) => std::thread::park_timeout(left),
                #[cfg(not(loom))]
                None => std::thread::park(),
            }
        }
        ticket.into_place()
    }

    /// What a call asking for a place gets before it waits: a place at
    /// once, or without `max_wait` a refusal (`Ok`); else its ticket in the
    /// line (`Err`).
    fn start_wait(&self) -> Result<Option<BulkheadPermit<'_>>, Ticket<'_>> {
        let Some(queue) = self.queue_of_wait() else {
            return Ok(self.try_enter());
        };
        // A free place is taken at once. (While calls wait, places are
        // handed to them as they come back: a free one is only ever seen
        // at the moment one is given back, and joining the line would take
        // it all the same, see `Ticket::join`.)
        if self.take_place() {
            return Ok(Some(BulkheadPermit { bulkhead: self }));
        }
        match Ticket::join(self, queue) {
            Joined::Place => Ok(Some(BulkheadPermit { bulkhead: self })),
            Joined::Waiting(ticket) => Err(ticket),
        }
    }

    /// The line of waiting calls; `None` without `max_wait`.
    #[inline]
    fn queue_of_wait(&self) -> Option<&queue::Queue> {
        self.lined.then_some(&self.queue)
    }

    /// How long a call starting to wait now may wait for a place (zero:
    /// not at all).
    pub(crate) fn wait(&self) -> Duration {
        Duration::from_nanos(self.wait.load(Ordering::Relaxed))
    }

    /// Gives a place back, to the first waiting call if one waits.
    #[inline]
    fn give_back(&self) {
        self.put_place();
        if self.lined {
            self.queue.hand_over(self);
        }
    }

    /// A place for a call that `breaker` admitted with `permit` (waiting
    /// for one on this thread up to [`max_wait`](Self::max_wait), if set),
    /// or else a [`Rejected`] at the concurrency limit (reason
    /// [`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit), in the
    /// state the permit was admitted in) when every place is taken. Take the
    /// permit first: an open breaker then refuses without touching the
    /// bulkhead. A refusal gives the permit's admission back (a half-open
    /// trial returns its slot) and counts the call as rejected in the
    /// breaker's totals; the permit then records nothing more.
    ///
    /// # Errors
    ///
    /// [`Rejected`] when `max` calls are running.
    #[inline]
    pub fn enter(
        &self,
        breaker: &Breaker,
        permit: &mut Permit<'_>,
    ) -> Result<BulkheadPermit<'_>, Rejected> {
        match self.enter_waiting_with(Some(permit)) {
            Some(slot) => Ok(slot),
            None => Err(concurrency_limit(breaker, permit)),
        }
    }

    /// [`enter`](Self::enter) for async code: waits for a place up to
    /// [`max_wait`](Self::max_wait) as a future, on tokio's clock (a wait
    /// needs a tokio runtime with its time driver, as `tokio::time::timeout`
    /// does; a place found at once needs none). Dropping the future leaves
    /// the line; a place handed to it meanwhile goes to the next call in
    /// line.
    ///
    /// # Errors
    ///
    /// [`Rejected`] when `max` calls are still running once `max_wait` has
    /// passed.
    #[cfg(feature = "reqwest-middleware")]
    pub(crate) async fn enter_async(
        &self,
        breaker: &Breaker,
        permit: &mut Permit<'_>,
    ) -> Result<BulkheadPermit<'_>, Rejected> {
        match self.enter_waiting_async_with(Some(&mut *permit)).await {
            Some(slot) => Ok(slot),
            None => Err(concurrency_limit(breaker, permit)),
        }
    }

    /// A place, waiting for one up to `max_wait` as a future; `None` once
    /// that time is up. Without `max_wait`, [`try_enter`](Self::try_enter).
    #[cfg(test)]
    #[cfg(feature = "tokio")]
    pub(crate) async fn enter_waiting_async(&self) -> Option<BulkheadPermit<'_>> {
        self.enter_waiting_async_with(None).await
    }

    /// [`enter_waiting_async`](Self::enter_waiting_async) for a call the
    /// breaker admitted with `permit`, as
    /// [`enter_waiting_with`](Self::enter_waiting_with).
    #[cfg(feature = "tokio")]
    pub(crate) async fn enter_waiting_async_with(
        &self,
        permit: Option<&mut Permit<'_>>,
    ) -> Option<BulkheadPermit<'_>> {
        let wait = self.wait();
        let ticket = match self.start_wait() {
            Ok(at_once) => return at_once,
            Err(ticket) => ticket,
        };
        // Dropped with the future too: a call given up on while it waits
        // is over waiting all the same.
        let _waiting = permit.map(Permit::wait_for_place);
        let granted = std::future::poll_fn(|cx| {
            if ticket.granted() {
                return std::task::Poll::Ready(());
            }
            ticket.wake_task(cx.waker());
            if ticket.granted() {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        });
        // Dropped meanwhile, the ticket gives a place handed to it back.
        let _ = ::tokio::time::timeout(wait, granted).await;
        ticket.into_place()
    }

    /// Calls running now: `max` and the places owed by a lowered limit,
    /// less the free places. While calls enter and leave on other threads
    /// the places are counted one counter at a time, so the figure is then
    /// approximate.
    #[must_use]
    pub fn running(&self) -> u32 {
        let places = self
            .max
            .load(Ordering::Relaxed)
            .saturating_add(self.debt.load(Ordering::Relaxed));
        places.saturating_sub(self.free())
    }

    /// The most calls admitted at once (the limit in force: a lowered one
    /// while calls admitted under the earlier one may still run).
    #[must_use]
    pub fn max(&self) -> u32 {
        self.max.load(Ordering::Relaxed)
    }
}

#[cold]
pub(crate) fn concurrency_limit(breaker: &Breaker, permit: &mut Permit<'_>) -> Rejected {
    permit.refused();
    let state = if permit.is_trial() {
        State::HalfOpen
    } else {
        State::Closed
    };
    Rejected::concurrency_limit(breaker.carried_name(), state)
}

#[cfg(any(
    all(feature = "tower", feature = "keyed"),
    feature = "reqwest-middleware"
))]
impl BulkheadPermit<'_> {
    /// Keeps the place taken after the permit is gone: for an owner that
    /// cannot borrow the bulkhead, which gives it back with
    /// [`Bulkhead::leave`].
    pub(crate) fn keep(self) {
        std::mem::forget(self);
    }
}

#[cfg(any(
    all(feature = "tower", feature = "keyed"),
    feature = "reqwest-middleware"
))]
impl Bulkhead {
    /// Gives back a place kept by [`BulkheadPermit::keep`].
    pub(crate) fn leave(&self) {
        self.give_back();
    }
}

impl Drop for BulkheadPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.bulkhead.give_back();
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use crate::core::breaker::{Mode, Outcome};
    use crate::core::clock::ManualClock;

    #[test]
    fn a_full_bulkhead_refuses_and_a_dropped_slot_makes_room() {
        let bulkhead = Bulkhead::new(1);
        let slot = bulkhead.try_enter().unwrap();
        assert_eq!(bulkhead.running(), 1);
        assert!(bulkhead.try_enter().is_none());
        assert_eq!(bulkhead.running(), 1, "a refusal leaves no trace");
        drop(slot);
        assert_eq!(bulkhead.running(), 0);
        assert!(Bulkhead::new(0).try_enter().is_none());
    }

    /// A bulkhead of `max` with its stripes made, as after a race.
    fn striped(max: u32) -> Bulkhead {
        let bulkhead = Bulkhead::new(max);
        // A call that lost its race finds a place (from `central`) and
        // gives it back to this thread's stripe.
        assert!(bulkhead.contended(false));
        assert!(bulkhead.stripes.get().is_some());
        bulkhead.give_back();
        bulkhead
    }

    /// Takes places until refused; how many.
    fn take_all(bulkhead: &Bulkhead) -> Vec<BulkheadPermit<'_>> {
        std::iter::from_fn(|| bulkhead.try_enter()).collect()
    }

    #[test]
    fn places_given_back_on_one_thread_are_found_by_another() {
        let bulkhead = striped(5);
        // Taken from `central`, given back to this thread's stripe.
        assert_eq!(take_all(&bulkhead).len(), 5);
        assert_eq!(bulkhead.running(), 0);
        assert_eq!(bulkhead.central.load(Ordering::Relaxed), 0);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                // Every place is on the first thread's stripe: all five are
                // found, and a sixth call is refused.
                let slots = take_all(&bulkhead);
                assert_eq!(slots.len(), 5);
                assert_eq!(bulkhead.running(), 5);
            });
        });
        // Now on the second thread's stripe; found again from here.
        assert_eq!(take_all(&bulkhead).len(), 5);
        assert_eq!(bulkhead.running(), 0);
    }

    /// More threads alive at once than there are thread slots: the later
    /// ones share slots whose index is past the last stripe, and still map
    /// onto a stripe.
    #[test]
    fn threads_beyond_the_stripes_share_them() {
        let bulkhead = striped(1024);
        let threads = crate::core::totals::thread_slots() + 4;
        let start = std::sync::Barrier::new(threads);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    start.wait();
                    // Every thread reaches the second wait, so that a panic
                    // here fails the test instead of stranding the others.
                    let entered = std::panic::catch_unwind(|| bulkhead.try_enter());
                    start.wait();
                    let slot = entered.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    drop(slot.expect("room for all"));
                });
            }
        });
        assert_eq!(bulkhead.running(), 0);
        assert_eq!(take_all(&bulkhead).len(), 1024);
    }

    #[test]
    fn a_bulkhead_of_one_never_stripes() {
        let bulkhead = Bulkhead::new(1);
        assert!(!bulkhead.contended(false));
        assert!(bulkhead.stripes.get().is_none());
        assert!(bulkhead.contended(true), "a place got is kept");
    }

    /// Threads racing for a bulkhead: it gets stripes, never admits more than
    /// `max` at once, and every place comes back.
    #[test]
    fn racing_threads_never_exceed_the_limit_and_give_every_place_back() {
        use std::sync::atomic::AtomicU32 as Count;
        const MAX: u32 = 3;
        let bulkhead = Bulkhead::new(MAX);
        let inside = Count::new(0);
        let (most, admitted) = (Count::new(0), Count::new(0));
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    start.wait();
                    // Until the bulkhead has stripes and for a while after
                    // (bounded: a race needs two threads running at once).
                    let mut striped_for = 0;
                    for _ in 0..50_000_000 {
                        if bulkhead.stripes.get().is_some() {
                            striped_for += 1;
                            if striped_for > 50_000 {
                                break;
                            }
                        }
                        if let Some(slot) = bulkhead.try_enter() {
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            admitted.fetch_add(1, Ordering::Relaxed);
                            inside.fetch_sub(1, Ordering::SeqCst);
                            drop(slot);
                        }
                    }
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= MAX);
        assert!(admitted.load(Ordering::Relaxed) > 0);
        assert!(
            bulkhead.stripes.get().is_some(),
            "four threads sharing the bulkhead race for it"
        );
        assert_eq!(bulkhead.running(), 0);
        assert_eq!(take_all(&bulkhead).len(), MAX as usize);
    }

    /// Waits (yielding) until `done`, for at most 10 s.
    fn eventually(done: impl Fn() -> bool) {
        let give_up = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < give_up, "timed out");
            std::thread::yield_now();
        }
    }

    fn waiting(bulkhead: &Bulkhead) -> u32 {
        bulkhead.queue.len()
    }

    #[test]
    fn waiting_calls_are_handed_places_in_the_order_they_came() {
        let bulkhead = Bulkhead::new(1).max_wait(Duration::from_secs(60));
        let held = bulkhead.enter_waiting().expect("a free place");
        let order = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            let (bulkhead, order) = (&bulkhead, &order);
            for id in 0..3 {
                scope.spawn(move || {
                    let place = bulkhead.enter_waiting().expect("served in time");
                    order.lock().unwrap().push(id);
                    drop(place);
                });
                // The next one comes once this one waits.
                eventually(|| waiting(bulkhead) == id + 1);
            }
            // While calls wait, a new call waits behind them too: a free
            // place is not taken out of turn.
            assert_eq!(bulkhead.running(), 1);
            drop(held);
        });
        assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
        assert_eq!((bulkhead.running(), waiting(&bulkhead)), (0, 0));
    }

    /// As a future, on tokio's paused clock: a call waits its `max_wait`
    /// for a place given back within it, and is refused after it otherwise.
    #[cfg(feature = "tokio")]
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn an_async_call_waits_its_max_wait_for_a_place() {
        let bulkhead: &'static Bulkhead = Box::leak(Box::new(
            Bulkhead::new(1).max_wait(Duration::from_millis(100)),
        ));
        assert_eq!(bulkhead.wait(), Duration::from_millis(100));
        let held = bulkhead.try_enter().unwrap();
        let waiter = tokio::spawn(async move {
            let asked = tokio::time::Instant::now();
            let place = bulkhead.enter_waiting_async().await;
            (place.is_some(), asked.elapsed())
        });
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(waiting(bulkhead), 1);
        drop(held);
        let (served, after) = waiter.await.unwrap();
        assert!(served, "handed the place within max_wait");
        assert_eq!(after, Duration::from_millis(60));
        assert_eq!(bulkhead.running(), 0, "the served call gave its place back");
        // Held past `max_wait`: refused when it is up, the line left.
        let held = bulkhead.try_enter().unwrap();
        assert!(bulkhead.try_enter().is_none(), "one place");
        let asked = tokio::time::Instant::now();
        assert!(bulkhead.enter_waiting_async().await.is_none());
        assert_eq!(asked.elapsed(), Duration::from_millis(100));
        assert_eq!(waiting(bulkhead), 0);
        // The refusal gave back nothing: the one place is still held.
        assert!(bulkhead.try_enter().is_none(), "still one place, held");
        // A waiting future dropped by its caller leaves the line: the
        // place given back afterwards is free, not handed to it.
        let mut dropped = Box::pin(bulkhead.enter_waiting_async());
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(dropped.as_mut().poll(&mut cx).is_pending());
        assert_eq!(waiting(bulkhead), 1);
        drop(dropped);
        assert_eq!(waiting(bulkhead), 0);
        drop(held);
        assert_eq!(bulkhead.running(), 0);
        // And one dropped after a place was handed to it gives it back.
        let held = bulkhead.try_enter().unwrap();
        let mut handed = Box::pin(bulkhead.enter_waiting_async());
        assert!(handed.as_mut().poll(&mut cx).is_pending());
        drop(held);
        assert_eq!(bulkhead.running(), 1, "handed to the waiting future");
        drop(handed);
        assert_eq!(bulkhead.running(), 0, "given back by the dropped future");
        // Two waiting, the second dropped: it leaves the line and gives back
        // nothing, so the first still waits for the held place.
        let held = bulkhead.try_enter().unwrap();
        let mut first = Box::pin(bulkhead.enter_waiting_async());
        let mut second = Box::pin(bulkhead.enter_waiting_async());
        assert!(first.as_mut().poll(&mut cx).is_pending());
        assert!(second.as_mut().poll(&mut cx).is_pending());
        assert_eq!(waiting(bulkhead), 2);
        drop(second);
        assert_eq!(waiting(bulkhead), 1);
        assert!(
            first.as_mut().poll(&mut cx).is_pending(),
            "the place is held"
        );
        drop(held);
        assert!(matches!(
            first.as_mut().poll(&mut cx),
            std::task::Poll::Ready(Some(_))
        ));
        assert_eq!(bulkhead.running(), 0);
    }

    /// A waiting future polled again with another waker (moved to
    /// another task) is woken through the latest one when a place is
    /// handed to it, not through the one it was first polled with.
    #[cfg(feature = "tokio")]
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_waiting_future_is_woken_through_its_latest_waker() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicUsize;
        struct Count(AtomicUsize);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let (first, latest) = (
            Arc::new(Count(AtomicUsize::new(0))),
            Arc::new(Count(AtomicUsize::new(0))),
        );
        let bulkhead = Bulkhead::new(1).max_wait(Duration::from_secs(60));
        let held = bulkhead.try_enter().unwrap();
        let mut waiting = Box::pin(bulkhead.enter_waiting_async());
        for count in [&first, &latest] {
            let waker = std::task::Waker::from(Arc::clone(count));
            let mut cx = std::task::Context::from_waker(&waker);
            assert!(waiting.as_mut().poll(&mut cx).is_pending());
        }
        drop(held);
        let woken = |count: &Count| count.0.load(Ordering::SeqCst);
        assert_eq!((woken(&first), woken(&latest)), (0, 1));
        assert!(waiting.await.is_some(), "handed the place");
    }

    #[test]
    fn a_call_out_of_time_leaves_the_line_and_loses_no_place() {
        let bulkhead = Bulkhead::new(1).max_wait(Duration::from_millis(20));
        let held = bulkhead.try_enter().unwrap();
        let asked = Instant::now();
        assert!(bulkhead.enter_waiting().is_none());
        assert!(asked.elapsed() >= Duration::from_millis(20));
        assert_eq!(waiting(&bulkhead), 0);
        // The refusal gave back nothing: the one place is still held.
        assert!(bulkhead.try_enter().is_none(), "still one place, held");
        drop(held);
        assert_eq!(bulkhead.running(), 0);
        assert_eq!(take_all(&bulkhead).len(), 1, "exactly one place");
        // Without `max_wait`, nothing waits.
        let at_once = Bulkhead::new(1);
        let _held = at_once.try_enter().unwrap();
        assert!(at_once.enter_waiting().is_none());
        assert_eq!(at_once.queue.len(), 0);
    }

    /// Threads taking and giving back places while others wait: every call
    /// is served (none waits out its minute: no hand-over is lost), never
    /// more than `MAX` at once, and every place comes back.
    #[test]
    fn racing_waiters_are_all_served_within_the_limit() {
        use std::sync::atomic::AtomicU32 as Count;
        const MAX: u32 = 2;
        let bulkhead = Bulkhead::new(MAX).max_wait(Duration::from_secs(60));
        let (inside, most) = (Count::new(0), Count::new(0));
        std::thread::scope(|scope| {
            for _ in 0..6 {
                scope.spawn(|| {
                    for _ in 0..2_000 {
                        let place = bulkhead.enter_waiting().expect("served");
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(place);
                    }
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= MAX);
        assert_eq!((bulkhead.running(), waiting(&bulkhead)), (0, 0));
        assert_eq!(take_all(&bulkhead).len(), MAX as usize);
    }

    /// A lowered limit: the calls running finish, the places they give
    /// back beyond the new limit are retired, and a call is admitted again
    /// only once fewer than the new limit run; then exactly that many
    /// places are free.
    #[test]
    fn a_lowered_limit_lets_running_calls_finish_and_retires_their_places() {
        for bulkhead in [Bulkhead::new(4), striped(4)] {
            let mut held = take_all(&bulkhead);
            assert_eq!(held.len(), 4);
            bulkhead.resize(2);
            assert_eq!((bulkhead.max(), bulkhead.running()), (2, 4));
            assert_eq!(bulkhead.owed(), 2, "two places held beyond the limit");
            assert!(bulkhead.try_enter().is_none());
            held.pop();
            assert!(bulkhead.try_enter().is_none(), "three run, over two");
            held.pop();
            assert!(bulkhead.try_enter().is_none(), "two run: the limit");
            assert_eq!(bulkhead.owed(), 0, "both places given back were retired");
            held.pop();
            let one = bulkhead.try_enter().expect("one runs, under two");
            assert!(bulkhead.try_enter().is_none());
            drop((one, held));
            assert_eq!(bulkhead.running(), 0);
            assert_eq!(take_all(&bulkhead).len(), 2, "exactly the new limit");
            // Free places are retired at once.
            bulkhead.resize(1);
            assert_eq!((bulkhead.owed(), take_all(&bulkhead).len()), (0, 1));
        }
    }

    /// A raised limit admits calls at once, and cancels places still owed
    /// by an earlier lowering before making new ones.
    #[test]
    fn a_raised_limit_admits_at_once_and_cancels_debt_first() {
        let bulkhead = Bulkhead::new(3);
        let held = take_all(&bulkhead);
        bulkhead.resize(1);
        assert_eq!(bulkhead.owed(), 2);
        bulkhead.resize(2);
        assert_eq!(bulkhead.owed(), 1, "one place owed no more");
        assert!(bulkhead.try_enter().is_none(), "three still run, over two");
        bulkhead.resize(5);
        assert_eq!(bulkhead.owed(), 0);
        let more = take_all(&bulkhead);
        assert_eq!(more.len(), 2, "five less the three running");
        drop((held, more));
        assert_eq!(bulkhead.running(), 0);
        assert_eq!(take_all(&bulkhead).len(), 5);
    }

    /// Calls waiting under `max_wait` when the limit is raised are handed
    /// the new places at once, while the call holding the old one still
    /// runs.
    #[test]
    fn a_raised_limit_wakes_the_calls_waiting() {
        let bulkhead = Bulkhead::new(1).max_wait(Duration::from_secs(60));
        let held = bulkhead.try_enter().unwrap();
        let served = std::sync::atomic::AtomicU32::new(0);
        let release = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            for id in 0..2 {
                let (bulkhead, served, release) = (&bulkhead, &served, &release);
                scope.spawn(move || {
                    let place = bulkhead.enter_waiting().expect("served in time");
                    served.fetch_add(1, Ordering::SeqCst);
                    eventually(|| release.load(Ordering::SeqCst));
                    drop(place);
                });
                eventually(|| waiting(bulkhead) == id + 1);
            }
            bulkhead.resize(3);
            eventually(|| served.load(Ordering::SeqCst) == 2);
            assert_eq!(bulkhead.running(), 3, "the held place and two new ones");
            release.store(true, Ordering::SeqCst);
        });
        drop(held);
        assert_eq!((bulkhead.running(), waiting(&bulkhead)), (0, 0));
        assert_eq!(take_all(&bulkhead).len(), 3);
    }

    /// Threads taking and giving back places (some waiting for one) while
    /// the limit moves up and down under them: never more calls at once
    /// than the highest limit, every waiting call served, and once they are
    /// done exactly the last limit's places are free, none owed.
    #[test]
    fn resizes_racing_calls_keep_the_bound_and_lose_no_place() {
        use std::sync::atomic::{AtomicBool, AtomicU32 as Count};
        const LIMITS: [u32; 8] = [6, 2, 5, 1, 4, 3, 1, 3];
        for wait in [Duration::ZERO, Duration::from_secs(60)] {
            let bulkhead = Bulkhead::new(3).max_wait(wait);
            let (inside, most, entered) = (Count::new(0), Count::new(0), Count::new(0));
            let done = AtomicBool::new(false);
            std::thread::scope(|scope| {
                for _ in 0..4 {
                    scope.spawn(|| {
                        while !done.load(Ordering::SeqCst) {
                            let Some(place) = bulkhead.enter_waiting() else {
                                continue;
                            };
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            entered.fetch_add(1, Ordering::Relaxed);
                            std::thread::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                            drop(place);
                        }
                    });
                }
                // 200 rounds of resizes at least, and on until the calls
                // got in 200 times between them: a loaded machine may run
                // every resize before a worker starts.
                let mut rounds = 0;
                while rounds < 200 || entered.load(Ordering::Relaxed) < 200 {
                    for limit in LIMITS {
                        bulkhead.resize(limit);
                        std::thread::yield_now();
                    }
                    rounds += 1;
                }
                done.store(true, Ordering::SeqCst);
            });
            assert!(most.load(Ordering::SeqCst) <= 6, "{wait:?}");
            assert!(most.load(Ordering::SeqCst) >= 1);
            assert_eq!((bulkhead.running(), waiting(&bulkhead)), (0, 0));
            assert_eq!(take_all(&bulkhead).len(), 3, "{wait:?}");
            assert_eq!(bulkhead.owed(), 0);
        }
    }

    /// A changed `max_wait` applies to the calls that start waiting after
    /// it: one already waiting keeps its time.
    #[cfg(feature = "tokio")]
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_changed_max_wait_applies_to_calls_that_start_waiting_after_it() {
        let bulkhead: &'static Bulkhead = Box::leak(Box::new(
            Bulkhead::new(1).max_wait(Duration::from_millis(100)),
        ));
        let _held = bulkhead.try_enter().unwrap();
        let waited = |bulkhead: &'static Bulkhead| {
            tokio::spawn(async move {
                let asked = tokio::time::Instant::now();
                assert!(bulkhead.enter_waiting_async().await.is_none());
                asked.elapsed()
            })
        };
        let before = waited(bulkhead);
        tokio::task::yield_now().await;
        assert_eq!(waiting(bulkhead), 1);
        bulkhead.set_max_wait(Duration::from_millis(300));
        assert_eq!(bulkhead.wait(), Duration::from_millis(300));
        let after = waited(bulkhead);
        assert_eq!(before.await.unwrap(), Duration::from_millis(100));
        assert_eq!(after.await.unwrap(), Duration::from_millis(300));
        // Without a line from the start, a wait set later waits not at all.
        let at_once = Bulkhead::new(1);
        at_once.set_max_wait(Duration::from_secs(1));
        let _held = at_once.try_enter().unwrap();
        assert!(at_once.enter_waiting().is_none());
        assert_eq!(at_once.queue.len(), 0);
    }

    #[test]
    fn a_panic_gives_the_slot_back() {
        let bulkhead = Bulkhead::new(1);
        let caught = std::panic::catch_unwind(|| {
            let _slot = bulkhead.try_enter().unwrap();
            panic!("the body panics");
        });
        assert!(caught.is_err());
        assert_eq!(bulkhead.running(), 0);
    }

    #[cfg(any(
        all(feature = "tower", feature = "keyed"),
        feature = "reqwest-middleware"
    ))]
    #[test]
    fn a_kept_place_stays_taken_until_it_is_left() {
        let bulkhead = Bulkhead::new(1);
        bulkhead.try_enter().unwrap().keep();
        assert_eq!(bulkhead.running(), 1);
        assert!(
            bulkhead.try_enter().is_none(),
            "the kept place is still taken"
        );
        bulkhead.leave();
        assert_eq!(bulkhead.running(), 0);
        assert!(bulkhead.try_enter().is_some());
    }

    /// A call that waited in line for a place counts as started again once
    /// it starts (`Breaker::readmit`): graded shedding counts it as sent
    /// and not accepted while it runs past the patience (the longest
    /// success, 10 ms). 64 calls wait for places held by calls that then
    /// end neutral, start, and hang; sixteen successes a period follow.
    /// Once the patience has passed, the window holds the hanging calls
    /// (less the calls ended since its latest mark old enough, as the rule
    /// estimates them) sent and not accepted, and some calls are shed;
    /// without the waited calls counted, nothing would be.
    #[test]
    fn calls_that_waited_for_a_place_count_as_running_once_they_start() {
        use std::sync::atomic::{AtomicBool, AtomicUsize};

        /// Lets the hanging calls end when dropped, a failed assertion
        /// included.
        struct Release<'a>(&'a AtomicBool);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }

        const WAITERS: u32 = 64;
        let clock = ManualClock::new();
        let breaker = Breaker::builder()
            .name("bulkhead.readmitted")
            .shed(2.0)
            .clock(clock.clone())
            .build()
            .unwrap();
        let bulkhead = Bulkhead::new(WAITERS).max_wait(Duration::from_secs(60));
        let mut held: Vec<_> = (0..WAITERS).map(|_| breaker.acquire().unwrap()).collect();
        let places: Vec<_> = held
            .iter_mut()
            .map(|permit| bulkhead.enter(&breaker, permit).unwrap())
            .collect();
        let started = AtomicUsize::new(0);
        let released = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let _release = Release(&released);
            for _ in 0..WAITERS {
                scope.spawn(|| {
                    let mut permit = breaker.acquire().unwrap();
                    let place = bulkhead.enter(&breaker, &mut permit).unwrap();
                    started.fetch_add(1, Ordering::Relaxed);
                    while !released.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    drop(place);
                    permit.record(Outcome::Success);
                });
            }
            eventually(|| waiting(&bulkhead) == WAITERS);
            drop(places);
            for permit in held.drain(..) {
                permit.record(Outcome::Neutral);
            }
            eventually(|| started.load(Ordering::Relaxed) == WAITERS as usize);
            let mut shed = 0;
            for _ in 0..4 {
                clock.advance(Duration::from_millis(500));
                for _ in 0..16 {
                    match breaker.acquire() {
                        Ok(permit) => {
                            clock.advance(Duration::from_millis(10));
                            permit.record(Outcome::Success);
                        }
                        Err(_) => shed += 1,
                    }
                }
            }
            assert!(shed > 0, "{:?}", breaker.snapshot());
        });
    }

    /// A breaker with graded shedding (`k` = 1, no `min_calls` to reach)
    /// that has learnt a patience of 10 ms and opened on three failures,
    /// at the end of its recovery: its next call is a half-open trial.
    fn tripped_with_a_patience(clock: &ManualClock) -> Breaker {
        let breaker = Breaker::builder()
            .name("bulkhead.trial")
            .shed(1.0)
            .min_calls(1)
            .threshold(3)
            .recovery(Duration::from_secs(1))
            .clock(clock.clone())
            .build()
            .unwrap();
        // The sixteenth call marks the period and is timed: 10 ms.
        for _ in 0..16 {
            let permit = breaker.acquire().unwrap();
            clock.advance(Duration::from_millis(10));
            permit.record(Outcome::Success);
        }
        // Admitted before the first fails: then the chance is above 0.
        let failing: Vec<_> = (0..3).map(|_| breaker.acquire().unwrap()).collect();
        for permit in failing {
            permit.record(Outcome::Failure);
        }
        assert_eq!(breaker.state(), State::Open);
        clock.advance(Duration::from_secs(1));
        breaker
    }

    /// After a reset (the window begun afresh): a call that hangs, 16
    /// successes, a period later a failure (which marks the period), and
    /// a period after that a second failure, of a call admitted before
    /// that mark. The window then holds 16 successes and 2 failures, and
    /// the hanging call still running past the patience: the chance,
    /// 1 − 16 / 19, is what the breaker sheds now.
    fn chance_with_one_call_hanging(breaker: &Breaker, clock: &ManualClock) -> f64 {
        let hanging = breaker.acquire().unwrap();
        let failing = breaker.acquire().unwrap();
        for _ in 0..16 {
            breaker.acquire().unwrap().record(Outcome::Success);
        }
        clock.advance(Duration::from_millis(500));
        breaker.acquire().unwrap().record(Outcome::Failure);
        clock.advance(Duration::from_millis(600));
        failing.record(Outcome::Failure);
        let shedding = breaker.snapshot().shedding;
        hanging.record(Outcome::Success);
        shedding
    }

    /// The chance `chance_with_one_call_hanging` expects, as the snapshot
    /// gives it (to nine decimals).
    const ONE_HANGING: f64 = 3.0 / 19.0;

    /// A half-open trial refused by a full bulkhead after a reset closed
    /// the breaker is not taken out of the calls graded shedding counts as
    /// started: shedding never counted it in (`Breaker::withdraw`). Taken
    /// out, it would hide the hanging call.
    #[test]
    fn a_trial_refused_after_a_reset_is_not_withdrawn_from_the_window() {
        let clock = ManualClock::new();
        let breaker = tripped_with_a_patience(&clock);
        let mut trial = breaker.acquire().unwrap();
        assert_eq!(breaker.state(), State::HalfOpen);
        breaker.set_mode(Mode::Normal);
        assert!(Bulkhead::new(0).enter(&breaker, &mut trial).is_err());
        let chance = chance_with_one_call_hanging(&breaker, &clock);
        assert!((chance - ONE_HANGING).abs() < 1e-6, "{chance}");
    }

    /// A half-open trial that waited in line for a place, and got it after
    /// a reset closed the breaker, is not counted as started when it
    /// starts: shedding never counted it in (`Breaker::readmit`). Counted,
    /// it would be a second call running past the patience (and never
    /// seen to end: a reset leaves a call in flight uncounted).
    #[test]
    fn a_trial_that_waited_across_a_reset_is_not_readmitted_to_the_window() {
        use std::sync::atomic::AtomicBool;

        let clock = ManualClock::new();
        let breaker = tripped_with_a_patience(&clock);
        let bulkhead = Bulkhead::new(1).max_wait(Duration::from_secs(60));
        let held = bulkhead.try_enter().unwrap();
        let (started, done) = (AtomicBool::new(false), AtomicBool::new(false));
        std::thread::scope(|scope| {
            let trial = scope.spawn(|| {
                let mut trial = breaker.acquire().unwrap();
                assert_eq!(breaker.state(), State::HalfOpen);
                let place = bulkhead.enter(&breaker, &mut trial).unwrap();
                started.store(true, Ordering::Relaxed);
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                drop(place);
                trial.record(Outcome::Success);
            });
            eventually(|| waiting(&bulkhead) == 1 || trial.is_finished());
            breaker.set_mode(Mode::Normal);
            drop(held);
            eventually(|| started.load(Ordering::Relaxed) || trial.is_finished());
            let chance = chance_with_one_call_hanging(&breaker, &clock);
            done.store(true, Ordering::Relaxed);
            assert!((chance - ONE_HANGING).abs() < 1e-6, "{chance}");
        });
    }
}
