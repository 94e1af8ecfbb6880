//! A value that is replaced at run time and read without a lock: the
//! breaker's settings (`configure` module) and its rate window.
//!
//! Every published value is immutable, boxed, and kept until its owner
//! drops: a reader follows one pointer read with a single Acquire load and
//! writes nothing (no lock, no reference count), so threads reading the same
//! value do not contend, and a thread still using a value that has since
//! been replaced keeps a valid borrow. The price is memory: every value
//! published stays allocated for the owner's lifetime, a bound set by how
//! often a program replaces it (by hand, through `reconfigure`).

use std::marker::PhantomData;
use std::sync::PoisonError;

use crate::sync::{AtomicPtr, Mutex, MutexGuard, Ordering};

#[derive(Debug)]
pub(crate) struct Kept<T> {
    /// The latest published value, or null before the first. Only ever
    /// points into `published`.
    current: AtomicPtr<T>,
    /// Every value published so far; also serialises publishers. Boxed: a
    /// box's contents stay put when the vector grows.
    #[allow(clippy::vec_box)]
    published: Mutex<Vec<Box<T>>>,
    /// Hands out `&T` to any thread: `Sync` only when `T` is.
    _shares: PhantomData<Box<T>>,
}

/// Publishing rights over a [`Kept`]: its lock, held.
pub(crate) struct Publisher<'a, T> {
    kept: &'a Kept<T>,
    published: MutexGuard<'a, Vec<Box<T>>>,
}

impl<T> Kept<T> {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        Self {
            current: AtomicPtr::new(std::ptr::null_mut()),
            published: Mutex::new(Vec::new()),
            _shares: PhantomData,
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        Self {
            current: AtomicPtr::new(std::ptr::null_mut()),
            published: Mutex::new(Vec::new()),
            _shares: PhantomData,
        }
    }

    /// The latest published value, if any: one Acquire load, no write.
    #[inline]
    #[allow(unsafe_code)] // a borrow of a box that lives as long as `self`
    pub(crate) fn get(&self) -> Option<&T> {
        let current = self.current.load(Ordering::Acquire);
        // SAFETY: a non-null pointer was taken from a `Box` in `published`
        // and stored with Release after the box was filled. Boxes are never
        // dropped, moved out of or mutated until `self` drops (a replaced
        // value is kept, not freed, so a thread still reading it is safe),
        // and `&self` outlives the returned borrow.
        unsafe { current.as_ref() }
    }

    /// The right to publish, held until the returned value drops.
    pub(crate) fn publisher(&self) -> Publisher<'_, T> {
        Publisher {
            kept: self,
            published: self
                .published
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// The latest published value, or `make()` published first when there
    /// is none yet.
    #[cold]
    pub(crate) fn get_or_publish(&self, make: impl FnOnce() -> T) -> &T {
        let mut publisher = self.publisher();
        if publisher.latest().is_none() {
            publisher.publish(make());
        }
        drop(publisher);
        self.get().expect("published above")
    }

    /// How many values were published.
    #[cfg(test)]
    pub(crate) fn published(&self) -> usize {
        self.publisher().published.len()
    }
}

impl<T> Publisher<'_, T> {
    /// The latest published value, if any.
    pub(crate) fn latest(&self) -> Option<&T> {
        self.published.last().map(|b| &**b)
    }

    /// Makes `value` the one readers get from now on; the value it replaces
    /// stays allocated until the [`Kept`] drops.
    pub(crate) fn publish(&mut self, value: T) {
        self.published.push(Box::new(value));
        let latest: &T = self.latest().expect("pushed above");
        // Never written through: readers only borrow it shared.
        let pointer = std::ptr::from_ref(latest).cast_mut();
        self.kept.current.store(pointer, Ordering::Release);
    }
}
