//! The fleet logic for one breaker, as a state machine without I/O.
//!
//! The background task feeds it local transitions, store replies and clock ticks;
//! it answers with the store [`Command`] to run next and applies remote effects to
//! the [`FleetMember`]. Everything here is synchronous and deterministic for a given
//! seed, so it is tested without a store or a runtime.
//!
//! Rules it enforces:
//! - only opens caused by local evidence are voted;
//! - a remote open is applied as `now + min(remaining, max_remote_open)`, on the local
//!   monotonic clock, unless the local veto holds;
//! - shortly before the fleet deadline it asks for the probe lease; the winner's
//!   next local trial is the fleet's probe and its result is reported (fenced), and
//!   it asks for nothing more until the report's reply says what follows; a loser
//!   extends its open to the end of the winner's lease plus jitter plus
//!   `probe_lead`, so it asks again only once that lease is over (each loss is a
//!   different lease), and after `max_lost_leases` losses without a result it stops
//!   deferring and probes itself;
//! - a lease asked for a generation the store has already left behind is refused
//!   ([`LeaseOutcome::Stale`]): the machine probes locally until it reads the newer
//!   generation;
//! - the winner's breaker probes at the fleet deadline: an open this machine
//!   extended beyond it earlier (while it lost a lease) is brought back to it;
//! - a fleet close releases the breaker at once, and over `close_jitter` it
//!   admits a rising share of its calls: in each of [`RAMP_SLOTS`] slots it
//!   admits calls for the first `k / RAMP_SLOTS` of the slot (`k` = 1, 2, …)
//!   and is held open for the rest, so the recovered dependency gets the
//!   fleet's traffic back gradually without any instance waiting to start;
//! - a store error never opens anything: remote opens already applied simply expire.

use crate::config::FleetConfig;
use crate::member::{FleetMember, LocalTransition};
use crate::transport::{
    FleetOpen, LeaseOutcome, ReportOutcome, StoreSnapshot, TransportResult, VoteOutcome,
};
use failfast_runtime::State;
use failfast_runtime::integration::Cause;
use std::time::{Duration, Instant};

/// A store operation the machine wants run for its breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Vote that the breaker opened on local evidence.
    Vote,
    /// Read the breaker's fleet state back.
    StoreSnapshot,
    /// Ask for the probe lease of this generation.
    Acquire {
        /// Generation of the fleet open being probed.
        generation: u64,
    },
    /// Report the probe's result under the lease of this generation.
    Report {
        /// Generation of the lease.
        generation: u64,
        /// Whether the trial succeeded.
        success: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lease {
    Idle,
    Requested,
    Held {
        generation: u64,
        until: Instant,
    },
    /// The probe failed and was reported: the reply brings the next generation.
    Reported,
    /// Too many leases lost, or the store unreachable: this generation is probed locally.
    GaveUp,
}

/// Slots of a fleet close's ramp: the share admitted rises by
/// `1 / RAMP_SLOTS` a slot, from `1 / RAMP_SLOTS` to all.
pub const RAMP_SLOTS: u32 = 10;

/// A fleet close being ramped up (see [`Machine::ramp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ramp {
    start: Instant,
    /// Slots whose closing part is over and whose rest is held open already.
    held: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Remote {
    generation: u64,
    until: Instant,
}

/// Fleet state of one breaker.
#[derive(Debug)]
pub struct Machine {
    remote: Option<Remote>,
    lease: Lease,
    lost: u32,
    voting: bool,
    vetoes: u64,
    /// Latest end of an open applied to the member since the fleet last
    /// closed (the member never shortens an open, so this is what it holds).
    applied: Option<Instant>,
    /// The fleet closed: the share of calls admitted is rising.
    ramp: Option<Ramp>,
    /// When calls in flight were last voted.
    hung_voted: Option<Instant>,
    rng: fastrand::Rng,
}

impl Machine {
    /// A machine with nothing known yet; `seed` drives its jitter.
    pub fn new(seed: u64) -> Self {
        Machine {
            remote: None,
            lease: Lease::Idle,
            lost: 0,
            voting: false,
            vetoes: 0,
            applied: None,
            ramp: None,
            hung_voted: None,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// Local monotonic end of the fleet open this machine applied, if any.
    pub fn remote_until(&self) -> Option<Instant> {
        self.remote.map(|r| r.until)
    }

    /// Generation of the fleet open this machine follows, if any.
    pub fn remote_generation(&self) -> Option<u64> {
        self.remote.map(|r| r.generation)
    }

    /// Whether this instance holds the probe lease (its next trial is the fleet's probe).
    pub fn holds_lease(&self) -> bool {
        matches!(self.lease, Lease::Held { .. })
    }

    /// Whether this instance stopped deferring to other probers for the current open.
    pub fn probes_locally(&self) -> bool {
        self.lease == Lease::GaveUp
    }

    /// Leases lost for the current generation.
    pub fn lost_leases(&self) -> u32 {
        self.lost
    }

    /// Whether a fleet close is still ramping this instance's calls up.
    pub fn ramping(&self) -> bool {
        self.ramp.is_some()
    }

    /// Remote opens not applied because of the local veto.
    pub fn vetoes(&self) -> u64 {
        self.vetoes
    }

    fn jitter(&mut self, max: Duration) -> Duration {
        max.mul_f64(self.rng.f64())
    }

    fn forget(&mut self) {
        self.applied = None;
        self.remote = None;
        self.lease = Lease::Idle;
        self.lost = 0;
    }

    /// Applies a fleet open learnt from the store. `ours` is true for opens this
    /// instance's own vote or report produced (never vetoed).
    fn adopt<M: FleetMember + ?Sized>(
        &mut self,
        cfg: &FleetConfig,
        member: &M,
        open: FleetOpen,
        ours: bool,
        now: Instant,
    ) {
        let until = now + open.remaining.min(cfg.max_remote_open);
        if let Some(r) = self.remote {
            // The store never lengthens an open in place (a reopen is a new
            // generation), so the same generation read again brings nothing new: its
            // remaining time only differs from ours by the read's latency.
            let stale = open.generation < r.generation && now < r.until;
            if stale || open.generation == r.generation {
                return;
            }
            self.lease = Lease::Idle;
            self.lost = 0;
        }
        if !ours && self.vetoed(cfg, member) {
            self.vetoes += 1;
            return;
        }
        self.remote = Some(Remote {
            generation: open.generation,
            until,
        });
        self.ramp = None;
        self.apply(member, until);
    }

    fn apply<M: FleetMember + ?Sized>(&mut self, member: &M, until: Instant) {
        self.applied = Some(self.applied.map_or(until, |a| a.max(until)));
        member.apply_remote_open(until);
    }

    fn vetoed<M: FleetMember + ?Sized>(&self, cfg: &FleetConfig, member: &M) -> bool {
        let recent = member.recent_outcomes();
        cfg.veto_successes > 0 && recent.failures == 0 && recent.successes >= cfg.veto_successes
    }

    fn close<M: FleetMember + ?Sized>(&mut self, cfg: &FleetConfig, member: &M, now: Instant) {
        member.release_remote_open(now);
        self.forget();
        self.ramp = (!cfg.close_jitter.is_zero()).then_some(Ramp {
            start: now,
            held: 0,
        });
    }

    /// Time passes during a fleet close's ramp: once the part of the
    /// current slot that admits calls is over, a breaker that closed again
    /// is held open until the slot ends (one remote open, which expires by
    /// itself: the next call is a trial that closes it, or reopens it on its
    /// own evidence). Slot `k` (from 0) of the `RAMP_SLOTS` in
    /// `close_jitter` admits for its first `(k + 1) / RAMP_SLOTS`; the last
    /// admits throughout, and the ramp ends. A new fleet open, or an open on
    /// the breaker's own evidence, ends it too. Called on every tick.
    pub fn ramp<M: FleetMember + ?Sized>(&mut self, cfg: &FleetConfig, member: &M, now: Instant) {
        let Some(ramp) = self.ramp else {
            return;
        };
        let slot = cfg.close_jitter / RAMP_SLOTS;
        let k = (now.saturating_duration_since(ramp.start).as_nanos() / slot.as_nanos().max(1))
            .min(u128::from(RAMP_SLOTS));
        let k = u32::try_from(k).unwrap_or(RAMP_SLOTS);
        if self.remote.is_some() || k + 1 >= RAMP_SLOTS {
            self.ramp = None;
            return;
        }
        let slot_start = ramp.start + slot * k;
        let admitting = slot * (k + 1) / RAMP_SLOTS;
        if k < ramp.held || now < slot_start + admitting {
            return;
        }
        if member.state() == State::Closed {
            member.apply_remote_open(slot_start + slot);
        }
        self.ramp = Some(Ramp {
            held: k + 1,
            ..ramp
        });
    }

    /// A transition of the local breaker.
    pub fn on_local(&mut self, transition: LocalTransition, now: Instant) -> Option<Command> {
        if transition.cause == Cause::Remote {
            return None;
        }
        let held = match self.lease {
            Lease::Held { generation, until }
                if now < until
                    && transition.from == State::HalfOpen
                    && transition.cause == Cause::Calls =>
            {
                Some(generation)
            }
            _ => None,
        };
        match transition.to {
            State::Open => {
                // Reopened on its own evidence: the ramp is over.
                self.ramp = None;
                if let Some(generation) = held {
                    // Not Idle: the fleet deadline has passed, and asking for this
                    // generation's lease again before the reply would win a lease
                    // nobody reports on, which every other instance then loses.
                    self.lease = Lease::Reported;
                    return Some(Command::Report {
                        generation,
                        success: false,
                    });
                }
                self.voting = transition.cause == Cause::Calls;
                self.voting.then_some(Command::Vote)
            }
            State::Closed => {
                self.voting = false;
                self.forget();
                held.map(|generation| Command::Report {
                    generation,
                    success: true,
                })
            }
            State::HalfOpen => None,
        }
    }

    /// `hung` calls of the breaker, closed as `state` says, have run longer
    /// than [`hung_after`](FleetConfig::hung_after): with
    /// [`hung_calls`](FleetConfig::hung_calls) of them a closed breaker
    /// votes, as if it had opened, unless the fleet is open already; again
    /// after half a `vote_window` while they still hang, so that the vote
    /// stays in the window.
    pub fn on_hung(
        &mut self,
        cfg: &FleetConfig,
        state: State,
        hung: u32,
        now: Instant,
    ) -> Option<Command> {
        if hung < cfg.hung_calls.max(1) || state != State::Closed || self.remote.is_some() {
            return None;
        }
        if self
            .hung_voted
            .is_some_and(|at| now < at + cfg.vote_window / 2)
        {
            return None;
        }
        self.hung_voted = Some(now);
        Some(Command::Vote)
    }

    /// The local state was lost track of (the notifier's queue overflowed): catch up
    /// from the member's current state.
    pub fn on_overflow<M: FleetMember + ?Sized>(&mut self, member: &M) -> Option<Command> {
        match member.state() {
            State::Open if self.remote.is_none() => {
                self.voting = true;
                Some(Command::Vote)
            }
            State::Closed => {
                self.voting = false;
                self.forget();
                None
            }
            _ => None,
        }
    }

    /// The breaker's state as read from the store.
    pub fn on_snapshot<M: FleetMember + ?Sized>(
        &mut self,
        cfg: &FleetConfig,
        member: &M,
        snapshot: &StoreSnapshot,
        now: Instant,
    ) {
        if let Some(open) = snapshot.open {
            self.adopt(cfg, member, open, false, now);
            return;
        }
        let foreign_probe = snapshot
            .probe
            .as_ref()
            .filter(|p| p.instance != cfg.instance);
        match (self.remote, foreign_probe) {
            (Some(r), _) if snapshot.closed >= r.generation => self.close(cfg, member, now),
            (Some(r), Some(p)) if self.lease == Lease::Idle => {
                // A probe is running elsewhere: wait for its result.
                let until = self.after_lease(cfg, now, p.remaining);
                if until > r.until {
                    self.remote = Some(Remote { until, ..r });
                    self.apply(member, until);
                }
            }
            (None, Some(p)) => {
                // Started (or reconnected) while the fleet probes: wait for its result.
                let wait = self.after_lease(cfg, now, p.remaining) - now;
                let open = FleetOpen {
                    generation: p.generation,
                    remaining: wait,
                };
                self.adopt(cfg, member, open, false, now);
            }
            _ => {}
        }
    }

    /// Reply to [`Command::Vote`].
    pub fn on_vote<M: FleetMember + ?Sized>(
        &mut self,
        cfg: &FleetConfig,
        member: &M,
        outcome: TransportResult<VoteOutcome>,
        now: Instant,
    ) {
        if let Ok(VoteOutcome::Opened(open) | VoteOutcome::AlreadyOpen(open)) = outcome {
            self.adopt(cfg, member, open, true, now);
        }
    }

    /// When to stop deferring to a lease that has `remaining` left: after it, plus
    /// jitter, plus `probe_lead`, since the lease is asked for `probe_lead` before
    /// the deadline and asking while that lease still runs can only lose.
    fn after_lease(&mut self, cfg: &FleetConfig, now: Instant, remaining: Duration) -> Instant {
        now + remaining.min(cfg.probe_lease) + self.jitter(cfg.lease_jitter) + cfg.probe_lead
    }

    /// Reply to [`Command::Acquire`].
    pub fn on_lease<M: FleetMember + ?Sized>(
        &mut self,
        cfg: &FleetConfig,
        member: &M,
        outcome: TransportResult<LeaseOutcome>,
        now: Instant,
    ) {
        if self.lease != Lease::Requested {
            return;
        }
        let Some(remote) = self.remote else {
            self.lease = Lease::Idle;
            return;
        };
        match outcome {
            Ok(LeaseOutcome::Won { lease }) => {
                self.lease = Lease::Held {
                    generation: remote.generation,
                    until: now + lease,
                };
                // Extended while losing earlier leases: the probe is due at the
                // fleet deadline, not at the end of someone else's lease.
                if self.applied.is_some_and(|a| a > remote.until) {
                    member.release_remote_open(remote.until.max(now));
                    self.applied = Some(remote.until);
                }
            }
            Ok(LeaseOutcome::Lost { remaining }) => {
                self.lost += 1;
                if self.lost >= cfg.max_lost_leases {
                    self.lease = Lease::GaveUp;
                    return;
                }
                let until = self.after_lease(cfg, now, remaining);
                self.lease = Lease::Idle;
                if until > remote.until {
                    self.remote = Some(Remote { until, ..remote });
                    self.apply(member, until);
                }
            }
            // The store has opened again since: probe locally until the newer
            // generation is read (adopting it starts over), which the event or
            // the next read-back brings.
            Ok(LeaseOutcome::Stale) => self.lease = Lease::GaveUp,
            // Cannot coordinate: the applied open expires and the breaker probes itself.
            Err(_) => self.lease = Lease::GaveUp,
        }
    }

    /// Reply to [`Command::Report`].
    pub fn on_report<M: FleetMember + ?Sized>(
        &mut self,
        cfg: &FleetConfig,
        member: &M,
        outcome: TransportResult<ReportOutcome>,
        now: Instant,
    ) {
        match outcome {
            Ok(ReportOutcome::Reopened(open)) => self.adopt(cfg, member, open, true, now),
            // Fenced out (the lease lapsed or the fleet moved on): compete again
            // like everyone else, or catch up when the newer generation arrives.
            Ok(ReportOutcome::Refused) if self.lease == Lease::Reported => {
                self.lease = Lease::Idle;
            }
            Err(_) if self.lease == Lease::Reported => self.lease = Lease::GaveUp,
            _ => {}
        }
    }

    /// Time passes: asks for the probe lease when the fleet deadline approaches.
    pub fn tick(&mut self, cfg: &FleetConfig, now: Instant) -> Option<Command> {
        let remote = self.remote?;
        match self.lease {
            Lease::Idle if now + cfg.probe_lead >= remote.until => {
                self.lease = Lease::Requested;
                Some(Command::Acquire {
                    generation: remote.generation,
                })
            }
            Lease::Held { until, .. } if now >= until => {
                // The lease lapsed without a local result: compete again.
                self.lease = Lease::Idle;
                None
            }
            _ => None,
        }
    }

    /// The store is reachable again: read back, vote again if still open on local
    /// evidence, and compete for the lease again.
    pub fn resync(&mut self, cfg: &FleetConfig) -> Vec<Command> {
        if self.lease == Lease::GaveUp && self.lost < cfg.max_lost_leases {
            self.lease = Lease::Idle;
        }
        if self.lease == Lease::Requested {
            self.lease = Lease::Idle;
        }
        let mut commands = vec![Command::StoreSnapshot];
        if self.voting {
            commands.push(Command::Vote);
        }
        commands
    }
}
