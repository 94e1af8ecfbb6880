//! What a [`CircuitBreaker`](super::CircuitBreaker) answers when its breaker refuses a call.

use crate::Rejected;

/// tower's error type (`tower::BoxError`): what a
/// [`CircuitBreaker`](super::CircuitBreaker) service fails with by default.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a [`CircuitBreaker`](super::CircuitBreaker) answers when the breaker refuses a call, and
/// the error type that comes with it.
///
/// [`RefuseWithError`] (the default) and [`RefuseWithResponse`] are the two
/// answers; implement it for another, e.g. a service whose own error type
/// can carry the refusal:
///
/// ```
/// use failfast_runtime::tower::{CircuitBreakerLayer, OnRejected};
/// use failfast_runtime::{Breaker, Outcome, Rejected};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// #[derive(Debug)]
/// enum DbError { Connection, Refused(Rejected) }
///
/// #[derive(Clone)]
/// struct AsDbError;
///
/// impl<Res> OnRejected<Res, DbError> for AsDbError {
///     type Error = DbError;
///     fn rejected(&self, rejected: Rejected) -> Result<Res, DbError> {
///         Err(DbError::Refused(rejected))
///     }
///     fn error(&self, error: DbError) -> DbError {
///         error
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), failfast_runtime::ConfigError> {
/// let breaker = Breaker::builder().build()?;
/// breaker.set_mode(failfast_runtime::Mode::ForcedOpen);
/// let service = CircuitBreakerLayer::new(breaker)
///     .classifier(|r: &Result<u64, DbError>| if r.is_ok() { Outcome::Success } else { Outcome::Failure })
///     .on_rejected(AsDbError)
///     .layer(service_fn(|_: ()| async { Err::<u64, _>(DbError::Connection) }));
/// assert!(matches!(service.oneshot(()).await, Err(DbError::Refused(_))));
/// # Ok(())
/// # }
/// ```
pub trait OnRejected<Res, E> {
    /// The service's error type.
    type Error;

    /// The answer to a refused call.
    ///
    /// # Errors
    ///
    /// The refusal as the service's error, when it is not answered with a
    /// response.
    fn rejected(&self, rejected: Rejected) -> Result<Res, Self::Error>;

    /// The inner service's error, as the service's error.
    fn error(&self, error: E) -> Self::Error;
}

/// A refusal is an error: a boxed [`Rejected`], which callers downcast
/// (`error.downcast_ref::<Rejected>()`); the inner service's errors are
/// boxed too. The default.
///
/// ```
/// use failfast_runtime::tower::{OnRejected, RefuseWithError};
/// use failfast_runtime::{Breaker, Rejected};
///
/// let breaker = Breaker::builder().build()?;
/// breaker.set_mode(failfast_runtime::Mode::ForcedOpen);
/// let answer: Result<(), _> =
///     OnRejected::<(), std::io::Error>::rejected(&RefuseWithError, breaker.acquire().unwrap_err());
/// assert!(answer.unwrap_err().is::<Rejected>());
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct RefuseWithError;

impl<Res, E: Into<BoxError>> OnRejected<Res, E> for RefuseWithError {
    type Error = BoxError;

    fn rejected(&self, rejected: Rejected) -> Result<Res, BoxError> {
        Err(Box::new(rejected))
    }

    #[inline]
    fn error(&self, error: E) -> BoxError {
        error.into()
    }
}

/// A refusal is answered with `503 Service Unavailable` and `Retry-After`
/// (in whole seconds, when the breaker knows when it tries again), the
/// rejection's message as the body; the inner service's errors pass as they
/// are: for an axum `Router`, whose services never fail. See
/// [`CircuitBreakerLayer::on_rejected`](super::CircuitBreakerLayer::on_rejected).
/// The response carries the [`Rejected`] in its extensions (not sent over
/// the wire), so a layer further up takes it as neutral, and a `503` of the
/// inner service as a failure.
///
/// ```
/// use failfast_runtime::tower::{OnRejected, RefuseWithResponse};
/// use failfast_runtime::Breaker;
/// use std::convert::Infallible;
///
/// let breaker = Breaker::builder().build()?;
/// breaker.set_mode(failfast_runtime::Mode::ForcedOpen);
/// let answer: Result<http::Response<String>, Infallible> =
///     RefuseWithResponse.rejected(breaker.acquire().unwrap_err());
/// assert_eq!(answer.unwrap().status(), 503);
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct RefuseWithResponse;

impl<B: From<String>, E> OnRejected<http::Response<B>, E> for RefuseWithResponse {
    type Error = E;

    fn rejected(&self, rejected: Rejected) -> Result<http::Response<B>, E> {
        Ok(http::Response::from(rejected))
    }

    #[inline]
    fn error(&self, error: E) -> E {
        error
    }
}

/// A refusal is an error: a boxed `tonic::Status` (`UNAVAILABLE`, with the
/// time until the next trial in `grpc-retry-pushback-ms`: the `tonic`
/// conversion of [`Rejected`]), which a tonic client finds in the error of
/// its `Channel` and hands to the caller as that status; the inner service's
/// errors are boxed as they are. For a layer on a tonic `Channel`: the
/// client's caller gets that status rather than `UNKNOWN`. The status has
/// the [`Rejected`] as its source, so a layer further up, and a
/// `#[circuit_breaker]` function around the client, take it as neutral,
/// and an `UNAVAILABLE` of the server as a failure. Feature `tonic`.
///
/// ```
/// use failfast_runtime::classify::GrpcClassifier;
/// use failfast_runtime::tower::{CircuitBreakerLayer, RefuseWithStatus};
/// use failfast_runtime::Breaker;
///
/// let layer = CircuitBreakerLayer::new(Breaker::builder().name("ledger").build()?)
///     .classifier(GrpcClassifier)
///     .on_rejected(RefuseWithStatus);
/// // ServiceBuilder::new().layer(layer).service(channel)
/// # let _ = layer;
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
///
/// ```
/// use failfast_runtime::tower::{OnRejected, RefuseWithStatus};
/// use failfast_runtime::Breaker;
///
/// let breaker = Breaker::builder().build()?;
/// breaker.set_mode(failfast_runtime::Mode::ForcedOpen);
/// let answer: Result<(), _> = OnRejected::<(), std::io::Error>::rejected(
///     &RefuseWithStatus,
///     breaker.acquire().unwrap_err(),
/// );
/// let status = tonic::Status::from_error(answer.unwrap_err());
/// assert_eq!(status.code(), tonic::Code::Unavailable);
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
#[cfg(feature = "tonic")]
#[derive(Clone, Copy, Debug, Default)]
pub struct RefuseWithStatus;

#[cfg(feature = "tonic")]
impl<Res, E: Into<BoxError>> OnRejected<Res, E> for RefuseWithStatus {
    type Error = BoxError;

    fn rejected(&self, rejected: Rejected) -> Result<Res, BoxError> {
        Err(Box::new(tonic::Status::from(rejected)))
    }

    #[inline]
    fn error(&self, error: E) -> BoxError {
        error.into()
    }
}

#[cfg(test)]
#[cfg(feature = "tonic")]
mod tests {
    use std::convert::Infallible;

    use super::super::{CircuitBreakerLayer, RefuseWithStatus};
    use crate::Breaker;
    use crate::classify::GrpcClassifier;
    use tower::Layer;

    #[tokio::test]
    async fn a_refusal_with_status_reaches_a_grpc_caller_as_unavailable_with_pushback() {
        use tower::{ServiceExt, service_fn};

        let clock = crate::ManualClock::new();
        let breaker = Breaker::builder()
            .name("ledger")
            .threshold(1)
            .recovery(std::time::Duration::from_secs(30))
            .clock(clock.clone())
            .build()
            .unwrap();
        let layer = CircuitBreakerLayer::new(breaker)
            .classifier(GrpcClassifier)
            .on_rejected(RefuseWithStatus);
        let service = layer.layer(service_fn(|code: &'static str| async move {
            let response = http::Response::builder().header("grpc-status", code);
            Ok::<_, Infallible>(response.body(()).unwrap())
        }));

        let invalid = service.clone().oneshot("3").await.unwrap();
        assert_eq!(invalid.headers()["grpc-status"], "3");
        assert_eq!(layer.breaker.state(), crate::State::Closed);
        service.clone().oneshot("14").await.unwrap();
        assert_eq!(layer.breaker.state(), crate::State::Open);

        clock.advance(std::time::Duration::from_secs(10));
        let refused = service.clone().oneshot("0").await.unwrap_err();
        let status = tonic::Status::from_error(refused);
        assert_eq!(status.code(), tonic::Code::Unavailable);
        assert_eq!(
            status.metadata().get("grpc-retry-pushback-ms").unwrap(),
            "20000"
        );
    }
}
