//! What the fleet needs from a store, independent of which store it is.
//!
//! [`crate::RedisTransport`] is the implementation that ships. Another store (NATS
//! JetStream KV, etcd with leases and watches) implements [`Transport`] with the same
//! guarantees: every effect expires on its own, the probe lease is exclusive and
//! fenced, and every reply is parsed with [`crate::payload`]'s limits.

use crate::payload::{Notice, Rejection};
use std::fmt;
use std::future::Future;
use std::time::Duration;

/// What the store says about one breaker. Every duration is already clamped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreSnapshot {
    /// The fleet open, if one is in force: its generation and remaining time.
    pub open: Option<FleetOpen>,
    /// The probe lease, if one is held.
    pub probe: Option<LeaseHolder>,
    /// The newest generation a fleet probe closed (0 if none).
    pub closed: u64,
}

/// A fleet open as read from the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetOpen {
    /// Generation of the open (incremented by every fleet open).
    pub generation: u64,
    /// Time left, clamped to `max_remote_open`.
    pub remaining: Duration,
}

/// Who holds the probe lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHolder {
    /// Instance holding it.
    pub instance: String,
    /// Generation it probes for.
    pub generation: u64,
    /// Time left, clamped to `probe_lease`.
    pub remaining: Duration,
}

/// Answer to a vote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteOutcome {
    /// Counted; `votes` instances (this one included) voted within the window.
    Counted {
        /// Votes in the window.
        votes: u32,
    },
    /// This vote reached the quorum and opened the fleet.
    Opened(FleetOpen),
    /// The fleet was already open.
    AlreadyOpen(FleetOpen),
}

/// Answer to a probe-lease request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseOutcome {
    /// This instance holds the lease for `lease`.
    Won {
        /// Lease lifetime.
        lease: Duration,
    },
    /// Another instance holds it for `remaining` more.
    Lost {
        /// Time left on the winner's lease (clamped).
        remaining: Duration,
    },
    /// The generation asked for is over: the fleet has opened again since, so
    /// no lease was taken (a lease nobody would report on would make every
    /// other instance lose until it expired).
    Stale,
}

/// Answer to a fenced probe report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportOutcome {
    /// The success was accepted: the fleet breaker is closed and a close was published.
    Closed,
    /// The failure was accepted: the fleet reopened at the next level.
    Reopened(FleetOpen),
    /// The lease was no longer ours (expired, or taken): nothing changed.
    Refused,
}

/// What arrives on the event stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// A valid event.
    Notice(Notice),
    /// A payload that failed [`crate::payload`]'s checks (counted, then dropped).
    Rejected(Rejection),
    /// The connection carrying events was lost; a resync follows the reconnect.
    Disconnected,
}

/// Why a store operation did not complete.
///
/// [`Timeout`](Self::Timeout), [`Unavailable`](Self::Unavailable) and
/// [`Refused`](Self::Refused) put the process in local-only mode until a
/// health check succeeds; [`Protocol`](Self::Protocol) (a value this crate
/// does not accept) fails that one operation only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// No answer within the command timeout.
    Timeout,
    /// Not connected, connection refused or reset.
    Unavailable(String),
    /// The store answered with an error: it is reachable but cannot do what
    /// the fleet needs (the kind, and the store's own words).
    Refused(Refusal, String),
    /// The store answered something this crate does not accept.
    Protocol(String),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Timeout => f.write_str("store command timed out"),
            TransportError::Unavailable(why) => write!(f, "store unavailable: {why}"),
            TransportError::Refused(refusal, why) => write!(f, "{refusal}: {why}"),
            TransportError::Protocol(why) => write!(f, "unexpected store reply: {why}"),
        }
    }
}

/// What kind of "no" the store answered: an error reply that means it cannot
/// do what the fleet needs, from where it is or as whom the fleet logs in.
/// Each puts the process in local-only mode, like a timeout, until a health
/// check that repeats the refused step (the same breaker's slot, a write,
/// the scripts) succeeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refusal {
    /// `MOVED` or `ASK`: the store is a Redis Cluster node that does not hold
    /// the breaker's slot, and the URL is not a `redis+cluster://` one.
    Redirected,
    /// `CROSSSLOT`: keys of several cluster slots in one command. Every
    /// script of this crate touches one breaker's keys under one hash tag,
    /// so only a store that hashes keys differently answers it.
    CrossSlot,
    /// `NOPERM`, `NOAUTH`, `WRONGPASS` or a failed `AUTH`: the ACL user may
    /// not run a command, or touch a key or channel, of the fleet's.
    Permission,
    /// `NOSCRIPT` after the script was loaded again: something between the
    /// fleet and the store (a proxy spreading commands over servers) loses
    /// the scripts.
    NoScript,
    /// `READONLY`: a replica.
    ReadOnly,
    /// `OOM` or `MISCONF`: the store refuses writes (memory full, or its
    /// snapshots failing).
    NoWrites,
    /// `CLUSTERDOWN`, `MASTERDOWN`, `TRYAGAIN`, `LOADING` or `BUSY`: the store
    /// cannot serve now (a failover, a restart, a long script).
    NotServing,
    /// Any other error reply (an unknown command, a script error).
    Other,
}

impl Refusal {
    /// The refusal an error reply means, from its code (the reply's first
    /// word: `MOVED`, `NOPERM`, `READONLY`, ...).
    pub fn from_code(code: &str) -> Refusal {
        match code {
            "MOVED" | "ASK" => Refusal::Redirected,
            "CROSSSLOT" => Refusal::CrossSlot,
            "NOPERM" | "NOAUTH" | "WRONGPASS" => Refusal::Permission,
            "NOSCRIPT" => Refusal::NoScript,
            "READONLY" => Refusal::ReadOnly,
            "OOM" | "MISCONF" => Refusal::NoWrites,
            "CLUSTERDOWN" | "MASTERDOWN" | "TRYAGAIN" | "LOADING" | "BUSY" => Refusal::NotServing,
            _ => Refusal::Other,
        }
    }

    /// What to do about it, in a few words.
    fn advice(self) -> &'static str {
        match self {
            Refusal::Redirected => {
                "the store is a Redis Cluster node: give the fleet a redis+cluster:// URL"
            }
            Refusal::CrossSlot => "the store spreads one breaker's keys over several slots",
            Refusal::Permission => {
                "the store's ACL user lacks a command, or the namespace's keys or channel"
            }
            Refusal::NoScript => "the store loses the fleet's scripts after loading them",
            Refusal::ReadOnly => "the store is a read-only replica: point the fleet at a primary",
            Refusal::NoWrites => "the store refuses writes (out of memory, or failing snapshots)",
            Refusal::NotServing => "the store cannot serve now (failover, loading, busy)",
            Refusal::Other => "the store answered with an error",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.advice())
    }
}

impl std::error::Error for TransportError {}

/// Result of a store operation.
pub type TransportResult<T> = Result<T, TransportError>;

/// A store that can carry a fleet's votes, opens, probe leases and events.
///
/// Implementations bound every operation by the configured command timeout; the
/// background task adds its own bound on top. Breaker names passed in are already
/// valid ([`crate::keys::valid_breaker_name`]); the instance, namespace and limits
/// come from the [`crate::FleetConfig`] the transport was built with.
pub trait Transport: Send + Sync + 'static {
    /// Round trip used as the health check while the store is unreachable.
    fn ping(&self) -> impl Future<Output = TransportResult<()>> + Send;

    /// Subscribes (again) to the namespace's events and prepares the store (the Redis
    /// transport loads its scripts, so the first command after a restart of the store
    /// is one round trip); idempotent, run after every (re)connection.
    fn resume(&self) -> impl Future<Output = TransportResult<()>> + Send;

    /// Checks that the store can do for `breaker` what it refused to do a
    /// moment ago (the health check after a [`TransportError::Refused`]
    /// adds it to `ping` and `resume`): the Redis transport runs a script
    /// that writes in the breaker's slot. Defaults to `Ok`.
    fn check(&self, breaker: &str) -> impl Future<Output = TransportResult<()>> + Send {
        let _ = breaker;
        std::future::ready(Ok(()))
    }

    /// Takes the receiving end of the event stream; `None` after the first call.
    fn take_events(&self) -> Option<tokio::sync::mpsc::Receiver<Incoming>>;

    /// Votes that `breaker` opened here on local evidence; opens the fleet when the
    /// quorum is reached and no fleet open is in force.
    fn vote(
        &self,
        breaker: &str,
        fingerprint: u64,
    ) -> impl Future<Output = TransportResult<VoteOutcome>> + Send;

    /// Reads `breaker`'s fleet state.
    fn snapshot(
        &self,
        breaker: &str,
    ) -> impl Future<Output = TransportResult<StoreSnapshot>> + Send;

    /// Asks for the single-probe lease of `generation` (`SET NX PX`). The lease is
    /// only for the store's newest generation: for an older one the answer is
    /// [`LeaseOutcome::Stale`] and nothing is taken, and a lease still held for an
    /// older one is void and taken over.
    fn acquire_probe(
        &self,
        breaker: &str,
        generation: u64,
    ) -> impl Future<Output = TransportResult<LeaseOutcome>> + Send;

    /// Reports the probe's result, accepted only while the lease is still this
    /// instance's for `generation` and `generation` is the store's newest.
    fn report_probe(
        &self,
        breaker: &str,
        generation: u64,
        success: bool,
    ) -> impl Future<Output = TransportResult<ReportOutcome>> + Send;
}
