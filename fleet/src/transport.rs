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

/// Why a store operation did not complete. The fleet then runs local-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// No answer within the command timeout.
    Timeout,
    /// Not connected, connection refused or reset.
    Unavailable(String),
    /// The store answered something this crate does not accept.
    Protocol(String),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Timeout => f.write_str("store command timed out"),
            TransportError::Unavailable(why) => write!(f, "store unavailable: {why}"),
            TransportError::Protocol(why) => write!(f, "unexpected store reply: {why}"),
        }
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
