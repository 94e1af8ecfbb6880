//! Every breaker, reachable by name.
//!
//! Breakers declared by `#[circuit_breaker]` register themselves on their first
//! call (a breaker whose function has never run has nothing to report).
//! Breakers built with [`Breaker::builder`] are registered with [`register`].
//!
//! ```
//! use failfast_runtime::{registry, Breaker};
//! use std::sync::Arc;
//!
//! let payments = Arc::new(Breaker::builder().name("payments").build()?);
//! registry::register(&payments);
//!
//! let handle = registry::get("payments").expect("registered");
//! handle.force_open();
//! assert_eq!(payments.state(), failfast_runtime::State::Open);
//! handle.reset();
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```
//!
//! Registration takes a lock, once per breaker, and costs O(1) amortised, as
//! does [`get`]; calls through a breaker never touch the registry.
//!
//! A keyed family (`Family`, feature `keyed`) is one entry, listed by
//! [`families`] with its members; [`all`] does not list members one by one
//! (a family may hold thousands), but [`get`] finds a member by its name,
//! `family[key]`.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::breaker::Breaker;
use crate::name::Name;

enum Entry {
    Static(&'static Breaker),
    Shared(Weak<Breaker>),
}

impl Entry {
    fn upgrade(&self) -> Option<BreakerRef> {
        match self {
            Entry::Static(b) => Some(BreakerRef::Static(b)),
            Entry::Shared(w) => w.upgrade().map(BreakerRef::Shared),
        }
    }

    fn is_live(&self) -> bool {
        match self {
            Entry::Static(_) => true,
            Entry::Shared(w) => w.strong_count() > 0,
        }
    }
}

/// Breakers in order of registration, and an index from name to their
/// positions. Registration and lookup by name cost O(1) amortised; entries of
/// dropped breakers are swept once they make up half the list.
#[derive(Default)]
struct Registry {
    entries: Vec<Entry>,
    #[cfg(feature = "keyed")]
    families: Vec<std::sync::Weak<dyn crate::keyed::Listing>>,
    by_name: HashMap<Name, Vec<usize>>,
    /// Live entries at the last sweep, doubled: the next sweep is due when the
    /// list grows past it.
    sweep_at: usize,
}

impl Registry {
    fn push(&mut self, name: Name, entry: Entry) {
        if self.entries.len() >= self.sweep_at {
            self.sweep();
        }
        self.by_name
            .entry(name)
            .or_default()
            .push(self.entries.len());
        self.entries.push(entry);
    }

    /// Drops the entries of breakers that no longer exist and rebuilds the
    /// index: O(n), at most once per n registrations.
    fn sweep(&mut self) {
        self.entries.retain(Entry::is_live);
        self.by_name.clear();
        for (i, entry) in self.entries.iter().enumerate() {
            if let Some(b) = entry.upgrade() {
                self.by_name.entry(b.shared_name()).or_default().push(i);
            }
        }
        self.sweep_at = (self.entries.len() * 2).max(16);
    }
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    // The registry holds no invariant a panic could break halfway.
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    f(registry.get_or_insert_with(Registry::default))
}

/// A handle to a registered breaker: derefs to [`Breaker`], so it has
/// `name()`, `state()`, `snapshot()`, `reset()`, `force_open()`,
/// `force_closed()` and `disable()`.
#[derive(Clone, Debug)]
pub enum BreakerRef {
    /// A breaker in a `static`, as `#[circuit_breaker]` declares them.
    Static(&'static Breaker),
    /// A breaker built at run time and [`register`]ed.
    Shared(Arc<Breaker>),
    /// One key's breaker in a keyed family.
    #[cfg(feature = "keyed")]
    Member(Arc<crate::keyed::Member>),
}

impl Deref for BreakerRef {
    type Target = Breaker;

    fn deref(&self) -> &Breaker {
        match self {
            BreakerRef::Static(b) => b,
            BreakerRef::Shared(b) => b,
            #[cfg(feature = "keyed")]
            BreakerRef::Member(m) => m.breaker(),
        }
    }
}

impl From<Breaker> for BreakerRef {
    /// A breaker put in an `Arc` (not registered: see
    /// [`registry::register`](crate::registry::register)).
    fn from(breaker: Breaker) -> Self {
        BreakerRef::Shared(Arc::new(breaker))
    }
}

impl From<Arc<Breaker>> for BreakerRef {
    /// The shared breaker itself.
    fn from(breaker: Arc<Breaker>) -> Self {
        BreakerRef::Shared(breaker)
    }
}

impl From<&'static Breaker> for BreakerRef {
    /// The breaker in a `static` (or leaked).
    fn from(breaker: &'static Breaker) -> Self {
        BreakerRef::Static(breaker)
    }
}

/// Registers a breaker built at run time, so [`get`] and [`all`] find it. The
/// registry holds it weakly: once every `Arc` is dropped it disappears.
/// Registering the same breaker twice has no effect.
pub fn register(breaker: &Arc<Breaker>) {
    if breaker.mark_registered() {
        let weak = Arc::downgrade(breaker);
        with_registry(|r| r.push(breaker.shared_name(), Entry::Shared(weak)));
        #[cfg(feature = "metrics")]
        crate::metrics::registered(breaker);
    }
}

/// Registers a breaker that lives in a `static`.
pub fn register_static(breaker: &'static Breaker) {
    if breaker.mark_registered() {
        with_registry(|r| r.push(breaker.shared_name(), Entry::Static(breaker)));
        #[cfg(feature = "metrics")]
        crate::metrics::registered(breaker);
    }
}

/// The breaker registered under `name`. When several share a name (two
/// functions given the same `name = "…"`), the first registered that still
/// exists. A name `family[key]` also finds the member of a registered
/// keyed family.
#[must_use]
pub fn get(name: &str) -> Option<BreakerRef> {
    let found = with_registry(|r| {
        let positions = r.by_name.get(name)?;
        positions.iter().find_map(|&i| r.entries[i].upgrade())
    });
    #[cfg(feature = "keyed")]
    let found = found.or_else(|| member(name));
    found
}

#[cfg(feature = "keyed")]
fn member(name: &str) -> Option<BreakerRef> {
    let (family, _) = name.strip_suffix(']')?.split_once('[')?;
    families()
        .into_iter()
        .filter(|f| f.name() == family)
        .find_map(|f| f.members().into_iter().find(|m| m.name() == name))
        .map(BreakerRef::Member)
}

/// A registered keyed family: its name, its members, and what it counted.
#[cfg(feature = "keyed")]
#[derive(Clone)]
pub struct FamilyRef(Arc<dyn crate::keyed::Listing>);

#[cfg(feature = "keyed")]
impl std::fmt::Debug for FamilyRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FamilyRef")
            .field("name", &self.0.name())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "keyed")]
impl FamilyRef {
    /// The family's name; its members are named `name[key]`.
    #[must_use]
    pub fn name(&self) -> crate::Name {
        self.0.name()
    }

    /// The breakers the family holds now, in no particular order.
    #[must_use]
    pub fn members(&self) -> Vec<Arc<crate::keyed::Member>> {
        self.0.members()
    }

    /// The most breakers the family keeps.
    #[must_use]
    pub fn max_keys(&self) -> usize {
        self.0.max_keys()
    }

    /// Breakers created and stored so far.
    #[must_use]
    pub fn created(&self) -> u64 {
        self.0.counts().0
    }

    /// Closed breakers evicted to make room for new keys.
    #[must_use]
    pub fn evicted(&self) -> u64 {
        self.0.counts().1
    }

    /// Calls that found every breaker Open or HalfOpen and ran through a
    /// breaker that was not kept.
    #[must_use]
    pub fn unstored(&self) -> u64 {
        self.0.counts().2
    }
}

#[cfg(feature = "keyed")]
pub(crate) fn register_family(family: &Arc<dyn crate::keyed::Listing>) {
    if family.mark_registered() {
        let weak = Arc::downgrade(family);
        with_registry(|r| {
            r.families.retain(|f| f.strong_count() > 0);
            r.families.push(weak);
        });
    }
}

/// Every registered keyed family, in order of registration.
#[cfg(feature = "keyed")]
#[must_use]
pub fn families() -> Vec<FamilyRef> {
    with_registry(|r| {
        r.families
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .map(FamilyRef)
            .collect()
    })
}

/// The registered keyed family named `name`.
#[cfg(feature = "keyed")]
#[must_use]
pub fn family(name: &str) -> Option<FamilyRef> {
    families().into_iter().find(|f| f.name() == name)
}

/// Every registered breaker, in order of registration.
#[must_use]
pub fn all() -> Vec<BreakerRef> {
    with_registry(|r| r.entries.iter().filter_map(Entry::upgrade).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of dropped breakers are swept as registrations go on, so the
    /// list stays within twice the live breakers (plus a small floor).
    #[test]
    fn dropped_breakers_are_swept() {
        let keep: Vec<_> = (0..50)
            .map(|_| Arc::new(Breaker::builder().name("sweep-kept").build().unwrap()))
            .collect();
        for b in &keep {
            register(b);
        }
        for _ in 0..2_000 {
            let gone = Arc::new(Breaker::builder().name("sweep-gone").build().unwrap());
            register(&gone);
        }
        let (entries, live) = with_registry(|r| {
            let live = r.entries.iter().filter(|e| e.upgrade().is_some()).count();
            (r.entries.len(), live)
        });
        assert!(live >= keep.len());
        assert!(
            entries <= 2 * live + 16,
            "{entries} entries for {live} live breakers"
        );
        assert!(get("sweep-gone").is_none());
        assert!(get("sweep-kept").is_some());
    }
}
