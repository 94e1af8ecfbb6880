//! tokio (feature `tokio`): the timer behind `timeout = "3s"` and the delays
//! of async retries (`#[retry]` on an `async fn`,
//! [`Retry::call_async`](crate::Retry::call_async)), and
//! [`Breaker::call_timeout`] for breakers used as plain values.
//!
//! They need to run inside a tokio runtime with its time driver enabled
//! (`#[tokio::main]`, `Runtime::new()`, or a builder with `enable_time()`),
//! as `tokio::time::timeout` does; a paused test clock is honoured.

use std::future::Future;
use std::time::Duration;

use crate::core::breaker::Breaker;
use crate::core::error::Error;
use crate::policy::timeout::Timeout;

pub(crate) type Sleep = ::tokio::time::Sleep;

pub(crate) fn sleep(limit: Duration) -> Sleep {
    ::tokio::time::sleep(limit)
}

/// Whether the limit has passed, on tokio's clock (so also under
/// `tokio::time::pause`).
pub(crate) fn elapsed(sleep: &Sleep) -> bool {
    ::tokio::time::Instant::now() >= sleep.deadline()
}

impl Breaker {
    /// Awaits `future` through the breaker for at most `limit`; every `Err`
    /// counts as a failure. Past the limit, `future` is dropped, the call is
    /// recorded as a failure, and the caller gets [`Error::Timeout`].
    ///
    /// ```
    /// use failfast_runtime::{Breaker, State};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), failfast_runtime::ConfigError> {
    /// let breaker = Breaker::builder().threshold(1).build()?;
    /// let hang = std::future::pending::<Result<u32, std::io::Error>>();
    /// let result = breaker.call_timeout(Duration::from_millis(10), hang).await;
    /// assert!(result.unwrap_err().timed_out().is_some());
    /// assert_eq!(breaker.state(), State::Open);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call), and [`Error::Timeout`] past the limit.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with its time driver enabled.
    pub async fn call_timeout<T, E, Fut>(&self, limit: Duration, future: Fut) -> Result<T, Error<E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        self.call_timeout_with(|_| true, limit, future).await
    }

    /// [`call_timeout`](Self::call_timeout), classifying errors with `counts`
    /// as [`call_with`](Self::call_with) does. A timeout is a failure whatever
    /// `counts` says.
    ///
    /// # Errors
    ///
    /// As [`call_timeout`](Self::call_timeout).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with its time driver enabled.
    pub async fn call_timeout_with<T, E, C, Fut>(
        &self,
        counts: C,
        limit: Duration,
        future: Fut,
    ) -> Result<T, Error<E>>
    where
        C: FnOnce(&E) -> bool,
        Fut: Future<Output = Result<T, E>>,
    {
        let permit = self.acquire()?;
        match Timeout::new(permit, self.carried_name(), limit, future).await {
            Ok((result, permit)) => {
                permit.resolve(&result, counts);
                result.map_err(Error::Failed)
            }
            Err(timed_out) => Err(Error::Timeout(timed_out)),
        }
    }
}
