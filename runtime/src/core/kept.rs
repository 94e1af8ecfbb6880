//! A value that is replaced at run time and read without a lock: the
//! breaker's settings (`configure` module) and its rate window.
//!
//! Every published value is immutable and shared (an `Arc`), held in an
//! [`arc_swap::ArcSwapOption`]. A reader gets a [`Read`], a guard that
//! borrows the value: arc-swap's `load` notes the pointer in a slot of the
//! reading thread's own (a "debt", paid back when the guard drops), so it
//! writes no reference count and no line that another thread writes, and
//! threads reading the same value do not contend. A value that has been
//! replaced is freed as soon as no guard reads it any more: by the
//! publisher when no thread held one, otherwise by the last guard to drop
//! (a publisher turns the debts of the guards still reading it into
//! references). So a reconfiguration's memory is bounded, whatever the
//! number of reconfigurations: the value in force, plus the replaced ones
//! that calls are reading at that moment.
//!
//! A guard costs a couple of atomic operations on the reading thread's own
//! line, where a bare pointer read cost one load; it is taken only where
//! the breaker reads the window or the settings (see `configure`), never on
//! a healthy call's fast path. Until a first value is published, a reader
//! reads one flag and takes no guard.
//!
//! Under loom, whose model has no arc-swap, a stand-in with the same
//! interface keeps every published value until the owner drops and hands
//! out plain borrows: the interleavings of publishing and reading (a
//! reader gets the old value or the new one, whole) are those of the real
//! thing; reclamation is arc-swap's own, tested there.

use std::ops::Deref;
use std::sync::PoisonError;

use crate::sync::{Mutex, MutexGuard};

#[cfg(not(loom))]
use std::sync::Arc;

#[cfg(not(loom))]
use crate::sync::{AtomicBool, Ordering};

#[cfg(loom)]
use crate::sync::{AtomicPtr, Ordering};

/// A published value, read: it stays valid while this lives. Keep it
/// short-lived (a guard ties up one of a few slots of its thread's).
pub(crate) enum Read<'a, T> {
    /// A value that outlives the borrow anyway (a breaker's declared
    /// settings; under loom, a kept value).
    Borrowed(&'a T),
    /// A published value, held by arc-swap's guard.
    #[cfg(not(loom))]
    Guarded(arc_swap::Guard<Option<Arc<T>>>),
}

impl<T> Deref for Read<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        match self {
            Read::Borrowed(value) => value,
            #[cfg(not(loom))]
            Read::Guarded(guard) => match &**guard {
                Some(value) => value,
                None => unreachable!("a guard is made only of a published value"),
            },
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Read<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

#[derive(Debug)]
pub(crate) struct Kept<T> {
    /// The latest published value, or none before the first.
    #[cfg(not(loom))]
    current: arc_swap::ArcSwapOption<T>,
    /// Whether a value was ever published: until then a reader reads this
    /// flag alone.
    #[cfg(not(loom))]
    published: AtomicBool,
    /// How many values were published; also serialises publishers.
    #[cfg(not(loom))]
    publishers: Mutex<usize>,
    /// Stand-in: the latest published value, or null before the first.
    /// Only ever points into `kept`.
    #[cfg(loom)]
    current: AtomicPtr<T>,
    /// Stand-in: every value published so far, boxed (a box's contents
    /// stay put when the vector grows); also serialises publishers.
    #[cfg(loom)]
    #[allow(clippy::vec_box)]
    publishers: Mutex<Vec<Box<T>>>,
}

/// Publishing rights over a [`Kept`]: its lock, held.
pub(crate) struct Publisher<'a, T> {
    kept: &'a Kept<T>,
    #[cfg(not(loom))]
    published: MutexGuard<'a, usize>,
    #[cfg(loom)]
    published: MutexGuard<'a, Vec<Box<T>>>,
}

#[cfg(not(loom))]
impl<T> Kept<T> {
    pub(crate) const fn new() -> Self {
        Self {
            current: arc_swap::ArcSwapOption::const_empty(),
            published: AtomicBool::new(false),
            publishers: Mutex::new(0),
        }
    }

    /// The latest published value, if any: one flag read until the first
    /// is published, then arc-swap's `load`, which writes only the reading
    /// thread's own slot.
    #[inline]
    pub(crate) fn get(&self) -> Option<Read<'_, T>> {
        if !self.published.load(Ordering::Acquire) {
            return None;
        }
        let guard = self.current.load();
        guard.is_some().then(|| Read::Guarded(guard))
    }

    /// How many values were published.
    #[cfg(test)]
    pub(crate) fn published(&self) -> usize {
        *self.publisher().published
    }
}

#[cfg(loom)]
impl<T> Kept<T> {
    pub(crate) fn new() -> Self {
        Self {
            current: AtomicPtr::new(std::ptr::null_mut()),
            publishers: Mutex::new(Vec::new()),
        }
    }

    /// The latest published value, if any: one Acquire load, no write.
    #[cfg_attr(test, mutants::skip)] // loom-only: the loom models test it
    #[allow(unsafe_code)] // a borrow of a box that lives as long as `self`
    pub(crate) fn get(&self) -> Option<Read<'_, T>> {
        let current = self.current.load(Ordering::Acquire);
        // SAFETY: a non-null pointer was taken from a `Box` in `publishers`
        // and stored with Release after the box was filled. The stand-in
        // never drops, moves out of or mutates a box until `self` drops, and
        // `&self` outlives the returned borrow.
        unsafe { current.as_ref() }.map(Read::Borrowed)
    }
}

impl<T> Kept<T> {
    /// The right to publish, held until the returned value drops.
    pub(crate) fn publisher(&self) -> Publisher<'_, T> {
        Publisher {
            kept: self,
            published: self
                .publishers
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// The latest published value, or `make()` published first when there
    /// is none yet (under loom, the breaker's first window).
    #[cfg(loom)]
    #[cfg_attr(test, mutants::skip)] // loom-only: the loom models test it
    #[cold]
    pub(crate) fn get_or_publish(&self, make: impl FnOnce() -> T) -> Read<'_, T> {
        let mut publisher = self.publisher();
        if publisher.latest().is_none() {
            publisher.publish(make());
        }
        drop(publisher);
        self.get().expect("published above")
    }
}

impl<T> Publisher<'_, T> {
    /// The latest published value, if any: no other publisher can replace
    /// it while `self` lives.
    pub(crate) fn latest(&self) -> Option<Read<'_, T>> {
        self.kept.get()
    }

    /// Makes `value` the one readers get from now on. The value it replaces
    /// is freed once no reader holds it (under loom, kept until the
    /// [`Kept`] drops).
    #[cfg(not(loom))]
    pub(crate) fn publish(&mut self, value: T) {
        self.kept.current.store(Some(Arc::new(value)));
        self.kept.published.store(true, Ordering::Release);
        *self.published += 1;
    }

    #[cfg(loom)]
    #[cfg_attr(test, mutants::skip)] // loom-only: the loom models test it
    pub(crate) fn publish(&mut self, value: T) {
        self.published.push(Box::new(value));
        let latest: &T = self.published.last().expect("pushed above");
        // Never written through: readers only borrow it shared.
        let pointer = std::ptr::from_ref(latest).cast_mut();
        self.kept.current.store(pointer, Ordering::Release);
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts its live instances.
    struct Counted<'a>(&'a AtomicUsize);

    impl<'a> Counted<'a> {
        fn new(live: &'a AtomicUsize) -> Self {
            live.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Self(live)
        }
    }

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn live(n: &AtomicUsize) -> usize {
        n.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A read shows as the value it reads.
    #[test]
    fn a_read_debugs_as_its_value() {
        let kept = Kept::new();
        kept.publisher().publish(vec![7_u8, 8]);
        assert_eq!(format!("{:?}", kept.get().unwrap()), "[7, 8]");
    }

    /// A replaced value is freed at once when nobody reads it, and when
    /// the last guard reading it drops otherwise; the latest stays.
    #[test]
    fn a_replaced_value_is_freed_once_nobody_reads_it() {
        let n = AtomicUsize::new(0);
        let kept = Kept::new();
        assert!(kept.get().is_none());
        for _ in 0..1000 {
            kept.publisher().publish(Counted::new(&n));
        }
        assert_eq!(live(&n), 1, "only the latest");
        let read = kept.get().expect("published");
        kept.publisher().publish(Counted::new(&n));
        assert_eq!(live(&n), 2, "the old one is still read");
        drop(read);
        assert_eq!(live(&n), 1, "freed by the last reader");
        assert_eq!(kept.published(), 1001);
        drop(kept);
        assert_eq!(live(&n), 0);
    }

    /// Readers on other threads hold guards while values are replaced
    /// under them: each reads a whole value, and what is replaced is
    /// freed once they are done.
    #[test]
    fn readers_racing_publishers_read_whole_values() {
        let n = AtomicUsize::new(0);
        let kept: Kept<(usize, usize, Counted<'_>)> = Kept::new();
        kept.publisher().publish((0, 0, Counted::new(&n)));
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    let mut last = 0;
                    while last < 1000 {
                        let read = kept.get().expect("published");
                        assert_eq!(read.0, read.1, "a torn value");
                        assert!(read.0 >= last, "went back");
                        last = read.0;
                    }
                });
            }
            for i in 1..=1000 {
                kept.publisher().publish((i, i, Counted::new(&n)));
            }
        });
        assert_eq!(live(&n), 1);
    }
}
