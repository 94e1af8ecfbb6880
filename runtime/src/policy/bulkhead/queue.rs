//! The line of callers waiting for a place in a bulkhead with `max_wait`.
//!
//! A caller that finds every place taken joins the line (a lock around a
//! `VecDeque`, taken only by callers that wait and by a place given back
//! while someone waits) and waits: parked, or as a pending future. A place
//! given back while the line is not empty is handed to its first caller,
//! who is then *granted* it without taking it from a counter. So places go
//! in the order callers asked for them, but for one case: a caller arriving
//! at the very moment a place is given back may take it (see below), ahead
//! of those already waiting.
//!
//! No place is lost and none is given twice:
//!
//! - A joining caller counts itself in `waiting`, then looks for a free
//!   place once more; a place given back first goes to its counter, then
//!   its giver reads `waiting` (each side writes, fences, reads). So either
//!   the joining caller finds that place, or the giver sees the caller and
//!   hands a place over.
//! - A caller that stops waiting (its time is up, or its future is dropped)
//!   takes itself out of the line under the lock; if it is no longer there,
//!   a giver handed it a place under that same lock, and it keeps the place
//!   (time was up) or gives it back (dropped).

use std::collections::VecDeque;
use std::sync::{Arc, PoisonError};
use std::task::Waker;

use super::Bulkhead;
use crate::sync::{AtomicBool, AtomicU32, Mutex, MutexGuard, Ordering, Thread, fence};

/// The callers waiting for a place, first come first served.
#[derive(Debug)]
pub(super) struct Queue {
    /// How many callers are in `line`: read without the lock.
    waiting: AtomicU32,
    line: Mutex<VecDeque<Arc<Waiter>>>,
}

impl Queue {
    /// An empty line; `const` (but under the model checker, whose types
    /// have no const constructors) so that a bulkhead can be a `static`.
    #[cfg(not(loom))]
    pub(super) const fn new() -> Self {
        Self {
            waiting: AtomicU32::new(0),
            line: Mutex::new(VecDeque::new()),
        }
    }

    #[cfg(loom)]
    pub(super) fn new() -> Self {
        Self {
            waiting: AtomicU32::new(0),
            line: Mutex::new(VecDeque::new()),
        }
    }
}

/// One waiting caller.
#[derive(Debug)]
struct Waiter {
    /// A place was handed to this caller (set under the line's lock).
    granted: AtomicBool,
    /// How to wake it.
    wake: Mutex<Wake>,
}

impl Waiter {
    fn new() -> Self {
        Self {
            granted: AtomicBool::new(false),
            wake: Mutex::new(Wake::Nobody),
        }
    }
}

#[derive(Debug, Default)]
enum Wake {
    #[default]
    Nobody,
    Thread(Thread),
    Task(Waker),
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing user-written runs under these locks; a panic there would be
    // the runtime's own, and the line stays consistent through it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Queue {
    /// How many callers are in line.
    pub(super) fn len(&self) -> u32 {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Hands a place just given back (to a counter) to the first caller in
    /// line, if one waits and the place is still free.
    pub(super) fn hand_over(&self, bulkhead: &Bulkhead) {
        fence(Ordering::SeqCst);
        while self.waiting.load(Ordering::SeqCst) != 0 {
            if !bulkhead.take_place() {
                // Taken meanwhile, by a joining caller or another giver.
                return;
            }
            let first = {
                let mut line = lock(&self.line);
                let first = line.pop_front();
                if let Some(first) = &first {
                    self.waiting.fetch_sub(1, Ordering::SeqCst);
                    first.granted.store(true, Ordering::Release);
                }
                first
            };
            match first {
                Some(first) => {
                    first.wake();
                    return;
                }
                // Every caller left the line meanwhile: the place goes back,
                // and the loop looks again.
                None => bulkhead.put_place(),
            }
        }
    }
}

impl Waiter {
    fn wake(&self) {
        match std::mem::take(&mut *lock(&self.wake)) {
            Wake::Nobody => {}
            Wake::Thread(thread) => thread.unpark(),
            Wake::Task(waker) => waker.wake(),
        }
    }
}

/// A caller's place in the line; leaving the line when dropped (a place
/// handed over meanwhile is given back).
#[derive(Debug)]
pub(super) struct Ticket<'a> {
    bulkhead: &'a Bulkhead,
    queue: &'a Queue,
    waiter: Option<Arc<Waiter>>,
}

/// Joining the line: a place found at once, or a ticket to wait with.
pub(super) enum Joined<'a> {
    Place,
    Waiting(Ticket<'a>),
}

impl<'a> Ticket<'a> {
    /// Joins `bulkhead`'s line, unless a place given back meanwhile can be
    /// taken.
    pub(super) fn join(bulkhead: &'a Bulkhead, queue: &'a Queue) -> Joined<'a> {
        let waiter = Arc::new(Waiter::new());
        {
            let mut line = lock(&queue.line);
            line.push_back(Arc::clone(&waiter));
            queue.waiting.fetch_add(1, Ordering::SeqCst);
        }
        let ticket = Ticket {
            bulkhead,
            queue,
            waiter: Some(waiter),
        };
        fence(Ordering::SeqCst);
        if bulkhead.take_place() {
            // Out of the line again; a place handed over meanwhile goes
            // back (to the next caller in line).
            if ticket.finish() {
                bulkhead.give_back();
            }
            return Joined::Place;
        }
        Joined::Waiting(ticket)
    }

    /// Whether a place was handed to this caller.
    pub(super) fn granted(&self) -> bool {
        self.waiter
            .as_ref()
            .is_some_and(|w| w.granted.load(Ordering::Acquire))
    }

    /// Wakes this thread when a place is handed over.
    pub(super) fn wake_thread(&self) {
        if let Some(waiter) = &self.waiter {
            *lock(&waiter.wake) = Wake::Thread(crate::sync::current_thread());
        }
    }

    /// Wakes `waker` when a place is handed over.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(super) fn wake_task(&self, waker: &Waker) {
        if let Some(waiter) = &self.waiter {
            let mut wake = lock(&waiter.wake);
            match &*wake {
                Wake::Task(current) if current.will_wake(waker) => {}
                _ => *wake = Wake::Task(waker.clone()),
            }
        }
    }

    /// Stops waiting, granted or out of time: the place handed over, if
    /// one was (at the last moment too). The permit is made only then: it
    /// gives its place back when dropped.
    pub(super) fn into_place(self) -> Option<super::BulkheadPermit<'a>> {
        let bulkhead = self.bulkhead;
        self.finish().then(|| super::BulkheadPermit { bulkhead })
    }

    /// Stops waiting: whether a place was handed over (it is the caller's).
    pub(super) fn finish(mut self) -> bool {
        let granted = self.leave();
        self.waiter = None;
        granted
    }

    /// Leaves the line if still in it; whether a place was handed over.
    fn leave(&self) -> bool {
        let Some(waiter) = &self.waiter else {
            return false;
        };
        let mut line = lock(&self.queue.line);
        if let Some(at) = line.iter().position(|w| Arc::ptr_eq(w, waiter)) {
            line.remove(at);
            self.queue.waiting.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        // Not in the line: a giver took it out and handed it a place, under
        // the lock held here now.
        waiter.granted.load(Ordering::Acquire)
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if self.waiter.is_some() && self.leave() {
            self.bulkhead.give_back();
        }
    }
}
