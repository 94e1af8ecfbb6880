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
//! name, and [`ManualClock`] for testing time-dependent behaviour.
#![warn(missing_docs)]
#![deny(unsafe_code)]

mod body;
mod breaker;
mod clock;
mod config;
mod error;
#[cfg(feature = "http")]
mod http;
pub mod registry;
pub mod retry;
#[cfg(feature = "tokio")]
mod tokio;
#[cfg(feature = "tonic")]
mod tonic;
mod window;
mod word;

/// Atomics of the state machine: std's, or loom's when model checking
/// (`RUSTFLAGS="--cfg loom"`).
mod sync {
    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
}

#[doc(hidden)]
pub mod __private;

pub use breaker::{Breaker, Mode, Outcome, Permit, Snapshot};
pub use clock::{ManualClock, TICK};
pub use config::{
    Builder, DEFAULT_MIN_CALLS, DEFAULT_RECOVERY, DEFAULT_THRESHOLD, DEFAULT_WINDOW_CALLS,
};
pub use error::{ConfigError, Error, Rejected, State};
