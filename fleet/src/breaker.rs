//! failfast's own breakers as fleet members.
//!
//! A [`BreakerMember`] wraps a runtime breaker (attribute or builder, through
//! its [`BreakerRef`]) and implements [`FleetMember`] with the breaker's own
//! primitives: a remote open is
//! [`integration::open_remote`](failfast_runtime::integration::open_remote), one
//! compare-and-swap on its state word, and a fleet close is
//! [`release_remote`](failfast_runtime::integration::release_remote). Its
//! transitions reach the fleet through the runtime's process-wide transition
//! hook ([`failfast_runtime::integration`]), which writes them to the breaker's lane:
//! no lock and no wait on the transitioning thread, whatever the fleet's task
//! is doing. Transitions with [`TransitionReason::Remote`] are the fleet's own and are
//! not voted (no echo). Should another crate have installed the runtime's hook
//! first (or the breaker have joined another fleet of this process), the
//! member listens to the breaker's events instead, which may wait briefly to
//! keep them in order (see [`failfast_runtime::events`]).
//!
//! Nothing is added to a call's path: the breaker does not know it is in a
//! fleet.

use crate::Notifier;
use crate::config::Breakers;
use crate::door::Door;
use crate::lane::{self, Lane};
use crate::member::{FleetMember, LocalTransition, RecentOutcomes};
use failfast_runtime::events::Subscription;
use failfast_runtime::events::{self, TransitionReason};
use failfast_runtime::integration::{self, Cause, RemoteOpen};
use failfast_runtime::registry::{self, BreakerRef};
use failfast_runtime::{Mode, State};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How far back the veto looks: outcomes counted over about one second.
const VETO_SPAN: Duration = Duration::from_secs(1);
/// Totals samples kept for the veto (one per [`FleetMember::tick`], every
/// 250 ms): the oldest is about a second old.
const SAMPLES: usize = 5;

/// A failfast breaker taking part in a fleet. Built by
/// [`Fleet::attach_breaker`](crate::Fleet::attach_breaker) and by the
/// registry watch of [`FleetConfig::breakers`](crate::FleetConfig::breakers).
pub struct BreakerMember {
    breaker: BreakerRef,
    fingerprint: u64,
    /// The open this member imposed last, to extend or release it.
    imposed: Mutex<Option<RemoteOpen>>,
    /// The lane the runtime's hook writes the breaker's transitions to.
    routed: Mutex<Option<Arc<Lane>>>,
    /// Without the hook: the events listener that feeds the notifier.
    listening: Mutex<Option<events::Subscription>>,
    /// `(when, successes, failures)` of the breaker's running totals.
    samples: Mutex<Vec<(Instant, u64, u64)>>,
    /// `(when, timed_started)`, oldest first, for
    /// [`FleetMember::calls_hung`]: back to the newest one old enough.
    started: Mutex<std::collections::VecDeque<(Instant, u64)>>,
    /// What `calls_hung` found last: calls that hang are no evidence that
    /// the dependency works from here, so they count against the veto.
    hung: std::sync::atomic::AtomicU32,
}

impl std::fmt::Debug for BreakerMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BreakerMember")
            .field("name", &self.breaker.name())
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

impl BreakerMember {
    /// A member for `breaker`.
    pub fn new(breaker: impl Into<BreakerRef>) -> Arc<Self> {
        let breaker = breaker.into();
        Arc::new(BreakerMember {
            fingerprint: integration::fingerprint(&breaker),
            breaker,
            imposed: Mutex::new(None),
            routed: Mutex::new(None),
            listening: Mutex::new(None),
            samples: Mutex::new(Vec::with_capacity(SAMPLES + 1)),
            started: Mutex::new(std::collections::VecDeque::new()),
            hung: std::sync::atomic::AtomicU32::new(0),
        })
    }

    /// The breaker.
    pub fn breaker(&self) -> &BreakerRef {
        &self.breaker
    }
}

impl Drop for BreakerMember {
    fn drop(&mut self) {
        let routed = self
            .routed
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(lane) = routed.take() {
            lane::unroute(&self.breaker, &lane);
        }
    }
}

/// A runtime event as the fleet sees it.
fn transition(t: &events::Transition) -> LocalTransition {
    lane::transition(
        t.from,
        t.to,
        t.mode,
        t.reason == TransitionReason::Remote,
        matches!(t.reason, TransitionReason::Manual),
    )
}

impl FleetMember for BreakerMember {
    fn name(&self) -> &str {
        self.breaker.name()
    }

    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn state(&self) -> State {
        self.breaker.state()
    }

    fn apply_remote_open(&self, until: Instant) {
        let remaining = until.saturating_duration_since(Instant::now());
        let mut imposed = self.imposed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = integration::open_remote(&self.breaker, remaining, *imposed) {
            *imposed = Some(open);
        }
    }

    fn release_remote_open(&self, at: Instant) {
        let mut imposed = self.imposed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = *imposed {
            let within = at.saturating_duration_since(Instant::now());
            // A token the breaker no longer holds is harmless: both calls
            // check it against the state word.
            if let Some(shorter) = integration::release_remote(&self.breaker, open, within) {
                *imposed = Some(shorter);
            }
        }
    }

    fn recent_outcomes(&self) -> RecentOutcomes {
        let now = Instant::now();
        let s = self.breaker.snapshot();
        let samples = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        // The oldest sample within the span; without one, nothing is known.
        let Some(&(_, successes, failures)) = samples
            .iter()
            .find(|(at, ..)| now.duration_since(*at) <= VETO_SPAN + VETO_SPAN / 4)
        else {
            return RecentOutcomes::default();
        };
        let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        // Calls hanging past `hung_after` are failures not counted yet: the
        // successes before a hang began must not veto the fleet's open.
        let hung = self.hung.load(std::sync::atomic::Ordering::Relaxed);
        RecentOutcomes {
            successes: clamp(s.successes.saturating_sub(successes)),
            failures: clamp(s.failures.saturating_sub(failures)).saturating_add(hung),
        }
    }

    /// The calls under a time limit started by the newest sample at least
    /// `older_than` old, less every such call that ended since the breaker
    /// was built: the calls of then that still run, or fewer (a call that
    /// started later and ended is taken off too), never more.
    fn calls_hung(&self, now: Instant, older_than: Duration) -> u32 {
        let s = self.breaker.snapshot();
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        started.push_back((now, s.timed_started));
        let old_enough = |at: Instant| now.saturating_duration_since(at) >= older_than;
        while started.len() > 1 && old_enough(started[1].0) {
            started.pop_front();
        }
        let hung = match started.front() {
            Some(&(at, then)) if old_enough(at) => {
                u32::try_from(then.saturating_sub(s.timed_ended)).unwrap_or(u32::MAX)
            }
            _ => 0,
        };
        self.hung.store(hung, std::sync::atomic::Ordering::Relaxed);
        hung
    }

    fn tick(&self, now: Instant) {
        let s = self.breaker.snapshot();
        let mut samples = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        samples.push((now, s.successes, s.failures));
        if samples.len() > SAMPLES {
            samples.remove(0);
        }
    }

    fn attached(&self, notifier: Notifier) {
        if lane::route(&self.breaker, notifier.lane()) {
            *self.routed.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(notifier.lane().clone());
        } else {
            let to_fleet = notifier.clone();
            let listening =
                events::subscribe(&*self.breaker, move |t| to_fleet.notify(transition(t)));
            *self
                .listening
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(listening);
        }
        // Already open on its own evidence when it joined: that is a vote.
        let now = self.breaker.snapshot();
        if now.mode == Mode::Normal && now.state == State::Open {
            notifier.notify(LocalTransition {
                from: State::Closed,
                to: State::Open,
                cause: Cause::Calls,
            });
        }
    }
}

/// Attaches the process's registered breakers that `which` selects, now and as
/// they register, for as long as the returned watch lives.
pub(crate) fn watch_registry(door: &Arc<Door>, which: Breakers) -> Option<Subscription> {
    if which == Breakers::Explicit {
        return None;
    }
    let door = Arc::downgrade(door);
    Some(integration::watch(move |breaker| {
        let wanted = match &which {
            Breakers::All => true,
            Breakers::Named(names) => names.iter().any(|n| n == breaker.name()),
            Breakers::Explicit => false,
        };
        if let (true, Some(door)) = (wanted, door.upgrade()) {
            // Two breakers of one name in one process: the first one joined.
            let _ = door.attach(BreakerMember::new(breaker.clone()));
        }
    }))
}

impl crate::Fleet {
    /// Joins a failfast breaker (an `Arc<Breaker>`, a `&'static Breaker` or a
    /// [`BreakerRef`] from the registry) to the fleet, whether it is
    /// registered or not.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use failfast_fleet::{Breakers, FleetConfig};
    /// use failfast_runtime::Breaker;
    /// use std::sync::Arc;
    ///
    /// let mut config = FleetConfig::new("redis://127.0.0.1:6379/", "payments/prod");
    /// config.breakers = Breakers::Explicit;
    /// let fleet = failfast_fleet::join(config)?;
    /// let inventory = Arc::new(Breaker::builder().name("inventory").build()?);
    /// fleet.attach_breaker(inventory.clone())?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`attach`](crate::Fleet::attach).
    pub fn attach_breaker(
        &self,
        breaker: impl Into<BreakerRef>,
    ) -> Result<Notifier, crate::AttachError> {
        self.attach(BreakerMember::new(breaker))
    }
}

/// How often the registered keyed families are looked through for members
/// created or evicted since.
#[cfg(feature = "keyed")]
pub(crate) const FAMILY_SCAN: Duration = Duration::from_millis(250);

/// The keyed families whose members join a fleet: the registered ones
/// [`FleetConfig::breakers`](crate::FleetConfig::breakers) selects, and those
/// given to [`Fleet::attach_family`](crate::Fleet::attach_family).
#[cfg(feature = "keyed")]
pub(crate) struct Families {
    which: Breakers,
    /// `members()` of each family attached by hand.
    attached: Mutex<Vec<MemberList>>,
}

#[cfg(feature = "keyed")]
type MemberList = Arc<dyn Fn() -> Vec<Arc<failfast_runtime::Member>> + Send + Sync>;

#[cfg(feature = "keyed")]
impl Families {
    pub(crate) fn new(which: Breakers) -> Arc<Self> {
        Arc::new(Families {
            which,
            attached: Mutex::new(Vec::new()),
        })
    }

    /// Every member of every family this fleet takes along, now.
    fn members(&self) -> Vec<Arc<failfast_runtime::Member>> {
        let mut members = Vec::new();
        if self.which != Breakers::Explicit {
            for family in registry::families() {
                let wanted = match &self.which {
                    Breakers::Named(names) => names.iter().any(|n| *n == *family.name()),
                    _ => true,
                };
                if wanted {
                    members.extend(family.members());
                }
            }
        }
        let attached = self.attached.lock().unwrap_or_else(PoisonError::into_inner);
        for list in attached.iter() {
            members.extend(list());
        }
        members
    }
}

/// Attaches the members of the families `families` names as the families
/// create them, and detaches those they evict, every [`FAMILY_SCAN`], for as
/// long as the returned task runs. A member joins under its own name,
/// `family[key]`.
///
/// Only members that exist here take part: a remote open for a key this
/// process has not created is ignored (no breaker is created for it, so a
/// peer cannot fill this family up to `max_keys`); the key's open stays in
/// the store until it expires, and a member created for that key before then
/// reads it when it joins.
#[cfg(feature = "keyed")]
pub(crate) fn watch_families(
    handle: &tokio::runtime::Handle,
    door: &Arc<Door>,
    families: &Arc<Families>,
) -> tokio::task::JoinHandle<()> {
    let door = Arc::downgrade(door);
    let families = Arc::downgrade(families);
    handle.spawn(async move {
        let mut joined = std::collections::HashMap::new();
        let mut ticker = tokio::time::interval(FAMILY_SCAN);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let (Some(door), Some(families)) = (door.upgrade(), families.upgrade()) else {
                return;
            };
            scan_families(&door, &families.members(), &mut joined);
        }
    })
}

/// Attaches the members not attached yet and detaches those gone: `joined`
/// holds the members this watch attached, by name.
#[cfg(feature = "keyed")]
fn scan_families(
    door: &Door,
    members: &[Arc<failfast_runtime::Member>],
    joined: &mut std::collections::HashMap<String, Arc<failfast_runtime::Member>>,
) {
    let mut present = std::collections::HashSet::new();
    for member in members {
        let name = member.name().to_owned();
        let known = joined.get(&name).map(|m| Arc::ptr_eq(m, member));
        if known == Some(false) {
            // Evicted, then created again: a new breaker under the old name.
            door.detach(&name);
        }
        if known != Some(true) {
            let joining = BreakerMember::new(BreakerRef::Member(member.clone()));
            if door.attach(joining).is_ok() {
                joined.insert(name.clone(), member.clone());
            } else {
                joined.remove(&name);
            }
        }
        present.insert(name);
    }
    joined.retain(|name, _| {
        let keep = present.contains(name);
        if !keep {
            door.detach(name);
        }
        keep
    });
}

#[cfg(feature = "keyed")]
impl crate::Fleet {
    /// Joins the members of a keyed family to the fleet, as the family
    /// creates them (each under its own name, `family[key]`), whether the
    /// family is registered or not; members the family evicts leave. The
    /// fleet keeps the family alive. Registered families join by themselves
    /// unless [`FleetConfig::breakers`](crate::FleetConfig::breakers) is
    /// [`Breakers::Explicit`] (or names other breakers).
    ///
    /// Members are looked for every 250 ms: a key's first calls, before its
    /// member joined, are local-only. A remote open for a key this process
    /// has not created is ignored; a member created while it is in force
    /// reads it when it joins.
    pub fn attach_family<K: Clone + std::hash::Hash + Eq + Send + Sync + 'static>(
        &self,
        family: &failfast_runtime::Family<K>,
    ) {
        let family = family.clone();
        self.families()
            .attached
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::new(move || family.members()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use failfast_runtime::Breaker;

    /// Calls under a time limit still running past the bound are counted
    /// (from the samples the fleet's ticks take), and count against the
    /// veto as failures: successes before a hang began are no sign that
    /// the dependency works from here.
    #[tokio::test(flavor = "current_thread")]
    async fn hung_calls_are_counted_and_count_against_the_veto() {
        let breaker: &'static Breaker = Box::leak(Box::new(
            Breaker::builder()
                .name("hung")
                .threshold(50)
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
        ));
        let member = BreakerMember::new(breaker);
        let t0 = Instant::now();
        member.tick(t0);
        for _ in 0..10 {
            breaker.call(|| Ok::<(), ()>(())).unwrap();
        }
        let bound = Duration::from_millis(200);
        assert_eq!(member.calls_hung(t0, bound), 0);
        let hanging: Vec<_> = (0..2)
            .map(|_| tokio::spawn(breaker.call_async(std::future::pending::<Result<(), ()>>())))
            .collect();
        tokio::task::yield_now().await;
        let later = t0 + Duration::from_millis(1);
        assert_eq!(
            member.calls_hung(later, bound),
            0,
            "started before no sample old enough"
        );
        assert_eq!(member.recent_outcomes().failures, 0);
        assert_eq!(member.calls_hung(later + bound, bound), 2);
        let recent = member.recent_outcomes();
        assert_eq!((recent.successes, recent.failures), (10, 2));
        hanging[0].abort();
        tokio::task::yield_now().await;
        assert_eq!(member.calls_hung(later + bound * 2, bound), 1, "one ended");
        hanging[1].abort();
    }
}
