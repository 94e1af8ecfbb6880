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
use crate::door::{AttachError, Door, Notifier};
use crate::lane::Inbox;
use crate::member::FleetMember;
use crate::transport::{Refusal, Transport, TransportError};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use tokio::sync::mpsc;

mod task;

use task::Task;

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
        let task = Task::new(config, Arc::new(transport), counters.clone());
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
