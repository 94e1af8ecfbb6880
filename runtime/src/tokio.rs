//! tokio (feature `tokio`): the timer behind the delays of async retries
//! (`#[retry]` on an `async fn`, [`Retry::call_async`](crate::retry::Retry::call_async)).
//!
//! It needs a tokio runtime with its time driver enabled (`#[tokio::main]`,
//! `Runtime::new()`, or a builder with `enable_time()`), as
//! `tokio::time::sleep` does, and honours a paused test clock.

use std::time::Duration;

pub(crate) type Sleep = ::tokio::time::Sleep;

pub(crate) fn sleep(limit: Duration) -> Sleep {
    ::tokio::time::sleep(limit)
}
