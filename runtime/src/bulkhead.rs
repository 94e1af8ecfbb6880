//! A bulkhead: at most `max` calls run at once; the next one is refused at
//! once instead of queueing.
//!
//! One atomic counter of running calls. Entering is a read and, when there is
//! room, one compare-and-swap; leaving is one subtraction, done by the
//! [`Slot`]'s `Drop`, so a slot is given back on every path: success, error,
//! panic, a future dropped mid-call. No lock, no allocation, no queue: a caller
//! that finds every slot taken is told so at once and can answer from a
//! fallback, which is what a service under overload needs (a queue in front of
//! a hanging dependency only holds more callers hostage).

use crate::breaker::{Breaker, Permit};
use crate::error::{Rejected, State};
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
/// assert!(UPLOADS.try_enter().is_some(), "a slot was given back");
/// # drop(second);
/// ```
///
/// A refusal is not a failure of the dependency: behind `#[circuit_breaker]`
/// it reaches the caller (or the `fallback`) as a
/// [`Rejected`](crate::Rejected) whose [`reason`](crate::Rejected::reason) is
/// [`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit), and it moves
/// no counter of the breaker.
#[derive(Debug)]
pub struct Bulkhead {
    running: AtomicU32,
    max: u32,
}

/// A place in a [`Bulkhead`], held while the call runs; dropping it gives the
/// place back.
#[derive(Debug)]
#[must_use = "the slot is given back as soon as it is dropped"]
pub struct Slot<'a> {
    bulkhead: &'a Bulkhead,
}

/// `const` so that `#[circuit_breaker]` can put a bulkhead in a `static`,
/// except under the loom model checker, whose atomics have no const
/// constructor.
macro_rules! constructor {
    ($($const:tt)?) => {
        /// A bulkhead admitting at most `max` calls at once (`max = 0` admits
        /// none).
        #[must_use]
        pub $($const)? fn new(max: u32) -> Self {
            Self {
                running: AtomicU32::new(0),
                max,
            }
        }
    };
}

#[cfg(not(loom))]
impl Bulkhead {
    constructor!(const);
}

#[cfg(loom)]
impl Bulkhead {
    constructor!();
}

impl Bulkhead {
    /// A slot if fewer than `max` calls are running, `None` at once otherwise.
    #[inline]
    pub fn try_enter(&self) -> Option<Slot<'_>> {
        let mut running = self.running.load(Ordering::Relaxed);
        loop {
            if running >= self.max {
                return None;
            }
            match self.running.compare_exchange_weak(
                running,
                running + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(Slot { bulkhead: self }),
                Err(actual) => running = actual,
            }
        }
    }

    /// A slot for a call that `breaker` admitted with `permit`, or at once a
    /// [`Rejected`] at the concurrency limit (reason
    /// [`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit), in the
    /// state the permit was admitted in) when every slot is taken. Take the
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
    /// let _slot = bulkhead.enter(&breaker, &mut first).unwrap();
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
    pub fn enter(&self, breaker: &Breaker, permit: &mut Permit<'_>) -> Result<Slot<'_>, Rejected> {
        match self.try_enter() {
            Some(slot) => Ok(slot),
            None => Err(concurrency_limit(breaker, permit)),
        }
    }

    /// Calls running now.
    #[must_use]
    pub fn running(&self) -> u32 {
        self.running.load(Ordering::Relaxed)
    }

    /// The most calls admitted at once.
    #[must_use]
    pub fn max(&self) -> u32 {
        self.max
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
    Rejected::concurrency_limit(breaker.shared_name(), state)
}

#[cfg(all(feature = "tower", feature = "keyed"))]
impl Slot<'_> {
    /// Keeps the place taken after the slot is gone: for an owner that
    /// cannot borrow the bulkhead, which gives it back with
    /// [`Bulkhead::leave`].
    pub(crate) fn keep(self) {
        std::mem::forget(self);
    }
}

#[cfg(all(feature = "tower", feature = "keyed"))]
impl Bulkhead {
    /// Gives back a place kept by [`Slot::keep`].
    pub(crate) fn leave(&self) {
        self.running.fetch_sub(1, Ordering::Release);
    }
}

impl Drop for Slot<'_> {
    #[inline]
    fn drop(&mut self) {
        self.bulkhead.running.fetch_sub(1, Ordering::Release);
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

    #[cfg(all(feature = "tower", feature = "keyed"))]
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
