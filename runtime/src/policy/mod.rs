//! Policies around a breaker's calls: time limits, a concurrency limit,
//! retries, one breaker per key, and the handles the registry and the
//! integrations hold breakers and families by. They use the state machine (`core`)
//! and nothing above it.

pub(crate) mod bulkhead;
pub(crate) mod handle;
#[cfg(feature = "keyed")]
pub mod keyed;
#[cfg(feature = "keyed")]
pub(crate) mod listed;
pub(crate) mod retry;
