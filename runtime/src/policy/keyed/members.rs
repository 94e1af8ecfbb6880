//! A family's members and the leases calls hold them by: each member's
//! lease counters, one per stripe of threads, and the handshake between a
//! lease being taken and its member being retired for eviction.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize as StdAtomicUsize};

use crate::core::breaker::Breaker;
use crate::policy::bulkhead::Bulkhead;
// loom's under `--cfg loom`, for the model of the handshake below.
use crate::sync::{AtomicBool, AtomicUsize, Ordering};

/// Threads spread their leases over this many counters per member, each
/// on its own cache line, so that two threads calling through one key do
/// not write the same line (threads take them in turn: the fifth thread
/// shares the first one's).
pub(crate) const STRIPES: usize = 4;

/// One of a member's lease counters, alone on its cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Stripe(AtomicUsize);

/// A member's lease counts, one per stripe of threads, and with its
/// retired mark (kept beside them in the member, off the stripes' cache
/// lines, which would pad this type by a line) the handshake between a
/// lease being taken ([`take`](Self::take))
/// and the family retiring the member to evict it
/// ([`retire`](Self::retire)). Whatever their interleaving, a lease is
/// never held of a retired member: either the lease lets go, or the
/// family keeps the member (and picks another).
///
/// Why, in the C++/Rust memory model, with no sequentially consistent
/// operation: `take` counts itself on its stripe with a read-modify-write
/// (acquire-release) and then loads the mark; `retire` stores the mark and
/// then reads every stripe with a read-modify-write (`fetch_add(0)`,
/// acquire-release), not a load. Read-modify-writes of one stripe are
/// totally ordered, and each reads the value the one before it wrote.
/// So on the lease's stripe either
///
/// - the lease's count comes first: `retire`'s read of that stripe sees
///   it (or a later value that still includes it, the lease being held),
///   and the member is not retired (the mark is taken back); or
/// - `retire`'s read comes first: it is a release, and the lease's count
///   an acquire that reads its value or a later one in its release
///   sequence (every later change of a stripe is a read-modify-write), so
///   the mark's store, made before `retire`'s read, happens before the
///   lease loads the mark, which reads it: the lease lets go.
///
/// A plain load in `retire` would need both sides sequentially consistent
/// (a store-buffering handshake), which loom cannot check (it treats
/// `SeqCst` accesses as acquire-release); written this way the argument
/// needs acquire and release only, and `runtime/tests/loom.rs` checks it
/// on this very type (`a_lease_taken_while_its_member_is_retired_…`),
/// under `RUSTFLAGS="--cfg loom"` with the `keyed` feature. The churn tests
/// of `runtime/tests/behaviour/keyed.rs`
/// (`a_lease_never_holds_an_evicted_member`,
/// `leases_on_two_threads_sharing_keys_while_a_third_evicts`) run it on
/// real threads. The cost: `take` is what it was (a read-modify-write on
/// the thread's own stripe and a load); `retire`, on the eviction path
/// only, writes each stripe's line once.
///
/// Public only under loom, for its model.
#[derive(Debug, Default)]
pub struct Leases {
    stripes: [Stripe; STRIPES],
}

impl Leases {
    /// No lease out.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts a lease on `stripe` (below [`STRIPES`]) whatever the mark:
    /// for a member that cannot be retired meanwhile (found under the
    /// insertion lock, or the overflow member). Give it back with
    /// [`release`](Self::release).
    #[inline]
    pub fn count(&self, stripe: usize) {
        self.stripes[stripe].0.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts a lease on `stripe` unless the member is `retired`: `false`
    /// (and nothing counted) when it is.
    #[inline]
    pub fn take(&self, retired: &AtomicBool, stripe: usize) -> bool {
        self.count(stripe);
        if retired.load(Ordering::Acquire) {
            self.release(stripe);
            return false;
        }
        true
    }

    /// Gives back a lease counted on `stripe`.
    #[inline]
    pub fn release(&self, stripe: usize) {
        self.stripes[stripe].0.fetch_sub(1, Ordering::Release);
    }

    /// Marks the member `retired` if no lease of it is out: `false` (the
    /// mark taken back) when one is.
    pub fn retire(&self, retired: &AtomicBool) -> bool {
        retired.store(true, Ordering::Relaxed);
        // Read-modify-writes, not loads: see the type's docs.
        let unleased = self
            .stripes
            .iter()
            .all(|stripe| stripe.0.fetch_add(0, Ordering::AcqRel) == 0);
        if !unleased {
            retired.store(false, Ordering::Relaxed);
        }
        unleased
    }

    /// Whether no lease is out. Meaningful once no new lease can be taken
    /// (the member is retired); acquires what the last lease did.
    pub fn unleased(&self) -> bool {
        self.stripes
            .iter()
            .all(|stripe| stripe.0.load(Ordering::Acquire) == 0)
    }
}

/// One key's breaker in a [`Family`](super::Family), with its concurrency limit when the
/// family has one. Derefs to its [`Breaker`].
#[derive(Debug)]
pub struct Member {
    pub(super) breaker: Breaker,
    /// Shared with its breaker, which tells it the limit in force.
    pub(super) bulkhead: Option<Arc<Bulkhead>>,
    /// The family's insertion stamp when this key was last used.
    pub(super) used: AtomicU64,
    /// [`Lease`]s of this member not yet dropped, counted on the stripe of
    /// the thread that took each one (an evicted member is freed once every
    /// stripe reads zero).
    pub(super) leases: Leases,
    /// Set (for good) before the member leaves the map, or for a moment
    /// while the family checks that no lease of it is out: a lease that
    /// reads it set lets go and looks the key up again (see [`Leases`]).
    pub(super) retired: AtomicBool,
}

impl Member {
    /// The key's breaker (what a member derefs to).
    #[must_use]
    pub(crate) fn breaker(&self) -> &Breaker {
        &self.breaker
    }

    /// The key's concurrency limit, when the family was given
    /// [`max_concurrent`](FamilyBuilder::max_concurrent).
    #[must_use]
    pub(crate) fn bulkhead(&self) -> Option<&Bulkhead> {
        self.bulkhead.as_deref()
    }

    /// Counts a call held through an `Arc` of this member (a tower
    /// response future, a middleware request) as a lease, so the member is
    /// not evicted under it; returns the stripe to give back to
    /// [`release`](Self::release).
    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    pub(crate) fn hold(&self) -> usize {
        let stripe = stripe();
        self.leases.count(stripe);
        stripe
    }

    /// Ends a [`hold`](Self::hold).
    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    pub(crate) fn release(&self, stripe: usize) {
        self.leases.release(stripe);
    }

    /// Whether no lease of this member is out. Only meaningful once no new
    /// lease can be taken (the member is out of the map for good).
    pub(super) fn unleased(&self) -> bool {
        self.leases.unleased()
    }

    /// Marks the member retired if no lease of it is out, atomically with
    /// respect to leases being taken: either a lease counted itself first
    /// and this returns `false` (the mark is taken back), or every lease
    /// taken from now on reads the mark and lets go (see [`Leases`]).
    pub(super) fn retire(&self) -> bool {
        self.leases.retire(&self.retired)
    }
}

impl Deref for Member {
    type Target = Breaker;

    fn deref(&self) -> &Breaker {
        &self.breaker
    }
}

thread_local! {
    /// The lease stripe of this thread, `usize::MAX` until its first lease.
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Hands out stripes to threads in turn.
static NEXT_STRIPE: StdAtomicUsize = StdAtomicUsize::new(0);

/// The calling thread's lease stripe.
#[inline]
pub(super) fn stripe() -> usize {
    STRIPE.with(|stripe| match stripe.get() {
        usize::MAX => {
            let mine = NEXT_STRIPE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % STRIPES;
            stripe.set(mine);
            mine
        }
        mine => mine,
    })
}

/// One key's member, held for as long as a call runs through it: what
/// `#[circuit_breaker(key = …)]` keeps for the call, across `.await`s too
/// (it is `Send` and `Sync`). Derefs to the [`Member`].
///
/// Taking one for an existing key writes only a counter on the calling
/// thread's own cache line (one of the member's four stripes), and
/// dropping it decrements that counter: threads sharing a key do not write
/// shared memory, unlike cloning an [`Arc`]. An evicted member's memory is
/// freed only once its last lease is dropped.
#[must_use = "a lease is the breaker of its key; drop it once the call is over"]
pub struct Lease<'f> {
    member: NonNull<Member>,
    /// The stripe of `member` this lease counted itself on.
    stripe: usize,
    _family: PhantomData<&'f ()>,
}

impl Lease<'_> {
    /// Counts a lease of `member`, found under the insertion lock (a
    /// stored member cannot be retired meanwhile), or the family's overflow
    /// member, which lives as long as the family.
    #[inline]
    pub(super) fn new(member: &Arc<Member>) -> Self {
        let stripe = stripe();
        member.leases.count(stripe);
        Self::counted(member, stripe)
    }

    /// The lease of `member` counted on `stripe`.
    #[inline]
    fn counted(member: &Arc<Member>, stripe: usize) -> Self {
        Lease {
            member: NonNull::from(&**member),
            stripe,
            _family: PhantomData,
        }
    }

    /// Counts a lease of `member`, found in the map under an epoch guard
    /// the caller still holds; `None` when the member is being evicted.
    ///
    /// Sound by two guarantees: scc's, that a value [`peek`]ed in a
    /// `HashIndex` stays allocated while the guard lives (so the count and
    /// the mark can be touched here whatever happens), and the handshake
    /// of [`Leases`]: the lease is counted and then reads the mark, the
    /// family marks the member retired and then reads its counts, and
    /// either the family sees the count (the member is not evicted, or not
    /// freed while the lease lives) or the lease sees the mark (it is
    /// taken back and never used).
    ///
    /// [`peek`]: scc::HashIndex::peek
    #[inline]
    pub(super) fn take(member: &Arc<Member>) -> Option<Self> {
        let stripe = stripe();
        member
            .leases
            .take(&member.retired, stripe)
            .then(|| Self::counted(member, stripe))
    }
}

// SAFETY: a `Lease` gives out only `&Member`, and `Member` is `Sync`; the
// member it points to stays allocated until the lease's count is dropped
// (see `Inner::reclaim`), from whichever thread.
#[allow(unsafe_code)]
unsafe impl Send for Lease<'_> {}
// SAFETY: as above: shared access to a `Sync` member.
#[allow(unsafe_code)]
unsafe impl Sync for Lease<'_> {}

impl Deref for Lease<'_> {
    type Target = Member;

    #[inline]
    fn deref(&self) -> &Member {
        // SAFETY: the lease is counted on one of the member's stripes, and
        // the family frees a retired member only once every stripe reads
        // zero, which cannot happen before this lease is dropped; a member
        // found in the map was not retired when the lease was counted (see
        // `Lease::take`), and one found under the insertion lock cannot be
        // retired before the lock is released. The overflow member lives as
        // long as the family the lease borrows.
        #[allow(unsafe_code)]
        unsafe {
            self.member.as_ref()
        }
    }
}

impl Drop for Lease<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: as in `deref`: still counted, so still allocated. After
        // this decrement the member is not touched again.
        #[allow(unsafe_code)]
        let member = unsafe { self.member.as_ref() };
        member.leases.release(self.stripe);
    }
}

impl fmt::Debug for Lease<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("member", &self.name())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::super::Family;

    /// A lease of a stored key takes no lock: it is given while another
    /// thread holds the family's insertion lock (as an insertion that is
    /// evicting does).
    #[test]
    fn a_stored_keys_lease_does_not_wait_for_the_insertion_lock() {
        let family: Family<String> = Family::builder(
            crate::Breaker::builder()
                .name("members.lockfree")
                .max_keys(4),
        )
        .build()
        .unwrap();
        drop(family.lease("a"));
        let held = family.inner.lock();
        let (leased, given) = mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let lease = family.lease("a");
                leased.send(lease.name().to_owned()).unwrap();
            });
            let name = given.recv_timeout(Duration::from_secs(30));
            drop(held);
            assert_eq!(name.as_deref(), Ok("members.lockfree[a]"));
        });
    }
}
