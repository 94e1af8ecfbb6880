//! failfast's own breakers as fleet members.
//!
//! A [`BreakerMember`] wraps a runtime breaker (attribute or builder, through
//! its [`BreakerRef`]) and implements [`FleetMember`] with the breaker's own
//! primitives: a remote open is
//! [`Breaker::open_remote`](failfast_runtime::Breaker::open_remote), one
//! compare-and-swap on its state word, and a fleet close is
//! [`release_remote`](failfast_runtime::Breaker::release_remote). Its
//! transitions reach the fleet through a per-breaker events listener that
//! hands them to the [`Notifier`] (a `try_send`, never a wait); transitions with
//! [`Reason::Remote`] are the fleet's own and are not voted (no echo).
//!
//! Nothing is added to a call's path: the breaker does not know it is in a
//! fleet, apart from the listener its transitions are delivered to.

use crate::config::Breakers;
use crate::fleet::Door;
use crate::member::{Cause, FleetMember, LocalState, RecentOutcomes, Transition};
use crate::Notifier;
use failfast_runtime::events::{self, Reason};
use failfast_runtime::registry::{self, BreakerRef, Watch};
use failfast_runtime::{Mode, RemoteOpen, State};
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
    /// The events listener that feeds the notifier; dropped with the member.
    listening: Mutex<Option<events::Subscription>>,
    /// `(when, successes, failures)` of the breaker's running totals.
    samples: Mutex<Vec<(Instant, u64, u64)>>,
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
            fingerprint: breaker.config().fingerprint(),
            breaker,
            imposed: Mutex::new(None),
            listening: Mutex::new(None),
            samples: Mutex::new(Vec::with_capacity(SAMPLES + 1)),
        })
    }

    /// The breaker.
    pub fn breaker(&self) -> &BreakerRef {
        &self.breaker
    }
}

fn local(state: State) -> LocalState {
    match state {
        State::Closed => LocalState::Closed,
        State::Open => LocalState::Open,
        State::HalfOpen => LocalState::HalfOpen,
    }
}

/// A runtime transition as the fleet sees it.
fn transition(t: &events::Transition) -> Transition {
    let cause = match t.reason {
        Reason::Remote => Cause::Fleet,
        _ if t.mode != Mode::Normal => Cause::Manual,
        Reason::Manual | Reason::ConfigChange => Cause::Manual,
        _ => Cause::LocalEvidence,
    };
    Transition {
        from: local(t.from),
        to: local(t.to),
        cause,
    }
}

impl FleetMember for BreakerMember {
    fn name(&self) -> &str {
        self.breaker.name()
    }

    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn state(&self) -> LocalState {
        local(self.breaker.state())
    }

    fn apply_remote_open(&self, until: Instant) {
        let remaining = until.saturating_duration_since(Instant::now());
        let mut imposed = self.imposed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = self.breaker.open_remote(remaining, *imposed) {
            *imposed = Some(open);
        }
    }

    fn release_remote_open(&self, at: Instant) {
        let mut imposed = self.imposed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = *imposed {
            let within = at.saturating_duration_since(Instant::now());
            // A token the breaker no longer holds is harmless: both calls
            // check it against the state word.
            if let Some(shorter) = self.breaker.release_remote(open, within) {
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
        RecentOutcomes {
            successes: clamp(s.successes.saturating_sub(successes)),
            failures: clamp(s.failures.saturating_sub(failures)),
        }
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
        let to_fleet = notifier.clone();
        let listening = self
            .breaker
            .subscribe(move |t| to_fleet.notify(transition(t)));
        *self
            .listening
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(listening);
        // Already open on its own evidence when it joined: that is a vote.
        if self.breaker.mode() == Mode::Normal && self.breaker.state() == State::Open {
            notifier.notify(Transition {
                from: LocalState::Closed,
                to: LocalState::Open,
                cause: Cause::LocalEvidence,
            });
        }
    }
}

/// Attaches the process's registered breakers that `which` selects, now and as
/// they register, for as long as the returned watch lives.
pub(crate) fn watch_registry(door: &Arc<Door>, which: Breakers) -> Option<Watch> {
    if which == Breakers::Explicit {
        return None;
    }
    let door = Arc::downgrade(door);
    Some(registry::watch(move |breaker| {
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
