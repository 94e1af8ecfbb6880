//! The circuit breaker behind [failfast](https://docs.rs/failfast).
//!
//! Most users add `failfast` and write `#[circuit_breaker]` on the function that
//! calls a dependency; this crate is the breaker underneath, usable on its own:
//!
//! ```
//! use failfast_runtime::{Breaker, Error};
//! use std::time::Duration;
//!
//! let breaker = Breaker::builder()
//!     .name("inventory")
//!     .threshold(5)
//!     .recovery(Duration::from_secs(30))
//!     .build()?;
//!
//! let stock = breaker.call(|| -> Result<u32, std::io::Error> { Ok(42) });
//! assert_eq!(stock.ok(), Some(42));
//! # Ok::<(), failfast_runtime::ConfigError>(())
//! ```
//!
//! See [`Breaker`] for the state machine, [`registry`] for finding breakers by
//! name, [`events`] for listening to state changes, [`integration`] for the one
//! process-wide transition hook that never waits, [`ManualClock`] for
//! testing time-dependent behaviour, and
//! [`Builder::adaptive_concurrency`] for a limit on concurrent calls.
//!
//! # Features
//!
//! - `tokio`: time limits on async calls with tokio's timer
//!   (the attribute's `timeout = "3s"`, `Builder::timeout` with
//!   `Breaker::call_async`). Without
//!   it the crate depends on no async runtime.
//! - `keyed`: [`Family`], one breaker per key (host, tenant, shard),
//!   bounded, with a lock-free lookup (see [`keyed`]).
//! - `anyhow`: `counts = SomeType` looks through `anyhow::Error` chains.
//! - `http`: rejections and timeouts convert into `http::StatusCode` and
//!   `http::Response<B>` (503 with `Retry-After`, 504).
//! - `tower`: [`tower::CircuitBreakerLayer`], a tower `Layer` for axum,
//!   tonic and any `tower::Service`, with HTTP and gRPC classifiers (implies
//!   `http`).
//! - `tonic`: rejections and timeouts convert into `tonic::Status`
//!   (`UNAVAILABLE` with `grpc-retry-pushback-ms`, `DEADLINE_EXCEEDED`).
//! - `tracing`: transitions as `tracing` events.
//! - `metrics`: breakers through the `metrics` facade (see the `metrics`
//!   module).
//! - `testing`: [`testing`], a test kit: breakers on a `ManualClock` or
//!   tokio's paused clock, resets between tests, each test's own attribute
//!   breakers ([`testing::isolate`]). For dev-dependencies.
//! - `serde`: `Serialize` for [`Snapshot`], [`State`], [`Mode`] and events;
//!   `Config` both ways.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]
#![deny(unsafe_code)]

mod core;
mod integrations;
mod ops;
mod policy;

#[cfg(feature = "http")]
pub use integrations::classify;
pub use integrations::integration;
#[cfg(feature = "reqwest-middleware")]
pub use integrations::reqwest_middleware;
#[cfg(feature = "tower")]
pub use integrations::tower;
#[cfg(feature = "metrics")]
pub use ops::metrics;
#[cfg(feature = "testing")]
pub use ops::testing;
pub use ops::{configure, events, registry};
#[cfg(feature = "keyed")]
pub use policy::keyed;

/// Atomics of the state machine: std's, or loom's when model checking
/// (`RUSTFLAGS="--cfg loom"`).
mod sync {
    /// A keyed family member's lease counts (`policy::keyed::members`)
    /// and its ejection budget's share (`core::breaker::budget`).
    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::AtomicUsize;
    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering, fence,
    };
    #[cfg(loom)]
    pub(crate) use loom::sync::{Mutex, MutexGuard};
    /// Parking a thread that waits for a bulkhead's place.
    #[cfg(loom)]
    pub(crate) use loom::thread::{Thread, current as current_thread};
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::AtomicUsize;
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering, fence};
    #[cfg(not(loom))]
    pub(crate) use std::sync::{Mutex, MutexGuard};
    #[cfg(not(loom))]
    pub(crate) use std::thread::{Thread, current as current_thread};
}

#[doc(hidden)]
pub mod __private;

pub use crate::core::breaker::{Breaker, Mode, Outcome, Permit, Snapshot};
pub use crate::core::clock::ManualClock;
pub use crate::core::config::{Builder, Config};
pub use crate::core::error::{ConfigError, Error, Reason, Rejected, State, TimedOut};
pub use crate::core::name::Name;
/// Under the model checker: a member's lease handshake, for its model.
#[cfg(all(loom, feature = "keyed"))]
#[doc(hidden)]
pub use policy::keyed::Leases;
#[cfg(feature = "keyed")]
pub use policy::keyed::{Family, FamilyBuilder, FamilyStats, Key, Lease, Member};
