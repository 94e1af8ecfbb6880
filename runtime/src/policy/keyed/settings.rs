//! A family's settings: those its members are made with, changed at run
//! time ([`FamilyRef::reconfigure`](super::FamilyRef::reconfigure)) for
//! the members now and later; the members asked for by name before their
//! key's first call; and the ejection budget each member is made to ask.

use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};

use crate::core::breaker::{Breaker, Budget, Origin, Origins};
use crate::core::clock::Clock;
use crate::core::config::{Config, Patch};
use crate::core::error::ConfigError;
use crate::core::name::Name;
use crate::policy::bulkhead::Limit;
use crate::sync::AtomicBool;

use super::Inner;
use super::evict::listed;
use super::key::{Key, OVERFLOW};
use super::members::{Leases, Member};

/// A family's own settings, beside those of its members: how many members
/// it keeps and its ejection budget. Both change at run time, with the
/// members' settings, by the family's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// At most this many members are stored (`max_keys`).
    pub(crate) max_keys: usize,
    /// At most this share of them ejected, 100 for no bound
    /// (`max_ejection_percent`).
    pub(crate) max_ejection_percent: u8,
}

impl Bounds {
    /// These bounds with those `patch` sets, each held to its rule; the
    /// first key at fault.
    pub(crate) fn patched(self, patch: &Patch) -> Result<Bounds, (&'static str, String)> {
        let broken = |v: failfast_rules::Violation| (v.key().name(), v.problem());
        let mut next = self;
        if let Some(n) = patch.max_keys {
            next.max_keys = failfast_rules::max_keys(n).map_err(broken)?;
        }
        if let Some(percent) = patch.max_ejection_percent {
            failfast_rules::max_ejection_percent(u32::from(percent)).map_err(broken)?;
            next.max_ejection_percent = percent;
        }
        Ok(next)
    }
}

/// A family's settings as changed at run time.
#[derive(Default)]
pub(super) struct Tuned {
    config: Option<Config>,
    bounds: Option<Bounds>,
    mode: Option<crate::core::breaker::Mode>,
    /// Where each of `config`'s settings came from.
    origins: Origins,
}

impl Tuned {
    pub(super) const fn new() -> Self {
        Self {
            config: None,
            bounds: None,
            mode: None,
            origins: Origins::DECLARED,
        }
    }

    /// `declared` with the changes made since.
    pub(super) fn config(&self, declared: &Config) -> Config {
        self.config.clone().unwrap_or_else(|| declared.clone())
    }

    /// The family's bounds, `declared` with the changes made since.
    pub(super) fn bounds(&self, declared: Bounds) -> Bounds {
        self.bounds.unwrap_or(declared)
    }

    /// Where each setting members are made with came from.
    pub(super) fn origins(&self) -> Origins {
        self.origins
    }

    /// Records `patch`, checked whole against the settings in force (the
    /// members' and the family's bounds), as coming `from` there.
    pub(super) fn change(
        &mut self,
        (declared, bounds): (&Config, Bounds),
        patch: &Patch,
        from: Origin,
    ) -> Result<(), ConfigError> {
        let refused = |(key, reason)| ConfigError::refused(&declared.name, key, reason);
        let bounds = self.bounds(bounds).patched(patch).map_err(refused)?;
        let members = patch.for_members();
        let next = members
            .applied_to(&self.config(declared))
            .map_err(refused)?;
        self.config = Some(next);
        self.bounds = Some(bounds);
        // The members' origins: the bounds are the family's, not theirs.
        self.origins = self.origins.with(members.keys(), from);
        if let Some(mode) = patch.mode {
            self.mode = Some(mode);
        }
        Ok(())
    }

    /// Replaces the changes made so far with `next` and `bounds`, the
    /// family's declared settings with a section applied, coming from
    /// `origins`; the mode stays.
    pub(super) fn replace(&mut self, (next, bounds): (&Config, Bounds), origins: Origins) {
        self.config = Some(next.clone());
        self.bounds = Some(bounds);
        self.origins = origins;
    }

    /// The mode members made from now on start in.
    pub(super) fn mode(&self) -> crate::core::breaker::Mode {
        self.mode.unwrap_or(crate::core::breaker::Mode::Normal)
    }

    /// Members made from now on start in `mode` (none set for
    /// [`Mode::Normal`](crate::core::breaker::Mode::Normal)).
    pub(super) fn set_mode(&mut self, mode: crate::core::breaker::Mode) {
        self.mode = (mode != crate::core::breaker::Mode::Normal).then_some(mode);
    }

    /// A member named `name`, with these settings, asking `budget` before
    /// it trips (counted once stored: see `Breaker::join_budget`).
    pub(super) fn member(
        &self,
        declared: &Config,
        clock: &Clock,
        max_concurrent: Option<Limit>,
        budget: &Arc<Budget>,
        name: String,
        stamp: u64,
    ) -> Member {
        let mut config = self.config(declared);
        config.name = Name::from(name);
        let member = Member {
            breaker: Breaker::with_clock(config, clock.clone()),
            bulkhead: max_concurrent.map(|limit| Arc::new(limit.bulkhead())),
            used: AtomicU64::new(stamp),
            leases: Leases::new(),
            retired: AtomicBool::new(false),
        };
        member.breaker.record_origins(self.origins);
        if let Some(bulkhead) = &member.bulkhead {
            // Told the limit in force now, and each change from now on.
            member.breaker.bound_by(Arc::clone(bulkhead) as _);
        }
        member.breaker.ask_before_opening(Arc::clone(budget));
        if let Some(mode) = self.mode {
            member.breaker.set_mode(mode);
        }
        member
    }
}

/// Applies the members' part of `patch` (all but the family's bounds),
/// coming `from` there, to each of `members`; the first refusal, after the
/// others changed. A patch of the bounds alone changes no member.
pub(super) fn reconfigure_each<'m>(
    members: impl IntoIterator<Item = &'m Arc<Member>>,
    patch: &Patch,
    from: Origin,
) -> Result<(), ConfigError> {
    let patch = &patch.for_members();
    if *patch == Patch::default() {
        return Ok(());
    }
    let mut first = Ok(());
    for member in members {
        if let Err(refused) = member.breaker.apply(patch, from) {
            first = first.and(Err(refused));
        }
    }
    first
}

/// Replaces the settings of each of `members` but those `keep` names
/// with `next` (under each member's own name), coming from `origins`.
pub(super) fn replace_each<'m>(
    members: impl IntoIterator<Item = &'m Arc<Member>>,
    next: &Config,
    origins: Origins,
    keep: &dyn Fn(&str) -> bool,
) {
    for member in members {
        if !keep(member.breaker.name()) {
            let mut config = next.clone();
            config.name = member.breaker.shared_name();
            member.breaker.replace(config, origins);
        }
    }
}

/// Puts each of `members` in `mode`.
pub(super) fn set_mode_each<'m>(
    members: impl IntoIterator<Item = &'m Arc<Member>>,
    mode: crate::core::breaker::Mode,
) {
    for member in members {
        member.breaker.set_mode(mode);
    }
}

/// Members asked for by name before their key's first call, by label.
pub(super) type Pending =
    std::collections::HashMap<Box<str>, Arc<Member>, foldhash::fast::FixedState>;

/// No member asked for yet.
pub(super) const fn no_pending() -> Pending {
    // A fixed seed: the labels are the operator's, not a caller's.
    std::collections::HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0x6b65_7965_6400))
}

/// A member asked for by name before its key's first call: found among
/// `pending` by its label, or made there when `make`, the label is a key's
/// and fewer than `max_keys` wait.
pub(super) fn pending_member(
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

impl<K: Clone + Hash + Eq + Send + Sync + 'static> Inner<K> {
    /// The member named `name` asked for before its key's first call, if
    /// any, else a new one.
    pub(super) fn adopt_or_make<Q: Key + ?Sized>(&self, key: &Q, stamp: u64) -> Arc<Member> {
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
    pub(super) fn member(&self, name: String, stamp: u64) -> Member {
        let tuned = self.tuned.lock().unwrap_or_else(PoisonError::into_inner);
        let member = tuned.member(
            &self.config,
            &self.clock,
            self.max_concurrent,
            &self.budget,
            name,
            stamp,
        );
        drop(tuned);
        member
    }

    /// The settings the family gives its members now (under its own name).
    pub(super) fn current_config(&self) -> Config {
        let tuned = self.tuned.lock().unwrap_or_else(PoisonError::into_inner);
        tuned.config(&self.config)
    }

    /// Where each setting the family gives its members now came from.
    pub(super) fn origins(&self) -> Origins {
        self.tuned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .origins()
    }

    /// Changes the settings of every member, the overflow breaker's and
    /// those asked for by name included, and of every member made from now
    /// on, and the family's bounds. Checked against the family's settings
    /// first: nothing changes when they refuse it. A member whose own
    /// settings (changed by name) refuse it keeps them; the first such
    /// refusal is returned, after the rest were changed.
    pub(super) fn reconfigure(&self, patch: &Patch, from: Origin) -> Result<(), ConfigError> {
        self.change_all(
            |tuned| tuned.change((&self.config, self.declared), patch, from),
            |members| reconfigure_each(members, patch, from),
        )?
    }

    /// `change` made to the family's settings, then, when it is `Ok`, `each`
    /// to every member held (the overflow breaker's and those asked for by
    /// name included).
    fn change_all<R>(
        &self,
        change: impl FnOnce(&mut Tuned) -> Result<(), ConfigError>,
        each: impl FnOnce(&[Arc<Member>]) -> R,
    ) -> Result<R, ConfigError> {
        // In the family's lock order (see `Inner::slots`): the members are
        // listed under all three locks, so a member made before the change
        // is listed (an insertion holds the insertion lock until its member
        // is stored) and one made after it gets the new settings.
        let mut slots = self.lock();
        let pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let mut tuned = self.tuned.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut tuned)?;
        // The bounds in force at once, under the insertion lock.
        self.bound(&mut slots, tuned.bounds(self.declared));
        let members: Vec<Arc<Member>> = listed(&slots, self.overflow.get())
            .chain(pending.values().cloned())
            .collect();
        drop(pending);
        drop(slots);
        // The settings stay held while the members change: a member made
        // meanwhile waits, and then gets the new settings (or mode);
        // insertions of keys already stored and lookups go on.
        let result = each(&members);
        drop(tuned);
        // A lower `max_keys` evicts down to it now, as far as members may
        // be evicted: once they have the new settings (a member whose own
        // differ is kept), and with the settings' lock let go (which the
        // eviction's check of them takes).
        let evicted = self.shrink_now();
        self.report_evicted(evicted);
        Ok(result)
    }

    /// Replaces the family's settings with `next` (its declared ones with a
    /// section applied) for every member made from now on and every member
    /// held now but those `keep` names (by `family[key]`), whatever was
    /// changed before, coming from `origins`.
    pub(super) fn replace(
        &self,
        (next, bounds): (&Config, Bounds),
        origins: Origins,
        keep: &dyn Fn(&str) -> bool,
    ) {
        let _ = self.change_all(
            |tuned| {
                tuned.replace((next, bounds), origins);
                Ok(())
            },
            |members| replace_each(members, next, origins, keep),
        );
    }

    /// The mode members made from now on start in.
    pub(super) fn mode(&self) -> crate::core::breaker::Mode {
        self.tuned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .mode()
    }

    /// Puts every member (the overflow breaker's and those asked for by
    /// name included) in `mode`, and every member made from now on: a
    /// reconfiguration of the mode alone, which republishes no settings.
    pub(super) fn set_mode(&self, mode: crate::core::breaker::Mode) {
        let _ = self.change_all(
            |tuned| {
                tuned.set_mode(mode);
                Ok(())
            },
            |members| set_mode_each(members, mode),
        );
    }
}
