//! A bulkhead's size and wait changed while calls run
//! ([`Bulkhead::resize`], [`Bulkhead::set_max_wait`]).
//!
//! A bulkhead has as many places as its `max`: free ones, on its counters,
//! and those held by running calls. A resize changes how many places there
//! are, never a call that holds one:
//!
//! - **Raising** `max` by `d` first cancels up to `d` places of debt
//!   (below), then puts the rest on `central` and hands them to the calls
//!   waiting under `max_wait`, in turn: new calls are admitted at once.
//! - **Lowering** `max` by `d` owes `d` places (the *debt*), then retires
//!   free places against it, one at a time. Places still owed are held by
//!   running calls, which finish as they would have: each place they give
//!   back is retired by the next call that takes it while a debt is owed
//!   (it takes another), so once they have drained no more than the new
//!   `max` are admitted, and exactly `max` places are free.
//!
//! Each move is one atomic operation on one counter or on the debt, and
//! only a raise makes places: through one change, never more than
//! `max(old, new)` calls hold a place at once; through several made before
//! the running calls drained, never more than the most of the limits since
//! the debt was last paid.
//!
//! Two resizes at once each move the places by the difference between the
//! `max` they replaced and their own, so they add up to the last one.
//!
//! `max_wait` is read once by a call, as it starts waiting: a change applies
//! to the calls that start waiting after it. Whether calls wait at all is
//! fixed when the bulkhead is made (a bulkhead made without `max_wait` has
//! no line, and its places are given back without looking for one).

use std::sync::Arc;
use std::time::Duration;

use super::Bulkhead;
use crate::core::breaker::Breaker;
use crate::sync::Ordering;

/// A breaker declared with a fixed `max_concurrent = N`, the bulkhead in
/// front of it, and where: the registry attaches the bulkhead to the
/// breaker when it first lists the declared breakers (before any change
/// can reach the breaker), and from then on the breaker tells it the limit
/// and wait in force.
#[doc(hidden)]
#[derive(Debug)]
pub struct Bounded {
    /// The function's breaker.
    pub breaker: &'static Breaker,
    /// The bulkhead in front of it.
    pub bulkhead: &'static Bulkhead,
    /// `file:line` of the function.
    pub at: &'static str,
}

/// Every breaker declared with a fixed limit, gathered by the linker.
#[doc(hidden)]
#[linkme::distributed_slice]
pub static BOUNDED: [Bounded];

/// Attaches each declared bulkhead to its breaker (once: a breaker keeps
/// the first it is given).
pub(crate) fn attach_declared() {
    for bounded in BOUNDED {
        bounded.breaker.bound_by(Arc::new(bounded.bulkhead));
    }
}

impl Bulkhead {
    /// Makes it a bulkhead of `max` places while calls run: calls running
    /// keep their places; a lower `max` admits no call until fewer than it
    /// run, a higher one admits calls at once and hands places to the calls
    /// waiting for one. See the `resize` module for the places in flight.
    pub fn resize(&self, max: u32) {
        let old = self.max.swap(max, Ordering::AcqRel);
        if max > old {
            self.grow(max - old);
        } else if max < old {
            self.shrink(old - max);
        }
    }

    /// Lets a call that starts waiting from now on wait `wait` at most;
    /// calls already waiting keep the time they started with. A bulkhead
    /// made without [`max_wait`](Self::max_wait) has no line: there it
    /// changes nothing, and calls are still refused at once.
    pub fn set_max_wait(&self, wait: Duration) {
        self.wait
            .store(crate::core::config::nanos(wait), Ordering::Relaxed);
    }

    /// `d` places more: debt cancelled first, the rest free at once.
    fn grow(&self, d: u32) {
        let owed = self
            .debt
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |owed| {
                (owed != 0).then(|| owed.saturating_sub(d))
            })
            .unwrap_or(0);
        let added = d - owed.min(d);
        if added == 0 {
            return;
        }
        self.central.fetch_add(added, Ordering::Release);
        if self.lined {
            for _ in 0..added {
                if self.queue.len() == 0 {
                    break;
                }
                self.queue.hand_over(self);
            }
        }
    }

    /// `d` places fewer: owed, then retired from the free ones found.
    fn shrink(&self, d: u32) {
        self.debt.fetch_add(d, Ordering::AcqRel);
        while self.debt.load(Ordering::Acquire) != 0 && self.take_free() {
            if !self.repay() {
                // Paid meanwhile by calls that took places: this one is
                // not owed.
                self.give_back();
                return;
            }
        }
    }

    /// A place just taken from a counter while a debt is owed: retired
    /// against it, and another taken, until one is not owed. Whether the
    /// call got a place.
    #[cold]
    #[inline(never)]
    pub(super) fn retire_taken(&self) -> bool {
        loop {
            if !self.repay() {
                return true;
            }
            if !self.take_free() {
                return false;
            }
        }
    }

    /// One place of the debt paid, if one is owed.
    fn repay(&self) -> bool {
        self.debt
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |owed| {
                owed.checked_sub(1)
            })
            .is_ok()
    }

    /// Places owed by a lowered `max`, held by running calls.
    #[cfg(test)]
    pub(super) fn owed(&self) -> u32 {
        self.debt.load(Ordering::SeqCst)
    }
}

/// A breaker declared with a fixed `max_concurrent = N` tells its bulkhead
/// the limit and wait in force whenever its settings change.
impl crate::core::bound::Bound for Bulkhead {
    fn bound(&self, max: u32, wait: Duration) {
        if max != 0 {
            self.resize(max);
        }
        // Without a line it changes nothing (see `set_max_wait`).
        self.set_max_wait(wait);
    }
}
