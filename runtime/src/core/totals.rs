//! Running totals of a breaker's calls, counted without a shared write.
//!
//! A healthy breaker shared by many threads writes nothing shared per call
//! (see the `breaker` module); counting every call must not change that. Each
//! breaker keeps one cache-line-sized shard of counters per *slot*, and each
//! thread owns a slot: a thread counts with a plain load and store on its own
//! line (no atomic read-modify-write, no line shared with another thread), and
//! a snapshot adds the shards up.
//!
//! Slots are handed out on a thread's first call and taken back when it
//! exits, so a pool that replaces its threads keeps reusing the same slots.
//! There are `2 × available_parallelism` of them (at least 8, at most 32). A
//! thread started while every slot is taken counts on one of a few further
//! *shared* shards with an atomic add instead: still exact, still on lines
//! spread over several shards, but a read-modify-write. Shared shards are
//! never anyone's own, so a plain store never races with an atomic add.
//!
//! A breaker's shards are allocated on its first counted call: statics built
//! in `const` context have none until then.
//!
//! A shard also keeps the slot's own copy of the breaker's name when that
//! name was built at run time (an `Arc<str>`: keyed families' members,
//! per-host breakers). Every `Rejected` and `TimedOut` carries the breaker's
//! name, and cloning one `Arc<str>` on every thread would make a refusal, the
//! path an open breaker takes on every call, write one shared line twice;
//! cloning the slot's copy writes a line of this thread's own.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

use crate::core::outcome::Outcome;

/// Counter indices in a shard.
pub(crate) const SUCCESS: usize = 0;
pub(crate) const FAILURE: usize = 1;
pub(crate) const NEUTRAL: usize = 2;
pub(crate) const SLOW: usize = 3;
pub(crate) const REJECTED: usize = 4;
/// Calls cut off at their time limit (also counted as failures).
pub(crate) const TIMEOUT: usize = 5;
/// Calls an observe-only ([`Mode::ObserveOnly`](crate::Mode::ObserveOnly))
/// breaker let through that it would have rejected.
pub(crate) const WOULD_REJECT: usize = 6;
/// Calls admitted, counted as they start (graded shedding only).
pub(crate) const ADMITTED: usize = 7;
/// Calls refused by graded shedding.
pub(crate) const SHED: usize = 8;
/// Admissions taken back (graded shedding only): a call waiting in a
/// bulkhead's line (counted as admitted again when its wait is over), or
/// refused by it.
pub(crate) const WITHDRAWN: usize = 9;
/// Calls started under a time limit (`timeout`),
/// counted by the time limit as it starts, off the plain call path.
pub(crate) const TIMED_STARTED: usize = 10;
/// Calls under a time limit that ended, whichever way (counted as the time
/// limit's future is dropped).
pub(crate) const TIMED_ENDED: usize = 11;
const COUNTERS: usize = 12;

/// One slot's counters, on a line of its own (two lines: adjacent-line
/// prefetchers pair them, as for the breaker's hot word), and the slot's own
/// copy of a name built at run time (see `Totals::thread_name`).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard {
    counts: [AtomicU64; COUNTERS],
    name: OnceLock<Arc<str>>,
}

/// A breaker's totals.
#[derive(Debug)]
pub(crate) struct Totals {
    shards: OnceLock<Box<[Shard]>>,
}

/// The sums of every shard, at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sums {
    pub(crate) counts: [u64; COUNTERS],
}

/// In a thread's slot code: the slot is shared with other threads.
const SHARED: u32 = 1 << 31;

thread_local! {
    /// This thread's slot: 0 before its first call, else the slot's index + 1,
    /// with `SHARED` when it is not this thread's alone.
    static SLOT: Cell<u32> = const { Cell::new(0) };
    /// Gives the slot back when the thread exits.
    static RELEASE: Release = const { Release };
}

static FREE: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// Owned slots handed out so far (stops at `slots()`; later ones come back
/// through `FREE`).
static NEXT: AtomicU32 = AtomicU32::new(0);
/// Round-robin over the shared shards.
static ROUND: AtomicU32 = AtomicU32::new(0);

/// Shards after the owned ones, for threads without a slot of their own.
const SHARED_SHARDS: u32 = 4;

/// The code of a shared shard, picked round-robin.
fn shared_code() -> u32 {
    SHARED | (slots() + ROUND.fetch_add(1, Ordering::Relaxed) % SHARED_SHARDS + 1)
}

/// Owned slots (shards `0..slots()`); the shared shards follow them.
fn slots() -> u32 {
    static SLOTS: OnceLock<u32> = OnceLock::new();
    *SLOTS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(4, usize::from);
        u32::try_from(cores * 2).unwrap_or(u32::MAX).clamp(8, 32)
    })
}

struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        // Anything this thread counts from now on (other thread-locals'
        // destructors) goes through a shared slot.
        let code = SLOT.replace(shared_code());
        // Only a thread given a slot of its own registers this destructor
        // (see `assign`), and its code stays that slot's until here.
        debug_assert!(code != 0 && code & SHARED == 0, "{code:#x}");
        FREE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(code - 1);
    }
}

/// Gives this thread a slot: a free one of its own if there is one.
#[cold]
#[inline(never)]
fn assign() -> u32 {
    let n = slots();
    let own = FREE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .pop()
        .or_else(|| {
            NEXT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |next| {
                (next < n).then_some(next + 1)
            })
            .ok()
        });
    // Own slots are given back at exit; without a destructor (the thread is
    // already exiting) keep to a shared one.
    let code = match own {
        Some(i) if RELEASE.try_with(|_| ()).is_ok() => i + 1,
        Some(i) => {
            FREE.lock().unwrap_or_else(PoisonError::into_inner).push(i);
            shared_code()
        }
        None => shared_code(),
    };
    SLOT.set(code);
    code
}

/// This thread's slot code, assigning one on first use.
#[inline]
fn thread_code() -> u32 {
    match SLOT.get() {
        0 => assign(),
        code => code,
    }
}

/// The shard index of a slot code.
fn shard_index(code: u32) -> usize {
    ((code & !SHARED) - 1) as usize
}

/// This thread's slot index (its shard), assigning it on first use: threads
/// that own a slot each have a different one.
#[cfg(not(loom))]
#[inline]
pub(crate) fn thread_slot() -> usize {
    shard_index(thread_code())
}

/// How many slot indexes `thread_slot` can give (owned and shared).
pub(crate) fn thread_slots() -> usize {
    (slots() + SHARED_SHARDS) as usize
}

/// Adds one to the counter `pick` chooses in this thread's shard of
/// `shards`. One thread-local read, one check that the shards exist, one
/// increment of a counter this thread alone writes.
#[inline]
fn add_in<S: Default>(shards: &OnceLock<Box<[S]>>, pick: impl Fn(&S) -> &AtomicU64) {
    let code = SLOT.get();
    if let Some(shards) = shards.get() {
        if let Some(shard) = shards.get(code.wrapping_sub(1) as usize) {
            let counter = pick(shard);
            // This thread's alone: no read-modify-write needed.
            counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            return;
        }
    }
    add_slow_in(shards, pick);
}

/// The thread's first count (no slot yet), the first count in `shards` (not
/// allocated yet), or a thread sharing its slot.
#[cold]
#[inline(never)]
fn add_slow_in<S: Default>(shards: &OnceLock<Box<[S]>>, pick: impl Fn(&S) -> &AtomicU64) {
    let code = thread_code();
    let shards = shards.get_or_init(|| (0..thread_slots()).map(|_| S::default()).collect());
    let counter = pick(&shards[shard_index(code)]);
    if code & SHARED == 0 {
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    } else {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// One count, kept as the totals are: a shard per thread slot, each on a line
/// of its own, so that threads counting at once write nothing shared. It only
/// grows; `sum` adds the shards up. The retry budget counts its calls here.
#[derive(Debug)]
pub(crate) struct Count {
    shards: OnceLock<Box<[Line]>>,
}

/// One slot's share of a [`Count`].
#[derive(Debug, Default)]
#[repr(align(128))]
struct Line(AtomicU64);

impl Count {
    pub(crate) const fn new() -> Self {
        Self {
            shards: OnceLock::new(),
        }
    }

    /// Counts one, on this thread's line.
    #[inline]
    pub(crate) fn add(&self) {
        add_in(&self.shards, |line: &Line| &line.0);
    }

    /// The count so far. Counts made while this runs may or may not be in
    /// it; this thread's own always are.
    pub(crate) fn sum(&self) -> u64 {
        self.shards
            .get()
            .into_iter()
            .flat_map(|s| s.iter())
            .fold(0, |sum, line| sum + line.0.load(Ordering::Relaxed))
    }
}

impl Totals {
    pub(crate) const fn new() -> Self {
        Self {
            shards: OnceLock::new(),
        }
    }

    /// Counts one `what` (`SUCCESS`, …) on this thread's shard. One
    /// thread-local read, one check that the shards exist, one increment.
    #[inline]
    pub(crate) fn add(&self, what: usize) {
        add_in(&self.shards, move |shard: &Shard| &shard.counts[what]);
    }

    /// Counts an admitted call (graded shedding) and returns this thread's
    /// count of them: on a slot of its own, the calls it admitted; on a
    /// shared slot, that slot's.
    #[inline(always)]
    pub(crate) fn admit(&self) -> u64 {
        let code = SLOT.get();
        if let Some(shards) = self.shards.get() {
            if let Some(shard) = shards.get(code.wrapping_sub(1) as usize) {
                let counter = &shard.counts[ADMITTED];
                let n = counter.load(Ordering::Relaxed) + 1;
                counter.store(n, Ordering::Relaxed);
                return n;
            }
        }
        self.admit_slow()
    }

    #[cold]
    #[inline(never)]
    fn admit_slow(&self) -> u64 {
        let code = thread_code();
        let shards = self
            .shards
            .get_or_init(|| (0..thread_slots()).map(|_| Shard::default()).collect());
        let counter = &shards[shard_index(code)].counts[ADMITTED];
        if code & SHARED == 0 {
            let n = counter.load(Ordering::Relaxed) + 1;
            counter.store(n, Ordering::Relaxed);
            n
        } else {
            counter.fetch_add(1, Ordering::Relaxed) + 1
        }
    }

    /// A name built at run time (`shared`) as this thread's slot keeps it: a
    /// copy of its text made on the slot's first use, so that the reference
    /// counts of the names that rejections and timeouts carry are on a line
    /// this thread alone writes, not on the one line of the breaker's own
    /// `Arc<str>` that every thread would write twice per rejection (once
    /// cloning it, once dropping the clone). A thread without a slot of its
    /// own shares a shared slot's copy; before the breaker's first counted
    /// call there are no slots, and `shared` itself is cloned.
    #[inline(never)]
    pub(crate) fn thread_name(&self, shared: &Arc<str>) -> Arc<str> {
        match self.shards.get() {
            Some(shards) => Arc::clone(
                shards[shard_index(thread_code())]
                    .name
                    .get_or_init(|| Arc::from(&**shared)),
            ),
            None => Arc::clone(shared),
        }
    }

    /// Counts a call's outcome.
    #[inline]
    pub(crate) fn outcome(&self, outcome: Outcome) {
        self.add(match outcome {
            Outcome::Success => SUCCESS,
            Outcome::Failure => FAILURE,
            Outcome::Neutral => NEUTRAL,
        });
    }

    /// Successes and failures so far, summed over the shards: the calls a
    /// rate window numbers (see the `window` module). Counts made while this
    /// runs may or may not be in it; this thread's own always are.
    pub(crate) fn recorded(&self) -> u64 {
        self.shards
            .get()
            .into_iter()
            .flat_map(|s| s.iter())
            .fold(0, |sum, shard| {
                sum + shard.counts[SUCCESS].load(Ordering::Relaxed)
                    + shard.counts[FAILURE].load(Ordering::Relaxed)
            })
    }

    /// The totals so far: each counter summed over the shards. Counts made
    /// while this runs may or may not be in it.
    pub(crate) fn sums(&self) -> Sums {
        let mut sums = Sums::default();
        for shard in self.shards.get().into_iter().flat_map(|s| s.iter()) {
            for (sum, counter) in sums.counts.iter_mut().zip(&shard.counts) {
                *sum += counter.load(Ordering::Relaxed);
            }
        }
        sums
    }
}

/// The running totals a [`Snapshot`](crate::Snapshot) shows.
pub(crate) struct Running {
    pub(crate) calls: u64,
    pub(crate) successes: u64,
    pub(crate) failures: u64,
    pub(crate) neutral: u64,
    pub(crate) slow: u64,
    pub(crate) rejected: u64,
    pub(crate) timeouts: u64,
    pub(crate) would_reject: u64,
    pub(crate) shed: u64,
    pub(crate) timed_started: u64,
    pub(crate) timed_ended: u64,
    pub(crate) transitions: u64,
    pub(crate) opened_at: Option<SystemTime>,
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    /// A shared code always names a shard after the owned ones, so an atomic
    /// add never lands on a line some thread increments with a plain store.
    #[test]
    fn shared_codes_never_name_an_owned_slot() {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..4 * SHARED_SHARDS {
            let code = shared_code();
            assert_ne!(code & SHARED, 0);
            let index = (code & !SHARED) - 1;
            assert!(
                (slots()..slots() + SHARED_SHARDS).contains(&index),
                "{index}"
            );
            seen.insert(index);
        }
        assert_eq!(seen.len(), SHARED_SHARDS as usize, "round-robin");
    }

    /// Tests that hand out slots run one at a time.
    static SLOTS_TEST: Mutex<()> = Mutex::new(());

    /// A thread that exits gives its slot back: a pool that replaces its
    /// threads one by one, far more of them than there are slots, still
    /// counts on slots of its own.
    #[test]
    fn a_thread_that_exits_gives_its_slot_to_the_next() {
        let _one_at_a_time = SLOTS_TEST.lock().unwrap_or_else(PoisonError::into_inner);
        for _ in 0..3 * slots() {
            std::thread::spawn(assign).join().unwrap();
        }
        let code = std::thread::spawn(assign).join().unwrap();
        assert_eq!(code & SHARED, 0, "an owned slot, not a shared one");
        assert!(code <= slots());
    }

    /// Threads running at once count on lines of their own: there are at
    /// least 8 owned slots, so of 8 threads alive together several own one
    /// (all of them but those other tests of this binary hold at the time;
    /// "several" keeps the test to what no neighbour can take away), and
    /// the slot index each is given (`thread_slot`, a bulkhead's stripe)
    /// is its own.
    #[test]
    fn threads_alive_at_once_each_own_a_slot() {
        let _one_at_a_time = SLOTS_TEST.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(slots() >= 8, "{}", slots());
        let together = std::sync::Barrier::new(8);
        let codes: Vec<(u32, usize)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        let code = thread_code();
                        together.wait();
                        (code, thread_slot())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut owned: Vec<usize> = codes
            .iter()
            .filter(|&&(code, _)| code & SHARED == 0)
            .map(|&(_, slot)| slot)
            .collect();
        assert!(owned.len() >= 2, "{codes:?}");
        owned.sort_unstable();
        owned.dedup();
        assert_eq!(
            owned.len(),
            codes.iter().filter(|c| c.0 & SHARED == 0).count(),
            "{codes:?}"
        );
        for (code, slot) in codes {
            assert_eq!(slot, shard_index(code), "{code:#x}");
        }
    }

    /// Threads that share a slot (more of them alive than there are owned
    /// slots) count every call they admit: on a shared slot the count is
    /// an atomic add, where a thread on a slot of its own stores.
    #[test]
    fn calls_admitted_on_shared_slots_are_all_counted() {
        const CALLS: u64 = 500_000;
        let _one_at_a_time = SLOTS_TEST.lock().unwrap_or_else(PoisonError::into_inner);
        let threads = (slots() + 4 * SHARED_SHARDS) as usize;
        let totals = Totals::new();
        let together = std::sync::Barrier::new(threads);
        let shared = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    if thread_code() & SHARED != 0 {
                        shared.fetch_add(1, Ordering::Relaxed);
                    }
                    together.wait();
                    for _ in 0..CALLS {
                        totals.admit();
                    }
                });
            }
        });
        assert!(shared.into_inner() >= 2 * SHARED_SHARDS as usize);
        assert_eq!(totals.sums().counts[ADMITTED], threads as u64 * CALLS);
    }

    /// A thread's first call on a breaker's totals takes the slow way (the
    /// shards are made then), and is counted there on the thread's own
    /// slot as on a shared one. The thread here is given slot 0 by hand:
    /// in a process whose other threads hold every owned slot, as the test
    /// binary's may, `assign` would give it a shared one.
    #[test]
    fn the_first_call_on_a_threads_own_slot_is_counted() {
        on_a_thread_with_slot(1, || {
            let totals = Totals::new();
            assert_eq!(totals.admit(), 1, "the slow way");
            assert_eq!(totals.admit(), 2, "the fast way");
            assert_eq!(SLOT.get(), 1, "still slot 0");
            assert_eq!(totals.sums().counts[ADMITTED], 2);
        });
    }

    /// Runs `test` on a new thread whose slot code is `code`, given by
    /// hand (no slot is taken from, or given back to, the free list).
    fn on_a_thread_with_slot(code: u32, test: impl FnOnce() + Send + 'static) {
        std::thread::spawn(move || {
            SLOT.set(code);
            test();
        })
        .join()
        .unwrap();
    }

    /// On a shared slot every call takes the slow way, and returns the
    /// count of that slot's admitted calls, as `admit` says: the count
    /// graded shedding paces its look for a new period by. The thread here
    /// is given the first shared slot by hand.
    #[test]
    fn calls_on_a_shared_slot_return_that_slots_count() {
        on_a_thread_with_slot(SHARED | (slots() + 1), || {
            let totals = Totals::new();
            let counts: Vec<u64> = (0..3).map(|_| totals.admit()).collect();
            assert_eq!(counts, [1, 2, 3]);
            assert_eq!(totals.sums().counts[ADMITTED], 3);
        });
    }

    /// Owned slots stop at `slots()`: later threads get shared codes, and the
    /// counter handing them out does not creep on.
    #[test]
    fn owned_slots_are_never_handed_out_twice() {
        let _one_at_a_time = SLOTS_TEST.lock().unwrap_or_else(PoisonError::into_inner);
        let n = slots() as usize;
        let stop = std::sync::Barrier::new(n + 9);
        let codes: Vec<u32> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n + 8)
                .map(|_| {
                    s.spawn(|| {
                        let code = assign();
                        stop.wait();
                        code
                    })
                })
                .collect();
            stop.wait();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let owned: Vec<u32> = codes.iter().copied().filter(|c| c & SHARED == 0).collect();
        let mut distinct = owned.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), owned.len(), "{codes:?}");
        assert!(owned.len() <= n);
        assert!(codes.len() - owned.len() >= 8, "{codes:?}");
        assert!(NEXT.load(Ordering::Relaxed) <= slots());
    }
}
