//! A family's members and the leases calls hold them by: each member's
//! lease counters, one per stripe of threads, and the handshake between a
//! lease being taken and its member being retired for eviction.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::core::breaker::Breaker;
use crate::policy::bulkhead::Bulkhead;

/// Threads spread their leases over this many counters per member, each
/// on its own cache line, so that two threads calling through one key do
/// not write the same line (threads take them in turn: the fifth thread
/// shares the first one's).
pub(crate) const STRIPES: usize = 4;

/// One of a member's lease counters, alone on its cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(super) struct Stripe(pub(super) AtomicUsize);

/// One key's breaker in a [`Family`](super::Family), with its concurrency limit when the
/// family has one. Derefs to its [`Breaker`].
#[derive(Debug)]
pub struct Member {
    pub(super) breaker: Breaker,
    pub(super) bulkhead: Option<Bulkhead>,
    /// The family's insertion stamp when this key was last used.
    pub(super) used: AtomicU64,
    /// [`Lease`]s of this member not yet dropped, counted on the stripe of
    /// the thread that took each one: an evicted member is freed once every
    /// stripe reads zero.
    pub(super) leases: [Stripe; STRIPES],
    /// Set (for good) before the member leaves the map, or for a moment
    /// while the family checks that no lease of it is out: a lease that
    /// reads it set lets go and looks the key up again.
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
        self.bulkhead.as_ref()
    }

    /// Counts a call held through an `Arc` of this member (a tower
    /// response future, a middleware request) as a lease, so the member is
    /// not evicted under it; returns the stripe to give back to
    /// [`release`](Self::release).
    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    pub(crate) fn hold(&self) -> usize {
        let stripe = stripe();
        // Sequentially consistent, as a lease's count (see `Lease::take`).
        self.leases[stripe].0.fetch_add(1, Ordering::SeqCst);
        stripe
    }

    /// Ends a [`hold`](Self::hold).
    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    pub(crate) fn release(&self, stripe: usize) {
        self.leases[stripe].0.fetch_sub(1, Ordering::Release);
    }

    /// Whether no lease of this member is out. Only meaningful once no new
    /// lease can be taken (the member is out of the map for good).
    pub(super) fn unleased(&self) -> bool {
        self.leases
            .iter()
            .all(|stripe| stripe.0.load(Ordering::SeqCst) == 0)
    }

    /// Marks the member retired if no lease of it is out, atomically with
    /// respect to leases being taken: either a lease counted itself first
    /// and this returns `false` (the mark is taken back), or every lease
    /// taken from now on reads the mark and lets go (see [`Lease::take`]).
    pub(super) fn retire(&self) -> bool {
        self.retired.store(true, Ordering::SeqCst);
        if self.unleased() {
            return true;
        }
        self.retired.store(false, Ordering::SeqCst);
        false
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
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

/// The calling thread's lease stripe.
#[inline]
pub(super) fn stripe() -> usize {
    STRIPE.with(|stripe| match stripe.get() {
        usize::MAX => {
            let mine = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
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
    stripe: NonNull<AtomicUsize>,
    _family: PhantomData<&'f ()>,
}

impl Lease<'_> {
    /// Counts a lease of `member`, found under the insertion lock (a
    /// stored member cannot be retired meanwhile), or the family's overflow
    /// member, which lives as long as the family.
    #[inline]
    pub(super) fn new(member: &Arc<Member>) -> Self {
        let stripe = &member.leases[stripe()].0;
        stripe.fetch_add(1, Ordering::SeqCst);
        Lease {
            member: NonNull::from(&**member),
            stripe: NonNull::from(stripe),
            _family: PhantomData,
        }
    }

    /// Counts a lease of `member`, found in the map under an epoch guard
    /// the caller still holds; `None` when the member is being evicted.
    ///
    /// Sound by two guarantees: scc's, that a value [`peek`]ed in a
    /// `HashIndex` stays allocated while the guard lives (so the count and
    /// the mark can be touched here whatever happens), and the single total
    /// order of sequentially consistent operations. The family marks a
    /// member retired and then reads its counts ([`Member::retire`]); this
    /// counts and then reads the mark. In the total order either the count
    /// comes before the family's reads, which then see it (the member is
    /// not evicted, or not freed while the lease lives), or the mark comes
    /// before this read, which sees it: the lease is taken back and never
    /// used.
    ///
    /// [`peek`]: scc::HashIndex::peek
    #[inline]
    pub(super) fn take(member: &Arc<Member>) -> Option<Self> {
        let lease = Self::new(member);
        if member.retired.load(Ordering::SeqCst) {
            // Dropping it gives the count back.
            drop(lease);
            return None;
        }
        Some(lease)
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
        let stripe = unsafe { self.stripe.as_ref() };
        stripe.fetch_sub(1, Ordering::Release);
    }
}

impl fmt::Debug for Lease<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("member", &self.name())
            .finish()
    }
}
