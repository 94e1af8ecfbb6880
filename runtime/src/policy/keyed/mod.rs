//! One breaker per key: a bounded family of breakers built from one
//! configuration (feature `keyed`).
//!
//! A client talking to three replicas wants three breakers, not one: a sick
//! replica must not refuse calls to the healthy two. A [`Family`] creates the
//! breaker of a key (a host, a tenant, a `(region, shard)` pair) on the first
//! call with that key, from the family's settings, and names it
//! `family[key]`.
//!
//! # Cost
//!
//! Looking up an existing key is lock-free and allocates nothing: one probe
//! of a concurrent hash map (scc's `HashIndex`, with foldhash) under an
//! epoch guard, and, at most once between two insertions, a relaxed store of
//! the key's recency stamp. Two ways to hold the member found:
//!
//! - [`Family::lease`] (what `#[circuit_breaker(key = …)]` uses) returns a
//!   [`Lease`], `Send` and `Sync`, held for the call, across `.await`s too.
//!   Taking and dropping it increments and decrements a counter on the
//!   calling thread's own cache line (each member has four of them,
//!   threads take them in turn), so threads sharing a key do not write a
//!   line the other reads.
//! - [`Family::get`] hands out an [`Arc`]: one reference-count increment
//!   and decrement on a count every thread using the key writes.
//!
//! A new key takes the family's insertion lock, so that each key's breaker is
//! built exactly once however many threads ask for it at the same moment.
//!
//! Looking a member up by its label, where the key's type is not at hand
//! ([`registry::get`](crate::ops::registry::get) with `family[label]`,
//! [`FamilyRef::member`](crate::ops::registry::FamilyRef::member),
//! [`FamilyRef::callable`]), is one probe of a second index of the stored
//! members, by label, as lock-free as the first: O(1) whatever the
//! family's size. Only a label with no stored member goes on to the
//! members asked for by name before their key's first call, under a lock.
//!
//! # Bounded
//!
//! A family holds at most `max_keys` breakers (default 1024).
//! When it is full, a new key takes the place of an *evictable* member:
//!
//! - no call runs through it: no [`Lease`] of it is out (the attribute's
//!   calls, a tower layer's and the reqwest middleware's count as leases);
//!   a member is never evicted under a call in flight, so the call's
//!   outcome and its concurrency limit stay with the key. A call made
//!   through an [`Arc`] from [`Family::get`] is not counted: take a
//!   [`Family::lease`] for the call instead. A lease taken at the moment
//!   its member is picked for eviction either keeps it (the family picks
//!   another) or finds it being evicted and waits for the key's new
//!   member: a lease never runs on an evicted breaker. (The tower layer
//!   and the middleware find a key's member, then hold it: an eviction
//!   between the two lets that one call finish on the evicted breaker.);
//! - and it is Closed, or it is Open or HalfOpen but nobody has called it
//!   for the trial lease (`trial_lease`, by default ten times `recovery`
//!   and at least 60 s) since its open time, or its latest trial's lease,
//!   ended: the key is gone (a replica that died while open), and
//!   forgetting its breaker forgets nothing a caller still relies on. An
//!   Open member that callers keep trying is not evictable;
//! - and it is not under manual control ([`Breaker::set_mode`] and the
//!   like are kept).
//!
//! The member picked:
//!
//! 1. Eight members are drawn at random (with replacement; every
//!    member, in order, when the family holds at most 8), and the least
//!    recently used evictable one among them is evicted. Recency is a stamp
//!    that advances with each insertion, so keys used since the last
//!    insertion tie.
//! 2. If none of the sampled members is evictable, a hand sweeps the family
//!    from where its last sweep stopped and evicts the first evictable
//!    member it reaches.
//! 3. If the sweep finds none, the new key's calls run through the family's
//!    **overflow breaker**, `family[*]`, which every such key shares, with
//!    its own concurrency limit when the family has `max_concurrent`: a key
//!    the family has no room for is still protected, and its limit still
//!    holds (shared with the other keys in the same case). These calls are
//!    counted by [`FamilyStats::unstored`]; the overflow breaker is listed with
//!    the members, in [`FamilyRef::members`], the registry and metrics. With
//!    the `tracing` feature a `WARN` (target `failfast`) says so once, when
//!    the family becomes full, not per call. For the next second (on the
//!    family's clock) new keys go to the overflow breaker without sweeping
//!    again; then the next new key looks again.
//!
//! So a miss into a full family reads 8 members when one of them is
//! evictable (O(1), whatever `max_keys`), and up to every member at most
//! once a second otherwise. Like Redis's sampled LRU, the victim is one of
//! the least recently used rather than the very least: with 8 samples it is
//! older than about 9 in 10 of the evictable members.
//!
//! An evicted member leaves the map at once; its memory is freed once no
//! epoch guard that could have found it remains and every lease of it has
//! been dropped. The evicted members still waiting for that are looked at
//! when their number has doubled since the last look, so insertions stay
//! O(1) amortised however many of them are still leased, and at most
//! `max(16, 2 × those still leased)` wait at once. A key's memory is about
//! 1.7 KiB (its breaker, its lease stripes, its name, its entries in the
//! map and the index of labels), measured in `benches/keyed.rs`: a family holds at most
//! `max_keys + 1` members (the overflow breaker included), plus the evicted
//! ones still leased.
//!
//! # Names
//!
//! A member is named `family[label]`, the label written by [`Key::label`].
//! The parts of a tuple key are joined by `", "`, each with `\` and `,`
//! escaped by a backslash, so two keys never share a name: `("a, b", "c")`
//! is `family[a\, b, c]` and `("a", "b, c")` is `family[a, b\, c]`. A key
//! whose label is `*` is written `family[\*]`, `family[*]` being the
//! overflow breaker.
//!
//! # Why scc's `HashIndex`
//!
//! Its reads take no lock and write nothing shared: an epoch guard
//! (thread-local) and a probe. Measured beside papaya's `HashMap` (also
//! lock-free for reads) in `benches/keyed.rs`, it looked keys up faster on
//! one thread and on two (run that bench for the figures). Writes take a
//! bucket lock, which only the insertion path (already serialised here)
//! uses.
//!
//! ```
//! use failfast_runtime::{Breaker, Family, State};
//!
//! let hosts: Family<String> = Family::builder(Breaker::builder().name("upstream").threshold(2))
//!     .max_keys(64)
//!     .build()?;
//!
//! for _ in 0..2 {
//!     let _ = hosts.get("10.0.0.3").call(|| Err::<(), _>("connection refused"));
//! }
//! assert_eq!(hosts.get("10.0.0.3").state(), State::Open);
//! assert_eq!(hosts.get("10.0.0.1").state(), State::Closed);
//! assert_eq!(hosts.get("10.0.0.3").name(), "upstream[10.0.0.3]");
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```

use std::cell::Cell;
use std::fmt::{self, Write as _};
use std::hash::{BuildHasher as _, Hash, Hasher};
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::core::breaker::{Breaker, Budget};
use crate::core::clock::Clock;
use crate::core::config::{Builder, Config};
use crate::core::error::ConfigError;
use crate::core::name::Name;
use crate::policy::bulkhead::{Bulkhead, Limit};

pub(crate) mod declared;
pub(crate) use declared::{Slot, SlotView};

/// How many breakers a family holds unless told otherwise.
pub(crate) const DEFAULT_MAX_KEYS: usize = failfast_rules::DEFAULT_MAX_KEYS as usize;

/// How many members a full family samples to pick the one a new key evicts.
pub(crate) const SAMPLE: usize = 8;

/// The ejection budget of a family with `max_ejection_percent`: `None` at
/// 100 % (or more), which sets none.
fn budget_of(max_ejection_percent: u8) -> Option<Arc<Budget>> {
    (u32::from(max_ejection_percent) < failfast_rules::MAX_EJECTION_PERCENT)
        .then(|| Budget::new(max_ejection_percent))
}

/// A value a [`Family`] can be keyed by: hashed and compared as it is,
/// turned into an owned key ([`Key::Owned`]) only when its breaker is
/// created.
///
/// Implemented for `str` and `String` (owned as `String`), the integers,
/// `bool`, `char`, `IpAddr`, `SocketAddr`, references to any of them, and
/// tuples of up to four of them (`(&str, u16)` is owned as `(String, u16)`).
/// A type of your own implements it in a few lines:
///
/// ```
/// use failfast_runtime::Key;
///
/// #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
/// enum Region { Eu, Us }
///
/// impl Key for Region {
///     type Owned = Region;
///     fn to_key(&self) -> Region { *self }
///     fn matches(&self, owned: &Region) -> bool { self == owned }
///     fn label(&self, out: &mut String) { out.push_str(match self { Region::Eu => "eu", Region::Us => "us" }) }
/// }
/// ```
///
/// The one rule: a value and its owned key hash alike (as `str` and
/// `String` do), since the family looks up the value without turning it
/// into an owned key.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot key a family of breakers",
    label = "this key has type `{Self}`",
    note = "a key is a string, an integer, a `bool`, a `char`, an `IpAddr`/`SocketAddr`, a reference to one or a tuple of them, e.g. `key = self.host.as_str()`; for a type of your own, implement `failfast::Key`"
)]
pub trait Key: Hash {
    /// What the family stores: `String` for a `str`, the value itself for
    /// an integer.
    type Owned: Clone + Hash + Eq + Send + Sync + 'static;
    /// The owned key, made once per key, when its breaker is created.
    fn to_key(&self) -> Self::Owned;
    /// Whether `self` is the key `owned`.
    fn matches(&self, owned: &Self::Owned) -> bool;
    /// Writes the key as it appears in the breaker's name, `family[label]`.
    fn label(&self, out: &mut String);
}

impl Key for str {
    type Owned = String;
    fn to_key(&self) -> String {
        self.to_owned()
    }
    fn matches(&self, owned: &String) -> bool {
        self == owned
    }
    fn label(&self, out: &mut String) {
        out.push_str(self);
    }
}

/// Hashes as `str` does, so a `String` finds the key a `&str` made.
impl Key for String {
    type Owned = String;
    fn to_key(&self) -> String {
        self.clone()
    }
    fn matches(&self, owned: &String) -> bool {
        Key::matches(self.as_str(), owned)
    }
    fn label(&self, out: &mut String) {
        Key::label(self.as_str(), out);
    }
}

impl<T: Key + ?Sized> Key for &T {
    type Owned = T::Owned;
    fn to_key(&self) -> T::Owned {
        (**self).to_key()
    }
    fn matches(&self, owned: &T::Owned) -> bool {
        (**self).matches(owned)
    }
    fn label(&self, out: &mut String) {
        (**self).label(out);
    }
}

macro_rules! owned_as_itself {
    ($($t:ty),*) => {$(
        impl Key for $t {
            type Owned = $t;
            fn to_key(&self) -> $t {
                *self
            }
            fn matches(&self, owned: &$t) -> bool {
                self == owned
            }
            fn label(&self, out: &mut String) {
                let _ = write!(out, "{self}");
            }
        }
    )*};
}

owned_as_itself!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    bool,
    char,
    std::net::IpAddr,
    std::net::Ipv4Addr,
    std::net::Ipv6Addr,
    std::net::SocketAddr
);

macro_rules! tuples {
    ($(($($t:ident $i:tt),+)),*) => {$(
        impl<$($t: Key),+> Key for ($($t,)+) {
            type Owned = ($($t::Owned,)+);
            fn to_key(&self) -> Self::Owned {
                ($(self.$i.to_key(),)+)
            }
            fn matches(&self, owned: &Self::Owned) -> bool {
                $(self.$i.matches(&owned.$i))&&+
            }
            fn label(&self, out: &mut String) {
                let mut part = String::new();
                $(
                    if $i > 0 {
                        out.push_str(", ");
                    }
                    part.clear();
                    self.$i.label(&mut part);
                    escape_part(&part, out);
                )+
            }
        }
    )*};
}

tuples!((A 0, B 1), (A 0, B 1, C 2), (A 0, B 1, C 2, D 3));

/// Writes one part of a tuple key's label with `\` and `,` escaped by a
/// backslash, so that the parts joined by `", "` read back one way only:
/// `("a, b", "c")` is `a\, b, c` and `("a", "b, c")` is `a, b\, c`.
fn escape_part(part: &str, out: &mut String) {
    for c in part.chars() {
        if matches!(c, '\\' | ',') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// The label of the family's overflow member, `family[*]`. A key whose own
/// label is `*` is written `\*`.
const OVERFLOW: &str = "*";

/// A borrowed key looked up in the map of owned keys.
struct Lookup<'a, Q: ?Sized>(&'a Q);

impl<Q: Key + ?Sized> Hash for Lookup<'_, Q> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl<Q: Key + ?Sized> scc::Equivalent<Q::Owned> for Lookup<'_, Q> {
    fn equivalent(&self, owned: &Q::Owned) -> bool {
        self.0.matches(owned)
    }
}

/// Threads spread their leases over this many counters per member, each
/// on its own cache line, so that two threads calling through one key do
/// not write the same line (threads take them in turn: the fifth thread
/// shares the first one's).
pub(crate) const STRIPES: usize = 4;

/// One of a member's lease counters, alone on its cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Stripe(AtomicUsize);

/// One key's breaker in a [`Family`], with its concurrency limit when the
/// family has one. Derefs to its [`Breaker`].
#[derive(Debug)]
pub struct Member {
    breaker: Breaker,
    bulkhead: Option<Bulkhead>,
    /// The family's insertion stamp when this key was last used.
    used: AtomicU64,
    /// [`Lease`]s of this member not yet dropped, counted on the stripe of
    /// the thread that took each one: an evicted member is freed once every
    /// stripe reads zero.
    leases: [Stripe; STRIPES],
    /// Set (for good) before the member leaves the map, or for a moment
    /// while the family checks that no lease of it is out: a lease that
    /// reads it set lets go and looks the key up again.
    retired: AtomicBool,
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
    fn unleased(&self) -> bool {
        self.leases
            .iter()
            .all(|stripe| stripe.0.load(Ordering::SeqCst) == 0)
    }

    /// Marks the member retired if no lease of it is out, atomically with
    /// respect to leases being taken: either a lease counted itself first
    /// and this returns `false` (the mark is taken back), or every lease
    /// taken from now on reads the mark and lets go (see [`Lease::take`]).
    fn retire(&self) -> bool {
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
fn stripe() -> usize {
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
    fn new(member: &Arc<Member>) -> Self {
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
    fn take(member: &Arc<Member>) -> Option<Self> {
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

type Map<K> = scc::HashIndex<K, Arc<Member>, foldhash::fast::RandomState>;

/// The stored members by label, read without a lock as `Map` is.
type Labels = scc::HashIndex<Box<str>, Arc<Member>, foldhash::fast::RandomState>;

/// A family's settings as changed at run time.
#[derive(Default)]
struct Tuned {
    config: Option<Config>,
    mode: Option<crate::core::breaker::Mode>,
}

impl Tuned {
    const fn new() -> Self {
        Self {
            config: None,
            mode: None,
        }
    }

    /// `declared` with the changes made since.
    fn config(&self, declared: &Config) -> Config {
        self.config.clone().unwrap_or_else(|| declared.clone())
    }

    /// Records `patch`, checked against the settings in force.
    fn change(
        &mut self,
        declared: &Config,
        patch: &crate::core::config::Patch,
    ) -> Result<(), crate::core::error::ConfigError> {
        let next = patch
            .applied_to(&self.config(declared))
            .map_err(|(key, reason)| {
                crate::core::error::ConfigError::refused(&declared.name, key, reason)
            })?;
        self.config = Some(next);
        if let Some(mode) = patch.mode {
            self.mode = Some(mode);
        }
        Ok(())
    }

    /// A member named `name`, with these settings, asking `budget` before
    /// it trips (counted once stored: see `Breaker::join_budget`).
    fn member(
        &self,
        declared: &Config,
        clock: &Clock,
        max_concurrent: Option<Limit>,
        budget: Option<&Arc<Budget>>,
        name: String,
        stamp: u64,
    ) -> Member {
        let mut config = self.config(declared);
        config.name = Name::from(name);
        let member = Member {
            breaker: Breaker::with_clock(config, clock.clone()),
            bulkhead: max_concurrent.map(Limit::bulkhead),
            used: AtomicU64::new(stamp),
            leases: Default::default(),
            retired: AtomicBool::new(false),
        };
        if let Some(budget) = budget {
            member.breaker.ask_before_opening(Arc::clone(budget));
        }
        if let Some(mode) = self.mode {
            member.breaker.set_mode(mode);
        }
        member
    }
}

/// Applies `patch` to each of `members`; the first refusal, after the
/// others changed.
fn reconfigure_each<'m>(
    members: impl IntoIterator<Item = &'m Arc<Member>>,
    patch: &crate::core::config::Patch,
) -> Result<(), crate::core::error::ConfigError> {
    let mut first = Ok(());
    for member in members {
        if let Err(refused) = member.breaker.apply(patch) {
            first = first.and(Err(refused));
        }
    }
    first
}

/// Members asked for by name before their key's first call, by label.
pub(crate) type Pending =
    std::collections::HashMap<Box<str>, Arc<Member>, foldhash::fast::FixedState>;

/// No member asked for yet.
pub(crate) const fn no_pending() -> Pending {
    // A fixed seed: the labels are the operator's, not a caller's.
    std::collections::HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0x6b65_7965_6400))
}

/// A member asked for by name before its key's first call: found among
/// `pending` by its label, or made there when `make`, the label is a key's
/// and fewer than `max_keys` wait.
fn pending_member(
    pending: &mut Pending,
    label: &str,
    max_keys: usize,
    make: impl FnOnce() -> Option<Member>,
) -> Option<Arc<Member>> {
    if let Some(found) = pending.get(label) {
        return Some(Arc::clone(found));
    }
    if label == OVERFLOW || pending.len() >= max_keys {
        return None;
    }
    let member = Arc::new(make()?);
    pending.insert(label.into(), Arc::clone(&member));
    Some(member)
}

/// The label of a member named `name` in the family `family`: what stands
/// between the brackets of `family[label]`.
fn label_in<'n>(name: &'n str, family: &str) -> Option<&'n str> {
    name.strip_prefix(family)?
        .strip_prefix('[')?
        .strip_suffix(']')
}

/// `family[label]`.
fn name_with(family: &str, label: &str) -> String {
    format!("{family}[{label}]")
}

/// Where a new key goes in the family.
enum Room {
    /// Below `max_keys`.
    Free,
    /// In place of the member in this slot.
    Evict(usize),
}

/// The fewest retired members worth a look for ones to free.
const RECLAIM_FLOOR: usize = 16;

/// How long new keys go to the overflow member without another sweep after
/// a sweep found no member to evict.
const FULL_PAUSE: u64 = 1_000_000_000;

/// Counts kept by a family, read through [`FamilyRef::stats`] (the trips
/// its ejection budget held back are counted by the budget).
#[derive(Debug, Default)]
struct Counters {
    created: AtomicU64,
    evicted: AtomicU64,
    unstored: AtomicU64,
}

/// The stored members in a dense array, the eviction sampler's state and
/// the evicted members not yet freed; guarded by the insertion lock.
struct Slots<K> {
    /// Every stored key and its member (the map holds the same ones).
    stored: Vec<(K, Arc<Member>)>,
    /// Evicted members a lease or the map may still reach.
    retired: Vec<Arc<Member>>,
    /// Where the sweep for an evictable member resumes when no sampled
    /// member can be evicted.
    hand: usize,
    /// xorshift64 state picking the sampled slots.
    random: u64,
    /// Until this time (on the family's clock) after a sweep found no
    /// member to evict, new keys go to the overflow member without another
    /// sweep; 0 when the last search found a victim.
    full_until: u64,
    /// `retired`'s length at which the next insertion looks for members to
    /// free: twice what the last look left, so each insertion costs O(1)
    /// amortised however many retired members are still leased.
    reclaim_at: usize,
}

impl<K> Slots<K> {
    fn next_random(&mut self) -> u64 {
        let mut x = self.random;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.random = x;
        x
    }
}

struct Inner<K> {
    /// The members' settings; each member's name is `name[key]`.
    config: Config,
    clock: Clock,
    max_keys: usize,
    max_concurrent: Option<Limit>,
    /// The ejection budget ([`max_ejection_percent`](FamilyBuilder::max_ejection_percent)):
    /// every member asks it before a trip from Closed, and the stored ones
    /// are counted in it. `None` at 100 %.
    budget: Option<Arc<Budget>>,
    map: Map<K>,
    /// The same members by label (`family[label]`), for the lookups that
    /// have a name and no key: the registry's, [`FamilyRef::callable`],
    /// [`FamilyRef::member`](crate::ops::registry::FamilyRef::member).
    /// Changed with `map`, under the insertion lock.
    labels: Labels,
    // Advances on each insertion; a member used since holds the current
    /// value.
    stamp: AtomicU64,
    /// Held while a key is added: each key's breaker is built once, and the
    /// stored keys (listed here) never pass `max_keys`.
    ///
    /// The family's three locks are taken in one order: `slots`, then
    /// `pending`, then `tuned` (a thread holding one takes only those after
    /// it). An insertion holds `slots` and asks `pending` for a member
    /// asked for by name, then `tuned` for the settings of a new member or
    /// of a victim; a member asked for by name is made under `pending` with
    /// `tuned`'s settings; a reconfiguration takes all three. Taken the
    /// other way round by a reconfiguration (`tuned`, then `slots`), an
    /// insertion racing it deadlocked.
    slots: Mutex<Slots<K>>,
    /// The breaker (and bulkhead) of every key that finds the family full
    /// of members it may not evict, named `family[*]`; made on first use.
    overflow: std::sync::OnceLock<Arc<Member>>,
    /// The settings new members get once the family was reconfigured
    /// ([`FamilyRef::reconfigure`](crate::ops::registry::FamilyRef::reconfigure)),
    /// and the run mode it set. The last of the family's locks: neither
    /// of the others is taken while it is held.
    tuned: Mutex<Tuned>,
    /// Members asked for by name before their key's first call (see
    /// [`registry::get`](crate::ops::registry::get)), adopted by that call.
    /// Taken after `slots` and before `tuned`.
    pending: Mutex<Pending>,
    counters: Counters,
    registered: AtomicBool,
}

/// What a keyed family counted so far, and its bound: read with
/// [`FamilyRef::stats`], on a [`Family`] or a registered family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FamilyStats {
    /// The most breakers the family keeps.
    pub max_keys: usize,
    /// Breakers created and stored (each key once, unless it was evicted
    /// and came back).
    pub created: u64,
    /// Breakers evicted to make room for new keys.
    pub evicted: u64,
    /// Calls that found the family full of breakers it may not evict, and
    /// ran through its overflow breaker `family[*]`.
    pub unstored: u64,
    /// Trips from Closed held back by the ejection budget
    /// ([`max_ejection_percent`](FamilyBuilder::max_ejection_percent)).
    pub spared: u64,
    /// Breakers stored now (the overflow breaker not counted): 0 before
    /// the first key, at most `max_keys`.
    pub stored: usize,
}

impl FamilyStats {
    pub(crate) fn of(
        max_keys: usize,
        stored: usize,
        [created, evicted, unstored, spared]: [u64; 4],
    ) -> Self {
        Self {
            max_keys,
            stored,
            created,
            evicted,
            unstored,
            spared,
        }
    }
}

/// A keyed family whatever its key type: its name, its members, what it
/// counted, and its settings. The registry hands these out
/// ([`registry::families`](crate::registry::families)); a [`Family`]
/// derefs to its own, so a typed family has these methods too.
#[derive(Clone)]
pub struct FamilyRef(pub(crate) Arc<dyn Listing>);

impl std::fmt::Debug for FamilyRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FamilyRef")
            .field("name", &self.0.name())
            .finish_non_exhaustive()
    }
}

impl FamilyRef {
    /// What the family counted so far, and its bound.
    #[must_use]
    pub fn stats(&self) -> FamilyStats {
        FamilyStats::of(self.0.max_keys(), self.0.len(), self.0.counts())
    }

    /// The family's name; its members are named `name[key]`.
    #[must_use]
    pub fn name(&self) -> Name {
        self.0.name()
    }

    /// The breakers the family holds now, in no particular order, its
    /// overflow breaker `name[*]` once used.
    #[must_use]
    pub fn members(&self) -> Vec<Arc<Member>> {
        self.0.members()
    }

    /// The keys among `labels` (as a member's name writes them:
    /// `family[label]`) whose breaker would let a call through now, in
    /// their order: a key with no breaker yet, or whose breaker is Closed,
    /// Open past its open time (the call would be its trial), or HalfOpen
    /// with a trial slot free. What a client failing over between
    /// replicas asks before each call: take the first (or the next in
    /// turn), and the sick ones are skipped without a call or a refusal.
    ///
    /// Reads each key's state; creates no breaker and takes no trial slot,
    /// so a key listed may still be refused by the time it is called (two
    /// callers racing for one trial).
    ///
    /// ```
    /// use failfast_runtime::{Breaker, Family};
    ///
    /// let replicas: Family<String> =
    ///     Family::builder(Breaker::builder().name("inventory").threshold(1)).build()?;
    /// let _ = replicas.get("b:80").call(|| Err::<(), _>("connection refused"));
    /// let up: Vec<_> = replicas.callable(["a:80", "b:80", "c:80"]).collect();
    /// assert_eq!(up, ["a:80", "c:80"]);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn callable<'k>(
        &self,
        labels: impl IntoIterator<Item = &'k str>,
    ) -> impl Iterator<Item = &'k str> {
        let family = Arc::clone(&self.0);
        labels.into_iter().filter(move |label| {
            family
                .labelled(label, false)
                .is_none_or(|member| member.breaker().admits_now())
        })
    }

    /// The settings the family gives its members now, under its own name.
    #[must_use]
    pub fn config(&self) -> Config {
        self.0.config()
    }

    /// Changes the settings of every member now held and of every member
    /// made from now on, as [`Breaker::reconfigure`] does for one breaker:
    /// checked whole against the family's settings, applied whole or not
    /// at all. A member whose own settings were changed by its name
    /// (`family[key]`) keeps them where the patch does not touch them.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the family when the patch does not fit its
    /// settings (nothing changed), or the first member whose own settings
    /// refused it (the others changed).
    pub fn reconfigure(&self, settings: &Builder) -> Result<(), ConfigError> {
        if let Some(key) = settings.fixed {
            let name = self.name();
            return Err(ConfigError::refused(&name, key, crate::core::config::FIXED));
        }
        self.apply(&settings.patch)
    }

    /// [`reconfigure`](Self::reconfigure) with the settings a patch holds.
    pub(crate) fn apply(&self, patch: &crate::core::config::Patch) -> Result<(), ConfigError> {
        self.0.reconfigure(patch)
    }
}

/// A bounded family of breakers, one per key, built from one
/// configuration; see the [module docs](self) for eviction and costs.
///
/// Cloning a family is cheap and shares its breakers. `K` is the owned key
/// type (`String`, `u64`, `(String, u16)`); look keys up by any value whose
/// [`Key::Owned`] is `K` (`&str` for `Family<String>`). A family derefs to
/// its [`FamilyRef`], the same family as the registry lists it: its name,
/// settings, members, counts ([`stats`](FamilyRef::stats)) and
/// [`reconfigure`](FamilyRef::reconfigure) are there.
pub struct Family<K> {
    inner: Arc<Inner<K>>,
    /// The same family, its key type erased: what the family derefs to.
    handle: FamilyRef,
}

impl<K> Clone for Family<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            handle: self.handle.clone(),
        }
    }
}

impl<K> Deref for Family<K> {
    type Target = FamilyRef;

    /// The family's name, members, counts and settings, and
    /// [`reconfigure`](FamilyRef::reconfigure): what a family of any key
    /// type has.
    fn deref(&self) -> &FamilyRef {
        &self.handle
    }
}

impl<K> fmt::Debug for Family<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Family")
            .field("name", &self.inner.config.name)
            .field("max_keys", &self.inner.max_keys)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Family`]: the members' settings come from a breaker
/// [`Builder`], whose name becomes the family's.
#[derive(Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct FamilyBuilder<K> {
    breaker: Builder,
    max_keys: usize,
    max_concurrent: Option<u32>,
    max_wait: Duration,
    max_ejection_percent: u8,
    _key: std::marker::PhantomData<fn() -> K>,
}

impl<K: Clone + Hash + Eq + Send + Sync + 'static> FamilyBuilder<K> {
    /// At most this many breakers are kept (default 1024);
    /// see the [module docs](self) for what happens when the family is full.
    pub fn max_keys(mut self, n: usize) -> Self {
        self.max_keys = n;
        self
    }

    /// Each key may run at most `n` calls at once (the attribute's
    /// `max_concurrent = n` beside `key`); a call past that is refused with
    /// [`Reason::ConcurrencyLimit`](crate::Reason::ConcurrencyLimit).
    pub fn max_concurrent(mut self, n: u32) -> Self {
        self.max_concurrent = Some(n);
        self
    }

    /// A call that finds every place of its key taken waits this long at
    /// most for one, in turn (the attribute's `max_wait`), with
    /// [`max_concurrent`](Self::max_concurrent)
    /// and members without an adaptive limit (`build` refuses it beside
    /// [`Builder::adaptive_concurrency`]):
    /// the attribute's calls and the reqwest middleware's requests wait;
    /// the tower layer refuses at once all the same (a service's `call`
    /// does not wait).
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// An ejection budget, as Envoy's outlier detection has: a member
    /// trips from Closed only if, after the trip, at most `percent` % of
    /// the stored members (rounded down, and at least one) are Open or
    /// HalfOpen. Of four replicas at 50 %, two may be open; of three at
    /// 50 %, one (1.5, rounded down), not two. A failure that would trip a
    /// member beyond the budget leaves it Closed, still counting (each
    /// further failure asks again), and is counted by
    /// [`FamilyStats::spared`]. The budget is read and the trip made as one
    /// decision: members failing at the same moment never open more of the
    /// family between them than it allows.
    ///
    /// Only a trip from Closed asks. A failed trial reopens as usual (its
    /// member is ejected already); a member forced open
    /// ([`Breaker::set_mode`]) or opened on a verdict reached elsewhere
    /// ([`integration::open_remote`](crate::integration::open_remote)) is
    /// not held back, and counts toward the budget while it is, as every
    /// Open or HalfOpen stored member does. The overflow breaker asks too,
    /// and is not counted.
    ///
    /// For a client failing over between replicas: when most of them
    /// fail at once, the fault is more likely the client's own (its
    /// network, its credentials) or a shared dependency's, and opening
    /// every breaker would refuse all traffic; with a budget, the rest
    /// keep being called. `percent` is from 1 to 100; 100 (the default)
    /// sets no budget.
    ///
    /// ```
    /// use failfast_runtime::{Breaker, Family, State};
    ///
    /// let replicas: Family<String> = Family::builder(Breaker::builder().name("replicas").threshold(1))
    ///     .max_ejection_percent(50)
    ///     .build()?;
    /// let all = ["a", "b", "c"];
    /// for replica in all {
    ///     let _ = replicas.get(replica).call(|| Ok::<_, ()>(()));
    /// }
    /// // Then every replica fails: the client's network is down.
    /// for replica in all {
    ///     let _ = replicas.get(replica).call(|| Err::<(), _>("connection refused"));
    /// }
    /// // 50 % of three is 1.5: one may be ejected. `b` and `c` stay Closed,
    /// // still called.
    /// assert_eq!(replicas.get("a").state(), State::Open);
    /// assert_eq!(replicas.get("b").state(), State::Closed);
    /// assert_eq!(replicas.callable(all).collect::<Vec<_>>(), ["b", "c"]);
    /// assert_eq!(replicas.stats().spared, 2);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn max_ejection_percent(mut self, percent: u8) -> Self {
        self.max_ejection_percent = percent;
        self
    }

    /// The family, once the breaker settings are valid and `max_keys` is at
    /// least 1.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the setting that cannot work.
    pub fn build(self) -> Result<Family<K>, ConfigError> {
        let broken = |v| crate::core::config::broken(v).of(self.breaker.given_name());
        failfast_rules::max_keys(self.max_keys).map_err(broken)?;
        failfast_rules::max_ejection_percent(u32::from(self.max_ejection_percent))
            .map_err(broken)?;
        if !self.max_wait.is_zero() {
            failfast_rules::max_wait(self.max_wait).map_err(broken)?;
            failfast_rules::max_wait_needs_max_concurrent(self.max_concurrent.is_some())
                .map_err(broken)?;
        }
        let (config, clock) = self.breaker.checked_with_clock()?;
        if !self.max_wait.is_zero() {
            // A wait is for a fixed number of places, as in the attribute.
            failfast_rules::max_wait_needs_fixed_limit(config.adaptive_range().is_some())
                .map_err(|v| crate::core::config::broken(v).of(&config.name))?;
        }
        Ok(Family::with_parts(
            config,
            clock,
            self.max_keys,
            Limit::of(self.max_concurrent, self.max_wait),
            budget_of(self.max_ejection_percent),
        ))
    }
}

impl<K: Clone + Hash + Eq + Send + Sync + 'static> Family<K> {
    /// A builder taking the members' settings (and the family's name) from
    /// `breaker`.
    pub fn builder(breaker: Builder) -> FamilyBuilder<K> {
        FamilyBuilder {
            breaker,
            max_keys: DEFAULT_MAX_KEYS,
            max_concurrent: None,
            max_wait: Duration::ZERO,
            // No ejection budget.
            max_ejection_percent: failfast_rules::MAX_EJECTION_PERCENT as u8,
            _key: std::marker::PhantomData,
        }
    }

    /// A family of breakers with `config`, which was checked at compile time
    /// by `#[circuit_breaker]`, and `budget` (see [`budget_of`]). `max_keys`
    /// must be at least 1.
    #[doc(hidden)]
    #[must_use]
    pub(crate) fn from_config(
        config: Config,
        max_keys: usize,
        max_concurrent: Option<Limit>,
        budget: Option<Arc<Budget>>,
    ) -> Self {
        Self::with_parts(
            config,
            Clock::System,
            max_keys.max(1),
            max_concurrent,
            budget,
        )
    }

    fn with_parts(
        config: Config,
        clock: Clock,
        max_keys: usize,
        max_concurrent: Option<Limit>,
        budget: Option<Arc<Budget>>,
    ) -> Self {
        let map = scc::HashIndex::with_hasher(foldhash::fast::RandomState::default());
        let labels = scc::HashIndex::with_hasher(foldhash::fast::RandomState::default());
        let inner = Arc::new(Inner {
            config,
            clock,
            max_keys,
            max_concurrent,
            budget,
            map,
            labels,
            stamp: AtomicU64::new(0),
            slots: Mutex::new(Slots {
                stored: Vec::new(),
                retired: Vec::new(),
                hand: 0,
                // Any nonzero seed will do; foldhash's is random.
                random: foldhash::fast::RandomState::default().hash_one(max_keys) | 1,
                full_until: 0,
                reclaim_at: RECLAIM_FLOOR,
            }),
            overflow: std::sync::OnceLock::new(),
            tuned: Mutex::new(Tuned::default()),
            pending: Mutex::new(no_pending()),
            counters: Counters::default(),
            registered: AtomicBool::new(false),
        });
        let handle = FamilyRef(inner.clone());
        Self { inner, handle }
    }

    /// The breaker of `key`, created from the family's settings if the key
    /// is new. For an existing key: lock-free, no allocation, one
    /// reference-count increment, on a count every thread using this key
    /// writes (use [`lease`](Self::lease) to avoid it).
    #[inline]
    pub fn get<Q: Key<Owned = K> + ?Sized>(&self, key: &Q) -> Arc<Member> {
        let inner = &*self.inner;
        let guard = scc::Guard::new();
        if let Some(member) = inner.map.peek(&Lookup(key), &guard) {
            inner.touch(member);
            return Arc::clone(member);
        }
        drop(guard);
        self.insert(key, Arc::clone)
    }

    /// The breaker of `key` (created if the key is new), held until the
    /// [`Lease`] is dropped, which may be on another thread (a lease is
    /// `Send`). For an existing key: lock-free, no allocation, and the only
    /// writes are to a counter of the calling thread's own (see [`Lease`]).
    /// This is what `#[circuit_breaker(key = …)]` holds for each call.
    #[inline]
    pub fn lease<Q: Key<Owned = K> + ?Sized>(&self, key: &Q) -> Lease<'_> {
        let inner = &*self.inner;
        let guard = scc::Guard::new();
        if let Some(member) = inner.map.peek(&Lookup(key), &guard) {
            inner.touch(member);
            if let Some(lease) = Lease::take(member) {
                return lease;
            }
            // Being evicted: the insertion lock waits for the eviction.
        }
        drop(guard);
        self.insert(key, Lease::new)
    }

    /// Adds `key`'s breaker, unless another thread just did, and gives it
    /// to `stored` while the insertion lock is held (so that it cannot be
    /// evicted and freed before a lease of it is counted); a key the family
    /// has no room for gets the overflow member.
    #[cold]
    #[inline(never)]
    fn insert<Q: Key<Owned = K> + ?Sized, R>(
        &self,
        key: &Q,
        stored: impl FnOnce(&Arc<Member>) -> R,
    ) -> R {
        let inner = &*self.inner;
        let mut slots = inner.lock();
        let guard = scc::Guard::new();
        if let Some(member) = inner.map.peek(&Lookup(key), &guard) {
            inner.touch(member);
            return stored(member);
        }
        drop(guard);
        inner.reclaim(&mut slots);
        let room = if slots.stored.len() < inner.max_keys {
            Room::Free
        } else {
            match inner.retire_victim(&mut slots) {
                Some(victim) => Room::Evict(victim),
                None => {
                    drop(slots);
                    inner.counters.unstored.fetch_add(1, Ordering::Relaxed);
                    return stored(inner.overflow());
                }
            }
        };
        let stamp = inner.stamp.fetch_add(1, Ordering::Relaxed) + 1;
        let member = inner.adopt_or_make(key, stamp);
        let entry = (key.to_key(), Arc::clone(&member));
        let evicted = match room {
            Room::Free => {
                slots.stored.push(entry);
                None
            }
            Room::Evict(victim) => {
                let (old_key, old) = std::mem::replace(&mut slots.stored[victim], entry);
                inner.map.remove_sync(&old_key);
                inner.labels.remove_sync(inner.label_of(&old));
                // Open or HalfOpen, it gives its place in the budget back.
                old.leave_budget();
                slots.retired.push(Arc::clone(&old));
                inner.counters.evicted.fetch_add(1, Ordering::Relaxed);
                Some(old)
            }
        };
        // Counted in the budget from now on, as it is (an adopted member may
        // have been forced open), before a call can find it.
        member.join_budget();
        // The key is not there: insertions hold the lock.
        let _ = inner.map.insert_sync(key.to_key(), Arc::clone(&member));
        let _ = inner
            .labels
            .insert_sync(inner.label_of(&member).into(), Arc::clone(&member));
        inner.counters.created.fetch_add(1, Ordering::Relaxed);
        let held = stored(&member);
        drop(slots);
        if let Some(evicted) = evicted {
            inner.evicted(&evicted);
        }
        held
    }

    /// Makes the family findable through [`registry::families`](crate::ops::registry::families),
    /// and its members through [`registry::get`](crate::ops::registry::get) by
    /// their names (`family[key]`). Held weakly; registering twice has no
    /// effect.
    pub fn register(&self) {
        let listing: Arc<dyn Listing> = self.inner.clone();
        for observe in OBSERVERS {
            observe(Seen::Registered(&listing));
        }
    }
}

impl<K: Clone + Hash + Eq + Send + Sync + 'static> Inner<K> {
    /// Marks `member` as used since the last insertion. Written at most once
    /// per insertion, so threads sharing a hot key do not keep writing its
    /// cache line.
    #[inline]
    fn touch(&self, member: &Member) {
        let now = self.stamp.load(Ordering::Relaxed);
        if member.used.load(Ordering::Relaxed) != now {
            member.used.store(now, Ordering::Relaxed);
        }
    }

    /// The insertion lock. Nothing it guards is left half-updated by a
    /// panic.
    fn lock(&self) -> std::sync::MutexGuard<'_, Slots<K>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `family[label]` for `key`.
    fn name_of<Q: Key + ?Sized>(&self, key: &Q) -> String {
        let mut name = String::with_capacity(self.config.name.len() + 16);
        name.push_str(&self.config.name);
        name.push('[');
        let start = name.len();
        key.label(&mut name);
        if &name[start..] == OVERFLOW {
            name.insert(start, '\\');
        }
        name.push(']');
        name
    }

    /// The member named `name` asked for before its key's first call, if
    /// any, else a new one.
    fn adopt_or_make<Q: Key + ?Sized>(&self, key: &Q, stamp: u64) -> Arc<Member> {
        let name = self.name_of(key);
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if !pending.is_empty() {
            if let Some(member) = pending.remove(self.label_in(&name)) {
                member.used.store(stamp, Ordering::Relaxed);
                return member;
            }
        }
        drop(pending);
        Arc::new(self.member(name, stamp))
    }

    /// A member named `name`, with the family's settings in force.
    fn member(&self, name: String, stamp: u64) -> Member {
        let tuned = self.tuned.lock().unwrap_or_else(PoisonError::into_inner);
        let member = tuned.member(
            &self.config,
            &self.clock,
            self.max_concurrent,
            self.budget.as_ref(),
            name,
            stamp,
        );
        drop(tuned);
        member
    }

    /// The settings the family gives its members now (under its own name).
    fn current_config(&self) -> Config {
        let tuned = self.tuned.lock().unwrap_or_else(PoisonError::into_inner);
        tuned.config(&self.config)
    }

    /// Changes the settings of every member, the overflow breaker's and
    /// those asked for by name included, and of every member made from now
    /// on. Checked against the family's settings first: nothing changes
    /// when they refuse it. A member whose own settings (changed by name)
    /// refuse it keeps them; the first such refusal is returned, after the
    /// rest were changed.
    fn reconfigure(
        &self,
        patch: &crate::core::config::Patch,
    ) -> Result<(), crate::core::error::ConfigError> {
        // In the family's lock order (see `Inner::slots`): the members are
        // listed under all three locks, so a member made before the change
        // is listed (an insertion holds the insertion lock until its member
        // is stored) and one made after it gets the new settings.
        let slots = self.lock();
        let pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let mut tuned = self.tuned.lock().unwrap_or_else(PoisonError::into_inner);
        tuned.change(&self.config, patch)?;
        let members: Vec<Arc<Member>> = listed(&slots, self.overflow.get())
            .chain(pending.values().cloned())
            .collect();
        drop(pending);
        drop(slots);
        // The settings stay held while the members change: a member made
        // meanwhile waits, and then gets the new settings; insertions of
        // keys already stored and lookups go on.
        let result = reconfigure_each(&members, patch);
        drop(tuned);
        result
    }

    /// The member labelled `label` (named `family[label]`): stored (found
    /// in `labels` without a lock), the overflow breaker, or asked for
    /// before (under the `pending` lock); else, when `make`, a new one that
    /// the key's first call adopts, while fewer than `max_keys` wait so.
    fn labelled(&self, label: &str, make: bool) -> Option<Arc<Member>> {
        if let Some(found) = self.labels.peek_with(label, |_, member| Arc::clone(member)) {
            return Some(found);
        }
        if label == OVERFLOW {
            return self.overflow.get().cloned();
        }
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending_member(&mut pending, label, self.max_keys, || {
            make.then(|| self.member(name_with(&self.config.name, label), 0))
        })
    }

    /// The label of `member`, one of this family's.
    fn label_of<'m>(&self, member: &'m Member) -> &'m str {
        self.label_in(member.name())
    }

    /// The label in `name`, a member's name in this family.
    fn label_in<'n>(&self, name: &'n str) -> &'n str {
        label_in(name, &self.config.name).unwrap_or(name)
    }

    /// The member every key the family has no room for runs through.
    fn overflow(&self) -> &Arc<Member> {
        self.overflow
            .get_or_init(|| Arc::new(self.member(format!("{}[{OVERFLOW}]", self.config.name), 0)))
    }

    /// Whether the member in `slot` may be evicted: no call runs through
    /// it (no lease out: the attribute's, a tower layer's, the reqwest
    /// middleware's), and its breaker may be forgotten (see
    /// `Breaker::forgettable`).
    fn evictable(&self, slot: &(K, Arc<Member>)) -> bool {
        let member = &slot.1;
        member.unleased()
            && member.breaker.forgettable(self.config.lease())
            && !self.tuned_alone(member)
    }

    /// Whether `member`'s settings were changed by its own name: it is
    /// kept, so the change is not lost with it.
    fn tuned_alone(&self, member: &Member) -> bool {
        member.breaker.config().fingerprint() != self.current_config().fingerprint()
    }

    /// The slot of the member to evict from a full family: the least
    /// recently used evictable member among [`SAMPLE`] slots picked at
    /// random (all of them in a family of at most `SAMPLE`); when none of
    /// those is, the first evictable member the sweeping hand reaches;
    /// `None` when no member may be evicted, and then, for
    /// [`FULL_PAUSE`], without sweeping again.
    fn victim(&self, slots: &mut Slots<K>) -> Option<usize> {
        let len = slots.stored.len();
        if slots.full_until != 0 && !self.clock.reached(slots.full_until) {
            return None;
        }
        let used = |slots: &Slots<K>, i: usize| slots.stored[i].1.used.load(Ordering::Relaxed);
        let mut victim: Option<(usize, u64)> = None;
        for n in 0..SAMPLE.min(len) {
            let i = if len <= SAMPLE {
                n
            } else {
                // The modulo's bias is below one in 2^40 for any `max_keys`
                // a family can hold.
                (slots.next_random() % len as u64) as usize
            };
            // A member's state is read only when it would be the oldest so
            // far: its breaker's cache line is left alone otherwise.
            let stamp = used(slots, i);
            if victim.is_none_or(|(_, oldest)| stamp < oldest) && self.evictable(&slots.stored[i]) {
                victim = Some((i, stamp));
            }
        }
        let found = victim.map(|(i, _)| i).or_else(|| {
            let start = slots.hand;
            let found = (0..len)
                .map(|n| (start + n) % len)
                .find(|&i| self.evictable(&slots.stored[i]));
            if let Some(i) = found {
                slots.hand = (i + 1) % len;
            }
            found
        });
        if found.is_some() {
            slots.full_until = 0;
        } else {
            if slots.full_until == 0 {
                self.report_full();
            }
            slots.full_until = self.clock.now().saturating_add(FULL_PAUSE).max(1);
        }
        found
    }

    /// The slot of a member to evict (see [`victim`](Self::victim)), marked
    /// retired, so that no lease of it is taken from now on. A member a
    /// call took a lease of since it was picked is kept, and another one
    /// picked, once.
    fn retire_victim(&self, slots: &mut Slots<K>) -> Option<usize> {
        for _ in 0..2 {
            let victim = self.victim(slots)?;
            if slots.stored[victim].1.retire() {
                return Some(victim);
            }
        }
        None
    }

    /// A member just evicted: with the `metrics` feature, its calls since
    /// its last report reach the counters of its name (see
    /// [`metrics`](crate::ops::metrics#keyed-families)), when the family is
    /// registered or the member was reported before. No lease of it is
    /// out, so its totals are final.
    fn evicted(&self, member: &Member) {
        let registered = self.registered.load(Ordering::Relaxed);
        for observe in OBSERVERS {
            observe(Seen::Evicted(&member.breaker, registered));
        }
    }

    /// The family has just become full of members it may not evict: said
    /// once until a victim is found again, not once per call.
    fn report_full(&self) {
        #[cfg(feature = "tracing")]
        ::tracing::warn!(
            target: "failfast",
            family = %self.config.name,
            max_keys = self.max_keys,
            "family `{}` is full of breakers it may not evict (open, half-open or in use): \
             new keys share its overflow breaker `{}[{OVERFLOW}]` until room frees up",
            self.config.name,
            self.config.name,
        );
    }

    /// Lets go of the evicted members whose every lease was dropped: no
    /// lease can be taken of a retired member (see [`Lease::take`]). The
    /// map may still hold a copy for a while (until the epoch guards that
    /// could have found it end); the member is freed with the last. Looks
    /// only once the list has doubled since the last look, so an insertion
    /// costs O(1) amortised.
    fn reclaim(&self, slots: &mut Slots<K>) {
        if slots.retired.len() < slots.reclaim_at {
            return;
        }
        slots.retired.retain(|member| !member.unleased());
        slots.reclaim_at = (slots.retired.len() * 2).max(RECLAIM_FLOOR);
    }

    fn members(&self) -> Vec<Arc<Member>> {
        listed(&self.lock(), self.overflow.get()).collect()
    }
}

/// The stored members, then the overflow member once made.
fn listed<'s, K>(
    slots: &'s Slots<K>,
    overflow: Option<&'s Arc<Member>>,
) -> impl Iterator<Item = Arc<Member>> + 's {
    slots
        .stored
        .iter()
        .map(|(_, m)| m)
        .chain(overflow)
        .map(Arc::clone)
}

/// What a family tells the layers above it (the registry, metrics), which
/// the linker gathers (`linkme`): this module names none of them.
// What a variant carries is read by the observers the features bring
// (`metrics`, `testing`).
#[cfg_attr(not(all(feature = "metrics", feature = "testing")), allow(dead_code))]
pub(crate) enum Seen<'a> {
    /// A member was evicted: its breaker, and whether its family is
    /// registered.
    Evicted(&'a Breaker, bool),
    /// [`Family::register`] was called.
    Registered(&'a Arc<dyn Listing>),
    /// A declared family's slot built its first family.
    SlotBuilt(&'static Slot),
    /// A declared family's slot built a family for another key type.
    OtherFamily(&'static Slot, &'a Arc<dyn Listing>),
}

/// Told what a family does that the layers above it keep track of.
#[linkme::distributed_slice]
pub(crate) static OBSERVERS: [fn(Seen<'_>)];

/// A family as the registry sees it, whatever its key type.
pub(crate) trait Listing: Send + Sync {
    fn name(&self) -> Name;
    fn members(&self) -> Vec<Arc<Member>>;
    /// See `Inner::labelled`.
    fn labelled(&self, label: &str, make: bool) -> Option<Arc<Member>>;
    /// The member named `name` (`family[label]`): [`labelled`](Self::labelled)
    /// with its label, `None` for another family's name.
    fn named(&self, name: &str, make: bool) -> Option<Arc<Member>> {
        self.labelled(label_in(name, &self.name())?, make)
    }
    /// See `Inner::reconfigure`.
    fn reconfigure(
        &self,
        patch: &crate::core::config::Patch,
    ) -> Result<(), crate::core::error::ConfigError>;
    /// The settings new members get now.
    fn config(&self) -> Config;
    fn max_keys(&self) -> usize;
    /// Breakers stored now.
    fn len(&self) -> usize;
    /// Created, evicted, unstored and spared, as `Family` counts them.
    fn counts(&self) -> [u64; 4];
    /// Marks the family registered; `true` the first time.
    fn mark_registered(&self) -> bool;
    /// The declared slot listed, for a declared family.
    #[cfg(feature = "testing")]
    fn slot(&self) -> Option<&'static Slot> {
        None
    }
}

impl<K: Clone + Hash + Eq + Send + Sync + 'static> Listing for Inner<K> {
    fn name(&self) -> Name {
        self.config.name.clone()
    }
    fn members(&self) -> Vec<Arc<Member>> {
        Inner::members(self)
    }
    fn labelled(&self, label: &str, make: bool) -> Option<Arc<Member>> {
        Inner::labelled(self, label, make)
    }
    fn reconfigure(
        &self,
        patch: &crate::core::config::Patch,
    ) -> Result<(), crate::core::error::ConfigError> {
        Inner::reconfigure(self, patch)
    }
    fn config(&self) -> Config {
        self.current_config()
    }
    fn max_keys(&self) -> usize {
        self.max_keys
    }
    fn len(&self) -> usize {
        self.lock().stored.len()
    }
    fn counts(&self) -> [u64; 4] {
        let c = &self.counters;
        let [created, evicted, unstored] =
            [&c.created, &c.evicted, &c.unstored].map(|n| n.load(Ordering::Relaxed));
        let spared = self.budget.as_ref().map_or(0, |budget| budget.spared());
        [created, evicted, unstored, spared]
    }
    fn mark_registered(&self) -> bool {
        !self.registered.swap(true, Ordering::Relaxed)
    }
}
