//! [`CircuitBreakerLayer`] and the service it makes, [`CircuitBreaker`].

use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use super::future::{Handle, Kind, OwnedPermit, ResponseFuture, State};
use super::refuse::{OnRejected, RefuseWithError};
use crate::integrations::classify::{Classify, HttpClassifier};
use crate::ops::registry::BreakerRef;

/// Wraps services in a [`CircuitBreaker`]. Cheap to clone: a handle to the
/// breaker, the classifier and the refusal's answer.
///
/// ```
/// use failfast_runtime::tower::CircuitBreakerLayer;
/// use failfast_runtime::Breaker;
/// use std::time::Duration;
/// use tower::ServiceBuilder;
///
/// let breaker = Breaker::builder().name("payments").threshold(5)
///     .recovery(Duration::from_secs(30)).build()?;
/// let service = ServiceBuilder::new()
///     .layer(CircuitBreakerLayer::new(breaker))
///     .timeout(Duration::from_secs(2))
///     .service_fn(|_: ()| async { Ok::<_, std::io::Error>(http::Response::new(())) });
/// # let _ = service;
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
///
/// The breaker is one [`BreakerRef`] by default; with
/// [`per_key`](CircuitBreakerLayer::per_key) it is a keyed
/// family's breaker of each request's key (`B` is then [`PerKey`](super::PerKey)).
#[derive(Clone, Debug)]
pub struct CircuitBreakerLayer<C = HttpClassifier, R = RefuseWithError, B = BreakerRef> {
    pub(super) breaker: B,
    pub(super) classifier: C,
    pub(super) on_rejected: R,
}

impl CircuitBreakerLayer {
    /// A layer guarding with `breaker` (a [`Breaker`](crate::Breaker), `Arc<Breaker>`,
    /// `&'static Breaker` or [`BreakerRef`]), classifying with
    /// [`HttpClassifier`], refusing with a boxed [`Rejected`](crate::Rejected).
    ///
    /// ```
    /// use failfast_runtime::tower::CircuitBreakerLayer;
    /// use failfast_runtime::{registry, Breaker};
    /// use std::sync::Arc;
    ///
    /// static SEARCH: std::sync::OnceLock<Breaker> = std::sync::OnceLock::new();
    /// let search = SEARCH.get_or_init(|| Breaker::builder().name("search").build().unwrap());
    /// let from_static = CircuitBreakerLayer::new(search);
    ///
    /// let shared = Arc::new(Breaker::builder().name("ledger").build()?);
    /// registry::register(&shared);
    /// let from_registry = CircuitBreakerLayer::new(registry::get("ledger").unwrap());
    /// # let _ = (from_static, from_registry);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn new(breaker: impl Into<BreakerRef>) -> Self {
        let breaker = breaker.into();
        crate::ops::registry::register(&breaker);
        Self {
            breaker,
            classifier: HttpClassifier,
            on_rejected: RefuseWithError,
        }
    }
}

impl<C, R, B> CircuitBreakerLayer<C, R, B> {
    /// The same layer, deciding outcomes with `classifier`: a
    /// [`GrpcClassifier`](crate::classify::GrpcClassifier), or a closure `Fn(&Result<Res, E>) -> Outcome`.
    ///
    /// ```
    /// use failfast_runtime::classify::GrpcClassifier;
    /// use failfast_runtime::tower::CircuitBreakerLayer;
    /// use failfast_runtime::Breaker;
    ///
    /// let layer = CircuitBreakerLayer::new(Breaker::builder().name("ledger").build()?)
    ///     .classifier(GrpcClassifier);
    /// # let _ = layer;
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn classifier<C2>(self, classifier: C2) -> CircuitBreakerLayer<C2, R, B> {
        CircuitBreakerLayer {
            breaker: self.breaker,
            classifier,
            on_rejected: self.on_rejected,
        }
    }

    /// The same layer, answering refusals with `on_rejected`:
    ///
    /// - [`RefuseWithError`], the default: a boxed [`Rejected`](crate::Rejected).
    /// - [`RefuseWithResponse`](super::RefuseWithResponse): `503 Service
    ///   Unavailable` with `Retry-After` instead of an error, keeping the
    ///   inner service's error type: an axum handler behind it stays a
    ///   service that never fails, as `Router` requires
    ///   (`Router::new().route(..).layer(layer.on_rejected(RefuseWithResponse))`).
    /// - [`RefuseWithStatus`](super::RefuseWithStatus) (feature `tonic`): a
    ///   boxed `tonic::Status`, `UNAVAILABLE` with `grpc-retry-pushback-ms`,
    ///   for a layer on a tonic `Channel`.
    /// - An answer of your own (see [`OnRejected`]).
    ///
    /// ```
    /// use failfast_runtime::tower::{CircuitBreakerLayer, RefuseWithResponse};
    /// use failfast_runtime::Breaker;
    /// use std::convert::Infallible;
    /// use tower::{service_fn, Layer, ServiceExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), failfast_runtime::ConfigError> {
    /// let breaker = Breaker::builder().name("stock").build()?;
    /// breaker.set_mode(failfast_runtime::Mode::ForcedOpen);
    /// let service = CircuitBreakerLayer::new(breaker)
    ///     .on_rejected(RefuseWithResponse)
    ///     .layer(service_fn(|_: ()| async { Ok::<_, Infallible>(http::Response::new(String::new())) }));
    /// let response = service.oneshot(()).await.unwrap();
    /// assert_eq!(response.status(), 503);
    /// # Ok(())
    /// # }
    /// ```
    pub fn on_rejected<R2>(self, on_rejected: R2) -> CircuitBreakerLayer<C, R2, B> {
        CircuitBreakerLayer {
            breaker: self.breaker,
            classifier: self.classifier,
            on_rejected,
        }
    }
}

impl<S, C: Clone, R: Clone, B: Clone> Layer<S> for CircuitBreakerLayer<C, R, B> {
    type Service = CircuitBreaker<S, C, R, B>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreaker {
            inner,
            breaker: self.breaker.clone(),
            classifier: self.classifier.clone(),
            on_rejected: self.on_rejected.clone(),
        }
    }
}

/// A service guarded by a circuit breaker; made by [`CircuitBreakerLayer`].
///
/// `B` is how it finds the breaker of a request: one [`BreakerRef`] (a
/// layer made by [`CircuitBreakerLayer::new`]), or the breaker of the
/// request's key in a family ([`PerKey`](super::PerKey), a layer made by
/// [`per_key`](CircuitBreakerLayer::per_key)).
#[derive(Clone, Debug)]
pub struct CircuitBreaker<S, C = HttpClassifier, R = RefuseWithError, B = BreakerRef> {
    pub(super) inner: S,
    pub(super) breaker: B,
    pub(super) classifier: C,
    pub(super) on_rejected: R,
}

impl<S, Req, C, R> Service<Req> for CircuitBreaker<S, C, R, BreakerRef>
where
    S: Service<Req>,
    C: Classify<S::Response, S::Error> + Clone,
    R: OnRejected<S::Response, S::Error> + Clone,
{
    type Response = S::Response;
    type Error = R::Error;
    type Future = ResponseFuture<S::Future, C, R>;

    /// The inner service's readiness; the breaker is not asked (see the
    /// [module documentation](super#readiness-never-takes-a-trial)).
    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        inner_ready(&mut self.inner, &self.on_rejected, cx)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        match self.breaker.acquire() {
            // The inner future is built in its place in the response future,
            // and the permit lives while the inner `call` runs: a panic there
            // drops it while unwinding, a failure.
            Ok(permit) => ResponseFuture {
                kind: Kind::Admitted {
                    future: self.inner.call(request),
                },
                state: State::Admitted(OwnedPermit {
                    breaker: Handle::One(self.breaker.clone()),
                    detached: Some(permit.detach()),
                }),
                classifier: self.classifier.clone(),
                on_rejected: self.on_rejected.clone(),
            },
            Err(rejected) => ResponseFuture {
                kind: Kind::Refused,
                state: State::Refused(Some(rejected)),
                classifier: self.classifier.clone(),
                on_rejected: self.on_rejected.clone(),
            },
        }
    }
}

/// The inner service's readiness, its error answered by `on_rejected`.
#[inline]
pub(super) fn inner_ready<S, Req, R>(
    inner: &mut S,
    on_rejected: &R,
    cx: &mut Context<'_>,
) -> Poll<Result<(), R::Error>>
where
    S: Service<Req>,
    R: OnRejected<S::Response, S::Error>,
{
    match inner.poll_ready(cx) {
        Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
        Poll::Ready(Err(e)) => Poll::Ready(Err(on_rejected.error(e))),
        Poll::Pending => Poll::Pending,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::convert::Infallible;
    use std::fmt::Debug;

    use super::super::CircuitBreakerLayer;
    use crate::Breaker;
    use tower::{Layer, Service};

    /// Asserts that `service`, a layer over a concurrency limit of one
    /// around a service answering each request (made by `request`) with its
    /// number, is ready when the limit is: it holds a second caller back
    /// until the first is answered.
    pub(in crate::integrations::tower) async fn ready_when_a_limit_of_one_is<S, Req>(
        service: S,
        request: impl Fn(u32) -> Req,
    ) where
        S: Service<Req, Response = http::Response<u32>> + Clone,
        S::Error: Debug,
    {
        use std::task::{Context, Waker};
        use tower::ServiceExt;

        let mut first = service.clone();
        let mut second = service;
        first.ready().await.unwrap();
        let mut cx = Context::from_waker(Waker::noop());
        assert!(
            second.poll_ready(&mut cx).is_pending(),
            "the limit is taken"
        );
        assert_eq!(first.call(request(7)).await.unwrap().into_body(), 7);
        second.ready().await.unwrap();
        assert_eq!(second.call(request(8)).await.unwrap().into_body(), 8);
    }

    /// The layer is ready when the service it wraps is.
    #[tokio::test]
    async fn readiness_is_the_inner_services() {
        use tower::limit::ConcurrencyLimit;
        use tower::service_fn;

        let breaker = Breaker::builder().name("tower-ready").build().unwrap();
        let service = CircuitBreakerLayer::new(breaker).layer(ConcurrencyLimit::new(
            service_fn(|n: u32| async move { Ok::<_, Infallible>(http::Response::new(n)) }),
            1,
        ));
        ready_when_a_limit_of_one_is(service, |n| n).await;
    }
}
