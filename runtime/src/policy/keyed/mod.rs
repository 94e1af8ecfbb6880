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
//! [`FamilyRef::failover`]), is one probe of a second index of the stored
//! members, by label, as lock-free as the first: O(1) whatever the
//! family's size. Only a label with no stored member goes on to the
//! members asked for by name before their key's first call, under a lock.
//!
//! # Bounded
//!
//! A family holds at most `max_keys` breakers (default 1024), a bound that
//! can change while it runs ([`Builder::max_keys`](crate::Builder::max_keys):
//! lowered, the family evicts down to it as below, as far as members may
//! be evicted). When it is full, a new key takes the place of an
//! *evictable* member:
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
//! 1.8 KiB (its breaker, its lease stripes, its name, its entries in the
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
//! let members = Breaker::builder().name("upstream").threshold(2).max_keys(64);
//! let hosts: Family<String> = Family::builder(members).build()?;
//!
//! for _ in 0..2 {
//!     let _ = hosts.get("10.0.0.3").call(|| Err::<(), _>("connection refused"));
//! }
//! assert_eq!(hosts.get("10.0.0.3").state(), State::Open);
//! assert_eq!(hosts.get("10.0.0.1").state(), State::Closed);
//! assert_eq!(hosts.get("10.0.0.3").name(), "upstream[10.0.0.3]");
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```

mod builder;
pub(crate) mod declared;
mod evict;
mod key;
mod listing;
mod members;
mod settings;

use std::fmt;
use std::hash::{BuildHasher as _, Hash};
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::core::breaker::{Breaker, Budget};
use crate::core::clock::Clock;
use crate::core::config::Config;
use crate::core::name::Name;
use crate::policy::bulkhead::Limit;

pub use builder::FamilyBuilder;
pub(crate) use declared::{Slot, SlotView};
use evict::{RECLAIM_FLOOR, Room, Slots};
pub use key::Key;
use key::{Lookup, OVERFLOW, label_in};
pub use listing::{FamilyRef, FamilyStats};
#[cfg(loom)]
pub use members::Leases;
pub use members::{Lease, Member};
pub(crate) use settings::Bounds;
use settings::{Pending, Tuned, no_pending};

/// How many breakers a family holds unless told otherwise.
pub(crate) const DEFAULT_MAX_KEYS: usize = failfast_rules::DEFAULT_MAX_KEYS as usize;

type Map<K> = scc::HashIndex<K, Arc<Member>, foldhash::fast::RandomState>;

/// The stored members by label, read without a lock as `Map` is.
type Labels = scc::HashIndex<Box<str>, Arc<Member>, foldhash::fast::RandomState>;

/// A counter alone on its cache line: [`FamilyRef::failover`]'s turn,
/// written by every pick, kept off the lines lookups read.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Turn(std::sync::atomic::AtomicUsize);

/// Counts kept by a family, read through [`FamilyRef::stats`] (the trips
/// its ejection budget held back are counted by the budget).
#[derive(Debug, Default)]
struct Counters {
    created: AtomicU64,
    evicted: AtomicU64,
    unstored: AtomicU64,
}

struct Inner<K> {
    /// The members' settings; each member's name is `name[key]`.
    config: Config,
    clock: Clock,
    /// The bounds the family was declared (or built) with.
    declared: Bounds,
    /// The most members stored, as in force (see [`Tuned`]); changed under
    /// the insertion lock.
    max_keys: AtomicUsize,
    max_concurrent: Option<Limit>,
    /// The ejection budget ([`max_ejection_percent`](crate::Builder::max_ejection_percent)),
    /// with its percentage in force (100: no bound, which
    /// [`FamilyRef::failover`] also applies to the replicas it is given):
    /// every member asks it before a trip from Closed, and the stored ones
    /// are counted in it, whatever the percentage, so that one set at run
    /// time holds from its first trip.
    budget: Arc<Budget>,
    /// Where [`FamilyRef::failover`]'s rotation starts next.
    turn: Turn,
    map: Map<K>,
    /// The same members by label (`family[label]`), for the lookups that
    /// have a name and no key: the registry's, [`FamilyRef::failover`],
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
            .field("max_keys", &self.inner.max_keys.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<K: Clone + Hash + Eq + Send + Sync + 'static> Family<K> {
    /// A family of breakers with `config` and `bounds`, which were checked
    /// at compile time by `#[circuit_breaker]` (`Slot::new` holds
    /// `max_keys` to at least 1), and `budget` (of
    /// `bounds.max_ejection_percent`).
    #[must_use]
    pub(crate) fn from_config(
        config: Config,
        bounds: Bounds,
        max_concurrent: Option<Limit>,
        budget: Arc<Budget>,
    ) -> Self {
        Self::with_parts(config, Clock::System, bounds, max_concurrent, budget)
    }

    fn with_parts(
        config: Config,
        clock: Clock,
        bounds: Bounds,
        max_concurrent: Option<Limit>,
        budget: Arc<Budget>,
    ) -> Self {
        let max_keys = bounds.max_keys;
        let map = scc::HashIndex::with_hasher(foldhash::fast::RandomState::default());
        let labels = scc::HashIndex::with_hasher(foldhash::fast::RandomState::default());
        let inner = Arc::new(Inner {
            config: Limit::declared_in(max_concurrent, config),
            clock,
            declared: bounds,
            max_keys: AtomicUsize::new(max_keys),
            max_concurrent,
            budget,
            turn: Turn::default(),
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
        // Over a `max_keys` lowered since: down to it first, as far as
        // members may be evicted.
        let shrunk = inner.shrink(&mut slots);
        let room = if slots.stored.len() < inner.max_keys.load(Ordering::Relaxed) {
            Room::Free
        } else {
            match inner.retire_victim(&mut slots) {
                Some(victim) => Room::Evict(victim),
                None => {
                    drop(slots);
                    inner.report_evicted(shrunk);
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
                inner.forget(&mut slots, &old_key, &old);
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
        inner.report_evicted(shrunk.into_iter().chain(evicted));
        held
    }

    /// Makes the family findable through [`registry::families`](crate::ops::registry::families),
    /// and its members through [`registry::get`](crate::ops::registry::get) by
    /// their names (`family[key]`): what
    /// [`registry::register`](crate::ops::registry::register) does with a
    /// family. Held weakly; registering twice has no effect.
    pub(crate) fn register(&self) {
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
}

/// What a family tells the layers above it (the registry, metrics), which
/// the linker gathers (`linkme`): this module names none of them.
// What an eviction carries is read by the observer `metrics` brings.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) enum Seen<'a> {
    /// A member was evicted: its breaker, and whether its family is
    /// registered.
    Evicted(&'a Breaker, bool),
    /// A family is to be listed: registered ([`Family::register`]), or
    /// built by a declared family's slot for another key type than its
    /// first (in a test scope, `testing::isolate`, the scope's slot: the
    /// registry lists it in that scope alone).
    Registered(&'a Arc<dyn Listing>),
    /// A declared family's slot built its first family.
    SlotBuilt(&'static Slot),
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
        from: crate::core::breaker::Origin,
    ) -> Result<(), crate::core::error::ConfigError>;
    /// Where each setting new members get now came from.
    fn origins(&self) -> crate::core::breaker::Origins;
    /// The settings new members get now.
    fn config(&self) -> Config;
    /// The settings the family was declared (or built) with, and its
    /// bounds.
    fn declared(&self) -> (Config, Bounds);
    /// See `Inner::replace`.
    fn replace(
        &self,
        next: (&Config, Bounds),
        origins: crate::core::breaker::Origins,
        keep: &dyn Fn(&str) -> bool,
    );
    /// The mode new members start in.
    fn mode(&self) -> crate::core::breaker::Mode;
    /// The most members stored, as in force.
    fn max_keys(&self) -> usize;
    /// Breakers stored now.
    fn len(&self) -> usize;
    /// Created, evicted, unstored and spared, as `Family` counts them.
    fn counts(&self) -> [u64; 4];
    /// Marks the family registered; `true` the first time.
    fn mark_registered(&self) -> bool;
    /// Whether a call to the key labelled `label` would be let through now:
    /// no member yet, or its breaker admits one (see `Breaker::admits_now`).
    fn admits(&self, label: &str) -> bool;
    /// The ejection budget's percentage in force, 100 for none.
    fn max_ejection_percent(&self) -> u8;
    /// The next turn of [`FamilyRef::failover`]'s rotation.
    fn turn(&self) -> usize;
    /// Puts every member, those asked for by name and those made from now
    /// on in `mode` (see `Inner::set_mode`).
    fn set_mode(&self, mode: crate::core::breaker::Mode);
    /// The declared slot listed, for a declared family.
    #[cfg(feature = "testing")]
    fn slot(&self) -> Option<&'static Slot> {
        None
    }
}
