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
    /// With the `tokio` feature, a breaker built with a time limit
    /// ([`Builder::timeout`](crate::Builder::timeout)) gives each call the
    /// limit in force when it is admitted: past it, `future` is dropped, the
    /// call is recorded as a failure, and the caller gets [`Error::Timeout`].
    ///
    /// ```
    /// use failfast_runtime::{Breaker, Error, State};
    /// use std::time::Duration;
    ///
    /// # #[cfg(not(feature = "tokio"))]
    /// # fn main() {}
    /// # #[cfg(feature = "tokio")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), failfast_runtime::ConfigError> {
    /// let breaker = Breaker::builder()
    ///     .threshold(1)
    ///     .timeout(Duration::from_millis(10))
    ///     .build()?;
    /// let hang = std::future::pending::<Result<u32, std::io::Error>>();
    /// let result = breaker.call_async(hang).await;
    /// assert!(matches!(result, Err(Error::Timeout(_))));
    /// assert_eq!(breaker.state(), State::Open);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call), and [`Error::Timeout`] past the time limit.
    ///
    /// # Panics
    ///
    /// With a time limit, when polled outside a tokio runtime with its time
    /// driver enabled.
    pub fn call_async<T, E, Fut>(
        &self,
        future: Fut,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, Fut>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        #[cfg(feature = "tokio")]
        {
            use crate::core::body::MaybeTimed;
            // Declared with a limit or not, for good: a breaker declared
            // without one refuses one at run time.
            if self.config.timeout != 0 {
                return MaybeTimed::Timed {
                    call: Box::pin(self.call_timed(future)),
                };
            }
            MaybeTimed::Plain {
                call: crate::core::body::Call::new(self, |_: &E| true, future),
            }
        }
        #[cfg(not(feature = "tokio"))]
        crate::core::body::Call::new(self, |_: &E| true, future)
    }

    /// [`call_async`](Self::call_async) under the time limit in force when
    /// the call is admitted.
    #[cfg(feature = "tokio")]
    async fn call_timed<T, E, Fut>(&self, future: Fut) -> Result<T, Error<E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        let permit = self.acquire()?;
        let limit = Duration::from_nanos(self.time_limit());
        match Timeout::new(permit, self.carried_name(), limit, future).await {
            Ok((result, permit)) => {
                permit.resolve(&result, |_| true);
                result.map_err(Error::Failed)
            }
            Err(timed_out) => Err(Error::Timeout(timed_out)),
        }
    }
}
