//! The one background task per process that does all of the fleet's I/O.
//!
//! Breakers never wait for it: they hand transitions to a bounded lane of their
//! own without a lock or a wait (see the `lane` module: when the task falls
//! behind, the oldest are dropped, counted, and the task catches up from the
//! breaker's state), and the task applies remote effects through [`FleetMember`]'s
//! non-blocking methods. Store operations run concurrently inside the task, each
//! bounded by the command timeout. The first timeout, connection error or
//! refusal (an error reply: a cluster redirection without the cluster client,
//! an ACL denial, a read-only replica, ...) puts the process in local-only mode,
//! with one warning and its reason in [`FleetStats::local_only`]: no store
//! operation is attempted except a health check, retried with exponential
//! backoff and jitter (after a refusal it repeats the refused step); when it
//! succeeds the task resubscribes, reads every breaker back and votes again
//! where needed.

use crate::config::{FleetConfig, FleetConfigError};
use crate::door::{AttachError, Control, Door, Notifier};
use crate::lane::{DRAIN, Inbox, Lane};
use crate::machine::{Command, Machine};
use crate::member::FleetMember;
use crate::transport::{
    Incoming, LeaseOutcome, Refusal, ReportOutcome, StoreSnapshot, Transport, TransportError,
    TransportResult, VoteOutcome,
};
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
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

/// Why the fleet could not start.
#[derive(Debug)]
pub enum FleetError {
    /// The configuration is invalid.
    Config(FleetConfigError),
    /// The transport could not be built (e.g. an unparsable URL).
    Transport(TransportError),
    /// Not called inside a Tokio runtime.
    NoRuntime,
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::Config(e) => e.fmt(f),
            FleetError::Transport(e) => e.fmt(f),
            FleetError::NoRuntime => {
                f.write_str("the fleet must be started inside a Tokio runtime")
            }
        }
    }
}

impl std::error::Error for FleetError {}

/// Counters of the background task, for tests and metrics.
#[derive(Debug, Default)]
struct Counters {
    connected: AtomicBool,
    /// [`LocalOnly::code`] of the current episode, 0 when none.
    local_only: AtomicU8,
    resyncs: AtomicU64,
    ops_ok: AtomicU64,
    ops_failed: AtomicU64,
    events: AtomicU64,
    events_rejected: AtomicU64,
    slowest_op_micros: AtomicU64,
    transitions: AtomicU64,
    transitions_dropped: AtomicU64,
    transitions_unordered: AtomicU64,
}

/// Why a process runs local-only (see [`FleetStats::local_only`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LocalOnly {
    /// A store command timed out.
    Timeout,
    /// The store could not be reached: not connected, connection refused or
    /// reset.
    Unreachable,
    /// The store answered, but refused what the fleet needs.
    Refused(Refusal),
}

const REFUSALS: [Refusal; 8] = [
    Refusal::Redirected,
    Refusal::CrossSlot,
    Refusal::Permission,
    Refusal::NoScript,
    Refusal::ReadOnly,
    Refusal::NoWrites,
    Refusal::NotServing,
    Refusal::Other,
];

impl LocalOnly {
    /// What `error` means for the link, or `None` for an error of one
    /// operation only ([`TransportError::Protocol`]).
    fn of(error: &TransportError) -> Option<LocalOnly> {
        match error {
            TransportError::Timeout => Some(LocalOnly::Timeout),
            TransportError::Unavailable(_) => Some(LocalOnly::Unreachable),
            TransportError::Refused(refusal, _) => Some(LocalOnly::Refused(*refusal)),
            TransportError::Protocol(_) => None,
        }
    }

    fn code(self) -> u8 {
        match self {
            LocalOnly::Timeout => 1,
            LocalOnly::Unreachable => 2,
            LocalOnly::Refused(r) => 16 + REFUSALS.iter().position(|&x| x == r).unwrap_or(7) as u8,
        }
    }

    fn from_code(code: u8) -> Option<LocalOnly> {
        match code {
            1 => Some(LocalOnly::Timeout),
            2 => Some(LocalOnly::Unreachable),
            16.. => REFUSALS
                .get(usize::from(code - 16))
                .map(|&r| LocalOnly::Refused(r)),
            _ => None,
        }
    }
}

impl fmt::Display for LocalOnly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocalOnly::Timeout => f.write_str("a store command timed out"),
            LocalOnly::Unreachable => f.write_str("the store is unreachable"),
            LocalOnly::Refused(refusal) => refusal.fmt(f),
        }
    }
}

/// A copy of the task's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FleetStats {
    /// Whether the store is currently considered reachable.
    pub connected: bool,
    /// While not connected, why: the failure that started this episode of
    /// local-only running, or the last health check's when it failed
    /// otherwise. `None` while connected, and before the first health
    /// check has failed.
    pub local_only: Option<LocalOnly>,
    /// Times the task resynchronised after (re)connecting, the first connection included.
    pub resyncs: u64,
    /// Store operations that completed.
    pub ops_ok: u64,
    /// Store operations that failed or timed out.
    pub ops_failed: u64,
    /// Valid events received from other instances.
    pub events: u64,
    /// Payloads dropped by the parser (garbage, oversized, forged).
    pub events_rejected: u64,
    /// Longest store operation seen, in microseconds, timeouts included.
    pub slowest_op_micros: u64,
    /// Local transitions the task read from the breakers' lanes.
    pub transitions: u64,
    /// Local transitions dropped because the task fell a whole lane (32
    /// transitions of one breaker) behind; it then caught up from the
    /// breaker's state.
    pub transitions_dropped: u64,
    /// Local transitions read that did not start where the breaker's previous
    /// one ended (two threads changed its state at the same instant and
    /// numbered their transitions in the other order); the task then caught
    /// up from the breaker's state.
    pub transitions_unordered: u64,
}

/// A process's membership in a fleet. Dropping it stops the background task; the
/// joined breakers then run local-only.
pub struct Fleet {
    door: Arc<Door>,
    counters: Arc<Counters>,
    task: tokio::task::JoinHandle<()>,
    /// Takes the process's registered breakers along (`FleetConfig::breakers`).
    watch: Option<failfast_runtime::events::Subscription>,
    /// Takes the members of the process's registered keyed families along.
    #[cfg(feature = "keyed")]
    families: Arc<crate::breaker::Families>,
    #[cfg(feature = "keyed")]
    scan: tokio::task::JoinHandle<()>,
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.watch.take();
        #[cfg(feature = "keyed")]
        self.scan.abort();
        self.task.abort();
    }
}

/// Joins the fleet described by `config` through Redis. Must be called inside a
/// Tokio runtime; returns at once (the connection is made in the background).
pub fn join(config: FleetConfig) -> Result<Fleet, FleetError> {
    config.validate().map_err(FleetError::Config)?;
    tokio::runtime::Handle::try_current().map_err(|_| FleetError::NoRuntime)?;
    let transport = crate::RedisTransport::new(&config).map_err(FleetError::Transport)?;
    Fleet::start(config, transport)
}

impl Fleet {
    /// Starts the background task over any [`Transport`].
    pub fn start<T: Transport>(config: FleetConfig, transport: T) -> Result<Fleet, FleetError> {
        config.validate().map_err(FleetError::Config)?;
        let handle = tokio::runtime::Handle::try_current().map_err(|_| FleetError::NoRuntime)?;
        let events =
            transport
                .take_events()
                .ok_or(FleetError::Transport(TransportError::Protocol(
                    "event stream already taken".into(),
                )))?;
        let inbox = Arc::new(Inbox::default());
        let (control, control_rx) = mpsc::unbounded_channel();
        let counters = Arc::new(Counters::default());
        let breakers = config.breakers.clone();
        let task = Task {
            now: Instant::now(),
            seed: fastrand::u64(..),
            cfg: config,
            transport: Arc::new(transport),
            counters: counters.clone(),
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
        };
        let task = handle.spawn(task.run(control_rx, inbox.clone(), events));
        let door = Arc::new(Door::new(inbox, control));
        #[cfg(feature = "keyed")]
        let families = crate::breaker::Families::new(breakers.clone());
        #[cfg(feature = "keyed")]
        let scan = crate::breaker::watch_families(&handle, &door, &families);
        let watch = crate::breaker::watch_registry(&door, breakers);
        Ok(Fleet {
            door,
            counters,
            task,
            watch,
            #[cfg(feature = "keyed")]
            families,
            #[cfg(feature = "keyed")]
            scan,
        })
    }

    /// Joins `member` to the fleet. The member's [`FleetMember::attached`] receives the
    /// notifier, which is also returned.
    pub fn attach(&self, member: Arc<dyn FleetMember>) -> Result<Notifier, AttachError> {
        self.door.attach(member)
    }

    /// Takes the breaker named `name` out of the fleet (a keyed breaker evicted, a
    /// breaker dropped): the fleet forgets it and applies nothing to it any more.
    /// Returns whether it was attached. Store keys are left to expire.
    pub fn detach(&self, name: &str) -> bool {
        self.door.detach(name)
    }

    /// Names of the breakers attached, in no particular order.
    pub fn attached(&self) -> Vec<String> {
        self.door.attached()
    }

    #[cfg(feature = "keyed")]
    pub(crate) fn families(&self) -> &crate::breaker::Families {
        &self.families
    }

    /// The task's counters.
    pub fn stats(&self) -> FleetStats {
        let c = &self.counters;
        FleetStats {
            connected: c.connected.load(Ordering::Acquire),
            local_only: LocalOnly::from_code(c.local_only.load(Ordering::Relaxed)),
            resyncs: c.resyncs.load(Ordering::Relaxed),
            ops_ok: c.ops_ok.load(Ordering::Relaxed),
            ops_failed: c.ops_failed.load(Ordering::Relaxed),
            events: c.events.load(Ordering::Relaxed),
            events_rejected: c.events_rejected.load(Ordering::Relaxed),
            slowest_op_micros: c.slowest_op_micros.load(Ordering::Relaxed),
            transitions: c.transitions.load(Ordering::Relaxed),
            transitions_dropped: c.transitions_dropped.load(Ordering::Relaxed),
            transitions_unordered: c.transitions_unordered.load(Ordering::Relaxed),
        }
    }
}

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

struct Task<T> {
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
    async fn run(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_survives_the_counter() {
        let reasons = [LocalOnly::Timeout, LocalOnly::Unreachable]
            .into_iter()
            .chain(REFUSALS.map(LocalOnly::Refused));
        for reason in reasons {
            assert_eq!(LocalOnly::from_code(reason.code()), Some(reason));
        }
        assert_eq!(LocalOnly::from_code(0), None);
    }
}
