//! The background task's loop: the breakers' transitions read from their
//! lanes, store operations run and their replies applied, the link's health
//! checked, and members ticked.

use super::{Counters, LocalOnly};
use crate::config::FleetConfig;
use crate::door::Control;
use crate::lane::{DRAIN, Inbox, Lane};
use crate::machine::{Command, Machine};
use crate::member::FleetMember;
use crate::transport::{
    Incoming, LeaseOutcome, Refusal, ReportOutcome, StoreSnapshot, Transport, TransportError,
    TransportResult, VoteOutcome,
};
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How often the task looks at its clocks.
const TICK: Duration = Duration::from_millis(25);
/// Commands in a health check: `ping`, then `resume` (subscribe, load
/// scripts), then after a refusal `check`.
const HEALTH_COMMANDS: u32 = 4;
/// Most store operations in flight at once; read-backs wait beyond it.
const MAX_IN_FLIGHT: usize = 256;
/// How often members are ticked ([`FleetMember::tick`]).
const MEMBER_TICK: Duration = Duration::from_millis(250);

struct Slot {
    member: Arc<dyn FleetMember>,
    name: Arc<str>,
    machine: Machine,
    lane: Arc<Lane>,
    /// The lane's transitions read so far.
    read: u64,
    /// Where the last transition read left the breaker.
    last: Option<failfast_runtime::State>,
    next_poll: Instant,
    reading: bool,
    read_again: bool,
}

enum Reply {
    Health(TransportResult<()>),
    Vote(TransportResult<VoteOutcome>),
    StoreSnapshot(TransportResult<StoreSnapshot>),
    Lease(TransportResult<LeaseOutcome>),
    Report(TransportResult<ReportOutcome>),
}

impl Reply {
    fn error(&self) -> Option<&TransportError> {
        match self {
            Reply::Health(r) => r.as_ref().err(),
            Reply::Vote(r) => r.as_ref().err(),
            Reply::StoreSnapshot(r) => r.as_ref().err(),
            Reply::Lease(r) => r.as_ref().err(),
            Reply::Report(r) => r.as_ref().err(),
        }
    }
}

type InFlight = Pin<Box<dyn Future<Output = (Option<usize>, Reply, Duration)> + Send>>;

enum Link {
    Up,
    Down {
        next_check: Instant,
        backoff: Duration,
        checking: bool,
        /// The breaker whose operation the store refused: the health check
        /// repeats a write in its slot.
        refused: Option<Arc<str>>,
        /// Whether this episode's warning was logged.
        warned: bool,
    },
}

pub(super) struct Task<T> {
    now: Instant,
    seed: u64,
    cfg: FleetConfig,
    transport: Arc<T>,
    counters: Arc<Counters>,
    slots: HashMap<usize, Slot>,
    by_name: HashMap<Arc<str>, usize>,
    in_flight: FuturesUnordered<InFlight>,
    link: Link,
    next_member_tick: Instant,
}

/// The one warning of an episode of local-only running.
fn warn(instance: &str, why: LocalOnly, breaker: Option<&str>, error: &TransportError) {
    tracing::warn!(
        target: "failfast_fleet",
        instance,
        reason = ?why,
        breaker = breaker.unwrap_or("-"),
        "the fleet runs local-only ({why}): {error}; retrying with backoff"
    );
}

/// `base` randomised by ±20 %.
fn spread(base: Duration) -> Duration {
    base.mul_f64(0.8 + 0.4 * fastrand::f64())
}

impl<T: Transport> Task<T> {
    /// The task of a fleet configured as `cfg`, its link down until its first health check.
    pub(super) fn new(cfg: FleetConfig, transport: Arc<T>, counters: Arc<Counters>) -> Self {
        Task {
            now: Instant::now(),
            seed: fastrand::u64(..),
            cfg,
            transport,
            counters,
            slots: HashMap::new(),
            by_name: HashMap::new(),
            in_flight: FuturesUnordered::new(),
            link: Link::Down {
                next_check: Instant::now(),
                backoff: Duration::ZERO,
                checking: false,
                refused: None,
                warned: false,
            },
            next_member_tick: Instant::now(),
        }
    }

    pub(super) async fn run(
        mut self,
        mut control: mpsc::UnboundedReceiver<Control>,
        inbox: Arc<Inbox>,
        mut events: mpsc::Receiver<Incoming>,
    ) {
        let mut ticker = tokio::time::interval(TICK);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut drain = tokio::time::interval(DRAIN);
        drain.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                // A breaker's attach is handled before the transitions it sent after.
                biased;
                command = control.recv() => match command {
                    Some(command) => self.on_control(command),
                    None => return,
                },
                _ = drain.tick() => if inbox.take() {
                    self.on_lanes();
                },
                // Local transitions first, as they happened before what
                // arrives now: a store reply must not meet a machine that has
                // not seen its breaker's trial end.
                incoming = events.recv() => match incoming {
                    Some(incoming) => {
                        if inbox.take() {
                            self.on_lanes();
                        }
                        self.on_incoming(incoming);
                    }
                    None => return,
                },
                Some((id, reply, took)) = self.in_flight.next(), if !self.in_flight.is_empty() => {
                    if inbox.take() {
                        self.on_lanes();
                    }
                    self.on_reply(id, reply, took);
                }
                _ = ticker.tick() => {
                    if inbox.take() {
                        self.on_lanes();
                    }
                    self.on_tick();
                }
            }
        }
    }

    fn on_control(&mut self, command: Control) {
        self.now = Instant::now();
        match command {
            Control::Attach(id, member, lane) => {
                let name: Arc<str> = member.name().into();
                self.seed = self.seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
                self.by_name.insert(name.clone(), id);
                self.slots.insert(
                    id,
                    Slot {
                        member,
                        name,
                        machine: Machine::new(self.seed),
                        lane,
                        read: 0,
                        last: None,
                        next_poll: self.now,
                        reading: false,
                        read_again: false,
                    },
                );
            }
            Control::Detach(id) => {
                if let Some(slot) = self.slots.remove(&id) {
                    self.by_name.remove(&slot.name);
                }
            }
        }
    }

    /// Reads every lane: each transition goes to its machine in order; a lane
    /// that lost some, or whose transitions do not follow one another (two
    /// threads numbered theirs in the other order), is caught up from the
    /// breaker's state.
    fn on_lanes(&mut self) {
        self.now = Instant::now();
        let now = self.now;
        let mut commands = Vec::new();
        let (mut read, mut dropped, mut unordered) = (0, 0, 0);
        for (&id, slot) in &mut self.slots {
            let mut unchained = false;
            let (machine, last) = (&mut slot.machine, &mut slot.last);
            let lost = slot.lane.drain(&mut slot.read, |t, gap| {
                read += 1;
                if !gap && last.is_some_and(|l| l != t.from) {
                    unchained = true;
                    unordered += 1;
                }
                *last = Some(t.to);
                commands.extend(machine.on_local(t, now).map(|c| (id, c)));
            });
            dropped += lost;
            if lost > 0 || unchained {
                slot.last = Some(slot.member.state());
                commands.extend(slot.machine.on_overflow(&*slot.member).map(|c| (id, c)));
            }
        }
        let c = &self.counters;
        c.transitions.fetch_add(read, Ordering::Relaxed);
        c.transitions_dropped.fetch_add(dropped, Ordering::Relaxed);
        c.transitions_unordered
            .fetch_add(unordered, Ordering::Relaxed);
        for (id, command) in commands {
            self.execute(id, command);
        }
    }

    fn on_incoming(&mut self, incoming: Incoming) {
        self.now = Instant::now();
        match incoming {
            Incoming::Notice(notice) => {
                if notice.origin == self.cfg.instance {
                    return;
                }
                self.counters.events.fetch_add(1, Ordering::Relaxed);
                if let Some(&id) = self.by_name.get(notice.breaker.as_str()) {
                    self.execute(id, Command::StoreSnapshot);
                }
            }
            Incoming::Rejected(_) => {
                self.counters
                    .events_rejected
                    .fetch_add(1, Ordering::Relaxed);
            }
            Incoming::Disconnected => self.link_lost(
                LocalOnly::Unreachable,
                None,
                &TransportError::Unavailable("the connection was lost".into()),
            ),
        }
    }

    /// The store cannot be used: local-only until a health check succeeds.
    fn link_lost(&mut self, why: LocalOnly, breaker: Option<Arc<str>>, error: &TransportError) {
        if let Link::Up = self.link {
            self.counters.connected.store(false, Ordering::Release);
            self.counters
                .local_only
                .store(why.code(), Ordering::Relaxed);
            warn(&self.cfg.instance, why, breaker.as_deref(), error);
            self.link = Link::Down {
                next_check: self.now + spread(self.cfg.reconnect_min),
                backoff: self.cfg.reconnect_min,
                checking: false,
                refused: breaker.filter(|_| matches!(why, LocalOnly::Refused(_))),
                warned: true,
            };
        }
    }

    fn on_tick(&mut self) {
        self.now = Instant::now();
        let now = self.now;
        if let Link::Down {
            next_check,
            checking: checking @ false,
            refused,
            ..
        } = &mut self.link
            && now >= *next_check
        {
            *checking = true;
            let transport = self.transport.clone();
            let refused = refused.clone();
            self.spawn(
                None,
                async move {
                    transport.ping().await?;
                    transport.resume().await?;
                    match refused {
                        Some(breaker) => transport.check(&breaker).await,
                        None => Ok(()),
                    }
                },
                Reply::Health,
            );
        }
        let mut commands = Vec::new();
        let up = matches!(self.link, Link::Up);
        let room = self.in_flight.len() < MAX_IN_FLIGHT;
        let member_tick = now >= self.next_member_tick;
        if member_tick {
            self.next_member_tick = now + MEMBER_TICK;
        }
        for (&id, slot) in &mut self.slots {
            if member_tick {
                slot.member.tick(now);
            }
            slot.machine.ramp(&self.cfg, &*slot.member, now);
            if let Some(after) = self.cfg.hung_after {
                let hung = slot.member.calls_hung(now, after);
                if hung > 0 {
                    let state = slot.member.state();
                    let vote = slot.machine.on_hung(&self.cfg, state, hung, now);
                    commands.extend(vote.map(|c| (id, c)));
                }
            }
            commands.extend(slot.machine.tick(&self.cfg, now).map(|c| (id, c)));
            if up && room && now >= slot.next_poll && !slot.reading {
                slot.next_poll = now + spread(self.cfg.poll_interval);
                commands.push((id, Command::StoreSnapshot));
            }
        }
        for (id, command) in commands {
            self.execute(id, command);
        }
    }

    /// Runs `op` in the task, bounded by the command timeout whatever the transport
    /// does (the health check, `ping` then `resume`, gets one timeout per command).
    fn spawn<R: Send + 'static>(
        &mut self,
        id: Option<usize>,
        op: impl Future<Output = TransportResult<R>> + Send + 'static,
        reply: fn(TransportResult<R>) -> Reply,
    ) {
        let commands = if id.is_none() { HEALTH_COMMANDS } else { 1 };
        let bound = self.cfg.command_timeout * commands;
        self.in_flight.push(Box::pin(async move {
            let started = Instant::now();
            let result = tokio::time::timeout(bound, op)
                .await
                .unwrap_or(Err(TransportError::Timeout));
            (id, reply(result), started.elapsed())
        }));
    }

    /// Runs `command` for slot `id`, or answers it with an error at once when local-only.
    fn execute(&mut self, id: usize, command: Command) {
        let Some(slot) = self.slots.get_mut(&id) else {
            return;
        };
        if command == Command::StoreSnapshot {
            if slot.reading {
                slot.read_again = true;
                return;
            }
            slot.reading = true;
        }
        if !matches!(self.link, Link::Up) {
            fn down<R>() -> TransportResult<R> {
                Err(TransportError::Unavailable(
                    "local-only until the store answers".into(),
                ))
            }
            let reply = match command {
                Command::Vote => Reply::Vote(down()),
                Command::StoreSnapshot => Reply::StoreSnapshot(down()),
                Command::Acquire { .. } => Reply::Lease(down()),
                Command::Report { .. } => Reply::Report(down()),
            };
            self.deliver(id, reply);
            return;
        }
        let transport = self.transport.clone();
        let name = slot.name.clone();
        let fingerprint = slot.member.fingerprint();
        let id = Some(id);
        match command {
            Command::Vote => self.spawn(
                id,
                async move { transport.vote(&name, fingerprint).await },
                Reply::Vote,
            ),
            Command::StoreSnapshot => self.spawn(
                id,
                async move { transport.snapshot(&name).await },
                Reply::StoreSnapshot,
            ),
            Command::Acquire { generation } => self.spawn(
                id,
                async move { transport.acquire_probe(&name, generation).await },
                Reply::Lease,
            ),
            Command::Report {
                generation,
                success,
            } => self.spawn(
                id,
                async move { transport.report_probe(&name, generation, success).await },
                Reply::Report,
            ),
        }
    }

    fn on_reply(&mut self, id: Option<usize>, reply: Reply, took: Duration) {
        self.now = Instant::now();
        let micros = took.as_micros().try_into().unwrap_or(u64::MAX);
        self.counters
            .slowest_op_micros
            .fetch_max(micros, Ordering::Relaxed);
        match reply.error() {
            None => self.counters.ops_ok.fetch_add(1, Ordering::Relaxed),
            Some(_) => self.counters.ops_failed.fetch_add(1, Ordering::Relaxed),
        };
        match id {
            None => self.on_health(reply),
            Some(id) => {
                if let Some(error) = reply.error()
                    && let Some(why) = LocalOnly::of(error)
                {
                    let error = error.clone();
                    let breaker = self.slots.get(&id).map(|s| s.name.clone());
                    self.link_lost(why, breaker, &error);
                }
                self.deliver(id, reply);
            }
        }
    }

    fn on_health(&mut self, reply: Reply) {
        let Link::Down {
            backoff,
            ref refused,
            warned,
            ..
        } = self.link
        else {
            return;
        };
        if reply.error().is_none() {
            if warned {
                tracing::info!(
                    target: "failfast_fleet",
                    instance = %self.cfg.instance,
                    "the store answers again: the fleet shares breaker states again"
                );
            }
            self.link = Link::Up;
            self.counters.local_only.store(0, Ordering::Relaxed);
            self.counters.connected.store(true, Ordering::Release);
            self.counters.resyncs.fetch_add(1, Ordering::Relaxed);
            let mut commands = Vec::new();
            for (&id, slot) in &mut self.slots {
                slot.reading = false;
                slot.read_again = false;
                slot.next_poll = self.now + spread(self.cfg.poll_interval);
                commands.extend(slot.machine.resync(&self.cfg).into_iter().map(|c| (id, c)));
            }
            for (id, command) in commands {
                self.execute(id, command);
            }
        } else {
            let error = reply.error().cloned().unwrap_or(TransportError::Timeout);
            let why = LocalOnly::of(&error).unwrap_or(LocalOnly::Refused(Refusal::Other));
            // The reason shown is the last health check's: the refused step
            // again, or whatever stops the store meanwhile.
            let refused = refused.clone();
            if !warned {
                warn(&self.cfg.instance, why, refused.as_deref(), &error);
            }
            self.counters
                .local_only
                .store(why.code(), Ordering::Relaxed);
            let backoff = (backoff * 2).clamp(self.cfg.reconnect_min, self.cfg.reconnect_max);
            self.link = Link::Down {
                next_check: self.now + spread(backoff),
                backoff,
                checking: false,
                refused,
                warned: true,
            };
        }
    }

    fn deliver(&mut self, id: usize, reply: Reply) {
        let now = self.now;
        let cfg = &self.cfg;
        let Some(slot) = self.slots.get_mut(&id) else {
            return;
        };
        let member = &*slot.member;
        match reply {
            Reply::Vote(r) => slot.machine.on_vote(cfg, member, r, now),
            Reply::StoreSnapshot(r) => {
                slot.reading = false;
                if let Ok(snapshot) = &r {
                    slot.machine.on_snapshot(cfg, member, snapshot, now);
                }
                if std::mem::take(&mut slot.read_again) && r.is_ok() {
                    self.execute(id, Command::StoreSnapshot);
                }
            }
            Reply::Lease(r) => slot.machine.on_lease(cfg, member, r, now),
            Reply::Report(r) => slot.machine.on_report(cfg, member, r, now),
            Reply::Health(_) => {}
        }
    }
}
