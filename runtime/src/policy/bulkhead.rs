//! A bulkhead: at most `max` calls run at once; the next one is refused at
//! once instead of queueing.
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

use std::sync::OnceLock;

use crate::core::breaker::{Breaker, Permit};
use crate::core::error::{Rejected, State};
use crate::sync::{AtomicU32, Ordering};

/// At most `max` calls at once. `#[circuit_breaker(max_concurrent = N)]`
/// declares one per function, in front of the breaker; on its own:
///
/// ```
/// use failfast_runtime::Bulkhead;
///
/// static UPLOADS: Bulkhead = Bulkhead::new(2);
///
/// let first = UPLOADS.try_enter().expect("room for two");
/// let second = UPLOADS.try_enter().expect("room for two");
/// assert!(UPLOADS.try_enter().is_none(), "the third call is refused at once");
/// drop(first);
/// assert!(UPLOADS.try_enter().is_some(), "a place was given back");
/// # drop(second);
/// ```
///
/// A refusal is not a failure of the dependency: behind `#[circuit_breaker]`
/// it reaches the caller (or the `fallback`) as a
/// [`Rejected`](crate::Rejected) whose [`reason`](crate::Rejected::reason) is
/// [`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit), and it moves
/// no counter of the breaker.
///
/// Threads that share a busy bulkhead keep their places on cache lines of
/// their own (see the module docs), so it costs two threads about what it
/// costs one.
#[derive(Debug)]
pub struct Bulkhead {
    /// Free places not on a stripe.
    central: AtomicU32,
    max: u32,
    /// Free places by thread slot, made once callers race on `central`.
    stripes: OnceLock<Box<[Stripe]>>,
}

/// One stripe's free places, on a line of its own (two lines: adjacent-line
/// prefetchers pair them, as for the breaker's hot word).
#[derive(Debug)]
#[repr(align(128))]
struct Stripe(AtomicU32);

/// A place in a [`Bulkhead`], held while the call runs; dropping it gives the
/// place back.
#[derive(Debug)]
#[must_use = "the place is given back as soon as the permit is dropped"]
pub struct BulkheadPermit<'a> {
    bulkhead: &'a Bulkhead,
}

// `new` is `const` so that `#[circuit_breaker]` can put a bulkhead in a
// `static`, except under the loom model checker, whose atomics have no const
// constructor.
#[cfg(not(loom))]
impl Bulkhead {
    /// A bulkhead admitting at most `max` calls at once (`max = 0` admits
    /// none).
    #[must_use]
    pub const fn new(max: u32) -> Self {
        Self {
            central: AtomicU32::new(max),
            max,
            stripes: OnceLock::new(),
        }
    }
}

/// Under loom the stripes are made at once (a bulkhead of more than one):
/// loom cannot see the `OnceLock` publish them, and the model is about the
/// places moving between the counters.
#[cfg(loom)]
impl Bulkhead {
    /// A bulkhead admitting at most `max` calls at once (`max = 0` admits
    /// none).
    #[must_use]
    pub fn new(max: u32) -> Self {
        let stripes = OnceLock::new();
        if max > 1 {
            let _ = stripes.set(make_stripes(max));
        }
        Self {
            central: AtomicU32::new(max),
            max,
            stripes,
        }
    }
}

/// Empty stripes for a bulkhead of `max`: one per thread slot, at most `max`,
/// and a power of two (a thread finds its stripe with a mask, not a
/// division).
fn make_stripes(max: u32) -> Box<[Stripe]> {
    let most = crate::core::totals::thread_slots().min(max as usize).max(1);
    let n = 1 << most.ilog2();
    (0..n).map(|_| Stripe(AtomicU32::new(0))).collect()
}

/// Takes a free place from `counter`, if it has one: whether it got one, and
/// whether another thread changed the counter meanwhile (a lost
/// compare-and-swap).
#[inline]
fn take(counter: &AtomicU32) -> (bool, bool) {
    let mut free = counter.load(Ordering::Relaxed);
    let mut raced = false;
    while free > 0 {
        match counter.compare_exchange(free, free - 1, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return (true, raced),
            Err(actual) => {
                raced = true;
                free = actual;
            }
        }
    }
    (false, raced)
}

impl Bulkhead {
    /// A permit if fewer than `max` calls are running, `None` at once
    /// otherwise.
    #[inline]
    pub fn try_enter(&self) -> Option<BulkheadPermit<'_>> {
        let admitted = match self.stripes.get() {
            Some(stripes) => self.take_on(stripes),
            None => match take(&self.central) {
                (got, false) => got,
                (got, true) => self.contended(got),
            },
        };
        admitted.then(|| BulkheadPermit { bulkhead: self })
    }

    /// Another thread raced this one for `central`: from now on the
    /// bulkhead has stripes (when `max` is above one). A call that got no
    /// place from `central` looks for one on them.
    #[cold]
    #[inline(never)]
    fn contended(&self, got: bool) -> bool {
        if self.max <= 1 {
            return got;
        }
        let stripes = self.stripes.get_or_init(|| make_stripes(self.max));
        got || self.take_on(stripes)
    }

    /// A place from this thread's stripe, else from `central`, else from the
    /// other stripes in turn.
    #[inline]
    fn take_on(&self, stripes: &[Stripe]) -> bool {
        let own = this_thread_stripe(stripes.len());
        take(&stripes[own].0).0 || self.take_elsewhere(stripes, own)
    }

    #[cold]
    #[inline(never)]
    fn take_elsewhere(&self, stripes: &[Stripe], own: usize) -> bool {
        take(&self.central).0
            || (1..stripes.len()).any(|k| take(&stripes[(own + k) & (stripes.len() - 1)].0).0)
    }

    /// Gives a place back: to this thread's stripe once there are stripes.
    #[inline]
    fn give_back(&self) {
        let counter = match self.stripes.get() {
            Some(stripes) => &stripes[this_thread_stripe(stripes.len())].0,
            None => &self.central,
        };
        counter.fetch_add(1, Ordering::Release);
    }

    /// A place for a call that `breaker` admitted with `permit`, or at once a
    /// [`Rejected`] at the concurrency limit (reason
    /// [`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit), in the
    /// state the permit was admitted in) when every place is taken. Take the
    /// permit first: an open breaker then refuses without touching the
    /// bulkhead. A refusal gives the permit's admission back (a half-open
    /// trial returns its slot) and counts the call as rejected in the
    /// breaker's totals; the permit then records nothing more.
    ///
    /// ```
    /// use failfast_runtime::{Breaker, Bulkhead, Reason};
    ///
    /// let breaker = Breaker::builder().name("uploads").build()?;
    /// let bulkhead = Bulkhead::new(1);
    /// let mut first = breaker.acquire().unwrap();
    /// let _place = bulkhead.enter(&breaker, &mut first).unwrap();
    /// let mut second = breaker.acquire().unwrap();
    /// let refused = bulkhead.enter(&breaker, &mut second).unwrap_err();
    /// assert_eq!(refused.reason(), Reason::ConcurrencyLimit);
    /// assert_eq!(breaker.snapshot().rejected, 1);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
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
        match self.try_enter() {
            Some(slot) => Ok(slot),
            None => Err(concurrency_limit(breaker, permit)),
        }
    }

    /// Calls running now: `max` less the free places. While calls enter and
    /// leave on other threads the places are counted one counter at a time,
    /// so the figure is then approximate (never above `max`).
    #[must_use]
    pub fn running(&self) -> u32 {
        let free = self
            .stripes
            .get()
            .into_iter()
            .flat_map(|s| s.iter())
            .fold(self.central.load(Ordering::Relaxed), |free, stripe| {
                free.saturating_add(stripe.0.load(Ordering::Relaxed))
            });
        self.max.saturating_sub(free)
    }

    /// The most calls admitted at once.
    #[must_use]
    pub fn max(&self) -> u32 {
        self.max
    }
}

/// This thread's stripe among `n`.
#[cfg(not(loom))]
#[inline]
fn this_thread_stripe(n: usize) -> usize {
    crate::core::totals::thread_slot() & (n - 1)
}

/// Under loom, whose model threads share the process's thread-locals: the
/// model thread's number (its id's `Debug` form is the one part of it that
/// is the same in every execution of the model).
#[cfg(loom)]
fn this_thread_stripe(n: usize) -> usize {
    let id = format!("{:?}", loom::thread::current().id());
    let number: usize = id
        .trim_start_matches("ThreadId(")
        .trim_end_matches(')')
        .parse()
        .expect("loom's ThreadId(N)");
    number & (n - 1)
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

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
}
