//! A family whatever its key type, as the registry lists it: [`FamilyRef`]
//! (what a [`Family`](super::Family)(super::Family) derefs to), its counts
//! ([`FamilyStats`]), and its members found by label.

use std::hash::Hash;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use crate::core::breaker::{Origin, Origins};
use crate::core::config::{Builder, Config, Patch};
use crate::core::error::ConfigError;
use crate::core::name::Name;

use super::evict::listed;
use super::key::{OVERFLOW, label_in, name_with};
use super::members::Member;
use super::settings::pending_member;
use super::{Bounds, Inner, Listing};

/// What a keyed family counted so far, and its bound: read with
/// [`FamilyRef::stats`], on a [`Family`](super::Family) or a registered family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FamilyStats {
    /// The most breakers the family keeps, as in force (declared, or
    /// changed at run time: see [`FamilyRef::reconfigure`]).
    pub max_keys: usize,
    /// The family's ejection budget in force
    /// ([`max_ejection_percent`](crate::Builder::max_ejection_percent)),
    /// 100 for none.
    pub max_ejection_percent: u8,
    /// Breakers created and stored (each key once, unless it was evicted
    /// and came back).
    pub created: u64,
    /// Breakers evicted to make room for new keys.
    pub evicted: u64,
    /// Calls that found the family full of breakers it may not evict, and
    /// ran through its overflow breaker `family[*]`.
    pub unstored: u64,
    /// Trips from Closed held back by the ejection budget
    /// ([`max_ejection_percent`](crate::Builder::max_ejection_percent)).
    pub spared: u64,
    /// Breakers stored now (the overflow breaker not counted): 0 before
    /// the first key, at most `max_keys`.
    pub stored: usize,
}

impl FamilyStats {
    pub(crate) fn of(
        Bounds {
            max_keys,
            max_ejection_percent,
        }: Bounds,
        stored: usize,
        [created, evicted, unstored, spared]: [u64; 4],
    ) -> Self {
        Self {
            max_keys,
            max_ejection_percent,
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
        FamilyStats::of(self.bounds(), self.0.len(), self.0.counts())
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

    /// The replicas to call, in turn: of `replicas` (anything that gives
    /// its key's label, as a member's name writes it, `family[label]`:
    /// `&str`, `String`, or a client type of yours with `AsRef<str>`), those
    /// whose breaker would let a call through now, each once, round robin:
    /// starting from the next in a rotation the family keeps, as Envoy
    /// balances over the hosts its outlier detection has not ejected. A
    /// client calls the first and, when that call fails, goes on with the
    /// next; the sick replicas are skipped without a call or a refusal.
    ///
    /// ```
    /// use failfast_runtime::{Breaker, Family};
    ///
    /// let replicas: Family<String> =
    ///     Family::builder(Breaker::builder().name("inventory").threshold(1)).build()?;
    /// let _ = replicas.get("b:80").call(|| Err::<(), _>("connection refused"));
    /// let hosts = ["a:80", "b:80", "c:80"];
    /// let picks: Vec<&str> = (0..4).map(|_| *replicas.failover(&hosts).next().unwrap()).collect();
    /// assert_eq!(picks, ["a:80", "c:80", "a:80", "c:80"]); // b is skipped
    /// // Failing over: every replica that takes calls, the next in turn first.
    /// let order: Vec<&str> = replicas.failover(&hosts).copied().collect();
    /// assert_eq!(order, ["a:80", "c:80"]);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    ///
    /// A replica takes calls when it has no breaker yet, or its breaker is
    /// Closed, Open past its open time (the call would be its trial), or
    /// HalfOpen with a trial slot free. Each pick takes the next turn of a
    /// rotation the family keeps, and one more for each refusing replica
    /// it lands on, so the replicas that take calls are each first equally
    /// often (the one after a sick replica no more than the others), from
    /// one thread or many: picks on every thread share the rotation (a
    /// relaxed increment of a counter the family keeps on a cache line of
    /// its own). The rest of a pick walks on from its first, each replica
    /// once.
    ///
    /// **The ejection budget.** With
    /// [`max_ejection_percent`](crate::Builder::max_ejection_percent),
    /// at most that share of `labels` (rounded down, at least one) is left
    /// out; when more of them refuse calls (forced or remote opens are not
    /// held back by the budget, and the family's budget counts all its
    /// members, not these), the ones beyond the budget are still offered,
    /// after those that take calls, in the order given (the first ones
    /// refusing, in that order, count as the ejected ones): a call to them is refused at
    /// once or becomes their trial, and no caller is left with no replica
    /// because too many were ejected. Without a budget (100 %, the default)
    /// every replica that refuses is left out, and when all refuse there is
    /// none to call.
    ///
    /// Cost: a lazy iterator, which allocates nothing; each replica looked
    /// at costs one probe of the family's index by label (lock-free, O(1)
    /// whatever the family's size; a label with no stored member also
    /// looks at the members asked for by name, under a lock) and a read of
    /// its breaker's state. The first replica that takes calls is usually
    /// the first looked at; the budget is looked at only when the iterator
    /// is run past the last replica that takes calls (two more passes). Nothing is created and no trial slot is
    /// taken, so a replica offered may still refuse the call (two callers
    /// racing for one trial).
    pub fn failover<'k, S: AsRef<str>>(&self, replicas: &'k [S]) -> impl Iterator<Item = &'k S> {
        Failover {
            family: &*self.0,
            replicas,
            start: None,
            walked: 0,
            beyond: None,
        }
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
    /// **The whole family's mode.** A [`mode`](crate::Builder::mode) sets
    /// the mode of every member as [`Breaker::set_mode`](crate::Breaker::set_mode)
    /// does for one: those held now, its overflow breaker, those asked for
    /// by name ([`member`](Self::member)) and those made from now on, in
    /// one step under the family's locks (a member made meanwhile starts in
    /// the new mode). A patch of the mode alone republishes no settings and
    /// is never refused. Back to [`Mode::Normal`](crate::Mode::Normal),
    /// every member is reset (closed, counters cleared) and new members
    /// start normal. By name: `configure::apply("family", Breaker::builder().mode(…))`,
    /// or `FAILFAST__FAMILY__MODE=forced_open`.
    ///
    /// ```
    /// use failfast_runtime::{Breaker, Family, Mode, State};
    ///
    /// let replicas: Family<String> =
    ///     Family::builder(Breaker::builder().name("replicas::drain")).build()?;
    /// let a = replicas.get("a");
    /// replicas.reconfigure(&Breaker::builder().mode(Mode::ForcedOpen))?;
    /// assert_eq!(a.state(), State::Open);
    /// assert_eq!(replicas.get("new").state(), State::Open, "new members too");
    /// replicas.reconfigure(&Breaker::builder().mode(Mode::Normal))?;
    /// assert!(replicas.members().iter().all(|m| m.state() == State::Closed));
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
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
        self.apply(&settings.patch, Origin::RunTime)
    }

    /// The family's bounds in force.
    pub(crate) fn bounds(&self) -> Bounds {
        Bounds {
            max_keys: self.0.max_keys(),
            max_ejection_percent: self.0.max_ejection_percent(),
        }
    }

    /// Whether `patch` fits the family as it is now, its bounds and the
    /// settings it gives its members (the members' own are not looked
    /// at): the first key at fault.
    pub(crate) fn fits(&self, patch: &Patch) -> Result<(), (&'static str, String)> {
        self.bounds().patched(patch)?;
        patch.for_members().applied_to(&self.config()).map(drop)
    }

    /// The family's declared settings and bounds with `patch` applied (a
    /// reload's section), or the first key at fault.
    pub(crate) fn declared_with(
        &self,
        patch: &Patch,
    ) -> Result<(Config, Bounds), (&'static str, String)> {
        let (config, bounds) = self.0.declared();
        let bounds = bounds.patched(patch)?;
        Ok((patch.for_members().applied_to(&config)?, bounds))
    }

    /// [`reconfigure`](Self::reconfigure) with the settings a patch holds,
    /// coming `from` there.
    pub(crate) fn apply(
        &self,
        patch: &crate::core::config::Patch,
        from: Origin,
    ) -> Result<(), ConfigError> {
        self.0.reconfigure(patch, from)
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
        let max_keys = self.max_keys.load(Ordering::Relaxed);
        pending_member(&mut pending, label, max_keys, || {
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
        from: Origin,
    ) -> Result<(), crate::core::error::ConfigError> {
        Inner::reconfigure(self, patch, from)
    }
    fn origins(&self) -> Origins {
        Inner::origins(self)
    }
    fn config(&self) -> Config {
        self.current_config()
    }
    fn declared(&self) -> (Config, Bounds) {
        (self.config.clone(), self.declared)
    }
    fn replace(&self, next: (&Config, Bounds), origins: Origins, keep: &dyn Fn(&str) -> bool) {
        Inner::replace(self, next, origins, keep);
    }
    fn mode(&self) -> crate::core::breaker::Mode {
        Inner::mode(self)
    }
    fn max_keys(&self) -> usize {
        self.max_keys.load(Ordering::Relaxed)
    }
    fn len(&self) -> usize {
        self.lock().stored.len()
    }
    fn counts(&self) -> [u64; 4] {
        let c = &self.counters;
        let [created, evicted, unstored] =
            [&c.created, &c.evicted, &c.unstored].map(|n| n.load(Ordering::Relaxed));
        let spared = self.budget.spared();
        [created, evicted, unstored, spared]
    }
    fn mark_registered(&self) -> bool {
        !self.registered.swap(true, Ordering::Relaxed)
    }
    fn admits(&self, label: &str) -> bool {
        // A stored member: one lock-free probe and a read of its state.
        match self
            .labels
            .peek_with(label, |_, member| member.breaker().admits_now())
        {
            Some(admits) => admits,
            // None stored: one asked for by name (forced open before any
            // traffic, say) is looked at under the `pending` lock.
            None => Inner::labelled(self, label, false)
                .is_none_or(|member| member.breaker().admits_now()),
        }
    }
    fn max_ejection_percent(&self) -> u8 {
        self.budget.percent()
    }
    fn turn(&self) -> usize {
        self.turn.0.fetch_add(1, Ordering::Relaxed)
    }
    fn set_mode(&self, mode: crate::core::breaker::Mode) {
        Inner::set_mode(self, mode);
    }
}

/// What [`FamilyRef::failover`] returns: the replicas that take calls,
/// in turn, then those beyond the ejection budget.
struct Failover<'f, 'k, S> {
    family: &'f dyn Listing,
    replicas: &'k [S],
    /// Where the walk through the replicas starts, once the first pick
    /// took its turns.
    start: Option<usize>,
    /// Replicas looked at in the walk so far.
    walked: usize,
    /// Once the walk is done: the position of the next replica to look at
    /// for those beyond the budget, and how many refusing ones are still to
    /// be left out (the ejected ones).
    beyond: Option<(usize, usize)>,
}

impl<S: AsRef<str>> Failover<'_, '_, S> {
    fn admits(&self, i: usize) -> bool {
        self.family.admits(self.replicas[i].as_ref())
    }
}

impl<'k, S: AsRef<str>> Iterator for Failover<'_, 'k, S> {
    type Item = &'k S;

    fn next(&mut self) -> Option<&'k S> {
        let n = self.replicas.len();
        if n == 0 {
            return None;
        }
        let start = match self.start {
            Some(start) => start,
            None => {
                // A turn of the rotation per replica landed on, until one
                // takes calls: a turn landing on a sick replica goes to
                // whichever the next turn is, not always to its neighbour,
                // so the healthy ones are each first equally often.
                let mut at = 0;
                for _ in 0..n {
                    at = self.family.turn() % n;
                    if self.admits(at) {
                        self.start = Some(at);
                        self.walked = 1;
                        return Some(&self.replicas[at]);
                    }
                }
                // Every turn refused: walk them all, from there.
                self.start = Some(at);
                at
            }
        };
        while self.walked < n {
            let i = (start + self.walked) % n;
            self.walked += 1;
            if self.admits(i) {
                return Some(&self.replicas[i]);
            }
        }
        if self.beyond.is_none() {
            let percent = usize::from(self.family.max_ejection_percent());
            let ejectable = if percent >= 100 {
                n
            } else {
                (n * percent / 100).max(1)
            };
            let refused = (0..n).filter(|&i| !self.admits(i)).count();
            // Nothing beyond the budget: every replica looked at.
            let at = if refused > ejectable { 0 } else { n };
            self.beyond = Some((at, ejectable));
        }
        while let Some((at, skip)) = self.beyond.as_mut().filter(|(at, _)| *at < n) {
            let i = *at;
            *at += 1;
            if !self.family.admits(self.replicas[i].as_ref()) {
                if *skip == 0 {
                    return Some(&self.replicas[i]);
                }
                *skip -= 1;
            }
        }
        None
    }
}
