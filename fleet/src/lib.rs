//! Circuit breakers that learn together: a fleet of service instances shares its
//! breakers' opens and a single recovery probe through Redis.
//!
//! Twenty instances with `threshold = 5` each send five failing calls to a sick
//! dependency before the whole fleet stops; every recovery period the dependency,
//! just back, receives twenty trial calls. With a fleet, instances vote when their
//! breaker opens on local evidence; once `quorum` instances voted within the window
//! the fleet opens everywhere, and when the open ends one instance, holding a lease,
//! probes for all.
//!
//! Principles:
//! - **Transitions, not counters.** Only opens (votes), the probe lease and its
//!   result go to the store: writes happen at transitions, never per call.
//! - **The store is never on the call path.** One background task per process does
//!   all I/O ([`Fleet`]); breakers talk to it through a bounded queue and
//!   non-blocking [`FleetMember`] methods. Every store command has a timeout
//!   (100 ms by default). Store down, slow or lying: the process runs local-only,
//!   exactly as without a fleet, and never fails closed.
//! - **A remote state is a hint that expires.** Every key has a TTL; a remote open
//!   is applied as `Instant::now() + min(remaining, max_remote_open)` on the local
//!   monotonic clock; no wall clocks are compared across hosts.
//! - **One probe per fleet per recovery**, through a `SET NX PX` lease whose result
//!   report is fenced (only the lease holder can close or reopen the fleet).
//!
//! The fleet logic for one breaker is [`machine::Machine`], a state machine without
//! I/O; the store sits behind [`Transport`], implemented for Redis by
//! [`RedisTransport`] (see its module for the Lua scripts and the client choice).
//!
//! failfast's breakers take part as they are: [`join`] attaches every breaker of
//! the process's registry (builder breakers once registered, `#[circuit_breaker]`
//! ones on their first call, those registered after the fleet started included),
//! or only the ones [`FleetConfig::breakers`] names, and
//! [`Fleet::attach_breaker`] attaches any breaker by hand. Each is driven through
//! [`BreakerMember`]: remote opens are compare-and-swaps on the breaker's state
//! word, its transitions reach the fleet through the runtime's transition hook
//! ([`failfast_runtime::integration`]) without a lock or a wait. Members of keyed
//! families join as their family creates them ([`Fleet::attach_family`]). Any
//! other breaker can take part by implementing [`FleetMember`].
//!
//! # Features
//!
//! - `keyed` (default): members of keyed families join the fleet.
//! - `tls`: `rediss://` URLs (rustls); see [`FleetConfig::url`] for TLS and
//!   ACL users.
//!
//! Redis Cluster needs no feature: a `redis+cluster://` URL
//! ([`FleetConfig::url`]) selects the cluster client.
//!
//! A store that times out, cannot be reached or refuses what the fleet
//! needs (an error reply: a cluster redirection, an ACL denial, a read-only
//! replica, lost scripts; see [`Refusal`]) puts the process in local-only
//! mode: one `tracing` warning (target `failfast_fleet`) per episode, the
//! reason in [`FleetStats::local_only`], and health checks with backoff
//! until it can be used again.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = failfast_fleet::FleetConfig::new("redis://127.0.0.1:6379/", "payments/prod");
//! config.quorum = 2;
//! let fleet = failfast_fleet::join(config)?; // every registered breaker, now and later
//! # let _ = fleet; Ok(()) }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod breaker;
mod config;
mod door;
mod fleet;
pub mod keys;
mod lane;
pub mod machine;
mod member;
pub mod payload;
mod redis;
mod transport;

pub use crate::breaker::BreakerMember;
pub use crate::config::{Breakers, FleetConfig, FleetConfigError};
pub use crate::door::{AttachError, Notifier};
pub use crate::fleet::{Fleet, FleetError, FleetStats, LocalOnly, join};
pub use crate::member::{FleetMember, LocalTransition, RecentOutcomes};
pub use crate::redis::RedisTransport;
pub use crate::transport::{
    FleetOpen, Incoming, LeaseHolder, LeaseOutcome, Refusal, ReportOutcome, StoreSnapshot,
    Transport, TransportError, TransportResult, VoteOutcome,
};
