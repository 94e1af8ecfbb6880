//! Policies around a breaker's calls: time limits, a concurrency limit,
//! retries and one breaker per key. They use the state machine (`core`)
//! and nothing above it.

pub(crate) mod bulkhead;
#[cfg(feature = "keyed")]
pub mod keyed;
pub(crate) mod retry;
