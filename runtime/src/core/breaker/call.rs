//! Calling through a breaker: a closure or a future, every error counted.

use super::*;
#[cfg(feature = "tokio")]
use crate::core::timeout::Timeout;

impl Breaker {
    /// Runs `f` through the breaker; every `Err` counts as a failure. To
    /// count only some errors, take the permit and resolve it with a rule
    /// ([`acquire`](Self::acquire), [`Permit::resolve`]), as the attribute's
    /// `counts` does:
    ///
    /// ```
    /// use failfast_runtime::Breaker;
    ///
    /// let breaker = Breaker::builder().threshold(1).build()?;
    /// let permit = breaker.acquire()?;
    /// let result = Err::<(), u16>(400);
    /// // A 400 is the caller's fault: neutral.
    /// permit.resolve(&result, |status| *status >= 500);
    /// assert_eq!(breaker.snapshot().consecutive_failures, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Rejected`] without running `f` when the breaker refuses;
    /// [`Error::Failed`] with `f`'s error otherwise.
    #[inline]
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
    {
        let permit = self.acquire()?;
        let result = f();
        permit.resolve(&result, |_| true);
        result.map_err(Error::Failed)
    }

    /// Awaits `future` through the breaker; every `Err` counts as a failure. The
    /// call is admitted when the returned future is first polled. If it is
    /// dropped before it finishes, the call is neutral (a slow call once it ran
    /// longer than `slow`); a panic while `future` is polled is a failure.
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call).
    pub fn call_async<T, E, Fut>(
        &self,
        future: Fut,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, Fut>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        crate::core::body::Call::new(self, |_: &E| true, future)
    }
}

#[cfg(feature = "tokio")]
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
    /// assert!(matches!(result, Err(failfast_runtime::Error::Timeout(_))));
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
        let permit = self.acquire()?;
        match Timeout::new(permit, self.carried_name(), limit, future).await {
            Ok((result, permit)) => {
                permit.resolve(&result, |_| true);
                result.map_err(Error::Failed)
            }
            Err(timed_out) => Err(Error::Timeout(timed_out)),
        }
    }
}
