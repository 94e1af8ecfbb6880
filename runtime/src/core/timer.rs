//! tokio (feature `tokio`): the timer behind `timeout = "3s"` and the delays
//! of async retries (`#[retry]` on an `async fn`,
//! [`Retry::call_async`](crate::Retry::call_async)), and
//! [`Breaker::call_async`] on a breaker built with a time limit
//! ([`Builder::timeout`](crate::Builder::timeout)).
//!
//! They need to run inside a tokio runtime with its time driver enabled
//! (`#[tokio::main]`, `Runtime::new()`, or a builder with `enable_time()`),
//! as `tokio::time::timeout` does; a paused test clock is honoured.

use std::time::Duration;

pub(crate) type Sleep = ::tokio::time::Sleep;

pub(crate) fn sleep(limit: Duration) -> Sleep {
    ::tokio::time::sleep(limit)
}

/// Whether the limit has passed, on tokio's clock (so also under
/// `tokio::time::pause`).
pub(crate) fn elapsed(sleep: &Sleep) -> bool {
    ::tokio::time::Instant::now() >= sleep.deadline()
}
