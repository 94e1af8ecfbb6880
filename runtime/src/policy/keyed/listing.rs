//! A family whatever its key type, as the registry lists it: [`FamilyRef`]
//! (what a [`Family`](super::Family)(super::Family) derefs to), its counts
//! ([`FamilyStats`]), and its members found by label.

use std::hash::Hash;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use crate::core::config::{Builder, Config};
use crate::core::error::ConfigError;
use crate::core::name::Name;

use super::evict::listed;
use super::key::{OVERFLOW, label_in, name_with};
use super::members::Member;
use super::settings::pending_member;
use super::{Inner, Listing};

/// What a keyed family counted so far, and its bound: read with
/// [`FamilyRef::stats`], on a [`Family`](super::Family) or a registered family.
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
    /// ([`max_ejection_percent`](super::FamilyBuilder::max_ejection_percent)).
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
/// ([`registry::families`](crate::registry::families)); a [`Family`](super::Family)
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
    /// made from now on, as [`Breaker::reconfigure`](crate::Breaker::reconfigure) does for one breaker:
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

impl<K: Clone + Hash + Eq + Send + Sync + 'static> Inner<K> {
    /// The member labelled `label` (named `family[label]`): stored (found
    /// in `labels` without a lock), the overflow breaker, or asked for
    /// before (under the `pending` lock); else, when `make`, a new one that
    /// the key's first call adopts, while fewer than `max_keys` wait so.
    pub(super) fn labelled(&self, label: &str, make: bool) -> Option<Arc<Member>> {
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
    pub(super) fn label_of<'m>(&self, member: &'m Member) -> &'m str {
        self.label_in(member.name())
    }

    /// The label in `name`, a member's name in this family.
    pub(super) fn label_in<'n>(&self, name: &'n str) -> &'n str {
        label_in(name, &self.config.name).unwrap_or(name)
    }

    pub(super) fn members(&self) -> Vec<Arc<Member>> {
        listed(&self.lock(), self.overflow.get()).collect()
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
