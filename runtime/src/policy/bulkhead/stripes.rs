//! The counters a bulkhead's free places are on: `central`, then, once
//! callers race for it, one stripe per thread slot (see the module docs of
//! the bulkhead). Each move is one atomic operation on one counter.

use super::Bulkhead;
use crate::sync::{AtomicU32, Ordering};

/// One stripe's free places, on a line of its own (two lines: adjacent-line
/// prefetchers pair them, as for the breaker's hot word).
#[derive(Debug)]
#[repr(align(128))]
pub(super) struct Stripe(pub(super) AtomicU32);

/// Under loom the stripes are made at once (a bulkhead of more than one):
/// loom cannot see the `OnceLock` publish them, and the model is about the
/// places moving between the counters.
#[cfg(loom)]
#[cfg_attr(test, mutants::skip)] // loom-only: the loom models test it
pub(super) fn loom_stripes(max: u32) -> std::sync::OnceLock<Box<[Stripe]>> {
    let stripes = std::sync::OnceLock::new();
    if max > 1 {
        let _ = stripes.set(make_stripes(max));
    }
    stripes
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
    /// Takes a free place from a counter, if there is one.
    #[inline]
    pub(super) fn take_free(&self) -> bool {
        match self.stripes.get() {
            Some(stripes) => self.take_on(stripes),
            None => match take(&self.central) {
                (got, false) => got,
                (got, true) => self.contended(got),
            },
        }
    }

    /// Another thread raced this one for `central`: from now on the
    /// bulkhead has stripes (when `max` is above one). A call that got no
    /// place from `central` looks for one on them.
    #[cold]
    #[inline(never)]
    pub(super) fn contended(&self, got: bool) -> bool {
        let max = self.max.load(Ordering::Relaxed);
        if max <= 1 {
            return got;
        }
        let stripes = self.stripes.get_or_init(|| make_stripes(max));
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

    /// Puts a place back on a counter: this thread's stripe once there are
    /// stripes.
    #[inline]
    pub(super) fn put_place(&self) {
        let counter = match self.stripes.get() {
            Some(stripes) => &stripes[this_thread_stripe(stripes.len())].0,
            None => &self.central,
        };
        counter.fetch_add(1, Ordering::Release);
    }

    /// The free places on every counter, read one counter at a time.
    pub(super) fn free(&self) -> u32 {
        self.stripes
            .get()
            .into_iter()
            .flat_map(|s| s.iter())
            .fold(self.central.load(Ordering::Relaxed), |free, stripe| {
                free.saturating_add(stripe.0.load(Ordering::Relaxed))
            })
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
#[cfg_attr(test, mutants::skip)] // loom-only: the loom models test it
fn this_thread_stripe(n: usize) -> usize {
    let id = format!("{:?}", loom::thread::current().id());
    let number: usize = id
        .trim_start_matches("ThreadId(")
        .trim_end_matches(')')
        .parse()
        .expect("loom's ThreadId(N)");
    number & (n - 1)
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    /// Threads alive at once put their places back on stripes of their
    /// own, not all on one: four threads at once find at least two
    /// stripes among a bulkhead's (each owned thread slot is a different
    /// stripe; a thread on a shared slot may share one).
    #[test]
    fn threads_alive_at_once_find_stripes_of_their_own() {
        let n = make_stripes(u32::MAX).len();
        assert!(n >= 8, "{n} stripes");
        let together = std::sync::Barrier::new(4);
        let mut stripes: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        together.wait();
                        let stripe = this_thread_stripe(n);
                        together.wait();
                        stripe
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(stripes.iter().all(|&k| k < n), "{stripes:?}");
        stripes.sort_unstable();
        stripes.dedup();
        assert!(stripes.len() >= 2, "{stripes:?}");
    }
}
