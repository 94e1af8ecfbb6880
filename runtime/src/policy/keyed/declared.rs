//! The family of a function declared with `key = …` (or of a shared
//! breaker declared with `max_keys`): a `static` [`Slot`] built on the
//! first call, and how the registry lists it before then ([`SlotView`]).
//! Only `__private` hands a `Slot` out, to the macros' expansions.

use std::fmt;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::core::breaker::{Budget, Origin, Origins};
use crate::core::clock::Clock;
use crate::core::config::Config;
use crate::core::name::Name;
use crate::policy::bulkhead::Limit;

use super::key::name_with;
use super::members::Member;
use super::settings::{
    Pending, Tuned, no_pending, pending_member, reconfigure_each, replace_each, set_mode_each,
};
use super::{Bounds, Family, Listing, OBSERVERS, Seen};

/// The family of a function with `key = …`, in a `static` in the function's
/// body: built on the first call, when the key's type is known. Listed by
/// the registry from the start (see `SlotView`): changes made and members
/// asked for by name before the first call are handed to the family then.
#[doc(hidden)]
pub struct Slot {
    config: Config,
    max_keys: usize,
    max_concurrent: Option<Limit>,
    max_ejection_percent: u8,
    /// The ejection budget of the first family, made on first use: the
    /// members asked for by name before it get it too, and a percentage
    /// changed before it holds for them.
    budget: std::sync::OnceLock<Arc<Budget>>,
    /// The family of the key type the function was first called with.
    first: std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>,
    /// That family, as the registry sees it; set under `early`'s lock.
    built: std::sync::OnceLock<Arc<dyn Listing>>,
    /// What was asked of the family before it was built.
    early: Mutex<Early>,
    registered: AtomicBool,
    /// `FamilyRef::failover`'s rotation, for the family as the registry
    /// lists it (`SlotView`).
    turn: std::sync::atomic::AtomicUsize,
    /// Families of other key types: a generic function whose key type
    /// depends on its type parameters has one per key type.
    others: Mutex<Vec<&'static (dyn std::any::Any + Send + Sync)>>,
}

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slot")
            .field("name", &self.config.name)
            .field("max_keys", &self.max_keys)
            .finish_non_exhaustive()
    }
}

/// A slot's family before its first call.
struct Early {
    tuned: Tuned,
    pending: Pending,
}

impl Slot {
    /// A slot for a family with these settings, checked at compile time.
    ///
    /// # Panics
    ///
    /// If `max_keys` is 0 (in a `static`, at compile time): the attribute
    /// and `breaker!` never write it.
    #[must_use]
    pub const fn new(
        config: Config,
        max_keys: usize,
        max_concurrent: Option<u32>,
        max_wait: Duration,
        max_ejection_percent: u8,
    ) -> Self {
        assert!(max_keys >= 1, "a keyed family keeps at least 1 key");
        let max_concurrent = Limit::of(max_concurrent, max_wait);
        Self {
            config: Limit::declared_in(max_concurrent, config),
            max_keys,
            max_concurrent,
            max_ejection_percent,
            budget: std::sync::OnceLock::new(),
            first: std::sync::OnceLock::new(),
            built: std::sync::OnceLock::new(),
            early: Mutex::new(Early {
                tuned: Tuned::new(),
                pending: no_pending(),
            }),
            registered: AtomicBool::new(false),
            turn: std::sync::atomic::AtomicUsize::new(0),
            others: Mutex::new(Vec::new()),
        }
    }

    fn early(&self) -> std::sync::MutexGuard<'_, Early> {
        self.early.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The first family's ejection budget.
    fn budget(&self) -> &Arc<Budget> {
        self.budget
            .get_or_init(|| Budget::new(self.max_ejection_percent))
    }

    /// The bounds the family is declared with.
    fn bounds(&self) -> Bounds {
        Bounds {
            max_keys: self.max_keys,
            max_ejection_percent: self.max_ejection_percent,
        }
    }

    /// The first family: given what was asked before, listed through the
    /// slot.
    fn build_first<K: Clone + Hash + Eq + Send + Sync + 'static>(&'static self) -> Family<K> {
        let family = Family::from_config(
            self.config.clone(),
            self.bounds(),
            self.max_concurrent,
            Arc::clone(self.budget()),
        );
        let mut early = self.early();
        let inner = &family.inner;
        // The bounds changed before, in force (nothing stored to evict).
        let bounds = early.tuned.bounds(self.bounds());
        inner.bound(&mut inner.lock(), bounds);
        *inner.tuned.lock().unwrap_or_else(PoisonError::into_inner) =
            std::mem::take(&mut early.tuned);
        *inner.pending.lock().unwrap_or_else(PoisonError::into_inner) =
            std::mem::take(&mut early.pending);
        let listing: Arc<dyn Listing> = inner.clone();
        let _ = self.built.set(listing);
        drop(early);
        for observe in OBSERVERS {
            observe(Seen::SlotBuilt(self));
        }
        family
    }

    /// Marks the slot listed by the registry; `true` the first time.
    pub(crate) fn mark_registered(&self) -> bool {
        !self.registered.swap(true, Ordering::Relaxed)
    }

    /// The family for keys of type `K`.
    #[inline]
    pub fn family<K: Clone + Hash + Eq + Send + Sync + 'static>(
        &'static self,
    ) -> &'static Family<K> {
        let first = self.first.get_or_init(|| Box::new(self.build_first::<K>()));
        match first.downcast_ref() {
            Some(family) => family,
            None => self.other(),
        }
    }

    #[cold]
    fn other<K: Clone + Hash + Eq + Send + Sync + 'static>(&'static self) -> &'static Family<K> {
        let mut others = self.others.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(family) = others.iter().find_map(|f| f.downcast_ref()) {
            return family;
        }
        let family: &'static Family<K> = Box::leak(Box::new(Family::from_config(
            self.config.clone(),
            self.bounds(),
            self.max_concurrent,
            Budget::new(self.max_ejection_percent),
        )));
        // Listed on its own, as a family registered in code is.
        let listing: Arc<dyn Listing> = family.inner.clone();
        for observe in OBSERVERS {
            observe(Seen::Registered(&listing));
        }
        others.push(family);
        family
    }
}

#[cfg(feature = "testing")]
impl Slot {
    /// A slot with the same settings and no family yet, which the registry
    /// does not list by itself: a scope's (`testing::isolate`).
    pub(crate) fn fresh(&self) -> Self {
        let fresh = Slot::new(
            self.config.clone(),
            self.max_keys,
            self.max_concurrent.map(|limit| limit.max),
            self.max_concurrent
                .map_or(Duration::ZERO, |limit| limit.wait),
            self.max_ejection_percent,
        );
        fresh.mark_registered();
        fresh
    }
}

/// A declared family as the registry lists it: its first family once built,
/// the slot's early state before.
pub(crate) struct SlotView(pub(crate) &'static Slot);

impl SlotView {
    /// The early state, or the built family when there is one.
    fn early(&self) -> Result<std::sync::MutexGuard<'_, Early>, &Arc<dyn Listing>> {
        let early = self.0.early();
        match self.0.built.get() {
            Some(built) => Err(built),
            None => Ok(early),
        }
    }
}

impl Listing for SlotView {
    fn name(&self) -> Name {
        self.0.config.name.clone()
    }
    fn members(&self) -> Vec<Arc<Member>> {
        self.0.built.get().map(|b| b.members()).unwrap_or_default()
    }
    fn labelled(&self, label: &str, make: bool) -> Option<Arc<Member>> {
        let slot = self.0;
        let mut early = match self.early() {
            Ok(early) => early,
            Err(built) => return built.labelled(label, make),
        };
        let early = &mut *early;
        let tuned = &early.tuned;
        let max_keys = tuned.bounds(slot.bounds()).max_keys;
        pending_member(&mut early.pending, label, max_keys, || {
            make.then(|| {
                tuned.member(
                    &slot.config,
                    &Clock::System,
                    slot.max_concurrent,
                    slot.budget(),
                    name_with(&slot.config.name, label),
                    0,
                )
            })
        })
    }
    fn reconfigure(
        &self,
        patch: &crate::core::config::Patch,
        from: Origin,
    ) -> Result<(), crate::core::error::ConfigError> {
        let mut early = match self.early() {
            Ok(early) => early,
            Err(built) => return built.reconfigure(patch, from),
        };
        let slot = self.0;
        early
            .tuned
            .change((&slot.config, slot.bounds()), patch, from)?;
        let bounds = early.tuned.bounds(slot.bounds());
        slot.budget().set_percent(bounds.max_ejection_percent);
        reconfigure_each(early.pending.values(), patch, from)
    }
    fn origins(&self) -> Origins {
        match self.early() {
            Ok(early) => early.tuned.origins(),
            Err(built) => built.origins(),
        }
    }
    fn config(&self) -> Config {
        match self.early() {
            Ok(early) => early.tuned.config(&self.0.config),
            Err(built) => built.config(),
        }
    }
    fn declared(&self) -> (Config, Bounds) {
        (self.0.config.clone(), self.0.bounds())
    }
    fn replace(&self, next: (&Config, Bounds), origins: Origins, keep: &dyn Fn(&str) -> bool) {
        let mut early = match self.early() {
            Ok(early) => early,
            Err(built) => return built.replace(next, origins, keep),
        };
        early.tuned.replace(next, origins);
        self.0.budget().set_percent(next.1.max_ejection_percent);
        replace_each(early.pending.values(), next.0, origins, keep);
    }
    fn mode(&self) -> crate::core::breaker::Mode {
        match self.early() {
            Ok(early) => early.tuned.mode(),
            Err(built) => built.mode(),
        }
    }
    fn max_keys(&self) -> usize {
        match self.early() {
            Ok(early) => early.tuned.bounds(self.0.bounds()).max_keys,
            Err(built) => built.max_keys(),
        }
    }
    fn len(&self) -> usize {
        self.0.built.get().map_or(0, |b| b.len())
    }
    fn counts(&self) -> [u64; 4] {
        self.0.built.get().map_or([0; 4], |b| b.counts())
    }
    fn mark_registered(&self) -> bool {
        self.0.mark_registered()
    }
    fn admits(&self, label: &str) -> bool {
        match self.0.built.get() {
            Some(built) => built.admits(label),
            None => self
                .labelled(label, false)
                .is_none_or(|member| member.breaker().admits_now()),
        }
    }
    fn max_ejection_percent(&self) -> u8 {
        match self.0.built.get() {
            Some(built) => built.max_ejection_percent(),
            None => self.0.budget().percent(),
        }
    }
    fn turn(&self) -> usize {
        // The slot's own, before the first call and after: the registry
        // lists a declared family through its slot.
        self.0.turn.fetch_add(1, Ordering::Relaxed)
    }
    fn set_mode(&self, mode: crate::core::breaker::Mode) {
        let mut early = match self.early() {
            Ok(early) => early,
            Err(built) => return built.set_mode(mode),
        };
        early.tuned.set_mode(mode);
        set_mode_each(early.pending.values(), mode);
    }
    #[cfg(feature = "testing")]
    fn slot(&self) -> Option<&'static Slot> {
        Some(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mode, State};

    fn fail(member: &Member) -> State {
        let _ = member.call(|| Err::<(), _>("down"));
        member.state()
    }

    /// A declared family's members asked for by name before its first call
    /// get its budget: forced open there, such a member is counted once
    /// its key's first call adopts it. A family of another key type has a
    /// budget of its own.
    #[test]
    fn members_named_before_the_first_call_share_the_familys_budget() {
        let config = crate::Breaker::builder()
            .name("declared.budget")
            .threshold(1)
            .checked()
            .unwrap();
        let slot: &'static Slot =
            Box::leak(Box::new(Slot::new(config, 8, None, Duration::ZERO, 50)));
        let early = SlotView(slot).named("declared.budget[a]", true).unwrap();
        early.set_mode(Mode::ForcedOpen);
        let family = slot.family::<String>();
        for key in ["a", "b", "c", "d"] {
            let _ = family.get(key).call(|| Ok::<_, ()>(()));
        }
        assert!(Arc::ptr_eq(&family.get("a"), &early));
        // Room for two of four: `a`, forced open, takes one.
        assert_eq!(fail(&family.get("b")), State::Open);
        assert_eq!(fail(&family.get("c")), State::Closed);
        assert_eq!(family.stats().spared, 1);
        let other = slot.family::<u64>();
        for key in 0..2_u64 {
            let _ = other.get(&key).call(|| Ok::<_, ()>(()));
        }
        assert_eq!(fail(&other.get(&0_u64)), State::Open);
        assert_eq!(other.stats().spared, 0);
    }

    /// A slot shows its family's name and key bound, as a family does.
    #[test]
    fn a_slot_shows_its_name_and_max_keys() {
        let config = crate::Breaker::builder()
            .name("declared.debug")
            .checked()
            .unwrap();
        let slot = Slot::new(config, 16, None, Duration::ZERO, 100);
        let shown = format!("{slot:?}");
        assert!(shown.starts_with("Slot {"), "{shown}");
        assert!(shown.contains("declared.debug"), "{shown}");
        assert!(shown.contains("max_keys: 16"), "{shown}");
    }

    /// A slot keeps at least one key: 0, which the attribute never writes,
    /// is refused where the slot is made.
    #[test]
    #[should_panic(expected = "at least 1 key")]
    fn a_slot_for_no_keys_is_refused() {
        let config = crate::Breaker::builder().checked().unwrap();
        let _ = Slot::new(config, 0, None, Duration::ZERO, 100);
    }
}
